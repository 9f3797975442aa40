//! Generic HMAC-SHA256: a configured header holds `[prefix]<signature>`, the signature being
//! the HMAC-SHA256 of the raw body (key: the secret's UTF-8 bytes) in hex (either case) or
//! standard padded base64. When a prefix is configured it must be present, exactly (case
//! included). No timestamp.
//!
//! Errors name the configured header: its name is interned once (see `intern` in `mod.rs`).

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::{
    decode_base64_tag, decode_hex_tag, intern, push_header, single_header, Encoding,
    SignatureError, Tag, Verifier,
};

/// The generic scheme's configuration, validated once.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    /// The header, lower-cased by `HeaderName`.
    pub(super) header: HeaderName,
    /// The header's name as configured, for errors.
    label: &'static str,
    encoding: Encoding,
    /// `None` when not configured or configured empty.
    prefix: Option<String>,
}

impl Prepared {
    pub(super) fn new(
        header: &str,
        encoding: Encoding,
        prefix: Option<&str>,
    ) -> Result<Self, &'static str> {
        let header_text = header.trim();
        let name = HeaderName::from_bytes(header_text.as_bytes())
            .map_err(|_| "`header` is not a valid HTTP header name")?;
        let prefix = prefix.filter(|p| !p.is_empty());
        if let Some(p) = prefix {
            if !p.bytes().all(|b| b.is_ascii_graphic()) {
                return Err("`prefix` must be visible ASCII without spaces");
            }
        }
        Ok(Self {
            header: name,
            label: intern(header_text),
            encoding,
            prefix: prefix.map(str::to_owned),
        })
    }

    fn decode(&self, text: &str) -> Result<Tag, &'static str> {
        match self.encoding {
            Encoding::Hex => decode_hex_tag(text),
            Encoding::Base64 => decode_base64_tag(text),
        }
    }
}

