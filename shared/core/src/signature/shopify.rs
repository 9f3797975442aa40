//! Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 over the raw body, keyed with the
//! app's client secret (UTF-8 bytes), standard base64 with padding: a [`Preset`] of the generic
//! body HMAC (`generic.rs`). No timestamp (replays are caught by deduplication on
//! `X-Shopify-Webhook-Id`).
//!
//! Event id: the `X-Shopify-Webhook-Id` header (a UUID); type: the `X-Shopify-Topic` header.
//! Sample: an `orders/create` order.

use std::sync::Arc;

use http::HeaderName;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::generic::{self, Encoding, Preset};
#[cfg(any(test, feature = "samples"))]
use super::stamp::{random_uuid, rfc3339};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use super::{Scheme, SchemeError, Spec};

const LABEL: &str = "X-Shopify-Hmac-Sha256";

static SHOPIFY: Preset = Preset {
    name: "Shopify",
    headers: [
        HeaderName::from_static("x-shopify-hmac-sha256"),
        HeaderName::from_static("x-shopify-webhook-id"),
        HeaderName::from_static("x-shopify-topic"),
    ],
    label: LABEL,
    encoding: Encoding::Base64,
    prefix: None,
};

/// The Shopify scheme of one source: secrets used as-is; no settings, no timestamp.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    generic::preset(&SHOPIFY, spec)
}

/// Shopify's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_uuid()
    }

    fn sample_type(&self) -> &'static str {
        "orders/create"
    }

    fn sample(&self, _event_id: &str, _event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "id": 820_982_911_946_154_508_u64,
            "email": "customer@example.com",
            "created_at": rfc3339(now_secs),
            "currency": "USD",
            "total_price": "20.00",
            "financial_status": "paid",
            "note_attributes": [{"name": "tenant", "value": "acme"}]
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SignatureError;
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use base64::Engine as _;
    use http::HeaderMap;
    use http::HeaderValue;
    use std::sync::Arc;

    const SECRET: &str = "hush";
    const BODY: &[u8] = br#"{"id":1}"#;
    /// Computed with Python: base64.b64encode(hmac.new(b"hush", b'{"id":1}', sha256).digest()).
    const EXPECTED: &str = "VnKUjZsLuN5iZWjn5EntcBVCF9kMN43LglzCE1/GSeY=";

    fn check(v: &Arc<dyn Scheme>, value: &str, body: &[u8]) -> Result<(), SignatureError> {
        v.verify_at(&headers(&[("X-Shopify-Hmac-Sha256", value)]), body, 0)
    }

    fn bad(reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(LABEL, reason))
    }

    #[test]
    fn known_answer() {
        let v = verifier("shopify", &[SECRET]);
        assert_eq!(
            STANDARD.encode(reference_mac(SECRET.as_bytes(), BODY)),
            EXPECTED
        );
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        let out = v.sign_at(BODY, 0, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
        assert_eq!(value_of(&out, "x-shopify-hmac-sha256"), EXPECTED);
        assert_eq!(
            value_of(&out, "x-shopify-webhook-id"),
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
        );
    }

    #[test]
    fn table() {
        let v = verifier("shopify", &[SECRET]);
        let raw = STANDARD.decode(EXPECTED).unwrap();
        let other = STANDARD.encode(reference_mac(b"not hush", BODY));
        let cases: Vec<(String, &[u8], Result<(), SignatureError>)> = vec![
            (EXPECTED.into(), BODY, Ok(())),
            (format!(" {EXPECTED}\t"), BODY, Ok(())),
            (other, BODY, Err(SignatureError::Mismatch)),
            (
                EXPECTED.into(),
                br#"{"id":2}"#,
                Err(SignatureError::Mismatch),
            ),
            (EXPECTED.into(), b"", Err(SignatureError::Mismatch)),
            (
                EXPECTED[..43].into(),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                URL_SAFE.encode(&raw),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                "%%%%".into(),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                format!("sha256={EXPECTED}"),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                STANDARD.encode(&raw[..31]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                STANDARD.encode(&raw[..16]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                STANDARD.encode([raw.as_slice(), &[0]].concat()),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                hex::encode(&raw),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
        ];
        for (value, body, expected) in cases {
            assert_eq!(check(&v, &value, body), expected, "{value:?}");
        }
    }

    #[test]
    fn headers_presence() {
        let v = verifier("shopify", &[SECRET]);
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        let dup = headers(&[
            ("x-shopify-hmac-sha256", EXPECTED),
            ("X-Shopify-Hmac-SHA256", EXPECTED),
        ]);
        assert_eq!(
            v.verify_at(&dup, BODY, 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        assert_eq!(check(&v, "", BODY), bad("the value is empty"));
        let mut map = HeaderMap::new();
        map.insert(
            "x-shopify-hmac-sha256",
            HeaderValue::from_bytes(b"\xffabc").unwrap(),
        );
        assert_eq!(
            v.verify_at(&map, BODY, 0),
            bad("the value is not visible ASCII")
        );
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier("shopify", &["new", SECRET]);
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        let v = verifier("shopify", &["new", "old"]);
        assert_eq!(check(&v, EXPECTED, BODY), Err(SignatureError::Mismatch));
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier("shopify", &[SECRET]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign_at(body, 0, "id"));
            assert_eq!(v.verify_at(&map, body, 0), Ok(()));
            let mut tampered = body.to_vec();
            tampered.insert(0, b' ');
            assert_eq!(
                v.verify_at(&map, &tampered, 0),
                Err(SignatureError::Mismatch)
            );
        }
        assert_eq!(
            check(
                &v,
                &STANDARD.encode(reference_mac(SECRET.as_bytes(), BINARY_BODY)),
                BINARY_BODY
            ),
            Ok(())
        );
    }
}
