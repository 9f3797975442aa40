//! The `v0` timestamped HMAC that Slack and Zoom share: HMAC-SHA256 over
//! `"v0:{timestamp}:{raw body}"` (the timestamp header's text exactly as sent; digits only), sent
//! as `v0=<hex>` in a signature header beside the timestamp header. Each scheme names its two
//! headers ([`V0Headers`]); parsing, checking and signing live here once.

use http::{HeaderMap, HeaderName};

use super::helpers::{
    decode_hex_tag, parse_timestamp, push_header, single_header, HmacKeys, Tag, Tolerance,
};
use super::{SignatureError, Signed};

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
