//! The `v0` timestamped HMAC that Slack and Zoom share: HMAC-SHA256 over
//! `"v0:{timestamp}:{raw body}"` (the timestamp header's text exactly as sent; digits only), sent
//! as `v0=<hex>` in a signature header beside the timestamp header. A matching signature must
//! then be within the tolerance on both sides.
//!
//! One scheme ([`V0`]) serves every provider that signs so; each is a [`V0Preset`]: its two
//! headers ([`V0Headers`]), its event type, and its endpoint handshake. Parsing, checking,
//! signing and the [`Scheme`] implementation live here once. Event id: the SHA-256 of the body
//! (neither provider sends an id); signed: the body and the timestamp header.

use std::sync::Arc;

use http::{HeaderMap, HeaderName};

use super::headers::covers;
use super::headers::{parse_timestamp, push_header, single_header};
use super::hmac::HmacKeys;
use super::preset::PresetScheme;
use super::tag::{decode_hex_tag, Tag};
use super::tolerance::Tolerance;
use super::{
    Handshake, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
use crate::identity::FieldRule;

const PREFIX: &str = "v0=";

/// A scheme's two headers, with the names its errors give them.
pub(super) struct V0Headers {
    pub signature: HeaderName,
    pub signature_label: &'static str,
    pub timestamp: HeaderName,
    pub timestamp_label: &'static str,
}

/// A request's parsed headers: the timestamp (its text as sent, and its value) and the tag.
pub(super) struct V0Request<'h> {
    pub timestamp_text: &'h str,
    pub timestamp: i64,
    pub tag: Tag,
}

/// What the MAC covers.
pub(super) fn signed_parts<'a>(timestamp: &'a str, body: &'a [u8]) -> [&'a [u8]; 4] {
    [b"v0:", timestamp.as_bytes(), b":", body]
}

impl V0Headers {
    /// Both headers, exactly once each, well formed.
    pub fn parse<'h>(&self, headers: &'h HeaderMap) -> Result<V0Request<'h>, SignatureError> {
        let signature = single_header(headers, &self.signature, self.signature_label)?;
        let timestamp_text = single_header(headers, &self.timestamp, self.timestamp_label)?;
        let (timestamp, _) =
            parse_timestamp(timestamp_text).map_err(|reason| SignatureError::Malformed {
                header: self.timestamp_label,
                reason,
            })?;
        let malformed = |reason| SignatureError::Malformed {
            header: self.signature_label,
            reason,
        };
        let hex = signature
            .strip_prefix(PREFIX)
            .ok_or(malformed("the value does not start with `v0=`"))?;
        let tag = decode_hex_tag(hex).map_err(malformed)?;
        Ok(V0Request {
            timestamp_text,
            timestamp,
            tag,
        })
    }

    /// A matching signature (any of `keys`, in constant time), then within `tolerance`.
    pub fn check(
        &self,
        keys: &HmacKeys,
        tolerance: Tolerance,
        headers: &HeaderMap,
        body: &[u8],
        now_unix: i64,
    ) -> Result<(), SignatureError> {
        let parsed = self.parse(headers)?;
        keys.check(
            &signed_parts(parsed.timestamp_text, body),
            std::iter::once(parsed.tag),
        )?;
        tolerance.check(parsed.timestamp, now_unix)
    }

    /// The two headers of `body` signed at `timestamp` with the first of `keys`.
    pub fn sign(&self, keys: &HmacKeys, timestamp: i64, body: &[u8]) -> Signed {
        let t = timestamp.to_string();
        let tag = keys.sign(&signed_parts(&t, body));
        let mut out = Vec::with_capacity(2);
        push_header(&mut out, &self.timestamp, &t);
        push_header(
            &mut out,
            &self.signature,
            &format!("{PREFIX}{}", hex::encode(tag)),
        );
        Signed::headers(out)
    }
}

/// A provider that signs with `v0`.
pub(super) struct V0Preset {
    /// The provider's name, for `Debug`.
    pub name: &'static str,
    pub headers: V0Headers,
    /// The headers kept to re-verify a message: both, in the provider's order.
    pub signed_headers: [HeaderName; 2],
    /// The JSON pointer of the event type; `None`: the provider's events have no type.
    pub event_type: Option<&'static str>,
    /// The provider's endpoint handshake ([`Scheme::handshake`]), asked of a verified request.
    pub handshake: for<'a> fn(&'a V0, Request<'a>) -> Option<Handshake<'a>>,
}

/// The `v0` scheme of one source: a provider's preset, the keyed secrets and the tolerance.
pub(super) type V0 = PresetScheme<V0Preset, HmacKeys>;

/// Builds the scheme of a provider that signs with `v0` (secrets used as-is; no settings).
pub(super) fn preset(
    preset: &'static V0Preset,
    spec: &Spec<'_>,
) -> Result<Arc<dyn Scheme>, SchemeError> {
    let keys = HmacKeys::raw(spec.secrets)?;
    Ok(Arc::new(V0::new(preset.name, preset, keys, spec)))
}

impl Scheme for V0 {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.preset
            .headers
            .check(
                &self.keys,
                self.tolerance,
                request.headers,
                request.body,
                request.now_unix,
            )
            .into()
    }

    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        Ok(self
            .preset
            .headers
            .sign(&self.keys, message.timestamp, message.body))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &self.preset.signed_headers
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::BodySha256
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        self.preset.event_type.map(FieldRule::json_pointer)
    }

    /// The body and the timestamp header.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[&self.preset.headers.timestamp])
    }

    fn handshake<'a>(&'a self, request: Request<'a>) -> Option<Handshake<'a>> {
        (self.preset.handshake)(self, request)
    }
}
