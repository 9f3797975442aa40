//! SendGrid Event Webhook (signed): `X-Twilio-Email-Event-Webhook-Signature: <base64>` and
//! `X-Twilio-Email-Event-Webhook-Timestamp: <unix>`.
//!
//! The signature is ECDSA on P-256 with SHA-256, ASN.1 DER-encoded then base64, over the timestamp
//! header's text followed by the raw body. The whole body is signed: a batch (a JSON array of up
//! to ~1,000 events) is verified once, as received. The configured key is the "Verification Key"
//! SendGrid shows (base64 of the DER `SubjectPublicKeyInfo`, `MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE…`);
//! for local use and tests, a private key (base64 PKCS#8 DER) verifies with its public half and
//! signs. After the signature, the timestamp must be within the tolerance on both sides
//! (SendGrid's libraries do not check it; a replay would still be a duplicate).
//!
//! **Batches**: the body is a JSON array of events; ingest stores each event as its own message
//! ([`Scheme::batches`]), so the id and type rules apply to each event: id `/sg_event_id` (unique
//! per event, kept across SendGrid's retries), else the event's SHA-256; type `/event`. Each
//! stored event keeps the batch's digest and its place in it (`crate::batch`): the signature
//! covers the whole batch. Sample: a one-event batch (`delivered`).

use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use serde_json::json;

use super::asymmetric::{Algorithm, AsymmetricKeys, KeyBytes};
use super::helpers::{
    covers, parse_timestamp, push_header, random_alnum, single_header, Tolerance,
};
use super::{
    Request, Sample, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
use crate::identity::FieldRule;

const SIGNATURE_LABEL: &str = "X-Twilio-Email-Event-Webhook-Signature";
const TIMESTAMP_LABEL: &str = "X-Twilio-Email-Event-Webhook-Timestamp";
static SIGNATURE: HeaderName = HeaderName::from_static("x-twilio-email-event-webhook-signature");
static TIMESTAMP: HeaderName = HeaderName::from_static("x-twilio-email-event-webhook-timestamp");
static SIGNED_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("x-twilio-email-event-webhook-signature"),
    HeaderName::from_static("x-twilio-email-event-webhook-timestamp"),
];
/// A DER ECDSA P-256 signature is at most 72 bytes.
const MAX_SIG_LEN: usize = 72;

/// The SendGrid scheme of one source.
#[derive(Debug)]
pub(super) struct Sendgrid {
    keys: AsymmetricKeys,
    tolerance: Tolerance,
}

/// Base64 DER: a PKCS#8 private key, else a public key (the parser decides which is valid).
fn decode_key(secret: &[u8]) -> Result<KeyBytes, &'static str> {
    const NOT_BASE64: &str = "the key is not base64 (of DER)";
    let text = std::str::from_utf8(secret).map_err(|_| NOT_BASE64)?.trim();
    let der = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|_| NOT_BASE64)?;
    let private = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &der,
    )
    .is_ok();
    Ok(if private {
        KeyBytes::Private(der)
    } else {
        KeyBytes::Public(der)
    })
}

impl Sendgrid {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let signature = single_header(headers, &SIGNATURE, SIGNATURE_LABEL)?;
        let timestamp = single_header(headers, &TIMESTAMP, TIMESTAMP_LABEL)?;
        let (ts, _) = parse_timestamp(timestamp).map_err(|reason| SignatureError::Malformed {
            header: TIMESTAMP_LABEL,
            reason,
        })?;
        let malformed = |reason| SignatureError::Malformed {
            header: SIGNATURE_LABEL,
            reason,
        };
        let mut sig = [0u8; MAX_SIG_LEN + 3];
        let len = base64::engine::general_purpose::STANDARD
            .decode_slice(signature, &mut sig)
            .map_err(|_| malformed("the signature is not base64 of a DER ECDSA signature"))?;
        let sig = sig
            .get(..len)
            .filter(|s| s.len() <= MAX_SIG_LEN && s.first() == Some(&0x30));
        let sig = sig.ok_or(malformed(
            "the signature is not base64 of a DER ECDSA signature",
        ))?;
        let message = [timestamp.as_bytes(), body].concat();
        if !self.keys.verifies(&message, sig) {
            return Err(SignatureError::Mismatch);
        }
        self.tolerance.check(ts, now_unix)
    }
}

impl Scheme for Sendgrid {
    /// Secrets are Verification Keys (base64 DER public keys), or for local use a private key;
    /// no settings.
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        Ok(Self {
            keys: AsymmetricKeys::new(Algorithm::EcdsaP256Sha256, spec.secrets, decode_key)?,
            tolerance: Tolerance::new(spec.tolerance),
        })
    }

    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let ts = message.timestamp.to_string();
        let sig = self.keys.sign(&[ts.as_bytes(), message.body].concat())?;
        let mut out = Vec::with_capacity(2);
        push_header(
            &mut out,
            &SIGNATURE,
            &base64::engine::general_purpose::STANDARD.encode(sig),
        );
        push_header(&mut out, &TIMESTAMP, &ts);
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &SIGNED_HEADERS
    }

    /// Of each event of the batch.
    fn default_event_id(&self) -> FieldRule {
        FieldRule::FirstOf(vec![
            FieldRule::json_pointer("/sg_event_id"),
            FieldRule::BodySha256,
        ])
    }

    /// Of each event of the batch.
    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/event"))
    }

    fn batches(&self) -> bool {
        true
    }

    /// Signed: the timestamp header and the body (the whole batch).
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[&TIMESTAMP])
    }

    fn sample_id(&self) -> String {
        random_alnum(22)
    }

    fn sample_type(&self) -> &'static str {
        "delivered"
    }

    /// A batch of one event (SendGrid always posts an array).
    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!([{
            "email": "customer@example.com",
            "timestamp": now_secs,
            "smtp-id": format!("<{}@example.com>", random_alnum(16)),
            "event": event_type,
            "category": ["receipt"],
            "sg_event_id": event_id,
            "sg_message_id": format!("{}.filter0001", random_alnum(22)),
            "response": "250 OK",
            "tenant": "acme"
        }]))
    }
}

#[cfg(test)]
mod tests;
