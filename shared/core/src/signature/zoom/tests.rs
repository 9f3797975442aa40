//! Zoom: vectors computed with `openssl dgst -sha256 -hmac` (an independent implementation of
//! the algorithm of Zoom's webhook sample), every bad-input class, and the URL validation
//! handshake answered with the secret that signed it.

use super::super::test_support::*;
use super::*;
use crate::signature::SignatureError;
use http::{HeaderMap, HeaderValue};

const SIGNATURE_LABEL: &str = "x-zm-signature";
const TIMESTAMP_LABEL: &str = "x-zm-request-timestamp";

const SECRET: &str = "zoom-secret-token";
const TS: &str = "1658940994";
const T: i64 = 1_658_940_994;
const BODY: &[u8] = br#"{"event":"meeting.started","event_ts":1658940994123,"payload":{"account_id":"AAAAAAAAAAAAAAAAAAAAAA"}}"#;
/// `printf 'v0:1658940994:%s' "$BODY" | openssl dgst -sha256 -hmac zoom-secret-token`
const EXPECTED: &str = "v0=0a91c7c206b42a3b8e6d3fc5ea2d354074e266575483eed11f11e25e1f9f5dc0";

const VALIDATION_TS: &str = "1654503849";
const VALIDATION_BODY: &[u8] = br#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
/// Its signature with `zoom-secret-token` and with `old-zoom-token`.
const VALIDATION_SIG: &str = "v0=fd1376db6cb3f4672c7ade33cc13700261143da5fd8058e52b5dd50c8bf002fe";
const VALIDATION_SIG_OLD: &str =
    "v0=fb954eb13bfd0e3eae560a0d033a5089d0c3466437347b89ce34b31310f601b9";
/// `printf qgg8vlvZRS6UYooatFL8Aw | openssl dgst -sha256 -hmac …` with each secret.
const ENCRYPTED: &str = "d9e0d764a78494688ba3f2d5c0ed4ca311394b4834d959759213424d2df961e3";
const ENCRYPTED_OLD: &str = "b4e88899c71ff15084005be37ed915464a50d455a3ff9164b634061059aac9c6";

fn request(ts: &str, sig: &str) -> HeaderMap {
    headers(&[("x-zm-request-timestamp", ts), ("x-zm-signature", sig)])
}

fn bad(header: &'static str, reason: &'static str) -> Result<(), SignatureError> {
    Err(malformed(header, reason))
}

#[test]
fn vector_verifies_and_signs() {
    let v = verifier("zoom", &[SECRET]);
    assert_eq!(
        format!(
            "v0={}",
            hex::encode(reference_mac(
                SECRET.as_bytes(),
                &[b"v0:1658940994:" as &[u8], BODY].concat()
            ))
        ),
        EXPECTED
    );
    assert_eq!(v.verify_at(&request(TS, EXPECTED), BODY, T), Ok(()));
    let out = v.sign_at(BODY, T, "ignored");
    assert_eq!(value_of(&out, "x-zm-signature"), EXPECTED);
    assert_eq!(value_of(&out, "x-zm-request-timestamp"), TS);
}

