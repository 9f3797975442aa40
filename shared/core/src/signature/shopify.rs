//! Shopify: `X-Shopify-Hmac-Sha256: <base64>`, HMAC-SHA256 over the raw body, keyed with the
//! app's client secret (UTF-8 bytes), standard base64 with padding. No timestamp (replays are
//! caught by deduplication on `X-Shopify-Webhook-Id`).

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::{decode_base64_tag, push_header, single_header, SignatureError, Verifier};

const LABEL: &str = "X-Shopify-Hmac-Sha256";
static SIGNATURE: HeaderName = HeaderName::from_static("x-shopify-hmac-sha256");
static WEBHOOK_ID: HeaderName = HeaderName::from_static("x-shopify-webhook-id");

pub(super) const SIGNED_HEADERS: &[&str] = &[
    "x-shopify-hmac-sha256",
    "x-shopify-webhook-id",
    "x-shopify-topic",
];

pub(super) fn verify(v: &Verifier, headers: &HeaderMap, body: &[u8]) -> Result<(), SignatureError> {
    let header = single_header(headers, &SIGNATURE, LABEL)?;
    let tag = decode_base64_tag(header).map_err(|reason| SignatureError::Malformed {
        header: LABEL,
        reason,
    })?;
    if v.matches(&[body], std::iter::once(tag)) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

pub(super) fn sign(v: &Verifier, body: &[u8], msg_id: &str) -> Vec<(HeaderName, HeaderValue)> {
    let tag = v.sign_tag(&[body]);
    let mut out = Vec::with_capacity(2);
    push_header(
        &mut out,
        &SIGNATURE,
        &base64::engine::general_purpose::STANDARD.encode(tag),
    );
    push_header(&mut out, &WEBHOOK_ID, msg_id);
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SchemeConfig;
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};

    const SECRET: &str = "hush";
    const BODY: &[u8] = br#"{"id":1}"#;
    /// Computed with Python: base64.b64encode(hmac.new(b"hush", b'{"id":1}', sha256).digest()).
    const EXPECTED: &str = "VnKUjZsLuN5iZWjn5EntcBVCF9kMN43LglzCE1/GSeY=";

    fn check(v: &Verifier, value: &str, body: &[u8]) -> Result<(), SignatureError> {
        v.verify(&headers(&[("X-Shopify-Hmac-Sha256", value)]), body, 0)
    }

    fn bad(reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(LABEL, reason))
    }

    #[test]
    fn known_answer() {
        let v = verifier(SchemeConfig::Shopify, &[SECRET]);
        assert_eq!(
            STANDARD.encode(reference_mac(SECRET.as_bytes(), BODY)),
            EXPECTED
        );
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        let out = v.sign(BODY, 0, "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043");
        assert_eq!(value_of(&out, "x-shopify-hmac-sha256"), EXPECTED);
        assert_eq!(
            value_of(&out, "x-shopify-webhook-id"),
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
        );
    }

    #[test]
    fn table() {
        let v = verifier(SchemeConfig::Shopify, &[SECRET]);
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
        let v = verifier(SchemeConfig::Shopify, &[SECRET]);
        assert_eq!(
            v.verify(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        let dup = headers(&[
            ("x-shopify-hmac-sha256", EXPECTED),
            ("X-Shopify-Hmac-SHA256", EXPECTED),
        ]);
        assert_eq!(
            v.verify(&dup, BODY, 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        assert_eq!(check(&v, "", BODY), bad("the value is empty"));
        let mut map = HeaderMap::new();
        map.insert(
            "x-shopify-hmac-sha256",
            HeaderValue::from_bytes(b"\xffabc").unwrap(),
        );
        assert_eq!(
            v.verify(&map, BODY, 0),
            bad("the value is not visible ASCII")
        );
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier(SchemeConfig::Shopify, &["new", SECRET]);
        assert_eq!(check(&v, EXPECTED, BODY), Ok(()));
        let v = verifier(SchemeConfig::Shopify, &["new", "old"]);
        assert_eq!(check(&v, EXPECTED, BODY), Err(SignatureError::Mismatch));
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier(SchemeConfig::Shopify, &[SECRET]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign(body, 0, "id"));
            assert_eq!(v.verify(&map, body, 0), Ok(()));
            let mut tampered = body.to_vec();
            tampered.insert(0, b' ');
            assert_eq!(v.verify(&map, &tampered, 0), Err(SignatureError::Mismatch));
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
