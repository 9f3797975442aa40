//! Mailgun: the documented algorithm (vector computed with Python's `hmac`), every bad-input
//! class of a signature inside the body, and token replays answered as duplicates.

use super::super::test_support::*;
use super::*;
use serde_json::json;

const KEY: &str = "mailgun-test-signing-key";
// Mailgun's documented example token and timestamp; the signature computed with
// `hmac.new(b"mailgun-test-signing-key", b"1770920772" + token, sha256).hexdigest()`.
const TOKEN: &str = "e0b5477167110d68991efc6b9f89f0a11066af27834600e123";
const TS: i64 = 1_770_920_772;
const SIG: &str = "416630564d93ebebfac00deefc35d66cbe973cae8f452e99f119a34db3b6a166";
const PARENT_SIG: &str = "b8d3ed5cee5ec22a672b7530b3d8ce01984e584ac83d52b3fc39fd145e1639c4";

fn body(signature: serde_json::Value) -> Vec<u8> {
    json!({"signature": signature, "event-data": {"event": "delivered", "id": "ev1"}})
        .to_string()
        .into_bytes()
}

fn good() -> serde_json::Value {
    json!({"timestamp": "1770920772", "token": TOKEN, "signature": SIG})
}

fn check(body: &[u8], now: i64) -> Outcome {
    verifier("mailgun", &[KEY]).verify_at(&headers(&[]), body, now)
}

fn field(field: &'static str, reason: &'static str) -> Outcome {
    Err(SignatureError::MalformedField { field, reason })
}

#[test]
fn documented_algorithm() {
    assert_eq!(check(&body(good()), TS), Ok(()));
    // An integer timestamp is the same text.
    assert_eq!(
        check(
            &body(json!({"timestamp": TS, "token": TOKEN, "signature": SIG})),
            TS
        ),
        Ok(())
    );
    // A subaccount's parent signature matches the primary account's key.
    let parent = verifier("mailgun", &["other-key", "parent-key"]);
    let b = body(
        json!({"timestamp": "1770920772", "token": TOKEN, "signature": "00".repeat(32), "parent-signature": PARENT_SIG}),
    );
    assert_eq!(parent.verify_at(&headers(&[]), &b, TS), Ok(()));
    // Signing puts the same object in the body; the rest of the body is kept.
    let v = verifier("mailgun", &[KEY]);
    let signed = v
        .sign(&Unsigned::new(
            br#"{"event-data":{"event":"delivered"}}"#,
            TS,
            TOKEN,
        ))
        .unwrap();
    assert!(signed.headers.is_empty());
    let out: serde_json::Value = serde_json::from_slice(signed.body.as_ref().unwrap()).unwrap();
    assert_eq!(out["signature"], good());
    assert_eq!(out["event-data"]["event"], "delivered");
    assert!(v.sign(&Unsigned::new(b"[1]", TS, TOKEN)).is_err());
}

