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
//! **Asymmetric signatures** (`v1a`): a secret `whpk_` + base64 is an Ed25519 public key (32
//! bytes) that verifies `v1a,<base64 of the 64-byte signature>` entries over the same content;
//! `whsk_` + base64 is a private key (the 32-byte seed, or seed and public key) for local use and
//! tests: its public half verifies and, as the first secret, it signs `v1a`. A source may mix
//! symmetric and asymmetric secrets; `v1a` entries are checked (and must decode to 64 bytes) only
//! when an asymmetric key is configured, and at least one entry of a checked version is required.
//!
//! **Header names** are configuration: `header_prefix` (default `webhook-`) names the three
//! headers `{prefix}id`, `{prefix}timestamp`, `{prefix}signature`. Svix and the providers that
//! send through it (Resend, Clerk, …) use `"header_prefix": "svix-"`, with their `whsec_` secrets.
//!
//! Event id: the `{prefix}id` header; type: the body's `/type`. Sample: a `message.sent` event of
//! an email provider (`msg_…` id).

use std::borrow::Cow;

use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use serde::Deserialize;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;

use super::asymmetric::{Algorithm, AsymmetricKeys, KeyBytes, ED25519_SIG_LEN};
use super::headers::{covers, parse_timestamp, push_header, single_header};
use super::hmac::HmacKeys;
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
use super::settings::{intern, settings};
#[cfg(any(test, feature = "samples"))]
use super::stamp::rfc3339;
use super::tag::{base64_tag, decode_base64_tag, Tag};
use super::tolerance::Tolerance;
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

const DEFAULT_PREFIX: &str = "webhook-";

/// The three header names (lower case) and their labels for errors.
#[derive(Debug, Clone)]
struct Names {
    /// `[id, timestamp, signature]`.
    headers: [HeaderName; 3],
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

impl Names {
    fn new(prefix: &str) -> Result<Self, SchemeError> {
        let prefix = prefix.to_ascii_lowercase();
        let name = |suffix: &str| {
            HeaderName::from_bytes(format!("{prefix}{suffix}").as_bytes()).map_err(|_| {
                SchemeError::InvalidConfig {
                    reason: "`header_prefix` does not make valid header names".into(),
                }
            })
        };
        let headers = [name("id")?, name("timestamp")?, name("signature")?];
        Ok(Self {
            id: intern(headers[0].as_str()),
            timestamp: intern(headers[1].as_str()),
            signature: intern(headers[2].as_str()),
            headers,
        })
    }
}

#[derive(Deserialize)]
struct Settings {
    header_prefix: Option<String>,
}

/// The Standard Webhooks scheme of one source.
#[derive(Debug, Clone)]
pub(super) struct StandardWebhooks {
    /// The symmetric (`whsec_`) secrets, if any.
    keys: Option<HmacKeys>,
    /// The asymmetric (`whpk_`/`whsk_`) keys, if any.
    public: Option<std::sync::Arc<AsymmetricKeys>>,
    /// Whether the first secret is asymmetric (then it signs `v1a`).
    signs_v1a: bool,
    names: Names,
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

/// Decodes a `v1a` signature: standard base64 (padded) of exactly 64 bytes.
fn decode_v1a(text: &str) -> Result<[u8; ED25519_SIG_LEN], &'static str> {
    let mut buf = [0u8; ED25519_SIG_LEN + 3];
    let len = base64::engine::general_purpose::STANDARD
        .decode_slice(text, &mut buf)
        .map_err(|_| "a `v1a` signature is not base64 of 64 bytes")?;
    buf.get(..len)
        .and_then(|s| <[u8; ED25519_SIG_LEN]>::try_from(s).ok())
        .ok_or("a `v1a` signature is not base64 of 64 bytes")
}

/// The decoded `v1a` signatures (only call after [`validate`] succeeded with `v1a` checked).
fn v1a_signatures(header: &str) -> impl Iterator<Item = [u8; ED25519_SIG_LEN]> + '_ {
    entries(header)
        .flatten()
        .filter(|(version, _)| *version == "v1a")
        .filter_map(|(_, s)| decode_v1a(s).ok())
}

/// Checks the header: `v1` entries always, `v1a` entries when `asymmetric`. As in the reference
/// libraries, an entry that cannot be a signature (not base64, wrong length) is only a candidate
/// that cannot match: it is skipped, and the header is malformed only when no entry of a version a
/// configured key checks is usable (the first unusable one's reason is given).
fn validate(header: &str, symmetric: bool, asymmetric: bool) -> Result<(), &'static str> {
    let (mut v1_count, mut v1a_count) = (0usize, 0usize);
    let mut first_unusable = None;
    for entry in entries(header) {
        let (version, signature) = entry.ok_or("an entry is not of the form version,signature")?;
        let decoded = if version == "v1" {
            decode_base64_tag(signature).map(|_| v1_count += 1)
        } else if version == "v1a" && asymmetric {
            decode_v1a(signature).map(|_| v1a_count += 1)
        } else {
            Ok(())
        };
        if let Err(reason) = decoded {
            first_unusable.get_or_insert(reason);
        }
    }
    match (symmetric && v1_count > 0, asymmetric && v1a_count > 0) {
        (false, false) => Err(first_unusable.unwrap_or(if !asymmetric {
            "no `v1` signature"
        } else if !symmetric {
            "no `v1a` signature"
        } else {
            "no `v1` or `v1a` signature"
        })),
        _ => Ok(()),
    }
}

