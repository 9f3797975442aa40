//! Standard Webhooks (<https://www.standardwebhooks.com>): headers `webhook-id`,
//! `webhook-timestamp` and `webhook-signature: v1,<base64> [v1,<base64> …]`.
//!
//! Secrets are `whsec_` + base64 (the prefix is optional); the decoded bytes are the HMAC key.
//! The MAC is HMAC-SHA256 over `"{id}.{timestamp}.{raw body}"` (timestamp in canonical decimal,
//! as the reference libraries sign the parsed integer), base64-encoded (standard alphabet,
//! padded). Signature entries are separated by spaces; entries of other versions (`v1a,…`) are
//! ignored, `v1` entries that do not decode to 32 bytes are skipped (as the reference libraries
//! do: such a candidate cannot match), and at least one usable `v1` entry is required. Any `v1`
//! matching any secret passes, then the timestamp must be within the tolerance on both sides.
//!
//! Event id: the `webhook-id` header; type: the body's `/type`. Sample: a `message.sent` event of
//! an email provider (`msg_…` id).

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use serde_json::json;

use super::helpers::{
    base64_tag, covers, decode_base64_tag, parse_timestamp, push_header, random_alnum, rfc3339,
    single_header, HmacKeys, Tag, Tolerance,
};
use super::{
    Request, Sample, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
use crate::identity::FieldRule;

const ID_LABEL: &str = "webhook-id";
const TIMESTAMP_LABEL: &str = "webhook-timestamp";
const SIGNATURE_LABEL: &str = "webhook-signature";
static ID: HeaderName = HeaderName::from_static("webhook-id");
static TIMESTAMP: HeaderName = HeaderName::from_static("webhook-timestamp");
static SIGNATURE: HeaderName = HeaderName::from_static("webhook-signature");
static SIGNED_HEADERS: [HeaderName; 3] = [
    HeaderName::from_static("webhook-id"),
    HeaderName::from_static("webhook-timestamp"),
    HeaderName::from_static("webhook-signature"),
];

/// The Standard Webhooks scheme of one source.
#[derive(Debug, Clone)]
pub(super) struct StandardWebhooks {
    keys: HmacKeys,
    tolerance: Tolerance,
}

/// Base64 for secrets: standard alphabet, padding optional (secrets are often shown unpadded).
const SECRET_ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Decodes a `whsec_`-prefixed (prefix optional) base64 secret into key bytes.
fn decode_secret(secret: &[u8]) -> Result<Vec<u8>, &'static str> {
    const NOT_BASE64: &str = "the secret is not valid base64 after the `whsec_` prefix";
    let secret = std::str::from_utf8(secret).map_err(|_| NOT_BASE64)?;
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    if encoded.is_empty() {
        return Err("the secret is empty after the `whsec_` prefix");
    }
    let key = SECRET_ENGINE.decode(encoded).map_err(|_| NOT_BASE64)?;
    if key.is_empty() {
        return Err("the secret decodes to no bytes");
    }
    Ok(key)
}

/// The `(version, signature)` entries of the header; `None` for an entry without `,`.
fn entries(header: &str) -> impl Iterator<Item = Option<(&str, &str)>> + Clone {
    header
        .split_ascii_whitespace()
        .map(|entry| entry.split_once(','))
}

/// The usable `v1` signatures, decoded (only call after [`validate`] succeeded); unusable ones
/// are skipped.
fn v1_tags(header: &str) -> impl Iterator<Item = Tag> + Clone + '_ {
    entries(header)
        .flatten()
        .filter(|(version, _)| *version == "v1")
        .filter_map(|(_, s)| decode_base64_tag(s).ok())
}

