//! Standard Webhooks: `v1a` (Ed25519) signatures with `whpk_`/`whsk_` keys, mixed with `v1`, and
//! the header names as configuration (`header_prefix`: Svix/Resend's `svix-*`).

use super::super::test_support::*;
use super::*;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS: &str = "1614265330";
const T: i64 = 1_614_265_330;
const BODY: &[u8] = br#"{"test": 2432232314}"#;
const V1: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

/// A fresh key pair: (`whsk_` private key, `whpk_` public key, the pair).
fn keys() -> (String, String, Ed25519KeyPair) {
    let seed: [u8; 32] = std::array::from_fn(|_| fastrand::u8(..));
    let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    (
        format!("whsk_{}", STANDARD.encode(seed)),
        format!("whpk_{}", STANDARD.encode(pair.public_key().as_ref())),
        pair,
    )
}

fn v1a(pair: &Ed25519KeyPair, id: &str, ts: &str, body: &[u8]) -> String {
    let message = [id.as_bytes(), b".", ts.as_bytes(), b".", body].concat();
    format!("v1a,{}", STANDARD.encode(pair.sign(&message).as_ref()))
}

fn request(sig: &str) -> http::HeaderMap {
    headers(&[
        ("webhook-id", ID),
        ("webhook-timestamp", TS),
        ("webhook-signature", sig),
    ])
}

#[test]
fn v1a_signatures_verify_with_public_keys() {
    let (_, public, pair) = keys();
    let (_, other_public, other_pair) = keys();
    let good = v1a(&pair, ID, TS, BODY);
    let v = verifier("standard-webhooks", &[&public]);
    let bad = |reason| Err(malformed(SIGNATURE_LABEL, reason));
    let sig64 = "a `v1a` signature is not base64 of 64 bytes";
    let cases: Vec<(String, &[u8], i64, Outcome)> = vec![
        (good.clone(), BODY, T, Ok(())),
        (format!("{V1} {good}"), BODY, T, Ok(())),
        (
            format!("{} {good}", v1a(&other_pair, ID, TS, BODY)),
            BODY,
            T,
            Ok(()),
        ),
        (good.clone(), BODY, T + 300, Ok(())),
        (
            good.clone(),
            BODY,
            T + 301,
            Err(SignatureError::TimestampTooOld {
                age_secs: 301,
                tolerance_secs: 300,
            }),
        ),
        (good.clone(), b"{}", T, Err(SignatureError::Mismatch)),
        (
            v1a(&other_pair, ID, TS, BODY),
            BODY,
            T,
            Err(SignatureError::Mismatch),
        ),
        (
            v1a(&pair, "msg_other", TS, BODY),
            BODY,
            T,
            Err(SignatureError::Mismatch),
        ),
        // A v1 entry is checked for form (no symmetric key to verify it with).
        (V1.to_owned(), BODY, T, bad("no `v1a` signature")),
        ("v1a,".to_owned(), BODY, T, bad(sig64)),
        (
            format!("v1a,{}", STANDARD.encode([1u8; 32])),
            BODY,
            T,
            bad(sig64),
        ),
        // An unusable candidate beside a valid one is skipped, as the libraries do.
        (format!("{good} v1a,!!!!"), BODY, T, Ok(())),
    ];
    for (sig, body, now, expected) in cases {
        assert_eq!(v.verify_at(&request(&sig), body, now), expected, "{sig}");
    }
    // Rotation across key kinds: any configured key verifies.
    let mixed = verifier("standard-webhooks", &[SECRET, &other_public, &public]);
    assert_eq!(mixed.verify_at(&request(&good), BODY, T), Ok(()));
    assert_eq!(mixed.verify_at(&request(V1), BODY, T), Ok(()));
    assert_eq!(
        mixed.verify_at(&request("v2,abc"), BODY, T),
        Err(malformed(SIGNATURE_LABEL, "no `v1` or `v1a` signature"))
    );
    // Without an asymmetric key, v1a entries are ignored as before.
    assert_eq!(
        verifier("standard-webhooks", &[SECRET]).verify_at(&request(&good), BODY, T),
        Err(malformed(SIGNATURE_LABEL, "no `v1` signature"))
    );
}

