//! What the schemes share: pre-keyed HMAC-SHA256 instances and the constant-time match of every
//! secret against every candidate ([`HmacKeys`]), the timestamp tolerance ([`Tolerance`]),
//! header extraction ([`single_header`]), timestamp and signature decoding, building signed
//! headers, header-name interning ([`intern`]), settings deserialization ([`settings`]) and the
//! little helpers sample events use ([`random_alnum`], [`rfc3339`]).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use super::{SchemeError, Secret, SignatureError, Spec};
use crate::identity::FieldRule;

mod decode;
pub(super) use decode::{decode_base64_tag, decode_hex_tag};

/// HMAC-SHA256 output length in bytes; every decoded signature must have exactly this length.
pub(super) const TAG_LEN: usize = 32;

/// A decoded HMAC-SHA256 signature or MAC output.
pub(super) type Tag = [u8; TAG_LEN];

type HmacSha256 = Hmac<Sha256>;

// ---------------------------------------------------------------------------------------------
// Keys and matching
// ---------------------------------------------------------------------------------------------

/// One HMAC-SHA256 instance per secret, keyed at construction (the key schedule runs once; each
/// request clones the keyed state). The first secret signs; all verify. `Debug` shows the number
/// of secrets only.
#[derive(Clone)]
pub(super) struct HmacKeys {
    primary: HmacSha256,
    others: Vec<HmacSha256>,
}

impl HmacKeys {
    /// Keys each secret's bytes as they are. Errors if there is no secret or one is empty.
    pub(super) fn raw(secrets: &[Secret]) -> Result<Self, SchemeError> {
        Self::decoded(secrets, |bytes| Ok(Cow::Borrowed(bytes)))
    }

    /// Keys each secret after `decode` turned its bytes into key bytes (`Err(reason)`: the secret
    /// is invalid; the reason must not quote it). Errors if there is no secret, or one is empty
    /// before or after decoding.
    pub(super) fn decoded(
        secrets: &[Secret],
        decode: impl Fn(&[u8]) -> Result<Cow<'_, [u8]>, &'static str>,
    ) -> Result<Self, SchemeError> {
        let mut keys = Vec::with_capacity(secrets.len());
        for (index, secret) in secrets.iter().enumerate() {
            let invalid = |reason| SchemeError::Invalid { index, reason };
            if secret.expose().is_empty() {
                return Err(invalid("the secret is empty"));
            }
            let bytes = decode(secret.expose()).map_err(invalid)?;
            let key = HmacSha256::new_from_slice(&bytes)
                .map_err(|_| invalid("the secret is not a usable HMAC key"))?;
            keys.push(key);
        }
        let mut keys = keys.into_iter();
        let primary = keys.next().ok_or(SchemeError::Empty)?;
        Ok(Self {
            primary,
            others: keys.collect(),
        })
    }

    /// MAC of the concatenation of `parts`, fed incrementally, with the first secret.
    pub(super) fn sign(&self, parts: &[&[u8]]) -> Tag {
        mac(&self.primary, parts)
    }

    /// Whether any secret's MAC over `parts` equals any of `candidates`. Each secret's MAC is
    /// computed once (one pass over the body per secret); every (MAC, candidate) pair is compared
    /// in constant time, without early exit.
    pub(super) fn matches<I>(&self, parts: &[&[u8]], candidates: I) -> bool
    where
        I: Iterator<Item = Tag> + Clone,
    {
        let mut found = Choice::from(0);
        for key in std::iter::once(&self.primary).chain(&self.others) {
            let tag = mac(key, parts);
            for candidate in candidates.clone() {
                found |= tag.ct_eq(&candidate);
            }
        }
        bool::from(found)
    }

    /// `Ok(())` if [`HmacKeys::matches`], else [`SignatureError::Mismatch`].
    pub(super) fn check<I>(&self, parts: &[&[u8]], candidates: I) -> Result<(), SignatureError>
    where
        I: Iterator<Item = Tag> + Clone,
    {
        if self.matches(parts, candidates) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }

    /// The MAC of `message` with the secret whose MAC over `parts` is `candidate` (the secret
    /// that signed a request, for answering its handshake with the same one); `None` if none is.
    /// Every secret is compared in constant time.
    pub(super) fn sign_with_matching(
        &self,
        parts: &[&[u8]],
        candidate: &Tag,
        message: &[u8],
    ) -> Option<Tag> {
        let mut found = None;
        for key in std::iter::once(&self.primary).chain(&self.others) {
            if bool::from(mac(key, parts).ct_eq(candidate)) && found.is_none() {
                found = Some(mac(key, &[message]));
            }
        }
        found
    }

    /// How many secrets verify.
    pub(super) fn count(&self) -> usize {
        1 + self.others.len()
    }
}

impl fmt::Debug for HmacKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x <redacted>", self.count())
    }
}

