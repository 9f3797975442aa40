//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=<hex>]`, a preset of the item
//! header scheme (`item_header.rs`).
//!
//! The MAC is HMAC-SHA256, keyed with the secret string's UTF-8 bytes as-is (`whsec_` prefix
//! included), over `"{t}.{raw body}"` where `t` is the timestamp in canonical decimal (as Stripe's
//! libraries sign the parsed integer). Items are comma-separated `key=value` pairs, whitespace
//! around items, keys and values is tolerated, empty items are skipped. Exactly one `t` is
//! required; at least one `v1` of 64 hex digits is required, and other `v1`s that are not 64 hex
//! digits are skipped (as Stripe's libraries do: such a candidate cannot match); `v0`, unknown
//! keys and items without `=` (other than `t` and `v1`) are ignored. Any usable `v1` matching any
//! secret passes, then the timestamp must be within the tolerance on both sides.
//!
//! Event id and type: the body's `/id` and `/type`. Sample: a `checkout.session.completed`-style
//! event (`evt_…` id) whose object is named after the type.

use std::sync::Arc;

use http::HeaderName;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::item_header::{self, ItemHeaderPreset, OddItems, Reasons};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use super::{Scheme, SchemeError, Spec};

/// Header name as Stripe documents it (used in errors).
const LABEL: &str = "Stripe-Signature";

static STRIPE: ItemHeaderPreset = ItemHeaderPreset {
    name: "Stripe",
    header: HeaderName::from_static("stripe-signature"),
    label: LABEL,
    signed_headers: [HeaderName::from_static("stripe-signature")],
    separator: ',',
    timestamp_key: "t",
    signature_key: "v1",
    joiner: ".",
    odd_items: OddItems::Skipped,
    reasons: Reasons {
        duplicate_timestamp: "more than one timestamp `t`",
        no_timestamp: "no timestamp `t`",
        no_signature: "no `v1` signature",
    },
    event_id: "/id",
    event_type: "/type",
};

/// The Stripe scheme of one source: secrets used as-is (`whsec_` prefix included); no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    item_header::preset(&STRIPE, spec)
}

/// Stripe's object name for an event type: `checkout.session.completed` → `checkout.session`.
#[cfg(any(test, feature = "samples"))]
fn object_of(event_type: &str) -> &str {
    event_type
        .rsplit_once('.')
        .map_or(event_type, |(object, _)| object)
}