pub(super) fn verify(
    v: &Verifier,
    p: &Prepared,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), SignatureError> {
    let value = single_header(headers, &p.header, p.label)?;
    let malformed = |reason| SignatureError::Malformed {
        header: p.label,
        reason,
    };
    let encoded = match &p.prefix {
        Some(prefix) => value.strip_prefix(prefix.as_str()).ok_or(malformed(
            "the value does not start with the configured prefix",
        ))?,
        None => value,
    };
    let tag = p.decode(encoded).map_err(malformed)?;
    if v.matches(&[body], std::iter::once(tag)) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

pub(super) fn sign(v: &Verifier, p: &Prepared, body: &[u8]) -> Vec<(HeaderName, HeaderValue)> {
    let tag = v.sign_tag(&[body]);
    let encoded = match p.encoding {
        Encoding::Hex => hex::encode(tag),
        Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(tag),
    };
    let mut out = Vec::with_capacity(1);
    push_header(
        &mut out,
        &p.header,
        &format!("{}{encoded}", p.prefix.as_deref().unwrap_or("")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{SchemeConfig, SecretError};
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    const SECRET: &str = "generic-secret";
    const BODY: &[u8] = br#"{"event":"created","id":"abc"}"#;

    fn scheme(header: &str, encoding: Encoding, prefix: Option<&str>) -> SchemeConfig {
        SchemeConfig::HmacSha256 {
            header: header.into(),
            encoding,
            prefix: prefix.map(Into::into),
        }
    }

    fn raw(secret: &str, body: &[u8]) -> Vec<u8> {
        reference_mac(secret.as_bytes(), body)
    }

    #[test]
    fn table() {
        let good = raw(SECRET, BODY);
        let other = raw("other", BODY);
        let h = hex::encode(&good);
        let b = STANDARD.encode(&good);
        let hex_pre = scheme("X-Signature", Encoding::Hex, Some("sha256="));
        let hex_plain = scheme("X-Signature", Encoding::Hex, None);
        let b64_pre = scheme("X-Signature", Encoding::Base64, Some("hmac:"));
        let b64_plain = scheme("X-Signature", Encoding::Base64, None);
        let empty_prefix = scheme("X-Signature", Encoding::Hex, Some(""));
        let bad = |reason| Err(malformed("X-Signature", reason));
        let cases: Vec<(&SchemeConfig, String, &[u8], Outcome)> = vec![
            // Hex with prefix.
            (&hex_pre, format!("sha256={h}"), BODY, Ok(())),
            (
                &hex_pre,
                format!("sha256={}", h.to_uppercase()),
                BODY,
                Ok(()),
            ),
            (
                &hex_pre,
                format!("sha256={}", hex::encode(&other)),
                BODY,
                Err(SignatureError::Mismatch),
            ),
            (
                &hex_pre,
                format!("sha256={h}"),
                b"{}",
                Err(SignatureError::Mismatch),
            ),
            (
                &hex_pre,
                h.clone(),
                BODY,
                bad("the value does not start with the configured prefix"),
            ),
            (
                &hex_pre,
                format!("SHA256={h}"),
                BODY,
                bad("the value does not start with the configured prefix"),
            ),
            (
                &hex_pre,
                "sha256=".into(),
                BODY,
                bad("the signature is empty"),
            ),
            (
                &hex_pre,
                format!("sha256={}", &h[..62]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                &hex_pre,
                format!("sha256={}", &h[..63]),
                BODY,
                bad("the signature has an odd number of hex digits"),
            ),
            (
                &hex_pre,
                format!("sha256={}z", &h[..63]),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
            (
                &hex_pre,
                format!("sha256={b}"),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
            // Hex without prefix (and an empty prefix means none).
            (&hex_plain, h.clone(), BODY, Ok(())),
            (&empty_prefix, h.clone(), BODY, Ok(())),
            (
                &hex_plain,
                format!("sha256={h}"),
                BODY,
                bad("the signature is not hexadecimal"),
            ),
            (
                &hex_plain,
                hex::encode(&good[..31]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            // Base64 with prefix.
            (&b64_pre, format!("hmac:{b}"), BODY, Ok(())),
            (
                &b64_pre,
                format!("hmac:{}", STANDARD.encode(&other)),
                BODY,
                Err(SignatureError::Mismatch),
            ),
            (
                &b64_pre,
                b.clone(),
                BODY,
                bad("the value does not start with the configured prefix"),
            ),
            (
                &b64_pre,
                "hmac:".into(),
                BODY,
                bad("the signature is empty"),
            ),
            // Base64 without prefix.
            (&b64_plain, b.clone(), BODY, Ok(())),
            (
                &b64_plain,
                b.clone(),
                &BODY[..BODY.len() - 1],
                Err(SignatureError::Mismatch),
            ),
            (
                &b64_plain,
                b[..41].to_owned(),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                &b64_plain,
                b[..40].to_owned(),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                &b64_plain,
                URL_SAFE_NO_PAD.encode(&good),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                &b64_plain,
                "a*b=".into(),
                BODY,
                bad("the signature is not valid base64"),
            ),
            (
                &b64_plain,
                STANDARD.encode(&good[..24]),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
            (
                &b64_plain,
                h.clone(),
                BODY,
                bad("the signature is not 32 bytes long"),
            ),
        ];
        for (scheme, value, body, expected) in cases {
            let v = verifier(scheme.clone(), &[SECRET]);
            assert_eq!(
                v.verify(&headers(&[("x-signature", &value)]), body, 0),
                expected,
                "{scheme:?} {value:?}"
            );
        }
    }

    #[test]
    fn header_presence_names_the_configured_header() {
        let v = verifier(scheme("X-Custom-Sig", Encoding::Hex, None), &[SECRET]);
        let h = hex::encode(raw(SECRET, BODY));
        assert_eq!(
            v.verify(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing {
                header: "X-Custom-Sig"
            })
        );
        let e = v
            .verify(&headers(&[("x-signature", &h)]), BODY, 0)
            .unwrap_err();
        assert!(e.to_string().contains("X-Custom-Sig"), "{e}");
        let dup = headers(&[("x-custom-sig", &h), ("X-CUSTOM-SIG", &h)]);
        assert_eq!(
            v.verify(&dup, BODY, 0),
            Err(SignatureError::Duplicated {
                header: "X-Custom-Sig"
            })
        );
        assert_eq!(v.verify(&headers(&[("X-CUSTOM-SIG", &h)]), BODY, 0), Ok(()));
        assert_eq!(
            v.verify(&headers(&[("x-custom-sig", "")]), BODY, 0),
            Err(malformed("X-Custom-Sig", "the value is empty"))
        );
        let mut map = HeaderMap::new();
        map.insert("x-custom-sig", HeaderValue::from_bytes(b"\x81").unwrap());
        assert_eq!(
            v.verify(&map, BODY, 0),
            Err(malformed("X-Custom-Sig", "the value is not visible ASCII"))
        );
    }

    #[test]
    fn invalid_configuration_is_refused() {
        for (header, prefix) in [
            ("", None),
            ("X Signature", None),
            ("X-Sig:", None),
            ("X-S\nig", Some("a")),
            ("X-Sig", Some("sha 256=")),
            ("X-Sig", Some("préfixe")),
        ] {
            let e = Verifier::new(
                scheme(header, Encoding::Hex, prefix),
                &[SECRET.into()],
                TOLERANCE,
            )
            .unwrap_err();
            assert!(
                matches!(e, SecretError::InvalidConfig { .. }),
                "{header:?} {prefix:?}: {e:?}"
            );
        }
        // Surrounding whitespace in the configured name is tolerated.
        let v = verifier(scheme(" X-Sig ", Encoding::Hex, None), &[SECRET]);
        assert_eq!(v.signed_headers(), vec!["x-sig".to_owned()]);
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier(scheme("X-Sig", Encoding::Base64, None), &["new", SECRET]);
        let b = STANDARD.encode(raw(SECRET, BODY));
        assert_eq!(v.verify(&headers(&[("x-sig", &b)]), BODY, 0), Ok(()));
        let v = verifier(scheme("X-Sig", Encoding::Base64, None), &["new", "old"]);
        assert_eq!(
            v.verify(&headers(&[("x-sig", &b)]), BODY, 0),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        for s in [
            scheme("X-Sig", Encoding::Hex, Some("sha256=")),
            scheme("X-Sig", Encoding::Hex, None),
            scheme("X-Sig", Encoding::Base64, Some("v1=")),
            scheme("X-Sig", Encoding::Base64, None),
        ] {
            let v = verifier(s.clone(), &[SECRET]);
            for body in [BODY, BINARY_BODY, b"" as &[u8]] {
                let out = v.sign(body, 0, "ignored");
                assert_eq!(out.len(), 1);
                assert_eq!(out[0].0.as_str(), "x-sig");
                let map = signed(out);
                assert_eq!(v.verify(&map, body, 0), Ok(()), "{s:?}");
                let mut tampered = body.to_vec();
                tampered.push(1);
                assert_eq!(
                    v.verify(&map, &tampered, 0),
                    Err(SignatureError::Mismatch),
                    "{s:?}"
                );
            }
        }
        let v = verifier(scheme("X-Sig", Encoding::Hex, Some("sha256=")), &[SECRET]);
        let out = v.sign(BODY, 0, "");
        assert_eq!(
            value_of(&out, "x-sig"),
            format!("sha256={}", hex::encode(raw(SECRET, BODY)))
        );
        let expected = format!("sha256={}", hex::encode(raw(SECRET, BINARY_BODY)));
        assert_eq!(
            v.verify(&headers(&[("x-sig", &expected)]), BINARY_BODY, 0),
            Ok(())
        );
    }
}
