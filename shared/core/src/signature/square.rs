//! Square: `x-square-hmacsha256-signature: <base64>`.
//!
//! The MAC is HMAC-SHA256, keyed with the subscription's signature key as-is, over the
//! notification URL followed by the raw body (no separator). The URL is the source's `url`
//! setting: the notification URL exactly as registered with Square (API Gateway's view of the
//! request URL differs from it). Square signs no timestamp: replays are caught by the event id
//! (deduplication), not by a tolerance. The legacy `x-square-signature` (HMAC-SHA1 over the same
//! content) is not accepted.
//!
//! Event id and type: the body's `/event_id` and `/type`. Sample: a `payment.updated` event
//! (UUID id).

use http::{HeaderMap, HeaderName};
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::headers::{covers, push_header, single_header};
use super::hmac::HmacKeys;
use super::public_url::configured_url;
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
#[cfg(any(test, feature = "samples"))]
use super::stamp::{random_uuid, rfc3339};
use super::tag::{base64_tag, decode_base64_tag};
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

const LABEL: &str = "x-square-hmacsha256-signature";
static SIGNATURE: HeaderName = HeaderName::from_static("x-square-hmacsha256-signature");
static SIGNED_HEADERS: [HeaderName; 1] = [HeaderName::from_static("x-square-hmacsha256-signature")];

/// The Square scheme of one source.
#[derive(Debug, Clone)]
pub(super) struct Square {
    keys: HmacKeys,
    url: String,
}

impl Square {
    fn check(&self, headers: &HeaderMap, body: &[u8], url: &str) -> Result<(), SignatureError> {
        let header = single_header(headers, &SIGNATURE, LABEL)?;
        let tag = decode_base64_tag(header).map_err(|reason| SignatureError::Malformed {
            header: LABEL,
            reason,
        })?;
        self.keys
            .check(&[url.as_bytes(), body], std::iter::once(tag))
    }
}

impl FromSpec for Square {
    /// Secrets are the subscription's signature keys, used as-is; setting `url` (required).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let url = configured_url(spec)?;
        Ok(Self {
            keys: HmacKeys::raw(spec.secrets)?,
            url,
        })
    }
}

impl Scheme for Square {
    /// The configured `url`, unless the transport set the exact public URL on the request.
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        let url = request.url.unwrap_or(&self.url);
        self.check(request.headers, request.body, url).into()
    }

    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let url = message.url.unwrap_or(&self.url);
        let tag = self.keys.sign(&[url.as_bytes(), message.body]);
        let mut out = Vec::with_capacity(1);
        push_header(&mut out, &SIGNATURE, &base64_tag(&tag));
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &SIGNED_HEADERS
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::json_pointer("/event_id")
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/type"))
    }

    /// Signed: the configured URL and the body.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[])
    }
}

/// The samples of the scheme (its provider's events, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_uuid()
    }

    fn sample_type(&self) -> &'static str {
        "payment.updated"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        let object = event_type
            .split_once('.')
            .map_or(event_type, |(object, _)| object);
        let id = random_alnum(22);
        Sample::json(&json!({
            "merchant_id": format!("ML{}", random_alnum(12).to_ascii_uppercase()),
            "type": event_type,
            "event_id": event_id,
            "created_at": rfc3339(now_secs),
            "data": {
                "type": object,
                "id": id,
                "object": {object: {
                    "id": id,
                    "amount_money": {"amount": 2000, "currency": "USD"},
                    "status": "COMPLETED",
                    "note": "tenant:acme"
                }}
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use base64::Engine as _;
    use serde_json::json;

    const URL: &str = "https://example.com/webhooks/square";
    const KEY: &str = "asdf1234";
    const BODY: &[u8] = br#"{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}"#;

    fn square() -> std::sync::Arc<dyn Scheme> {
        try_scheme("square", json!({"url": URL}), &[KEY], TOLERANCE).unwrap()
    }

    /// Independent MAC: the URL and the body concatenated, key = the signature key's bytes.
    fn expected(url: &str, body: &[u8]) -> String {
        let message = [url.as_bytes(), body].concat();
        base64::engine::general_purpose::STANDARD.encode(reference_mac(KEY.as_bytes(), &message))
    }

    fn check(sig: &str, body: &[u8]) -> Outcome {
        square().verify_at(&headers(&[(LABEL, sig)]), body, 0)
    }

    #[test]
    fn url_then_body() {
        let good = expected(URL, BODY);
        assert_eq!(value_of(&square().sign_at(BODY, 0, ""), LABEL), good);
        assert_eq!(check(&good, BODY), Ok(()));
        // Signed for another URL (what the function would see behind API Gateway): refused.
        let other_url = expected(
            "https://abc.execute-api.us-east-1.amazonaws.com/webhooks/square",
            BODY,
        );
        assert_eq!(check(&other_url, BODY), Err(SignatureError::Mismatch));
        assert_eq!(check(&good, b"{}"), Err(SignatureError::Mismatch));
        assert_eq!(
            check("not base64!", BODY),
            Err(malformed(LABEL, "the signature is not valid base64"))
        );
        assert_eq!(
            check(&good[..20], BODY),
            Err(malformed(LABEL, "the signature is not 32 bytes long"))
        );
        assert_eq!(
            square().verify_at(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        assert_eq!(
            square().verify_at(&headers(&[(LABEL, &good), (LABEL, &good)]), BODY, 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        // A URL set on the request by a transport that knows it exactly takes precedence.
        let map = headers(&[(LABEL, &other_url)]);
        let request = Request::new(&map, BODY, 0)
            .with_url("https://abc.execute-api.us-east-1.amazonaws.com/webhooks/square");
        assert_eq!(square().verify(request).ready(), Some(Ok(())));
    }

    #[test]
    fn the_url_is_required() {
        let e = try_scheme("square", json!({}), &[KEY], TOLERANCE).unwrap_err();
        assert!(e.to_string().contains("`url` is required"), "{e}");
    }
}
