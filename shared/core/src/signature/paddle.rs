//! Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`, a preset of the item
//! header scheme (`item_header.rs`).
//!
//! The MAC is HMAC-SHA256, keyed with the notification destination's secret key as-is
//! (`pdl_ntfset_…`), over `"{ts}:{raw body}"` (`ts` in canonical decimal, as Paddle's SDKs sign
//! the parsed integer). Items are `;`-separated `key=value` pairs; exactly one `ts`, at least one
//! `h1` (several during a secret rotation), every `h1` 64 hex digits; other keys are ignored. Any
//! `h1` matching any secret passes, then the timestamp must be within the tolerance on both sides
//! (Paddle's SDKs allow 5 s; set `tolerance_secs` to tighten the default 300).
//!
//! Event id and type: the body's `/event_id` and `/event_type`. Sample: a
//! `transaction.completed` notification (`evt_…` id).

use std::sync::Arc;

use http::HeaderName;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::item_header::{self, ItemHeaderPreset, OddItems, Reasons};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use super::{Scheme, SchemeError, Spec};

const LABEL: &str = "Paddle-Signature";

static PADDLE: ItemHeaderPreset = ItemHeaderPreset {
    name: "Paddle",
    header: HeaderName::from_static("paddle-signature"),
    label: LABEL,
    signed_headers: [HeaderName::from_static("paddle-signature")],
    separator: ';',
    timestamp_key: "ts",
    signature_key: "h1",
    joiner: ":",
    odd_items: OddItems::Refused,
    reasons: Reasons {
        duplicate_timestamp: "more than one timestamp `ts`",
        no_timestamp: "no timestamp `ts`",
        no_signature: "no `h1` signature",
    },
    event_id: "/event_id",
    event_type: "/event_type",
};

/// The Paddle Billing scheme of one source: secrets are the destination's secret keys, used
/// as-is; no settings.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    item_header::preset(&PADDLE, spec)
}

/// Paddle's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        format!("evt_{}", random_alnum(26).to_ascii_lowercase())
    }

    fn sample_type(&self) -> &'static str {
        "transaction.completed"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "event_id": event_id,
            "event_type": event_type,
            "occurred_at": rfc3339(now_secs),
            "notification_id": format!("ntf_{}", random_alnum(26).to_ascii_lowercase()),
            "data": {
                "id": format!("txn_{}", random_alnum(26).to_ascii_lowercase()),
                "status": "completed",
                "currency_code": "USD",
                "details": {"totals": {"total": "2000", "currency_code": "USD"}},
                "custom_data": {"tenant": "acme"}
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SignatureError;
    use super::*;

    const SECRET: &str = "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI";
    const BODY: &[u8] =
        br#"{"event_id":"evt_01gks14ge726w50ce2rdsnn8sn","event_type":"subscription.created"}"#;
    const T: i64 = 1_671_552_777;

    /// Independent MAC: `{ts}:{body}` concatenated, key = the secret's bytes.
    fn h1(secret: &str, ts: &str, body: &[u8]) -> String {
        let mut message = format!("{ts}:").into_bytes();
        message.extend_from_slice(body);
        hex::encode(reference_mac(secret.as_bytes(), &message))
    }

    fn check(header: &str, body: &[u8], now: i64) -> Outcome {
        verifier("paddle", &[SECRET]).verify_at(
            &headers(&[("Paddle-Signature", header)]),
            body,
            now,
        )
    }

    #[test]
    fn signs_like_paddle_and_verifies() {
        let good = h1(SECRET, "1671552777", BODY);
        let v = verifier("paddle", &[SECRET]);
        assert_eq!(
            value_of(&v.sign_at(BODY, T, ""), "paddle-signature"),
            format!("ts=1671552777;h1={good}")
        );
        let other = h1("pdl_ntfset_other", "1671552777", BODY);
        let bad = |reason| Err(malformed(LABEL, reason));
        let cases: Vec<(String, &[u8], i64, Outcome)> = vec![
            (format!("ts=1671552777;h1={good}"), BODY, T, Ok(())),
            (
                format!("h1={other};ts=1671552777;h1={good}"),
                BODY,
                T,
                Ok(()),
            ),
            (format!(" ts=1671552777 ; h1={good} ;"), BODY, T, Ok(())),
            (format!("ts=1671552777;h1={good};h2=xyz"), BODY, T, Ok(())),
            (format!("ts=1671552777;h1={good}"), BODY, T + 300, Ok(())),
            (
                format!("ts=1671552777;h1={good}"),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                format!("ts=1671552777;h1={good}"),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                format!("ts=1671552777;h1={other}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("ts=1671552778;h1={good}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                format!("ts=1671552777;h1={good}"),
                b"{}",
                T,
                Err(SignatureError::Mismatch),
            ),
            (format!("h1={good}"), BODY, T, bad("no timestamp `ts`")),
            ("ts=1671552777".into(), BODY, T, bad("no `h1` signature")),
            (
                format!("ts=1;ts=2;h1={good}"),
                BODY,
                T,
                bad("more than one timestamp `ts`"),
            ),
            (
                format!("ts=abc;h1={good}"),
                BODY,
                T,
                bad("the timestamp is not a whole number of seconds"),
            ),
            (
                format!("ts=1671552777;h1={}", &good[..62]),
                BODY,
                T,
                bad("the signature is not 32 bytes long"),
            ),
            (
                "ts=1671552777;h1=".into(),
                BODY,
                T,
                bad("the signature is empty"),
            ),
            (
                format!("ts=1671552777,h1={good}"),
                BODY,
                T,
                bad("the timestamp is not a whole number of seconds"),
            ),
            (
                "garbage".into(),
                BODY,
                T,
                bad("an item is not of the form key=value"),
            ),
        ];
        for (header, body, now, expected) in cases {
            assert_eq!(check(&header, body, now), expected, "{header}");
        }
    }

    #[test]
    fn missing_and_duplicated_header() {
        let v = verifier("paddle", &[SECRET]);
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, T),
            Err(SignatureError::Missing { header: LABEL })
        );
        let good = format!("ts=1671552777;h1={}", h1(SECRET, "1671552777", BODY));
        assert_eq!(
            v.verify_at(
                &headers(&[("paddle-signature", &good), ("Paddle-Signature", &good)]),
                BODY,
                T
            ),
            Err(SignatureError::Duplicated { header: LABEL })
        );
    }
}
