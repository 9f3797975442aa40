//! Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`.
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

use http::{HeaderMap, HeaderName};
use serde_json::json;

use super::helpers::{
    covers, decode_hex_tag, parse_timestamp, push_header, random_alnum, rfc3339, single_header,
    HmacKeys, Tag, Tolerance,
};
use super::{
    Request, Sample, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
use crate::identity::FieldRule;

const LABEL: &str = "Paddle-Signature";
static SIGNATURE: HeaderName = HeaderName::from_static("paddle-signature");
static SIGNED_HEADERS: [HeaderName; 1] = [HeaderName::from_static("paddle-signature")];

/// The Paddle Billing scheme of one source.
#[derive(Debug, Clone)]
pub(super) struct Paddle {
    keys: HmacKeys,
    tolerance: Tolerance,
}

fn items(header: &str) -> impl Iterator<Item = Option<(&str, &str)>> + Clone {
    header
        .split(';')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| item.split_once('=').map(|(k, v)| (k.trim(), v.trim())))
}

fn h1_tags(header: &str) -> impl Iterator<Item = Tag> + Clone + '_ {
    items(header)
        .flatten()
        .filter(|(k, _)| *k == "h1")
        .filter_map(|(_, v)| decode_hex_tag(v).ok())
}

/// Checks the whole header; returns the timestamp and its canonical decimal text.
fn validate(header: &str) -> Result<(i64, &str), &'static str> {
    let mut timestamp = None;
    let mut h1_count = 0usize;
    for item in items(header) {
        let (key, value) = item.ok_or("an item is not of the form key=value")?;
        match key {
            "ts" => {
                if timestamp.is_some() {
                    return Err("more than one timestamp `ts`");
                }
                timestamp = Some(parse_timestamp(value)?);
            }
            "h1" => {
                decode_hex_tag(value)?;
                h1_count += 1;
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or("no timestamp `ts`")?;
    if h1_count == 0 {
        return Err("no `h1` signature");
    }
    Ok(timestamp)
}

impl Paddle {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let header = single_header(headers, &SIGNATURE, LABEL)?;
        let (timestamp, canonical) =
            validate(header).map_err(|reason| SignatureError::Malformed {
                header: LABEL,
                reason,
            })?;
        self.keys
            .check(&[canonical.as_bytes(), b":", body], h1_tags(header))?;
        self.tolerance.check(timestamp, now_unix)
    }
}

impl Scheme for Paddle {
    /// Secrets are the destination's secret keys, used as-is; no settings.
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        Ok(Self {
            keys: HmacKeys::raw(spec.secrets)?,
            tolerance: Tolerance::new(spec.tolerance),
        })
    }

    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let ts = message.timestamp.to_string();
        let tag = self.keys.sign(&[ts.as_bytes(), b":", message.body]);
        let mut out = Vec::with_capacity(1);
        push_header(
            &mut out,
            &SIGNATURE,
            &format!("ts={ts};h1={}", hex::encode(tag)),
        );
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &SIGNED_HEADERS
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::json_pointer("/event_id")
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/event_type"))
    }

    /// Signed: the body (and the timestamp inside the signature header).
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[])
    }

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
