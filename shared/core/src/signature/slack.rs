//! Slack: `X-Slack-Signature: v0=<hex>` with `X-Slack-Request-Timestamp: <unix>`: a preset of
//! the `v0` scheme (`v0.rs`).
//!
//! The MAC is HMAC-SHA256, keyed with the signing secret's UTF-8 bytes, over
//! `"v0:{timestamp}:{raw body}"`, where the timestamp is the header's text exactly as sent (as
//! Slack's SDKs sign it; it must be digits only). A matching signature must then be within the
//! tolerance on both sides.
//!
//! Event id: the SHA-256 of the body (Slack's requests carry no id header); no type. Sample: an
//! Events API `event_callback` (`app_mention`) with an `Ev…` event id.
//!
//! **Handshake**: the Events API's `{"type": "url_verification", "challenge": "…"}` (signed like
//! every request) is answered `{"challenge": "…"}` and stored as nothing.

use std::sync::Arc;

use http::HeaderName;
use serde_json::json;

use super::handshake::{object_containing, Handshake, HandshakeReply};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
use super::v0::{self, V0Headers, V0Preset, V0};
use super::{Request, Scheme, SchemeError, Spec};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};

static SLACK: V0Preset = V0Preset {
    name: "Slack",
    headers: V0Headers {
        signature: HeaderName::from_static("x-slack-signature"),
        signature_label: "X-Slack-Signature",
        timestamp: HeaderName::from_static("x-slack-request-timestamp"),
        timestamp_label: "X-Slack-Request-Timestamp",
    },
    signed_headers: [
        HeaderName::from_static("x-slack-signature"),
        HeaderName::from_static("x-slack-request-timestamp"),
    ],
    event_type: None,
    handshake,
};

/// The Slack scheme of one source: secrets used as-is; no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    v0::preset(&SLACK, spec)
}

/// `url_verification`: the challenge, echoed.
fn handshake<'a>(_: &'a V0, request: Request<'a>) -> Option<Handshake<'a>> {
    let body = object_containing(request.body, b"url_verification")?;
    if body.get("type")?.as_str()? != "url_verification" {
        return None;
    }
    let challenge = body.get("challenge")?.as_str()?;
    let answer = json!({ "challenge": challenge });
    Some(HandshakeReply::json("slack url_verification", &answer).into())
}

