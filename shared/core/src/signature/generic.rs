//! Generic HMAC-SHA256 of the body: a header holds `[prefix]<signature>`, the signature being
//! the HMAC-SHA256 of the raw body (key: the secret's UTF-8 bytes) in hex (either case) or
//! standard padded base64. When a prefix is set it must be present, exactly (case included). No
//! timestamp.
//!
//! The scheme `hmac-sha256` takes its header, encoding and prefix from the source's settings:
//! `"header"` (required), `"encoding"` (`"hex"` or `"base64"`, required), `"prefix"` (optional;
//! empty means none). Errors name the configured header: its name is interned once. Event id: the
//! SHA-256 of the body; no type (sources usually configure both). Sample: a `test.event` with
//! `id`, `type`, `created_at` and `data`.
//!
//! A provider that signs this way is a [`Preset`] of it: fixed header, encoding and prefix, plus
//! the (unsigned) headers its event id and type travel in (GitHub in `github.rs`, Shopify in
//! `shopify.rs`).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, HeaderName};
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::headers::{covers, push_header, single_header};
use super::hmac::HmacKeys;
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
use super::settings::{intern, settings};
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
use super::tag::{base64_tag, decode_base64_tag, decode_hex_tag, Tag};
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

/// How the signature is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Encoding {
    /// Hexadecimal (either case), 64 digits.
    Hex,
    /// Standard base64 alphabet with padding, 44 characters.
    Base64,
}

/// The settings as written in `WEBHOOK_SOURCES`.
#[derive(serde::Deserialize)]
struct Settings {
    /// Header carrying the signature (case-insensitive).
    header: String,
    encoding: Encoding,
    /// Text that must precede the encoded signature (e.g. `sha256=`), when configured.
    #[serde(default)]
    prefix: Option<String>,
}

/// Text that must precede the encoded signature, and the reason a value without it is malformed.
#[derive(Debug, Clone)]
pub(super) struct Prefix {
    pub text: Cow<'static, str>,
    pub missing: &'static str,
}

/// A provider that signs with this scheme: its fixed header, encoding and prefix, and the headers
/// its event id and type travel in (neither is signed).
pub(super) struct Preset {
    /// The provider's name, for `Debug`.
    pub name: &'static str,
    /// The signature header, the event id's (it carries the message id when signing) and the
    /// event type's: all three kept to re-verify and identify a message.
    pub headers: [HeaderName; 3],
    /// The signature header's name as the provider documents it (for errors).
    pub label: &'static str,
    pub encoding: Encoding,
    pub prefix: Option<Prefix>,
}

impl Preset {
    fn signature_header(&self) -> &HeaderName {
        let [signature, _, _] = &self.headers;
        signature
    }

    fn id_header(&self) -> &HeaderName {
        let [_, id, _] = &self.headers;
        id
    }

    fn type_header(&self) -> &HeaderName {
        let [_, _, kind] = &self.headers;
        kind
    }
}

/// The body HMAC of one source, its header, encoding and prefix fixed once: configured
/// (`hmac-sha256`) or a provider's [`Preset`].
#[derive(Clone)]
pub(super) struct HmacSha256 {
    /// The header, lower-cased by `HeaderName`.
    header: HeaderName,
    /// The header's name as configured or documented, for errors.
    label: &'static str,
    encoding: Encoding,
    /// `None` when not configured or configured empty.
    prefix: Option<Prefix>,
    /// `None`: configured by the source.
    preset: Option<&'static Preset>,
    keys: HmacKeys,
}

/// Builds the scheme of a provider that signs this way (secrets used as-is; no settings).
pub(super) fn preset(
    preset: &'static Preset,
    spec: &Spec<'_>,
) -> Result<Arc<dyn Scheme>, SchemeError> {
    Ok(Arc::new(HmacSha256 {
        header: preset.signature_header().clone(),
        label: preset.label,
        encoding: preset.encoding,
        prefix: preset.prefix.clone(),
        preset: Some(preset),
        keys: HmacKeys::raw(spec.secrets)?,
    }))
}

impl HmacSha256 {
    fn decode(&self, text: &str) -> Result<Tag, &'static str> {
        match self.encoding {
            Encoding::Hex => decode_hex_tag(text),
            Encoding::Base64 => decode_base64_tag(text),
        }
    }

    fn check(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), SignatureError> {
        let value = single_header(headers, &self.header, self.label)?;
        let malformed = |reason| SignatureError::Malformed {
            header: self.label,
            reason,
        };
        let encoded = match &self.prefix {
            Some(prefix) => value
                .strip_prefix(prefix.text.as_ref())
                .ok_or(malformed(prefix.missing))?,
            None => value,
        };
        let tag = self.decode(encoded).map_err(malformed)?;
        self.keys.check(&[body], std::iter::once(tag))
    }
}