#[test]
fn table() {
    let mut other = good();
    other["signature"] = json!(hex::encode(reference_mac(b"wrong", b"1770920772e0b5")));
    let cases: Vec<(Vec<u8>, i64, Outcome)> = vec![
        (body(good()), TS + 300, Ok(())),
        (
            body(good()),
            TS + 301,
            Err(SignatureError::TimestampTooOld { age_secs: 301, tolerance_secs: 300 }),
        ),
        (
            body(good()),
            TS - 301,
            Err(SignatureError::TimestampInFuture { ahead_secs: 301, tolerance_secs: 300 }),
        ),
        (body(other), TS, Err(SignatureError::Mismatch)),
        (
            body(json!({"timestamp": "1770920773", "token": TOKEN, "signature": SIG})),
            TS,
            Err(SignatureError::Mismatch),
        ),
        (
            body(json!({"timestamp": "1770920772", "token": format!("{TOKEN}x"), "signature": SIG})),
            TS,
            Err(SignatureError::Mismatch),
        ),
        (
            body(json!({"timestamp": "1770920772", "token": TOKEN})),
            TS,
            Err(SignatureError::MissingField { field: SIGNATURE }),
        ),
        (
            body(json!({"timestamp": "1770920772", "signature": SIG})),
            TS,
            Err(SignatureError::MissingField { field: "signature.token" }),
        ),
        (
            body(json!({"token": TOKEN, "signature": SIG})),
            TS,
            Err(SignatureError::MissingField { field: TIMESTAMP }),
        ),
        (
            br#"{"event-data":{}}"#.to_vec(),
            TS,
            Err(SignatureError::MissingField { field: SIGNATURE_OBJECT }),
        ),
        (
            body(json!({"timestamp": "soon", "token": TOKEN, "signature": SIG})),
            TS,
            field(TIMESTAMP, "the timestamp is not a whole number of seconds"),
        ),
        (
            body(json!({"timestamp": "1770920772", "token": TOKEN, "signature": &SIG[..63]})),
            TS,
            field(SIGNATURE, "the signature has an odd number of hex digits"),
        ),
        (
            body(json!({"timestamp": "1770920772", "token": TOKEN, "signature": 7})),
            TS,
            field(SIGNATURE, "it is not a string"),
        ),
        (
            body(json!({"timestamp": "1770920772", "token": "a b", "signature": SIG})),
            TS,
            field("signature.token", "it is not 1-255 visible ASCII characters"),
        ),
        (
            body(json!("nope")),
            TS,
            field(SIGNATURE_OBJECT, "it is not an object"),
        ),
        (
            b"not json".to_vec(),
            TS,
            field(SIGNATURE_OBJECT, "the body is not a JSON object, so it carries no signature"),
        ),
        // Duplicated members: refused, whichever copy is genuine.
        (
            format!(r#"{{"signature":{{"timestamp":"1770920772","token":"{TOKEN}","signature":"{SIG}","signature":"{SIG}"}}}}"#).into_bytes(),
            TS,
            field(SIGNATURE, "it appears more than once"),
        ),
        (
            format!(r#"{{"signature":{{"timestamp":"1","timestamp":"1770920772","token":"{TOKEN}","signature":"{SIG}"}}}}"#).into_bytes(),
            TS,
            field(TIMESTAMP, "it appears more than once"),
        ),
        (
            format!(r#"{{"signature":{{}},"signature":{{"timestamp":"1770920772","token":"{TOKEN}","signature":"{SIG}"}}}}"#).into_bytes(),
            TS,
            field(SIGNATURE_OBJECT, "it appears more than once"),
        ),
    ];
    for (b, now, expected) in cases {
        assert_eq!(check(&b, now), expected, "{}", String::from_utf8_lossy(&b));
    }
}

#[test]
fn the_token_is_the_event_id_so_a_replayed_token_is_a_duplicate() {
    use crate::domain::BodyDigest;
    let v = verifier("mailgun", &[KEY]);
    assert_eq!(
        v.default_event_id(),
        FieldRule::json_pointer("/signature/token")
    );
    // The same signature object with another event: authentic signature, same id.
    let first = body(good());
    let replayed =
        json!({"signature": good(), "event-data": {"event": "delivered", "id": "forged"}})
            .to_string()
            .into_bytes();
    let id = |b: &[u8]| {
        crate::identity::identify(
            &v.default_event_id(),
            true,
            v.default_event_type().as_ref(),
            &headers(&[]),
            b,
            &BodyDigest::of(b),
        )
        .event_id
    };
    assert_eq!(check(&replayed, TS), Ok(()));
    assert_eq!(id(&first), id(&replayed));
    assert_eq!(id(&first).as_str(), TOKEN);
}

/// A retry Mailgun sends hours later with the signature it first sent: accepted under the default
/// tolerance (its retry window), refused once past it, and a source's own `tolerance_secs` wins.
#[test]
fn the_default_tolerance_covers_mailguns_retries() {
    let settings = serde_json::Map::new();
    let secrets = [super::super::Secret::from(KEY)];
    let defaulted = super::super::build(
        "mailgun",
        &Spec::new(&settings, &secrets, TOLERANCE).with_default_tolerance(),
    )
    .unwrap();
    let own = super::super::build("mailgun", &Spec::new(&settings, &secrets, TOLERANCE)).unwrap();
    let last_retry = TS + 8 * 3600;
    let window = i64::try_from(RETRY_WINDOW.as_secs()).unwrap();
    assert_eq!(
        defaulted.verify_at(&headers(&[]), &body(good()), last_retry),
        Ok(())
    );
    assert_eq!(
        defaulted.verify_at(&headers(&[]), &body(good()), TS + window + 1),
        Err(SignatureError::TimestampTooOld {
            age_secs: window + 1,
            tolerance_secs: window
        })
    );
    assert_eq!(
        own.verify_at(&headers(&[]), &body(good()), last_retry),
        Err(SignatureError::TimestampTooOld {
            age_secs: 8 * 3600,
            tolerance_secs: 300
        })
    );
}