#[test]
fn whsk_signs_v1a_and_whpk_only_verifies() {
    let (private, public, pair) = keys();
    let signer = verifier("standard-webhooks", &[&private]);
    let out = signer.sign_at(BODY, T, ID);
    assert_eq!(
        value_of(&out, "webhook-signature"),
        v1a(&pair, ID, TS, BODY)
    );
    assert_eq!(
        verifier("standard-webhooks", &[&public]).verify_at(&signed(out), BODY, T),
        Ok(())
    );
    assert!(verifier("standard-webhooks", &[&public])
        .sign(&Unsigned::new(BODY, T, ID))
        .is_err());
    // The first secret decides: a symmetric first secret signs v1.
    let out = verifier("standard-webhooks", &[SECRET, &private]).sign_at(BODY, T, ID);
    assert_eq!(value_of(&out, "webhook-signature"), V1);
    // 64-byte private keys (seed and public key) are accepted and checked.
    let full = format!(
        "whsk_{}",
        STANDARD.encode(
            [
                &STANDARD.decode(&private[5..]).unwrap()[..],
                pair.public_key().as_ref()
            ]
            .concat()
        )
    );
    assert!(try_scheme("standard-webhooks", json!({}), &[&full], TOLERANCE).is_ok());
    for (secrets, index) in [
        (vec![SECRET, "whpk_!!!"], 1),
        (vec!["whpk_AAAA", SECRET], 0),
        (vec![SECRET, SECRET, "whsk_AAAA"], 2),
    ] {
        let e = try_scheme("standard-webhooks", json!({}), &secrets, TOLERANCE).unwrap_err();
        assert!(
            matches!(e, SchemeError::Invalid { index: i, .. } if i == index),
            "{secrets:?}: {e:?}"
        );
    }
}

#[test]
fn header_names_are_configuration() {
    // Resend (through Svix): the same scheme, `svix-*` headers.
    let svix = try_scheme(
        "standard-webhooks",
        json!({"header_prefix": "svix-"}),
        &[SECRET],
        TOLERANCE,
    )
    .unwrap();
    let map = headers(&[
        ("svix-id", ID),
        ("svix-timestamp", TS),
        ("svix-signature", V1),
    ]);
    assert_eq!(svix.verify_at(&map, BODY, T), Ok(()));
    assert_eq!(
        svix.verify_at(&request(V1), BODY, T),
        Err(SignatureError::Missing {
            header: "svix-signature"
        })
    );
    let twice = headers(&[
        ("svix-id", ID),
        ("svix-timestamp", TS),
        ("svix-signature", V1),
        ("Svix-Signature", V1),
    ]);
    assert_eq!(
        svix.verify_at(&twice, BODY, T),
        Err(SignatureError::Duplicated {
            header: "svix-signature"
        })
    );
    assert_eq!(
        svix.signed_headers(),
        ["svix-id", "svix-timestamp", "svix-signature"]
    );
    assert_eq!(svix.default_event_id(), FieldRule::header("svix-id"));
    let out = svix.sign_at(BODY, T, ID);
    assert_eq!(value_of(&out, "svix-signature"), V1);
    assert_eq!(value_of(&out, "svix-id"), ID);
    // Upper case is fine; a prefix that makes no header name is not.
    assert!(try_scheme(
        "standard-webhooks",
        json!({"header_prefix": "Svix-"}),
        &[SECRET],
        TOLERANCE
    )
    .is_ok());
    assert!(matches!(
        try_scheme(
            "standard-webhooks",
            json!({"header_prefix": "bad prefix "}),
            &[SECRET],
            TOLERANCE
        ),
        Err(SchemeError::InvalidConfig { .. })
    ));
}