/// Checks the whole header. As in the reference libraries, a `v1` entry that cannot be a
/// signature (not base64, not 32 bytes) is only a candidate that cannot match: it is skipped, and
/// the header is malformed only when no `v1` entry is usable (the first unusable one's reason is
/// given).
fn validate(header: &str) -> Result<(), &'static str> {
    let mut usable = 0usize;
    let mut first_unusable = None;
    for entry in entries(header) {
        let (version, signature) = entry.ok_or("an entry is not of the form version,signature")?;
        if version == "v1" {
            match decode_base64_tag(signature) {
                Ok(_) => usable += 1,
                Err(reason) => {
                    first_unusable.get_or_insert(reason);
                }
            }
        }
    }
    if usable == 0 {
        return Err(first_unusable.unwrap_or("no `v1` signature"));
    }
    Ok(())
}

impl StandardWebhooks {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let signature = single_header(headers, &SIGNATURE, SIGNATURE_LABEL)?;
        let id = single_header(headers, &ID, ID_LABEL)?;
        let timestamp = single_header(headers, &TIMESTAMP, TIMESTAMP_LABEL)?;
        let (timestamp, canonical) =
            parse_timestamp(timestamp).map_err(|reason| SignatureError::Malformed {
                header: TIMESTAMP_LABEL,
                reason,
            })?;
        validate(signature).map_err(|reason| SignatureError::Malformed {
            header: SIGNATURE_LABEL,
            reason,
        })?;
        let parts: &[&[u8]] = &[id.as_bytes(), b".", canonical.as_bytes(), b".", body];
        self.keys.check(parts, v1_tags(signature))?;
        self.tolerance.check(timestamp, now_unix)
    }
}