impl fmt::Debug for HmacSha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.preset.map_or("HmacSha256", |p| p.name))
            .field("header", &self.header)
            .field("encoding", &self.encoding)
            .field("prefix", &self.prefix.as_ref().map(|p| &p.text))
            .field("keys", &self.keys)
            .finish()
    }
}

fn invalid(reason: &str) -> SchemeError {
    SchemeError::InvalidConfig {
        reason: reason.to_owned(),
    }
}

impl FromSpec for HmacSha256 {
    /// Validates the settings, then keys the secrets (used as-is).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let Settings {
            header,
            encoding,
            prefix,
        } = settings(spec)?;
        let header_text = header.trim();
        let name = HeaderName::from_bytes(header_text.as_bytes())
            .map_err(|_| invalid("`header` is not a valid HTTP header name"))?;
        let prefix = prefix.filter(|p| !p.is_empty());
        if let Some(p) = &prefix {
            if !p.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(invalid("`prefix` must be visible ASCII without spaces"));
            }
        }
        Ok(Self {
            header: name,
            label: intern(header_text),
            encoding,
            prefix: prefix.map(|text| Prefix {
                text: Cow::Owned(text),
                missing: "the value does not start with the configured prefix",
            }),
            preset: None,
            keys: HmacKeys::raw(spec.secrets)?,
        })
    }
}

impl Scheme for HmacSha256 {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body).into()
    }

    /// The signature header; for a preset, the message id in the id header too.
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let tag = self.keys.sign(&[message.body]);
        let encoded = match self.encoding {
            Encoding::Hex => hex::encode(tag),
            Encoding::Base64 => base64_tag(&tag),
        };
        let prefix = self.prefix.as_ref().map_or("", |p| p.text.as_ref());
        let mut out = Vec::with_capacity(2);
        push_header(&mut out, &self.header, &format!("{prefix}{encoded}"));
        if let Some(preset) = self.preset {
            push_header(&mut out, preset.id_header(), message.msg_id);
        }
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        match self.preset {
            Some(preset) => &preset.headers,
            None => std::slice::from_ref(&self.header),
        }
    }

    fn default_event_id(&self) -> FieldRule {
        match self.preset {
            Some(preset) => FieldRule::header(preset.id_header().as_str()),
            None => FieldRule::BodySha256,
        }
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        self.preset
            .map(|preset| FieldRule::header(preset.type_header().as_str()))
    }

    /// The body only: a preset's id and type headers are not signed.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[])
    }
}

