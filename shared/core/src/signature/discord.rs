//! Discord (interactions and webhook events): `X-Signature-Ed25519: <hex>` and
//! `X-Signature-Timestamp: <unix>`, a preset of the timestamped asymmetric scheme
//! (`asymmetric.rs`).
//!
//! The signature is Ed25519 over the timestamp header's text followed by the raw body, hex-encoded
//! (64 bytes). The configured key is the application's public key as Discord shows it (64 hex
//! digits); for local use and tests, a private key (128 hex digits: seed and public key) verifies
//! with its public half and signs. After the signature, the timestamp must be within the
//! tolerance on both sides (Discord's libraries do not check it; a replay would still be a
//! duplicate).
//!
//! Event id: the body's SHA-256 (webhook events carry no id); no type (set `event_type` to
//! `{"json_pointer": "/event/type"}` for webhook events; a PING has none). Answering PINGs is the
//! ingest's business, not the scheme's. Sample: an `APPLICATION_AUTHORIZED` webhook event.

use std::sync::Arc;

use http::HeaderName;
use serde_json::json;

use super::asymmetric::{
    self, Algorithm, AsymmetricPreset, KeyBytes, SignatureBytes, ED25519_KEY_LEN, ED25519_SIG_LEN,
    MAX_SIGNATURE_LEN,
};
use super::handshake::{object_containing, Handshake, HandshakeReply};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
use super::{Request, Scheme, SchemeError, Spec};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

const SIGNATURE_LABEL: &str = "X-Signature-Ed25519";
const TIMESTAMP_LABEL: &str = "X-Signature-Timestamp";

static DISCORD: AsymmetricPreset = AsymmetricPreset {
    name: "Discord",
    algorithm: Algorithm::Ed25519,
    signature: HeaderName::from_static("x-signature-ed25519"),
    signature_label: SIGNATURE_LABEL,
    timestamp: HeaderName::from_static("x-signature-timestamp"),
    timestamp_label: TIMESTAMP_LABEL,
    signed_headers: [
        HeaderName::from_static("x-signature-ed25519"),
        HeaderName::from_static("x-signature-timestamp"),
    ],
    decode_key,
    decode_signature,
    encode_signature: |sig| hex::encode(sig),
    event_id: || FieldRule::BodySha256,
    event_type: None,
    batches: false,
    handshake: Some(handshake),
};

/// The Discord scheme of one source: secrets are application public keys (hex), or for local use
/// a private key; no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    asymmetric::preset(&DISCORD, spec)
}

/// 64 hex digits: a public key; 128: a private key (seed ‖ public key).
fn decode_key(secret: &[u8]) -> Result<KeyBytes, &'static str> {
    const NOT_HEX: &str = "the key is not hexadecimal";
    let text = std::str::from_utf8(secret).map_err(|_| NOT_HEX)?.trim();
    let bytes = hex::decode(text).map_err(|_| NOT_HEX)?;
    match bytes.len() {
        ED25519_KEY_LEN => Ok(KeyBytes::Public(bytes)),
        64 => Ok(KeyBytes::Private(bytes)),
        _ => Err("the key is neither a public key (64 hex digits) nor a private key (128)"),
    }
}

/// 128 hex digits (either case): the 64 bytes of an Ed25519 signature.
fn decode_signature(text: &str) -> Result<SignatureBytes, &'static str> {
    let mut sig = SignatureBytes {
        buf: [0; MAX_SIGNATURE_LEN],
        len: ED25519_SIG_LEN,
    };
    let buf = sig.buf.get_mut(..ED25519_SIG_LEN).ok_or(NOT_A_SIGNATURE)?;
    hex::decode_to_slice(text, buf).map_err(|_| NOT_A_SIGNATURE)?;
    Ok(sig)
}

const NOT_A_SIGNATURE: &str = "the signature is not 128 hex digits";