impl StandardWebhooks {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let [id_name, ts_name, sig_name] = &self.names.headers;
        let signature = single_header(headers, sig_name, self.names.signature)?;
        let id = single_header(headers, id_name, self.names.id)?;
        let timestamp = single_header(headers, ts_name, self.names.timestamp)?;
        let (timestamp, canonical) =
            parse_timestamp(timestamp).map_err(|reason| SignatureError::Malformed {
                header: self.names.timestamp,
                reason,
            })?;
        validate(signature, self.keys.is_some(), self.public.is_some()).map_err(|reason| {
            SignatureError::Malformed {
                header: self.names.signature,
                reason,
            }
        })?;
        let parts: &[&[u8]] = &[id.as_bytes(), b".", canonical.as_bytes(), b".", body];
        let symmetric = self
            .keys
            .as_ref()
            .is_some_and(|keys| keys.matches(parts, v1_tags(signature)));
        let asymmetric = !symmetric
            && self.public.as_ref().is_some_and(|keys| {
                let message = parts.concat();
                v1a_signatures(signature).any(|sig| keys.verifies(&message, &sig))
            });
        if !(symmetric || asymmetric) {
            return Err(SignatureError::Mismatch);
        }
        self.tolerance.check(timestamp, now_unix)
    }
}

/// `whpk_` + base64: a public key; `whsk_` + base64: a private key.
fn decode_asymmetric(secret: &[u8]) -> Result<KeyBytes, &'static str> {
    const NOT_BASE64: &str = "the key is not valid base64 after its `whpk_`/`whsk_` prefix";
    let text = std::str::from_utf8(secret).map_err(|_| NOT_BASE64)?;
    let decode = |encoded: &str| SECRET_ENGINE.decode(encoded).map_err(|_| NOT_BASE64);
    match (text.strip_prefix("whpk_"), text.strip_prefix("whsk_")) {
        (Some(public), _) => decode(public).map(KeyBytes::Public),
        (_, Some(private)) => decode(private).map(KeyBytes::Private),
        _ => Err(NOT_BASE64),
    }
}

fn is_asymmetric(secret: &super::Secret) -> bool {
    secret.expose().starts_with(b"whpk_") || secret.expose().starts_with(b"whsk_")
}

/// Builds from the secrets at `indices` of `secrets`; errors name the original index.
fn subset<T>(
    secrets: &[super::Secret],
    indices: &[usize],
    build: impl FnOnce(&[super::Secret]) -> Result<T, SchemeError>,
) -> Result<Option<T>, SchemeError> {
    if indices.is_empty() {
        return Ok(None);
    }
    let chosen: Vec<super::Secret> = indices.iter().map(|&i| secrets[i].clone()).collect();
    build(&chosen).map(Some).map_err(|e| match e {
        SchemeError::Invalid { index, reason } => SchemeError::Invalid {
            index: indices.get(index).copied().unwrap_or(index),
            reason,
        },
        other => other,
    })
}

impl FromSpec for StandardWebhooks {
    /// Secrets are `whsec_` + base64 (prefix optional, padding optional), or `whpk_`/`whsk_`
    /// Ed25519 keys; setting `header_prefix` (optional, default `webhook-`).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let Settings { header_prefix } = settings(spec)?;
        let names = Names::new(header_prefix.as_deref().unwrap_or(DEFAULT_PREFIX))?;
        if spec.secrets.is_empty() {
            return Err(SchemeError::Empty);
        }
        let (asym, sym): (Vec<usize>, Vec<usize>) =
            (0..spec.secrets.len()).partition(|&i| is_asymmetric(&spec.secrets[i]));
        let keys = subset(spec.secrets, &sym, |s| {
            HmacKeys::decoded(s, |s| decode_secret(s).map(Cow::Owned))
        })?;
        let public = subset(spec.secrets, &asym, |s| {
            AsymmetricKeys::new(Algorithm::Ed25519, s, decode_asymmetric)
        })?;
        Ok(Self {
            keys,
            public: public.map(std::sync::Arc::new),
            signs_v1a: asym.first() == Some(&0),
            names,
            tolerance: Tolerance::new(spec.tolerance),
        })
    }
}

impl Scheme for StandardWebhooks {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    /// `v1` with the first secret, or `v1a` when it is a `whsk_` private key.
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let t = message.timestamp.to_string();
        let id = message.msg_id.as_bytes();
        let parts: &[&[u8]] = &[id, b".", t.as_bytes(), b".", message.body];
        let signature = match (&self.public, &self.keys) {
            (Some(public), _) if self.signs_v1a => format!(
                "v1a,{}",
                base64::engine::general_purpose::STANDARD.encode(public.sign(&parts.concat())?)
            ),
            (_, Some(keys)) => format!("v1,{}", base64_tag(&keys.sign(parts))),
            (_, None) => {
                return Err(SignError::Unsupported {
                    reason: "no symmetric secret is configured",
                })
            }
        };
        let [id_name, ts_name, sig_name] = &self.names.headers;
        let mut out = Vec::with_capacity(3);
        push_header(&mut out, id_name, message.msg_id);
        push_header(&mut out, ts_name, &t);
        push_header(&mut out, sig_name, &signature);
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &self.names.headers
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::header(self.names.id)
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/type"))
    }

    /// The body, `webhook-id` and `webhook-timestamp`.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[&self.names.headers[0], &self.names.headers[1]])
    }
}

/// The samples of the scheme (its provider's events, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
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

// The default header names, as tests name them.
#[cfg(test)]
const ID_LABEL: &str = "webhook-id";
#[cfg(test)]
const TIMESTAMP_LABEL: &str = "webhook-timestamp";
#[cfg(test)]
const SIGNATURE_LABEL: &str = "webhook-signature";

#[cfg(test)]
mod asymmetric_tests;

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