/// The samples of `hmac-sha256` (a generic event, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        format!("evt_{}", random_alnum(20))
    }

    fn sample_type(&self) -> &'static str {
        "test.event"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "id": event_id,
            "type": event_type,
            "created_at": rfc3339(now_secs),
            "data": {"tenant": "acme", "amount": 2000, "currency": "usd"}
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SchemeError;
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use base64::Engine as _;
    use http::HeaderValue;
    use serde_json::Value;
    use std::sync::Arc;

    const SECRET: &str = "generic-secret";
    const BODY: &[u8] = br#"{"event":"created","id":"abc"}"#;

    /// The settings of a generic source.
    fn scheme(header: &str, encoding: &str, prefix: Option<&str>) -> Value {
        json!({"header": header, "encoding": encoding, "prefix": prefix})
    }

    fn generic(settings: &Value, secrets: &[&str]) -> Arc<dyn Scheme> {
        try_scheme("hmac-sha256", settings.clone(), secrets, TOLERANCE).unwrap()
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
        let hex_pre = scheme("X-Signature", "hex", Some("sha256="));
        let hex_plain = scheme("X-Signature", "hex", None);
        let b64_pre = scheme("X-Signature", "base64", Some("hmac:"));
        let b64_plain = scheme("X-Signature", "base64", None);
        let empty_prefix = scheme("X-Signature", "hex", Some(""));
        let bad = |reason| Err(malformed("X-Signature", reason));
        let cases: Vec<(&Value, String, &[u8], Outcome)> = vec![
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
            let v = generic(scheme, &[SECRET]);
            assert_eq!(
                v.verify_at(&headers(&[("x-signature", &value)]), body, 0),
                expected,
                "{scheme:?} {value:?}"
            );
        }
    }

    #[test]
    fn header_presence_names_the_configured_header() {
        let v = generic(&scheme("X-Custom-Sig", "hex", None), &[SECRET]);
        let h = hex::encode(raw(SECRET, BODY));
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing {
                header: "X-Custom-Sig"
            })
        );
        let e = v
            .verify_at(&headers(&[("x-signature", &h)]), BODY, 0)
            .unwrap_err();
        assert!(e.to_string().contains("X-Custom-Sig"), "{e}");
        let dup = headers(&[("x-custom-sig", &h), ("X-CUSTOM-SIG", &h)]);
        assert_eq!(
            v.verify_at(&dup, BODY, 0),
            Err(SignatureError::Duplicated {
                header: "X-Custom-Sig"
            })
        );
        assert_eq!(
            v.verify_at(&headers(&[("X-CUSTOM-SIG", &h)]), BODY, 0),
            Ok(())
        );
        assert_eq!(
            v.verify_at(&headers(&[("x-custom-sig", "")]), BODY, 0),
            Err(malformed("X-Custom-Sig", "the value is empty"))
        );
        let mut map = HeaderMap::new();
        map.insert("x-custom-sig", HeaderValue::from_bytes(b"\x81").unwrap());
        assert_eq!(
            v.verify_at(&map, BODY, 0),
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
            let e = try_scheme(
                "hmac-sha256",
                scheme(header, "hex", prefix),
                &[SECRET],
                TOLERANCE,
            )
            .unwrap_err();
            assert!(
                matches!(e, SchemeError::InvalidConfig { .. }),
                "{header:?} {prefix:?}: {e:?}"
            );
        }
        // Settings that do not deserialize: the reason says which.
        for (settings, reason) in [
            (json!({"encoding": "hex"}), "missing field `header`"),
            (json!({"header": "X-Sig"}), "missing field `encoding`"),
            (
                json!({"header": "X-Sig", "encoding": "HEX"}),
                "unknown variant `HEX`",
            ),
            (
                json!({"header": "X-Sig", "encoding": "base32"}),
                "unknown variant `base32`",
            ),
        ] {
            let e = try_scheme("hmac-sha256", settings, &[SECRET], TOLERANCE).unwrap_err();
            assert!(
                matches!(&e, SchemeError::InvalidConfig { reason: r } if r.contains(reason)),
                "{e:?}"
            );
        }
        // The settings are checked before the secrets.
        assert!(matches!(
            try_scheme("hmac-sha256", json!({}), &[], TOLERANCE),
            Err(SchemeError::InvalidConfig { .. })
        ));
        // Surrounding whitespace in the configured name is tolerated; unknown members ignored.
        let v = generic(
            &json!({"header": " X-Sig ", "encoding": "hex", "other": 1}),
            &[SECRET],
        );
        assert_eq!(v.signed_headers(), [HeaderName::from_static("x-sig")]);
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = generic(&scheme("X-Sig", "base64", None), &["new", SECRET]);
        let b = STANDARD.encode(raw(SECRET, BODY));
        assert_eq!(v.verify_at(&headers(&[("x-sig", &b)]), BODY, 0), Ok(()));
        let v = generic(&scheme("X-Sig", "base64", None), &["new", "old"]);
        assert_eq!(
            v.verify_at(&headers(&[("x-sig", &b)]), BODY, 0),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        for s in [
            scheme("X-Sig", "hex", Some("sha256=")),
            scheme("X-Sig", "hex", None),
            scheme("X-Sig", "base64", Some("v1=")),
            scheme("X-Sig", "base64", None),
        ] {
            let v = generic(&s, &[SECRET]);
            for body in [BODY, BINARY_BODY, b"" as &[u8]] {
                let out = v.sign_at(body, 0, "ignored");
                assert_eq!(out.len(), 1);
                assert_eq!(out[0].0.as_str(), "x-sig");
                let map = signed(out);
                assert_eq!(v.verify_at(&map, body, 0), Ok(()), "{s:?}");
                let mut tampered = body.to_vec();
                tampered.push(1);
                assert_eq!(
                    v.verify_at(&map, &tampered, 0),
                    Err(SignatureError::Mismatch),
                    "{s:?}"
                );
            }
        }
        let v = generic(&scheme("X-Sig", "hex", Some("sha256=")), &[SECRET]);
        let out = v.sign_at(BODY, 0, "");
        assert_eq!(
            value_of(&out, "x-sig"),
            format!("sha256={}", hex::encode(raw(SECRET, BODY)))
        );
        let expected = format!("sha256={}", hex::encode(raw(SECRET, BINARY_BODY)));
        assert_eq!(
            v.verify_at(&headers(&[("x-sig", &expected)]), BINARY_BODY, 0),
            Ok(())
        );
    }
}