/// PINGs: an interaction's (type 1, no `event`) and a webhook events endpoint's (type 0).
fn handshake(request: Request<'_>) -> Option<Handshake<'_>> {
    let body = object_containing(request.body, b"\"type\"")?;
    if body.contains_key("event") {
        return None;
    }
    match body.get("type")?.as_u64()? {
        0 => Some(HandshakeReply::no_content("discord webhook ping").into()),
        1 => Some(HandshakeReply::json("discord interaction ping", &json!({"type": 1})).into()),
        _ => None,
    }
}

/// Discord's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        // Discord ids are snowflakes: decimal digits.
        (0..19)
            .map(|_| char::from(b'0' + fastrand::u8(0..10)))
            .collect()
    }

    fn sample_type(&self) -> &'static str {
        "APPLICATION_AUTHORIZED"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "version": 1,
            "application_id": event_id,
            "type": 1,
            "event": {
                "type": event_type,
                "timestamp": rfc3339(now_secs),
                "data": {
                    "integration_type": 0,
                    "scopes": ["applications.commands"],
                    "user": {"id": event_id, "username": format!("user_{}", random_alnum(6))}
                }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{SignatureError, Unsigned};
    use super::*;
    use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};

    const T: i64 = 1_700_000_000;
    const BODY: &[u8] = br#"{"version":1,"type":0}"#;

    /// A fresh key pair and its private key as configured (seed ‖ public key, hex).
    fn pair() -> (Ed25519KeyPair, String) {
        let seed: [u8; 32] = std::array::from_fn(|_| fastrand::u8(..));
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        let private = format!(
            "{}{}",
            hex::encode(seed),
            hex::encode(pair.public_key().as_ref())
        );
        (pair, private)
    }

    fn public_of(private: &str) -> &str {
        &private[64..]
    }

    fn sig(pair: &Ed25519KeyPair, ts: &str, body: &[u8]) -> String {
        hex::encode(pair.sign(&[ts.as_bytes(), body].concat()).as_ref())
    }

    fn request(sig: &str, ts: &str) -> http::HeaderMap {
        headers(&[(SIGNATURE_LABEL, sig), (TIMESTAMP_LABEL, ts)])
    }

    #[test]
    fn table() {
        let (other, _) = pair();
        let (pair, private) = pair();
        let v = verifier("discord", &[public_of(&private)]);
        let good = sig(&pair, "1700000000", BODY);
        let bad = |header, reason| Err(malformed(header, reason));
        let cases: Vec<(http::HeaderMap, &[u8], i64, Outcome)> = vec![
            (request(&good, "1700000000"), BODY, T, Ok(())),
            (request(&good.to_uppercase(), "1700000000"), BODY, T, Ok(())),
            (request(&good, "1700000000"), BODY, T + 300, Ok(())),
            (
                request(&good, "1700000000"),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                request(&good, "1700000000"),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                request(&good, "1700000001"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                request(&good, "1700000000"),
                b"{}",
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                request(&sig(&other, "1700000000", BODY), "1700000000"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                request(&good[..126], "1700000000"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 128 hex digits"),
            ),
            (
                request(&format!("{}zz", &good[..126]), "1700000000"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 128 hex digits"),
            ),
            (
                request(&good, "17e8"),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                headers(&[(TIMESTAMP_LABEL, "1700000000")]),
                BODY,
                T,
                Err(SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                }),
            ),
            (
                headers(&[(SIGNATURE_LABEL, &good)]),
                BODY,
                T,
                Err(SignatureError::Missing {
                    header: TIMESTAMP_LABEL,
                }),
            ),
            (
                headers(&[
                    (SIGNATURE_LABEL, &good),
                    (SIGNATURE_LABEL, &good),
                    (TIMESTAMP_LABEL, "1700000000"),
                ]),
                BODY,
                T,
                Err(SignatureError::Duplicated {
                    header: SIGNATURE_LABEL,
                }),
            ),
            (
                headers(&[
                    (SIGNATURE_LABEL, &good),
                    (TIMESTAMP_LABEL, "1700000000"),
                    (TIMESTAMP_LABEL, "1700000000"),
                ]),
                BODY,
                T,
                Err(SignatureError::Duplicated {
                    header: TIMESTAMP_LABEL,
                }),
            ),
        ];
        for (h, body, now, expected) in cases {
            assert_eq!(v.verify_at(&h, body, now), expected, "{h:?}");
        }
    }

    #[test]
    fn keys_public_verify_private_sign() {
        let (_, private) = pair();
        let public = public_of(&private);
        let signing = verifier("discord", &[&private]);
        let map = signed(signing.sign_at(BODY, T, ""));
        assert_eq!(
            verifier("discord", &[public]).verify_at(&map, BODY, T),
            Ok(())
        );
        assert!(verifier("discord", &[public])
            .sign(&Unsigned::new(BODY, T, ""))
            .is_err());
        for bad in ["zz", &public[..62], "00"] {
            assert!(matches!(
                try_scheme("discord", serde_json::json!({}), &[bad], TOLERANCE),
                Err(SchemeError::Invalid { index: 0, .. })
            ));
        }
    }

    #[test]
    fn pings_are_answered_as_discord_asks() {
        let (_, private) = pair();
        let v = verifier("discord", &[&private]);
        let reply = |body: &[u8]| {
            let map = signed(v.sign_at(body, T, ""));
            assert_eq!(v.verify_at(&map, body, T), Ok(()));
            let reply = match v.handshake(Request::new(&map, body, T)) {
                Some(Handshake::Ready(Ok(reply))) => Some(reply),
                None => None,
                other => panic!("{other:?}"),
            };
            reply
        };
        let interaction = br#"{"app_permissions":"0","application_id":"123","id":"456","token":"tok","type":1,"version":1}"#;
        let r = reply(interaction).unwrap();
        assert_eq!((r.kind, r.status), ("discord interaction ping", 200));
        assert_eq!(r.body, r#"{"type":1}"#);
        let webhook = br#"{"version":1,"application_id":"123","type":0}"#;
        let r = reply(webhook).unwrap();
        assert_eq!((r.status, r.content_type, r.body.as_str()), (204, None, ""));
        // A webhook event (type 1 with an `event`), a command (type 2), not JSON: events.
        let event = br#"{"version":1,"application_id":"123","type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}"#;
        let command = br#"{"id":"1","type":2,"data":{"name":"hi"}}"#;
        for body in [&event[..], &command[..], b"type", b"{\"type\":3}"] {
            assert!(reply(body).is_none(), "{}", String::from_utf8_lossy(body));
        }
    }
}
