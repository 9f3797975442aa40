//! GitHub: `X-Hub-Signature-256: sha256=<hex>`, HMAC-SHA256 over the raw body, keyed with the
//! secret's UTF-8 bytes: a [`Preset`] of the generic body HMAC (`generic.rs`). No timestamp
//! (replays are caught by deduplication on `X-GitHub-Delivery`). The legacy SHA-1
//! `X-Hub-Signature` header is ignored.
//!
//! Event id: the `X-GitHub-Delivery` header (a UUID); type: the `X-GitHub-Event` header. Sample:
//! the `ping` GitHub sends when a webhook is created.

use std::borrow::Cow;
use std::sync::Arc;

use http::HeaderName;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::generic::{self, Encoding, Prefix, Preset};
#[cfg(any(test, feature = "samples"))]
use super::stamp::random_uuid;
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use super::{Scheme, SchemeError, Spec};

const LABEL: &str = "X-Hub-Signature-256";

static GITHUB: Preset = Preset {
    name: "Github",
    headers: [
        HeaderName::from_static("x-hub-signature-256"),
        HeaderName::from_static("x-github-delivery"),
        HeaderName::from_static("x-github-event"),
    ],
    label: LABEL,
    encoding: Encoding::Hex,
    prefix: Some(Prefix {
        text: Cow::Borrowed("sha256="),
        missing: "the value does not start with `sha256=`",
    }),
};

/// The GitHub scheme of one source: secrets used as-is; no settings, no timestamp.
pub(super) fn build(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    generic::preset(&GITHUB, spec)
}

/// GitHub's sample events, for `inboxctl send`.
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_uuid()
    }

    fn sample_type(&self) -> &'static str {
        "ping"
    }

    fn sample(&self, _event_id: &str, _event_type: &str, _now_secs: i64) -> Sample {
        Sample::json(&json!({
            "zen": "Keep it logically awesome.",
            "hook_id": 123_456_789,
            "hook": {
                "type": "Repository",
                "id": 123_456_789,
                "name": "web",
                "active": true,
                "events": ["push", "pull_request"],
                "config": {"content_type": "json", "insecure_ssl": "0", "url": "https://example.com/webhooks/github"}
            },
            "repository": {"id": 35_129_377, "name": "widgets", "full_name": "acme/widgets", "private": true},
            "sender": {"login": "octocat", "id": 1, "type": "User"}
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SignatureError;
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::sync::Arc;

    // GitHub's documented test vector ("Validating webhook deliveries").
    const SECRET: &str = "It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";
    const EXPECTED: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    fn check(v: &Arc<dyn Scheme>, value: &str, body: &[u8]) -> Result<(), SignatureError> {
        v.verify_at(&headers(&[("X-Hub-Signature-256", value)]), body, 0)
    }

    fn bad(reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(LABEL, reason))
    }

    #[test]
    fn public_vector() {
        let v = verifier("github", &[SECRET]);
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        assert_eq!(
            format!(
                "sha256={}",
                hex::encode(reference_mac(SECRET.as_bytes(), BODY))
            ),
            EXPECTED
        );
        let out = v.sign_at(BODY, 123, "72d3162e-cc78-11e3-81ab-4c9367dc0958");
        assert_eq!(value_of(&out, "x-hub-signature-256"), EXPECTED);
        assert_eq!(
            value_of(&out, "x-github-delivery"),
            "72d3162e-cc78-11e3-81ab-4c9367dc0958"
        );
    }

    #[test]
    fn table() {
        let v = verifier("github", &[SECRET]);
        let hex = &EXPECTED[7..];
        let other = format!(
            "sha256={}",
            hex::encode(reference_mac(b"wrong secret", BODY))
        );
        let cases: Vec<(String, &[u8], Result<(), SignatureError>)> = vec![
            (EXPECTED.into(), BODY, Ok(())),
            (format!("sha256={}", hex.to_uppercase()), BODY, Ok(())),
            (format!(" {EXPECTED} "), BODY, Ok(())),
            (other, BODY, Err(SignatureError::Mismatch)),
            (
                EXPECTED.into(),
                b"Hello, World?",
                Err(SignatureError::Mismatch),
            ),
            (EXPECTED.into(), b"", Err(SignatureError::Mismatch)),
            ("sha256=".into(), BODY, bad("the signature is empty")),
            (
                hex.into(),
                BODY,
                bad("the value does not start with `sha256=`"),
            ),
            (
                format!("SHA256={hex}"),
                BODY,
                bad("the value does not start with `sha256=`"),
            ),
            (
                format!("sha1={hex}"),
                BODY,
                bad("the value does not start with `sha256=`"),
            ),
            (
                format!("sha256={}", &hex[..62]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                format!("sha256={}", &hex[..63]),
                BODY,
                bad("the signature has an odd number of hex digits"),
            ),
            (
                format!("sha256={}", &hex[..32]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                format!("sha256={hex}00"),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                format!("sha256={}x", &hex[..63]),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
            (
                format!("sha256= {hex}"),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
            (
                format!("sha256={hex},sha256={hex}"),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
        ];
        for (value, body, expected) in cases {
            assert_eq!(check(&v, &value, body), expected, "{value:?}");
        }
    }

    #[test]
    fn headers_presence() {
        let v = verifier("github", &[SECRET]);
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        // The SHA-1 header alone is not enough.
        let sha1 = headers(&[(
            "x-hub-signature",
            "sha1=0000000000000000000000000000000000000000",
        )]);
        assert_eq!(
            v.verify_at(&sha1, BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        let dup = headers(&[
            ("x-hub-signature-256", EXPECTED),
            ("X-Hub-Signature-256", EXPECTED),
        ]);
        assert_eq!(
            v.verify_at(&dup, BODY, 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        assert_eq!(check(&v, "", BODY), bad("the value is empty"));
        let mut map = HeaderMap::new();
        map.insert(
            "x-hub-signature-256",
            HeaderValue::from_bytes(b"sha256=\x80").unwrap(),
        );
        assert_eq!(
            v.verify_at(&map, BODY, 0),
            bad("the value is not visible ASCII")
        );
    }

    #[test]
    fn no_timestamp_so_any_time_passes() {
        let v = verifier("github", &[SECRET]);
        for now in [0, 1_700_000_000, i64::MIN, i64::MAX] {
            assert_eq!(check(&v, EXPECTED, BODY), Ok(()), "{now}");
            assert_eq!(
                v.verify_at(&headers(&[("x-hub-signature-256", EXPECTED)]), BODY, now),
                Ok(())
            );
        }
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier("github", &["new secret", SECRET]);
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        let v = verifier("github", &["new secret", "older secret"]);
        assert_eq!(check(&v, EXPECTED, BODY), Err(SignatureError::Mismatch));
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier("github", &[SECRET, "other"]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign_at(body, 0, "d1"));
            assert_eq!(v.verify_at(&map, body, 0), Ok(()));
            let mut tampered = body.to_vec();
            tampered.push(b'!');
            assert_eq!(
                v.verify_at(&map, &tampered, 0),
                Err(SignatureError::Mismatch)
            );
        }
        let expected = format!(
            "sha256={}",
            hex::encode(reference_mac(SECRET.as_bytes(), BINARY_BODY))
        );
        assert_eq!(check(&v, &expected, BINARY_BODY), Ok(()));
    }
}