/// Stripe's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        format!("evt_{}", random_alnum(24))
    }

    fn sample_type(&self) -> &'static str {
        "checkout.session.completed"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "id": event_id,
            "object": "event",
            "api_version": "2024-06-20",
            "created": now_secs,
            "data": {"object": {
                "id": format!("cs_test_{}", random_alnum(24)),
                "object": object_of(event_type),
                "amount_total": 2000,
                "currency": "usd",
                "customer": format!("cus_{}", random_alnum(14)),
                "payment_status": "paid",
                "status": "complete",
                "metadata": {"tenant": "acme"}
            }},
            "livemode": false,
            "pending_webhooks": 1,
            "request": {"id": null, "idempotency_key": null},
            "type": event_type
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SignatureError;
    use super::*;
    use http::HeaderMap;
    use http::HeaderValue;
    use std::sync::Arc;

    const SECRET: &str = "whsec_test_secret_for_stripe";
    const BODY: &[u8] = br#"{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}"#;
    const T: i64 = 1_700_000_000;

    /// Expected v1 computed independently: concatenated message, key = secret's UTF-8 bytes.
    fn v1(secret: &str, t: &str, body: &[u8]) -> String {
        let mut message = format!("{t}.").into_bytes();
        message.extend_from_slice(body);
        hex::encode(reference_mac(secret.as_bytes(), &message))
    }

    fn check(
        v: &Arc<dyn Scheme>,
        header: &str,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        v.verify_at(&headers(&[("Stripe-Signature", header)]), body, now)
    }

    fn bad(reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(LABEL, reason))
    }

    #[test]
    fn known_answer() {
        // Independently computed HMAC-SHA256("whsec_test_secret_for_stripe", "1700000000." + BODY).
        let v = verifier("stripe", &[SECRET]);
        let expected = v1(SECRET, "1700000000", BODY);
        let out = v.sign_at(BODY, T, "ignored");
        assert_eq!(out.len(), 1);
        assert_eq!(
            value_of(&out, "stripe-signature"),
            format!("t=1700000000,v1={expected}")
        );
        assert_eq!(
            check(&v, &format!("t=1700000000,v1={expected}"), BODY, T),
            Ok(())
        );
    }

    #[test]
    fn fixed_vector() {
        // Computed with Python: hmac.new(b"whsec_test_secret_for_stripe", b"1700000000." + BODY, sha256).
        const EXPECTED: &str = "24143fc4b8a7b8738c2dc76ceead7cb76a0f24963bf3716899c9d491d177c9ba";
        assert_eq!(v1(SECRET, "1700000000", BODY), EXPECTED);
        let v = verifier("stripe", &[SECRET]);
        assert_eq!(
            check(&v, &format!("t=1700000000,v1={EXPECTED}"), BODY, T),
            Ok(())
        );
        assert_eq!(
            value_of(&v.sign_at(BODY, T, ""), "stripe-signature"),
            format!("t=1700000000,v1={EXPECTED}")
        );
    }

    #[test]
    fn table() {
        let v = verifier("stripe", &[SECRET]);
        let good = v1(SECRET, "1700000000", BODY);
        let other = v1("whsec_other", "1700000000", BODY);
        let odd = &good[..63];
        let short = &good[..62];
        let cases: Vec<(String, &[u8], i64, Outcome)> = vec![
            // Passing forms.
            (format!("t=1700000000,v1={good}"), BODY, T, Ok(())),
            (format!("v1={good},t=1700000000"), BODY, T, Ok(())),
            (
                format!("t=1700000000,v1={other},v1={good}"),
                BODY,
                T,
                Ok(()),
            ),
            (
                format!("t=1700000000,v1={good},v0={other}"),
                BODY,
                T,
                Ok(()),
            ),
            (
                format!("t=1700000000,v1={good},v0=zz,foo=bar"),
                BODY,
                T,
                Ok(()),
            ),
            (format!(" t = 1700000000 , v1 = {good} , "), BODY, T, Ok(())),
            (format!("t=1700000000,,v1={good}"), BODY, T, Ok(())),
            (
                format!("t=1700000000,v1={}", good.to_uppercase()),
                BODY,
                T,
                Ok(()),
            ),
            // Leading zeros: Stripe signs the integer, so the canonical form is signed.
            (format!("t=01700000000,v1={good}"), BODY, T, Ok(())),
            // Tolerance: exactly 300 s passes on both sides, 301 fails.
            (format!("t=1700000000,v1={good}"), BODY, T + 300, Ok(())),
            (format!("t=1700000000,v1={good}"), BODY, T - 300, Ok(())),
            (
                format!("t=1700000000,v1={good}"),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                format!("t=1700000000,v1={good}"),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            // Mismatch: wrong secret, tampered body, other timestamp; checked before tolerance.
            (
                format!("t=1700000000,v1={other}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("t=1700000000,v1={good}"),
                br#"{"id":"evt_2","object":"event","type":"payment_intent.succeeded"}"#,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("t=1700000001,v1={good}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("t=1700000000,v1={other}"),
                BODY,
                T + 10_000,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("t=1700000000,v1={good}"),
                b"",
                T,
                Err(SignatureError::Mismatch),
            ),
            // Malformed.
            (
                format!("t=1700000000,v0={good}"),
                BODY,
                T,
                bad("no `v1` signature"),
            ),
            ("t=1700000000".into(), BODY, T, bad("no `v1` signature")),
            (format!("v1={good}"), BODY, T, bad("no timestamp `t`")),
            (
                format!("t=1700000000,t=1700000000,v1={good}"),
                BODY,
                T,
                bad("more than one timestamp `t`"),
            ),
            (
                format!("t=,v1={good}"),
                BODY,
                T,
                bad("the timestamp is empty"),
            ),
            (
                format!("t=abc,v1={good}"),
                BODY,
                T,
                bad("the timestamp is not a whole number of seconds"),
            ),
            (
                format!("t=-1700000000,v1={good}"),
                BODY,
                T,
                bad("the timestamp is not a whole number of seconds"),
            ),
            (
                format!("t=1700000000.5,v1={good}"),
                BODY,
                T,
                bad("the timestamp is not a whole number of seconds"),
            ),
            (
                "t=1700000000,v1=".into(),
                BODY,
                T,
                bad("the signature is empty"),
            ),
            // A candidate that cannot be a signature is skipped, as Stripe's libraries do.
            (format!("t=1700000000,v1=,v1={good}"), BODY, T, Ok(())),
            (format!("t=1700000000,v1={good},v1=bad"), BODY, T, Ok(())),
            (format!("t=1700000000,v1={odd},v1={good}"), BODY, T, Ok(())),
            (format!("t=1700000000,v1={good},extra"), BODY, T, Ok(())),
            (
                format!("t=1700000000,v1=xyz,v1={other}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                "t=1700000000,v1=xyz,v1=".into(),
                BODY,
                T,
                bad("the signature is not hexadecimal"),
            ),
            (
                format!("t=1700000000,v1={short}"),
                BODY,
                T,
                bad("the signature is not 32 bytes long"),
            ),
            (
                format!("t=1700000000,v1={good}00"),
                BODY,
                T,
                bad("the signature is not 32 bytes long"),
            ),
            (
                format!("t=1700000000,v1={odd}"),
                BODY,
                T,
                bad("the signature has an odd number of hex digits"),
            ),
            (
                format!("t=1700000000,v1={}g", &good[..63]),
                BODY,
                T,
                bad("the signature is not hexadecimal"),
            ),
            (
                format!("t=1700000000,v1,v1={good}"),
                BODY,
                T,
                bad("an item is not of the form key=value"),
            ),
            (
                format!("t,v1={good}"),
                BODY,
                T,
                bad("an item is not of the form key=value"),
            ),
            ("garbage".into(), BODY, T, bad("no timestamp `t`")),
            (",,,".into(), BODY, T, bad("no timestamp `t`")),
        ];
        for (header, body, now, expected) in cases {
            assert_eq!(
                check(&v, &header, body, now),
                expected,
                "{header:?} now={now}"
            );
        }
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier("stripe", &["whsec_old", SECRET]);
        let header = format!("t=1700000000,v1={}", v1(SECRET, "1700000000", BODY));
        assert_eq!(check(&v, &header, BODY, T), Ok(()));
        // Signing uses the first secret.
        let out = v.sign_at(BODY, T, "");
        assert_eq!(
            value_of(&out, "stripe-signature"),
            format!("t=1700000000,v1={}", v1("whsec_old", "1700000000", BODY))
        );
        // Neither secret.
        let header = format!("t=1700000000,v1={}", v1("whsec_third", "1700000000", BODY));
        assert_eq!(check(&v, &header, BODY, T), Err(SignatureError::Mismatch));
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier("stripe", &[SECRET, "whsec_other"]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign_at(body, T, "x"));
            assert_eq!(v.verify_at(&map, body, T), Ok(()));
            let mut tampered = body.to_vec();
            match tampered.first_mut() {
                Some(b) => *b ^= 1,
                None => tampered.push(0),
            }
            assert_eq!(
                v.verify_at(&map, &tampered, T),
                Err(SignatureError::Mismatch)
            );
        }
        let mut message = b"1700000000.".to_vec();
        message.extend_from_slice(BINARY_BODY);
        let expected = hex::encode(reference_mac(SECRET.as_bytes(), &message));
        assert_eq!(
            check(&v, &format!("t=1700000000,v1={expected}"), BINARY_BODY, T),
            Ok(())
        );
    }

    #[test]
    fn header_presence() {
        let v = verifier("stripe", &[SECRET]);
        let good = format!("t=1700000000,v1={}", v1(SECRET, "1700000000", BODY));
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, T),
            Err(SignatureError::Missing { header: LABEL })
        );
        assert_eq!(
            v.verify_at(
                &headers(&[("stripe-signature", &good), ("Stripe-Signature", &good)]),
                BODY,
                T
            ),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        assert_eq!(
            v.verify_at(&headers(&[("STRIPE-SIGNATURE", &good)]), BODY, T),
            Ok(())
        );
        assert_eq!(
            v.verify_at(&headers(&[("stripe-signature", "")]), BODY, T),
            bad("the value is empty")
        );
        let mut map = HeaderMap::new();
        map.insert(
            "stripe-signature",
            HeaderValue::from_bytes(b"t=1,v1=\xff").unwrap(),
        );
        assert_eq!(
            v.verify_at(&map, BODY, T),
            bad("the value is not visible ASCII")
        );
    }

    #[test]
    fn tolerance_comes_from_the_constructor() {
        let v = try_scheme(
            "stripe",
            serde_json::json!({}),
            &[SECRET],
            std::time::Duration::from_secs(10),
        )
        .unwrap();
        let map = signed(v.sign_at(BODY, T, ""));
        assert_eq!(v.verify_at(&map, BODY, T + 10), Ok(()));
        assert_eq!(
            v.verify_at(&map, BODY, T + 11),
            Err(SignatureError::TimestampTooOld {
                age_secs: 11,
                tolerance_secs: 10
            })
        );
        assert_eq!(
            v.verify_at(&map, BODY, T - 11),
            Err(SignatureError::TimestampInFuture {
                ahead_secs: 11,
                tolerance_secs: 10
            })
        );
    }

    #[test]
    fn errors_never_contain_the_signature() {
        let v = verifier("stripe", &[SECRET]);
        let sig = v1("whsec_other", "1700000000", BODY);
        for header in [
            format!("t=1700000000,v1={sig}"),
            format!("t=1700000000,v1={}", &sig[..63]),
        ] {
            let e = check(&v, &header, BODY, T).unwrap_err();
            assert!(!e.to_string().contains(&sig[..20]), "{e}");
            assert!(!e.to_string().contains("whsec"), "{e}");
        }
    }
}