/// Slack's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        format!("Ev{}", random_alnum(10).to_ascii_uppercase())
    }

    fn sample_type(&self) -> &'static str {
        "app_mention"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "token": "verification-token-unused",
            "team_id": "T0001",
            "api_app_id": "A0001",
            "event": {"type": event_type, "user": "U0001", "text": "hello from inboxctl", "ts": format!("{now_secs}.000100"), "channel": "C0001"},
            "type": "event_callback",
            "event_id": event_id,
            "event_time": now_secs
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::signature::SignatureError;
    use http::{HeaderMap, HeaderValue};

    const SIGNATURE_LABEL: &str = "X-Slack-Signature";
    const TIMESTAMP_LABEL: &str = "X-Slack-Request-Timestamp";

    // The example of Slack's "Verifying requests from Slack" documentation.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const TS: &str = "1531420618";
    const T: i64 = 1_531_420_618;
    const BODY: &[u8] = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const EXPECTED: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn request(ts: &str, sig: &str) -> HeaderMap {
        headers(&[
            ("X-Slack-Request-Timestamp", ts),
            ("X-Slack-Signature", sig),
        ])
    }

    fn sig(secret: &str, ts: &str, body: &[u8]) -> String {
        let mut message = format!("v0:{ts}:").into_bytes();
        message.extend_from_slice(body);
        format!(
            "v0={}",
            hex::encode(reference_mac(secret.as_bytes(), &message))
        )
    }

    fn bad(header: &'static str, reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(header, reason))
    }

    #[test]
    fn documented_vector() {
        let v = verifier("slack", &[SECRET]);
        assert_eq!(sig(SECRET, TS, BODY), EXPECTED);
        assert_eq!(v.verify_at(&request(TS, EXPECTED), BODY, T), Ok(()));
        let out = v.sign_at(BODY, T, "ignored");
        assert_eq!(value_of(&out, "x-slack-signature"), EXPECTED);
        assert_eq!(value_of(&out, "x-slack-request-timestamp"), TS);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn table() {
        let v = verifier("slack", &[SECRET]);
        let hex = &EXPECTED[3..];
        let other = sig("other secret", TS, BODY);
        let zero_padded = sig(SECRET, "01531420618", BODY);
        let cases: Vec<(&str, String, &[u8], i64, Outcome)> = vec![
            (TS, EXPECTED.into(), BODY, T, Ok(())),
            (TS, format!("v0={}", hex.to_uppercase()), BODY, T, Ok(())),
            // The timestamp text is signed as sent.
            ("01531420618", zero_padded.clone(), BODY, T, Ok(())),
            (
                "01531420618",
                EXPECTED.into(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            // Tolerance: exactly 300 s passes on both sides, 301 fails.
            (TS, EXPECTED.into(), BODY, T + 300, Ok(())),
            (TS, EXPECTED.into(), BODY, T - 300, Ok(())),
            (
                TS,
                EXPECTED.into(),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                TS,
                EXPECTED.into(),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            // Mismatch, checked before tolerance.
            (TS, other.clone(), BODY, T, Err(SignatureError::Mismatch)),
            (TS, other, BODY, T + 100_000, Err(SignatureError::Mismatch)),
            (
                TS,
                EXPECTED.into(),
                &BODY[1..],
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                "1531420619",
                EXPECTED.into(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            // Malformed signature.
            (
                TS,
                "v0=".into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is empty"),
            ),
            (
                TS,
                hex.into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the value does not start with `v0=`"),
            ),
            (
                TS,
                format!("v1={hex}"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the value does not start with `v0=`"),
            ),
            (
                TS,
                format!("v0={}", &hex[..62]),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
            ),
            (
                TS,
                format!("v0={}", &hex[..63]),
                BODY,
                T,
                bad(
                    SIGNATURE_LABEL,
                    "the signature has an odd number of hex digits",
                ),
            ),
            (
                TS,
                format!("v0={}q", &hex[..63]),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not hexadecimal"),
            ),
            // Malformed timestamp (reported before the signature is decoded).
            (
                "",
                EXPECTED.into(),
                BODY,
                T,
                bad(TIMESTAMP_LABEL, "the value is empty"),
            ),
            (
                "soon",
                "v0=".into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                "-1531420618",
                EXPECTED.into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                "1531420618.5",
                EXPECTED.into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
        ];
        for (ts, signature, body, now, expected) in cases {
            assert_eq!(
                v.verify_at(&request(ts, &signature), body, now),
                expected,
                "{ts:?} {signature:?} now={now}"
            );
        }
    }

    #[test]
    fn missing_and_duplicated_headers() {
        let v = verifier("slack", &[SECRET]);
        let cases: Vec<(Vec<(&str, &str)>, SignatureError)> = vec![
            (
                vec![],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![("x-slack-request-timestamp", TS)],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![("x-slack-signature", EXPECTED)],
                SignatureError::Missing {
                    header: TIMESTAMP_LABEL,
                },
            ),
            (
                vec![
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-signature", EXPECTED),
                    ("x-slack-signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-request-timestamp", TS),
                    ("x-slack-signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: TIMESTAMP_LABEL,
                },
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                v.verify_at(&headers(&pairs), BODY, T),
                Err(expected),
                "{pairs:?}"
            );
        }
        let mut map = request(TS, EXPECTED);
        map.insert(
            "x-slack-signature",
            HeaderValue::from_bytes(b"v0=\xfe").unwrap(),
        );
        assert_eq!(
            v.verify_at(&map, BODY, T),
            bad(SIGNATURE_LABEL, "the value is not visible ASCII")
        );
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier("slack", &["rotated in", SECRET]);
        assert_eq!(v.verify_at(&request(TS, EXPECTED), BODY, T), Ok(()));
        let v = verifier("slack", &["rotated in", "rotated out"]);
        assert_eq!(
            v.verify_at(&request(TS, EXPECTED), BODY, T),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn url_verification_is_echoed_and_events_are_not_handshakes() {
        let v = verifier("slack", &[SECRET]);
        let body = br#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
        let map = signed(v.sign_at(body, T, ""));
        assert_eq!(v.verify_at(&map, body, T), Ok(()));
        let reply = v.handshake(Request::new(&map, body, T)).unwrap();
        let Handshake::Ready(Ok(reply)) = reply else {
            panic!("decided at once: {reply:?}");
        };
        assert_eq!((reply.kind, reply.status), ("slack url_verification", 200));
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&reply.body).unwrap(),
            json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
        );
        let event =
            br#"{"type":"event_callback","event":{"type":"message","text":"url_verification"}}"#;
        for body in [&event[..], BODY, b"", BINARY_BODY] {
            assert!(v.handshake(Request::new(&map, body, T)).is_none());
        }
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier("slack", &[SECRET]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign_at(body, T, ""));
            assert_eq!(v.verify_at(&map, body, T), Ok(()));
            let mut tampered = body.to_vec();
            tampered.push(0);
            assert_eq!(
                v.verify_at(&map, &tampered, T),
                Err(SignatureError::Mismatch)
            );
        }
        assert_eq!(
            v.verify_at(&request(TS, &sig(SECRET, TS, BINARY_BODY)), BINARY_BODY, T),
            Ok(())
        );
    }
}