#[test]
fn table() {
    let v = verifier("zoom", &[SECRET]);
    let hex = &EXPECTED[3..];
    let cases: Vec<(&str, String, &[u8], i64, Outcome)> = vec![
        (TS, EXPECTED.into(), BODY, T, Ok(())),
        (TS, format!("v0={}", hex.to_uppercase()), BODY, T, Ok(())),
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
        // Tampered body or timestamp, wrong secret: mismatch (before the tolerance).
        (
            TS,
            EXPECTED.into(),
            &BODY[1..],
            T,
            Err(SignatureError::Mismatch),
        ),
        (
            "1658940995",
            EXPECTED.into(),
            BODY,
            T,
            Err(SignatureError::Mismatch),
        ),
        (
            TS,
            VALIDATION_SIG.into(),
            BODY,
            T + 100_000,
            Err(SignatureError::Mismatch),
        ),
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
            format!("v0={}", &hex[..62]),
            BODY,
            T,
            bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
        ),
        (
            TS,
            format!("v0={}q", &hex[..63]),
            BODY,
            T,
            bad(SIGNATURE_LABEL, "the signature is not hexadecimal"),
        ),
        (
            "",
            EXPECTED.into(),
            BODY,
            T,
            bad(TIMESTAMP_LABEL, "the value is empty"),
        ),
        (
            "soon",
            EXPECTED.into(),
            BODY,
            T,
            bad(
                TIMESTAMP_LABEL,
                "the timestamp is not a whole number of seconds",
            ),
        ),
        (
            "1658940994123",
            EXPECTED.into(),
            BODY,
            T,
            Err(SignatureError::Mismatch),
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
    let v = verifier("zoom", &[SECRET]);
    let cases: Vec<(Vec<(&str, &str)>, SignatureError)> = vec![
        (
            vec![],
            SignatureError::Missing {
                header: SIGNATURE_LABEL,
            },
        ),
        (
            vec![("x-zm-signature", EXPECTED)],
            SignatureError::Missing {
                header: TIMESTAMP_LABEL,
            },
        ),
        (
            vec![
                ("x-zm-request-timestamp", TS),
                ("x-zm-signature", EXPECTED),
                ("x-zm-signature", EXPECTED),
            ],
            SignatureError::Duplicated {
                header: SIGNATURE_LABEL,
            },
        ),
        (
            vec![
                ("x-zm-request-timestamp", TS),
                ("x-zm-request-timestamp", TS),
                ("x-zm-signature", EXPECTED),
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
        "x-zm-signature",
        HeaderValue::from_bytes(b"v0=\xfe").unwrap(),
    );
    assert_eq!(
        v.verify_at(&map, BODY, T),
        bad(SIGNATURE_LABEL, "the value is not visible ASCII")
    );
}

fn handshake_of(v: &dyn Scheme, sig: &str, body: &[u8]) -> Option<HandshakeReply> {
    let headers = request(VALIDATION_TS, sig);
    let handshake = v.handshake(Request::new(&headers, body, 1_654_503_849))?;
    let reply = futures_block(handshake.resolve()).ok();
    reply
}

fn futures_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn url_validation_is_answered_with_the_secret_that_signed_it() {
    let v = verifier("zoom", &[SECRET]);
    let headers = request(VALIDATION_TS, VALIDATION_SIG);
    assert_eq!(
        v.verify_at(&headers, VALIDATION_BODY, 1_654_503_849),
        Ok(())
    );
    let reply = handshake_of(v.as_ref(), VALIDATION_SIG, VALIDATION_BODY).unwrap();
    assert_eq!(
        (reply.status, reply.content_type),
        (200, Some("application/json"))
    );
    let answer: serde_json::Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        answer,
        json!({"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": ENCRYPTED})
    );
    // During a rotation the request signed with the old token is answered with the old token.
    let rotated = verifier("zoom", &[SECRET, "old-zoom-token"]);
    let old = handshake_of(rotated.as_ref(), VALIDATION_SIG_OLD, VALIDATION_BODY).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&old.body).unwrap();
    assert_eq!(answer["encryptedToken"], ENCRYPTED_OLD);
    // Events are not handshakes; neither is a body that only mentions the event name.
    assert!(v
        .handshake(Request::new(&request(TS, EXPECTED), BODY, T))
        .is_none());
    let mention = br#"{"event":"meeting.started","payload":{"note":"endpoint.url_validation"}}"#;
    assert!(handshake_of(v.as_ref(), VALIDATION_SIG, mention).is_none());
    assert!(
        format!("{reply:?}").contains("body_len"),
        "the token is not in Debug"
    );
    assert!(!format!("{reply:?}").contains(ENCRYPTED));
}