fn mac(key: &HmacSha256, parts: &[&[u8]]) -> Tag {
    let mut mac = key.clone();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

// ---------------------------------------------------------------------------------------------
// Tolerance
// ---------------------------------------------------------------------------------------------

/// The symmetric timestamp tolerance of a timestamped scheme.
#[derive(Clone, Copy)]
pub(super) struct Tolerance {
    secs: i64,
}

impl Tolerance {
    pub(super) fn new(tolerance: Duration) -> Self {
        Self {
            secs: i64::try_from(tolerance.as_secs()).unwrap_or(i64::MAX),
        }
    }

    /// Applies the tolerance to an (already authenticated) timestamp.
    pub(super) fn check(self, timestamp: i64, now_unix: i64) -> Result<(), SignatureError> {
        check_tolerance(timestamp, now_unix, self.secs)
    }
}

impl fmt::Debug for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.secs)
    }
}

pub(super) fn check_tolerance(
    timestamp: i64,
    now_unix: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let age = now_unix.saturating_sub(timestamp);
    if age > tolerance_secs {
        return Err(SignatureError::TimestampTooOld {
            age_secs: age,
            tolerance_secs,
        });
    }
    let ahead = timestamp.saturating_sub(now_unix);
    if ahead > tolerance_secs {
        return Err(SignatureError::TimestampInFuture {
            ahead_secs: ahead,
            tolerance_secs,
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parsing requests
// ---------------------------------------------------------------------------------------------

/// The value of a header that must be present exactly once, trimmed of surrounding spaces and
/// tabs, non-empty and visible ASCII. `label` names it in errors.
pub(super) fn single_header<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
    label: &'static str,
) -> Result<&'h str, SignatureError> {
    let mut values = headers.get_all(name).iter();
    let value = values
        .next()
        .ok_or(SignatureError::Missing { header: label })?;
    if values.next().is_some() {
        return Err(SignatureError::Duplicated { header: label });
    }
    let text = value.to_str().map_err(|_| SignatureError::Malformed {
        header: label,
        reason: "the value is not visible ASCII",
    })?;
    let text = text.trim_matches([' ', '\t']);
    if text.is_empty() {
        return Err(SignatureError::Malformed {
            header: label,
            reason: "the value is empty",
        });
    }
    Ok(text)
}

/// A timestamp in whole seconds: 1 to 18 ASCII digits (no sign). Returns the value and its
/// canonical decimal form (leading zeros removed), which is what Stripe and Standard Webhooks
/// sign.
pub(super) fn parse_timestamp(text: &str) -> Result<(i64, &str), &'static str> {
    if text.is_empty() {
        return Err("the timestamp is empty");
    }
    if text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the timestamp is not a whole number of seconds");
    }
    let value = text
        .parse::<i64>()
        .map_err(|_| "the timestamp is not a whole number of seconds")?;
    let canonical = text.trim_start_matches('0');
    Ok((value, if canonical.is_empty() { "0" } else { canonical }))
}

/// What a scheme that signs the body and the values of `signed_headers` covers
/// ([`super::Scheme::signs`]): the body's JSON pointers and hash always, a header only if it is
/// one of `signed_headers` (case-insensitive).
pub(super) fn covers(rule: &FieldRule, signed_headers: &[&HeaderName]) -> bool {
    match rule {
        FieldRule::JsonPointer(_) | FieldRule::BodySha256 => true,
        FieldRule::Header(name) => signed_headers
            .iter()
            .any(|h| h.as_str().eq_ignore_ascii_case(name.trim())),
        FieldRule::FirstOf(rules) => rules.iter().all(|r| covers(r, signed_headers)),
    }
}

// ---------------------------------------------------------------------------------------------
// Building signed headers
// ---------------------------------------------------------------------------------------------

/// Appends `(name, value)` to `out` when `value` is a valid header value (generated text: hex,
/// base64, digits, validated ids and prefixes).
pub(super) fn push_header(
    out: &mut Vec<(HeaderName, HeaderValue)>,
    name: &HeaderName,
    value: &str,
) {
    if let Ok(value) = HeaderValue::from_str(value) {
        out.push((name.clone(), value));
    }
}

/// Standard base64 (padded) of a tag.
pub(super) fn base64_tag(tag: &Tag) -> String {
    base64::engine::general_purpose::STANDARD.encode(tag)
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// A `&'static str` for a runtime header name, leaked at most once per distinct name (the set of
/// configured names is small and fixed), so that errors can name a configured header.
pub(super) fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = names.get(name) {
        return existing;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// The scheme's settings, deserialized from the source's object (unknown members ignored).
pub(super) fn settings<T: DeserializeOwned>(spec: &Spec<'_>) -> Result<T, SchemeError> {
    serde_json::from_value(serde_json::Value::Object(spec.settings.clone())).map_err(|e| {
        SchemeError::InvalidConfig {
            reason: e.to_string(),
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Samples
// ---------------------------------------------------------------------------------------------

/// `n` random ASCII letters and digits (sample ids).
pub(super) fn random_alnum(n: usize) -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(n)
        .collect()
}

/// A random UUID v4 (GitHub and Shopify delivery ids).
pub(super) fn random_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Unix seconds as RFC 3339 UTC, `2026-11-30T10:00:00Z` (sample timestamps).
pub(super) fn rfc3339(secs: i64) -> String {
    // Days since 1970-01-01 → civil date (Howard Hinnant's algorithm).
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}
