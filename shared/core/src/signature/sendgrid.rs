//! SendGrid Event Webhook (signed): `X-Twilio-Email-Event-Webhook-Signature: <base64>` and
//! `X-Twilio-Email-Event-Webhook-Timestamp: <unix>`, a preset of the timestamped asymmetric
//! scheme (`asymmetric.rs`).
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

use std::sync::Arc;

use base64::Engine as _;
use http::HeaderName;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::asymmetric::{
    self, Algorithm, AsymmetricPreset, KeyBytes, SignatureBytes, MAX_SIGNATURE_LEN,
};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use super::{Scheme, SchemeError, Spec};
use crate::identity::FieldRule;

const SIGNATURE_LABEL: &str = "X-Twilio-Email-Event-Webhook-Signature";
const TIMESTAMP_LABEL: &str = "X-Twilio-Email-Event-Webhook-Timestamp";
/// A DER ECDSA P-256 signature is at most 72 bytes.
const MAX_SIG_LEN: usize = 72;

static SENDGRID: AsymmetricPreset = AsymmetricPreset {
    name: "Sendgrid",
    algorithm: Algorithm::EcdsaP256Sha256,
    signature: HeaderName::from_static("x-twilio-email-event-webhook-signature"),
    signature_label: SIGNATURE_LABEL,
    timestamp: HeaderName::from_static("x-twilio-email-event-webhook-timestamp"),
    timestamp_label: TIMESTAMP_LABEL,
    signed_headers: [
        HeaderName::from_static("x-twilio-email-event-webhook-signature"),
        HeaderName::from_static("x-twilio-email-event-webhook-timestamp"),
    ],
    decode_key,
    decode_signature,
    encode_signature,
    event_id,
    // Of each event of the batch.
    event_type: Some("/event"),
    batches: true,
    handshake: None,
};

/// The SendGrid scheme of one source: secrets are Verification Keys (base64 DER public keys), or
/// for local use a private key; no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    asymmetric::preset(&SENDGRID, spec)
}

/// Of each event of the batch: its `sg_event_id`, else its hash.
fn event_id() -> FieldRule {
    FieldRule::FirstOf(vec![
        FieldRule::json_pointer("/sg_event_id"),
        FieldRule::BodySha256,
    ])
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

/// Standard base64 of a DER ECDSA signature (a SEQUENCE, at most [`MAX_SIG_LEN`] bytes).
fn decode_signature(text: &str) -> Result<SignatureBytes, &'static str> {
    const NOT_A_SIGNATURE: &str = "the signature is not base64 of a DER ECDSA signature";
    let mut sig = SignatureBytes {
        buf: [0; MAX_SIGNATURE_LEN],
        len: 0,
    };
    sig.len = base64::engine::general_purpose::STANDARD
        .decode_slice(text, &mut sig.buf)
        .map_err(|_| NOT_A_SIGNATURE)?;
    let der = sig.buf.get(..sig.len).ok_or(NOT_A_SIGNATURE)?;
    if der.len() > MAX_SIG_LEN || der.first() != Some(&0x30) {
        return Err(NOT_A_SIGNATURE);
    }
    Ok(sig)
}

fn encode_signature(sig: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(sig)
}

/// SendGrid's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
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