impl Scheme for StandardWebhooks {
    /// Secrets are `whsec_` + base64 (prefix optional, padding optional); no settings.
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        Ok(Self {
            keys: HmacKeys::decoded(spec.secrets, |s| decode_secret(s).map(Cow::Owned))?,
            tolerance: Tolerance::new(spec.tolerance),
        })
    }

    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let t = message.timestamp.to_string();
        let id = message.msg_id.as_bytes();
        let tag = self
            .keys
            .sign(&[id, b".", t.as_bytes(), b".", message.body]);
        let mut out = Vec::with_capacity(3);
        push_header(&mut out, &ID, message.msg_id);
        push_header(&mut out, &TIMESTAMP, &t);
        push_header(&mut out, &SIGNATURE, &format!("v1,{}", base64_tag(&tag)));
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &SIGNED_HEADERS
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::header(ID_LABEL)
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/type"))
    }

    /// The body, `webhook-id` and `webhook-timestamp`.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[&ID, &TIMESTAMP])
    }

    fn sample_id(&self) -> String {
        format!("msg_{}", random_alnum(27))
    }

    fn sample_type(&self) -> &'static str {
        "message.sent"
    }

    fn sample(&self, _event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "type": event_type,
            "timestamp": rfc3339(now_secs),
            "data": {
                "message_id": format!("m_{}", random_alnum(16)),
                "to": "customer@example.com",
                "status": "sent",
                "tenant": "acme"
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::SchemeError;
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use http::HeaderValue;

    // The public test vector of the Standard Webhooks specification's reference libraries.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: &str = "1614265330";
    const T: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const EXPECTED: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn request(id: &str, ts: &str, sig: &str) -> HeaderMap {
        headers(&[
            ("webhook-id", id),
            ("webhook-timestamp", ts),
            ("webhook-signature", sig),
        ])
    }

    /// Independent signature: concatenated message, key = base64-decoded secret.
    fn sig(secret: &str, id: &str, ts: &str, body: &[u8]) -> String {
        let key = STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap();
        let mut message = format!("{id}.{ts}.").into_bytes();
        message.extend_from_slice(body);
        STANDARD.encode(reference_mac(&key, &message))
    }

    fn bad(header: &'static str, reason: &'static str) -> Result<(), SignatureError> {
        Err(malformed(header, reason))
    }

    #[test]
    fn public_vector() {
        let v = verifier("standard-webhooks", &[SECRET]);
        assert_eq!(v.verify_at(&request(ID, TS, EXPECTED), BODY, T), Ok(()));
        assert_eq!(format!("v1,{}", sig(SECRET, ID, TS, BODY)), EXPECTED);
        let out = v.sign_at(BODY, T, ID);
        assert_eq!(value_of(&out, "webhook-signature"), EXPECTED);
        assert_eq!(value_of(&out, "webhook-id"), ID);
        assert_eq!(value_of(&out, "webhook-timestamp"), TS);
        // The prefix is optional.
        let v = verifier("standard-webhooks", &["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]);
        assert_eq!(v.verify_at(&request(ID, TS, EXPECTED), BODY, T), Ok(()));
    }

    #[test]
    fn table() {
        let v = verifier("standard-webhooks", &[SECRET]);
        let good = EXPECTED.to_owned();
        let other = format!("v1,{}", sig("whsec_b3RoZXItc2VjcmV0", ID, TS, BODY));
        let b64 = &EXPECTED[3..];
        /// (id, timestamp, signature, body, now, expected)
        type Row<'a> = (&'a str, &'a str, String, &'a [u8], i64, Outcome);
        let cases: Vec<Row> = vec![
            // Passing forms.
            (ID, TS, good.clone(), BODY, T, Ok(())),
            (ID, TS, format!("{other} {good}"), BODY, T, Ok(())),
            (ID, TS, format!("v1a,{b64} {good}"), BODY, T, Ok(())),
            (
                ID,
                TS,
                format!("v2,xyz {good} v1a,anything"),
                BODY,
                T,
                Ok(()),
            ),
            (ID, TS, format!("  {good}   {other} "), BODY, T, Ok(())),
            (ID, "01614265330", good.clone(), BODY, T, Ok(())),
            // Tolerance: exactly 300 s passes on both sides, 301 fails.
            (ID, TS, good.clone(), BODY, T + 300, Ok(())),
            (ID, TS, good.clone(), BODY, T - 300, Ok(())),
            (
                ID,
                TS,
                good.clone(),
                BODY,
                T + 301,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                ID,
                TS,
                good.clone(),
                BODY,
                T - 301,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            // Mismatch: wrong secret, tampered body/id/timestamp; checked before tolerance.
            (
                ID,
                TS,
                other.clone(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                ID,
                TS,
                good.clone(),
                br#"{"test": 2432232315}"#,
                T,
                Err(SignatureError::Mismatch),
            ),
            (ID, TS, good.clone(), b"", T, Err(SignatureError::Mismatch)),
            (
                "msg_other",
                TS,
                good.clone(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                ID,
                "1614265331",
                good.clone(),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                ID,
                TS,
                other.clone(),
                BODY,
                T + 10_000,
                Err(SignatureError::Mismatch),
            ),
            // Malformed signature header.
            (
                ID,
                TS,
                "v1,".into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is empty"),
            ),
            // A candidate that cannot be a signature is skipped, as the libraries do.
            (ID, TS, format!("v1, {good}"), BODY, T, Ok(())),
            (ID, TS, format!("v1,AAAA {good}"), BODY, T, Ok(())),
            (ID, TS, format!("{good} v1,!!!!"), BODY, T, Ok(())),
            (
                ID,
                TS,
                format!("v1,AAAA {other}"),
                BODY,
                T,
                Err(SignatureError::Mismatch),
            ),
            (
                ID,
                TS,
                "v1,AAAA v1,!!!!".into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
            ),
            (
                ID,
                TS,
                format!("v1a,{b64}"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "no `v1` signature"),
            ),
            (
                ID,
                TS,
                b64.to_owned(),
                BODY,
                T,
                bad(
                    SIGNATURE_LABEL,
                    "an entry is not of the form version,signature",
                ),
            ),
            (
                ID,
                TS,
                format!("{good},"),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not valid base64"),
            ),
            (
                ID,
                TS,
                format!("v1,{}", &b64[..43]),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not valid base64"),
            ),
            (
                ID,
                TS,
                format!("v1,{}", b64.trim_end_matches('=')),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not valid base64"),
            ),
            (
                ID,
                TS,
                "v1,!!!!".into(),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not valid base64"),
            ),
            (
                ID,
                TS,
                format!("v1,{}", STANDARD.encode([7u8; 20])),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
            ),
            (
                ID,
                TS,
                format!("{good} v1,{}", STANDARD.encode([7u8; 33])),
                BODY,
                T,
                Ok(()),
            ),
            (
                ID,
                TS,
                format!("v1,{}", hex::encode([7u8; 32])),
                BODY,
                T,
                bad(SIGNATURE_LABEL, "the signature is not 32 bytes long"),
            ),
            // Malformed timestamp (reported before the signature is looked at).
            (
                ID,
                "abc",
                "v1,".into(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                ID,
                "-1614265330",
                good.clone(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                ID,
                "1614265330.0",
                good.clone(),
                BODY,
                T,
                bad(
                    TIMESTAMP_LABEL,
                    "the timestamp is not a whole number of seconds",
                ),
            ),
            (
                ID,
                "",
                good.clone(),
                BODY,
                T,
                bad(TIMESTAMP_LABEL, "the value is empty"),
            ),
            (
                "",
                TS,
                good.clone(),
                BODY,
                T,
                bad(ID_LABEL, "the value is empty"),
            ),
        ];
        for (id, ts, signature, body, now, expected) in cases {
            assert_eq!(
                v.verify_at(&request(id, ts, &signature), body, now),
                expected,
                "{id:?} {ts:?} {signature:?} now={now}"
            );
        }
    }

    #[test]
    fn missing_and_duplicated_headers() {
        let v = verifier("standard-webhooks", &[SECRET]);
        let cases: Vec<(Vec<(&str, &str)>, SignatureError)> = vec![
            (
                vec![("webhook-id", ID), ("webhook-timestamp", TS)],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![("webhook-timestamp", TS), ("webhook-signature", EXPECTED)],
                SignatureError::Missing { header: ID_LABEL },
            ),
            (
                vec![("webhook-id", ID), ("webhook-signature", EXPECTED)],
                SignatureError::Missing {
                    header: TIMESTAMP_LABEL,
                },
            ),
            (
                vec![],
                SignatureError::Missing {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![
                    ("webhook-id", ID),
                    ("webhook-timestamp", TS),
                    ("webhook-signature", EXPECTED),
                    ("Webhook-Signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: SIGNATURE_LABEL,
                },
            ),
            (
                vec![
                    ("webhook-id", ID),
                    ("webhook-id", ID),
                    ("webhook-timestamp", TS),
                    ("webhook-signature", EXPECTED),
                ],
                SignatureError::Duplicated { header: ID_LABEL },
            ),
            (
                vec![
                    ("webhook-id", ID),
                    ("webhook-timestamp", TS),
                    ("webhook-timestamp", TS),
                    ("webhook-signature", EXPECTED),
                ],
                SignatureError::Duplicated {
                    header: TIMESTAMP_LABEL,
                },
            ),
        ];
        for (pairs, expected) in cases {
            assert_eq!(
                v.verify_at(&headers(&pairs), BODY, T),
                Err(expected),
                "{pairs:?}"
            );
        }
        // Header names are case-insensitive.
        let map = headers(&[
            ("Webhook-Id", ID),
            ("WEBHOOK-TIMESTAMP", TS),
            ("Webhook-Signature", EXPECTED),
        ]);
        assert_eq!(v.verify_at(&map, BODY, T), Ok(()));
        // Non-ASCII id.
        let mut map = request(ID, TS, EXPECTED);
        map.insert("webhook-id", HeaderValue::from_bytes(b"msg_\xe9").unwrap());
        assert_eq!(
            v.verify_at(&map, BODY, T),
            bad(ID_LABEL, "the value is not visible ASCII")
        );
    }

    #[test]
    fn secret_rotation_second_secret_matches() {
        let v = verifier("standard-webhooks", &["whsec_b3RoZXItc2VjcmV0", SECRET]);
        assert_eq!(v.verify_at(&request(ID, TS, EXPECTED), BODY, T), Ok(()));
        // Signing uses the first secret.
        let out = v.sign_at(BODY, T, ID);
        assert_eq!(
            value_of(&out, "webhook-signature"),
            format!("v1,{}", sig("whsec_b3RoZXItc2VjcmV0", ID, TS, BODY))
        );
        let v = verifier(
            "standard-webhooks",
            &["whsec_b3RoZXItc2VjcmV0", "whsec_dGhpcmQ="],
        );
        assert_eq!(
            v.verify_at(&request(ID, TS, EXPECTED), BODY, T),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn round_trip_including_non_utf8_body() {
        let v = verifier("standard-webhooks", &[SECRET]);
        for body in [BODY, BINARY_BODY, b"" as &[u8]] {
            let map = signed(v.sign_at(body, 1_700_000_000, "msg_42"));
            assert_eq!(v.verify_at(&map, body, 1_700_000_000), Ok(()));
            let mut tampered = body.to_vec();
            match tampered.last_mut() {
                Some(b) => *b ^= 0x80,
                None => tampered.push(b' '),
            }
            assert_eq!(
                v.verify_at(&map, &tampered, 1_700_000_000),
                Err(SignatureError::Mismatch)
            );
        }
        let expected = format!("v1,{}", sig(SECRET, ID, TS, BINARY_BODY));
        assert_eq!(
            v.verify_at(&request(ID, TS, &expected), BINARY_BODY, T),
            Ok(())
        );
    }

    #[test]
    fn secret_parsing() {
        assert_eq!(
            decode_secret("whsec_c2VjcmV0".as_bytes()).unwrap(),
            b"secret"
        );
        assert_eq!(decode_secret("c2VjcmV0".as_bytes()).unwrap(), b"secret");
        assert_eq!(
            decode_secret("whsec_c2VjcmV0LXRleHQ=".as_bytes()).unwrap(),
            b"secret-text"
        );
        assert_eq!(
            decode_secret("whsec_c2VjcmV0LXRleHQ".as_bytes()).unwrap(),
            b"secret-text"
        );
        for bad in [
            "whsec_",
            "whsec_not base64!",
            "whsec_@@@@",
            "whsec_c2Vjc=mV0",
            "whsec_====",
        ] {
            assert!(decode_secret(bad.as_bytes()).is_err(), "{bad}");
        }
        let e = try_scheme(
            "standard-webhooks",
            serde_json::json!({}),
            &[SECRET, "whsec_sup3r$ecret"],
            TOLERANCE,
        )
        .unwrap_err();
        assert!(matches!(e, SchemeError::Invalid { index: 1, .. }), "{e:?}");
        let text = format!("{e} {e:?}");
        assert!(!text.contains("sup3r"), "{text}");
        assert!(text.contains("base64"), "{text}");
        let e = try_scheme(
            "standard-webhooks",
            serde_json::json!({}),
            &["whsec_"],
            TOLERANCE,
        )
        .unwrap_err();
        assert!(matches!(e, SchemeError::Invalid { index: 0, .. }), "{e:?}");
        // Bytes that are not text are not base64 either.
        assert!(decode_secret(b"whsec_\xff\xfe").is_err());
    }

    #[test]
    fn invalid_msg_id_is_left_out() {
        let v = verifier("standard-webhooks", &[SECRET]);
        let out = v.sign_at(BODY, T, "bad\nid");
        assert!(out.iter().all(|(n, _)| n.as_str() != "webhook-id"));
        assert_eq!(
            v.verify_at(&signed(out), BODY, T),
            Err(SignatureError::Missing { header: ID_LABEL })
        );
    }
}
