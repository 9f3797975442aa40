//! Webhook signature verification: the public API ([`Verifier`], [`SchemeConfig`], [`Secret`],
//! the errors) and the helpers every scheme shares (header extraction, signature decoding,
//! timestamp tolerance, constant-time matching).
//!
//! One file per scheme holds that scheme's header parsing, signed content and signing:
//! `stripe.rs`, `standard.rs` (Standard Webhooks), `github.rs`, `shopify.rs`, `slack.rs` and
//! `generic.rs` (HMAC-SHA256 with a configured header, encoding and prefix).
//!
//! # Rules common to all schemes
//!
//! - The MAC is HMAC-SHA256 over the exact raw body bytes (plus, depending on the scheme, a
//!   timestamp and an id). The body is fed to the MAC incrementally; it is never copied.
//! - Each configured secret's MAC is computed once per request and compared, in constant time
//!   (`subtle`), against every candidate signature of the request. Any secret matching any
//!   candidate passes (secret rotation, several `v1` entries).
//! - Every required header must be present exactly once ([`SignatureError::Missing`],
//!   [`SignatureError::Duplicated`]), hold visible ASCII and be non-empty
//!   ([`SignatureError::Malformed`]).
//! - Every candidate signature of the scheme's version is decoded before any MAC is computed; a
//!   signature that is empty, not hex/base64, or does not decode to exactly 32 bytes makes the
//!   whole request [`SignatureError::Malformed`]: it never passes.
//! - **Order of checks**, the same for every timestamped scheme (Stripe, Standard Webhooks,
//!   Slack), as in Stripe's own libraries: headers are parsed and validated first (Missing,
//!   Duplicated, Malformed, including an unparseable timestamp), then the signatures are compared
//!   ([`SignatureError::Mismatch`]), and only a request whose signature matched is checked against
//!   the tolerance ([`SignatureError::TimestampTooOld`], [`SignatureError::TimestampInFuture`]).
//!   A tolerance error therefore means "authentic but stale or early" (a replay, a clock skew or a
//!   very late retry), never a forgery.
//! - The tolerance is symmetric: `now - t > tolerance` is too old and `t - now > tolerance` is in
//!   the future (stricter than Stripe's libraries, which accept any future timestamp). A request
//!   exactly `tolerance` seconds away passes.
//! - Neither secrets nor signature values ever appear in `Debug`/`Display` output or errors.

mod generic;
mod github;
mod shopify;
mod slack;
mod standard;
mod stripe;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

/// HMAC-SHA256 output length in bytes; every decoded signature must have exactly this length.
const TAG_LEN: usize = 32;

/// A decoded HMAC-SHA256 signature or MAC output.
type Tag = [u8; TAG_LEN];

type HmacSha256 = Hmac<Sha256>;

// ---------------------------------------------------------------------------------------------
// Secret
// ---------------------------------------------------------------------------------------------

/// A webhook signing secret: the raw HMAC key bytes.
///
/// `Debug` and `Display` print `Secret(<redacted>)`, never the bytes.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps raw key bytes (already decoded: no `whsec_` handling happens here).
    pub fn from_bytes(b: Vec<u8>) -> Self {
        Self(b)
    }

    /// The key bytes. Crate-private so that secrets cannot leak through the public API.
    pub(crate) fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

/// How the generic scheme encodes its signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Hexadecimal (either case), 64 digits.
    Hex,
    /// Standard base64 alphabet with padding, 44 characters.
    Base64,
}

/// Which scheme a source uses, deserialized from the source's JSON config, internally tagged by
/// `"scheme"`:
///
/// - `{"scheme":"stripe"}`
/// - `{"scheme":"standard-webhooks"}`
/// - `{"scheme":"github"}`
/// - `{"scheme":"shopify"}`
/// - `{"scheme":"slack"}`
/// - `{"scheme":"hmac-sha256","header":"X-Signature","encoding":"hex","prefix":"sha256="}`
///   (`prefix` optional)
///
/// Unknown fields are ignored so that it can be `#[serde(flatten)]`ed into a bigger struct.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(tag = "scheme", rename_all = "kebab-case")]
pub enum SchemeConfig {
    /// `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]` over `"{t}.{body}"`.
    Stripe,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64> …` over
    /// `"{id}.{ts}.{body}"`, with `whsec_`-prefixed base64 secrets.
    StandardWebhooks,
    /// `X-Hub-Signature-256: sha256=<hex>` over the body.
    Github,
    /// `X-Shopify-Hmac-Sha256: <base64>` over the body.
    Shopify,
    /// `X-Slack-Signature: v0=<hex>` over `"v0:{ts}:{body}"` with `X-Slack-Request-Timestamp`.
    Slack,
    /// HMAC-SHA256 over the body in a configured header.
    HmacSha256 {
        /// Header carrying the signature (case-insensitive).
        header: String,
        /// Encoding of the signature.
        encoding: Encoding,
        /// Text that must precede the encoded signature (e.g. `sha256=`), when configured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<String>,
    },
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why secrets (or the scheme configuration) could not be turned into a [`Verifier`].
/// Messages never contain a secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// No secret was given.
    #[error("no signing secret is configured")]
    Empty,
    /// The secret at `index` (0-based) is unusable.
    #[error("signing secret #{index} is invalid: {reason}")]
    Invalid { index: usize, reason: &'static str },
    /// The scheme configuration itself is unusable (generic scheme: bad header name or prefix).
    #[error("invalid signature scheme configuration: {reason}")]
    InvalidConfig { reason: &'static str },
}

/// Why a request's signature was refused. Messages name the header at fault and never contain a
/// secret or a signature value.
///
/// `header` is the header's name as the provider documents it (for the generic scheme: the
/// configured name, interned once per distinct name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A required header is absent.
    #[error("missing required header `{header}`")]
    Missing { header: &'static str },
    /// A required header is present more than once (ambiguous, refused).
    #[error("header `{header}` is present more than once")]
    Duplicated { header: &'static str },
    /// A required header cannot be parsed (bad signature encoding or length, bad timestamp…).
    #[error("malformed header `{header}`: {reason}")]
    Malformed {
        header: &'static str,
        reason: &'static str,
    },
    /// The (authentic) request's timestamp is older than the tolerance.
    #[error("timestamp is {age_secs} s old, beyond the tolerance of {tolerance_secs} s")]
    TimestampTooOld { age_secs: i64, tolerance_secs: i64 },
    /// The (authentic) request's timestamp is further in the future than the tolerance.
    #[error(
        "timestamp is {ahead_secs} s in the future, beyond the tolerance of {tolerance_secs} s"
    )]
    TimestampInFuture {
        ahead_secs: i64,
        tolerance_secs: i64,
    },
    /// The signatures are well-formed but none matches any configured secret.
    #[error("no signature matches any configured secret")]
    Mismatch,
}

impl SignatureError {
    /// Stable machine-readable code, used as the `error` field of HTTP error bodies.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing { .. } => "signature_missing",
            Self::Duplicated { .. } => "signature_header_duplicated",
            Self::Malformed { .. } => "signature_malformed",
            Self::TimestampTooOld { .. } | Self::TimestampInFuture { .. } => {
                "timestamp_out_of_tolerance"
            }
            Self::Mismatch => "signature_invalid",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Verifier
// ---------------------------------------------------------------------------------------------

/// An HMAC-SHA256 instance already keyed with one secret (the key schedule is done once, at
/// construction; each request clones it). `Debug` is redacted.
#[derive(Clone)]
struct Key(HmacSha256);

impl Key {
    fn new(bytes: &[u8]) -> Option<Self> {
        HmacSha256::new_from_slice(bytes).ok().map(Self)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// Scheme data prepared once at construction.
#[derive(Debug, Clone)]
enum Kind {
    Stripe,
    StandardWebhooks,
    Github,
    Shopify,
    Slack,
    Generic(generic::Prepared),
}

/// A configured verifier: a scheme, one or more secrets (rotation: any secret may match) and a
/// timestamp tolerance. `Debug` shows the scheme, the number of secrets and the tolerance only.
#[derive(Clone)]
pub struct Verifier {
    scheme: SchemeConfig,
    kind: Kind,
    /// Signs in [`Verifier::sign`]; also verifies.
    primary: Key,
    /// Further secrets that verify (rotation).
    others: Vec<Key>,
    tolerance: Duration,
    tolerance_secs: i64,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("scheme", &self.scheme)
            .field(
                "secrets",
                &format_args!("{} x <redacted>", 1 + self.others.len()),
            )
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl Verifier {
    /// Parses `secrets` for `scheme` and builds a verifier.
    ///
    /// - Standard Webhooks: `"whsec_" + base64` (the prefix is optional; the rest must be valid
    ///   base64, padding optional) and the decoded bytes are the key.
    /// - Stripe: the secret string's UTF-8 bytes are the key as-is, `whsec_` prefix included.
    /// - GitHub, Shopify, Slack, generic: the UTF-8 bytes.
    ///
    /// Secrets are used verbatim (no trimming). Errors if `secrets` is empty, if any secret is
    /// empty or invalid, or (generic scheme) if the header name or prefix is unusable. Error
    /// messages never contain a secret.
    pub fn new(
        scheme: SchemeConfig,
        secrets: &[String],
        tolerance: Duration,
    ) -> Result<Self, SecretError> {
        let standard = matches!(scheme, SchemeConfig::StandardWebhooks);
        let mut keys = Vec::with_capacity(secrets.len());
        for (index, secret) in secrets.iter().enumerate() {
            if secret.is_empty() {
                return Err(SecretError::Invalid {
                    index,
                    reason: "the secret is empty",
                });
            }
            let key = if standard {
                let bytes = standard::decode_secret(secret)
                    .map_err(|reason| SecretError::Invalid { index, reason })?;
                Key::new(&bytes)
            } else {
                Key::new(secret.as_bytes())
            };
            keys.push(key.ok_or(SecretError::Invalid {
                index,
                reason: "the secret is not a usable HMAC key",
            })?);
        }
        Self::from_keys(scheme, keys, tolerance)
    }

    /// Builds a verifier from raw key bytes, used as-is for every scheme (no `whsec_` or base64
    /// decoding). Errors if `secrets` is empty or any secret is empty.
    pub fn from_secrets(
        scheme: SchemeConfig,
        secrets: &[Secret],
        tolerance: Duration,
    ) -> Result<Self, SecretError> {
        let mut keys = Vec::with_capacity(secrets.len());
        for (index, secret) in secrets.iter().enumerate() {
            if secret.expose().is_empty() {
                return Err(SecretError::Invalid {
                    index,
                    reason: "the secret is empty",
                });
            }
            keys.push(Key::new(secret.expose()).ok_or(SecretError::Invalid {
                index,
                reason: "the secret is not a usable HMAC key",
            })?);
        }
        Self::from_keys(scheme, keys, tolerance)
    }

    fn from_keys(
        scheme: SchemeConfig,
        keys: Vec<Key>,
        tolerance: Duration,
    ) -> Result<Self, SecretError> {
        let mut keys = keys.into_iter();
        let primary = keys.next().ok_or(SecretError::Empty)?;
        let kind = match &scheme {
            SchemeConfig::Stripe => Kind::Stripe,
            SchemeConfig::StandardWebhooks => Kind::StandardWebhooks,
            SchemeConfig::Github => Kind::Github,
            SchemeConfig::Shopify => Kind::Shopify,
            SchemeConfig::Slack => Kind::Slack,
            SchemeConfig::HmacSha256 {
                header,
                encoding,
                prefix,
            } => Kind::Generic(
                generic::Prepared::new(header, *encoding, prefix.as_deref())
                    .map_err(|reason| SecretError::InvalidConfig { reason })?,
            ),
        };
        Ok(Self {
            scheme,
            kind,
            primary,
            others: keys.collect(),
            tolerance,
            tolerance_secs: i64::try_from(tolerance.as_secs()).unwrap_or(i64::MAX),
        })
    }

    /// Verifies `body` (exact raw bytes) against the request `headers` at time `now_unix`
    /// (seconds since the epoch; the caller injects the clock). See the module docs for the order
    /// of checks.
    pub fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_unix: i64,
    ) -> Result<(), SignatureError> {
        match &self.kind {
            Kind::Stripe => stripe::verify(self, headers, body, now_unix),
            Kind::StandardWebhooks => standard::verify(self, headers, body, now_unix),
            Kind::Github => github::verify(self, headers, body),
            Kind::Shopify => shopify::verify(self, headers, body),
            Kind::Slack => slack::verify(self, headers, body, now_unix),
            Kind::Generic(p) => generic::verify(self, p, headers, body),
        }
    }

    /// Lower-case names of the headers needed to re-verify this request later: the signature
    /// header(s), plus the timestamp and id headers of the scheme.
    pub fn signed_headers(&self) -> Vec<String> {
        let names: &[&str] = match &self.kind {
            Kind::Stripe => stripe::SIGNED_HEADERS,
            Kind::StandardWebhooks => standard::SIGNED_HEADERS,
            Kind::Github => github::SIGNED_HEADERS,
            Kind::Shopify => shopify::SIGNED_HEADERS,
            Kind::Slack => slack::SIGNED_HEADERS,
            Kind::Generic(p) => return vec![p.header.as_str().to_owned()],
        };
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    /// Produces headers that [`Verifier::verify`] accepts, signed with the FIRST secret at
    /// `timestamp` (unix seconds; must be non-negative for the timestamped schemes).
    ///
    /// `msg_id` is signed where the scheme signs an id (Standard Webhooks `webhook-id`) and set
    /// as the id header where the scheme has one (GitHub `X-GitHub-Delivery`, Shopify
    /// `X-Shopify-Webhook-Id`); it is ignored otherwise. It should be non-empty visible ASCII: an
    /// id that is not a valid header value is left out of the headers.
    pub fn sign(
        &self,
        body: &[u8],
        timestamp: i64,
        msg_id: &str,
    ) -> Vec<(HeaderName, HeaderValue)> {
        match &self.kind {
            Kind::Stripe => stripe::sign(self, body, timestamp),
            Kind::StandardWebhooks => standard::sign(self, body, timestamp, msg_id),
            Kind::Github => github::sign(self, body, msg_id),
            Kind::Shopify => shopify::sign(self, body, msg_id),
            Kind::Slack => slack::sign(self, body, timestamp),
            Kind::Generic(p) => generic::sign(self, p, body),
        }
    }

    /// The configured scheme.
    pub fn scheme(&self) -> &SchemeConfig {
        &self.scheme
    }

    /// The timestamp tolerance (only used by Stripe, Standard Webhooks and Slack).
    pub fn tolerance(&self) -> Duration {
        self.tolerance
    }

    /// How many secrets verify (1 + the rotated ones).
    pub fn secret_count(&self) -> usize {
        1 + self.others.len()
    }

    // --- helpers for the scheme modules -------------------------------------------------------

    /// MAC of the concatenation of `parts`, fed incrementally, with the primary secret.
    fn sign_tag(&self, parts: &[&[u8]]) -> Tag {
        mac(&self.primary, parts)
    }

    /// Whether any secret's MAC over `parts` equals any of `candidates`. Each secret's MAC is
    /// computed once; every (MAC, candidate) pair is compared in constant time, without early
    /// exit.
    fn matches<I>(&self, parts: &[&[u8]], candidates: I) -> bool
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

    /// Applies the symmetric tolerance to an (already authenticated) timestamp.
    fn check_tolerance(&self, timestamp: i64, now_unix: i64) -> Result<(), SignatureError> {
        check_tolerance(timestamp, now_unix, self.tolerance_secs)
    }
}

fn mac(key: &Key, parts: &[&[u8]]) -> Tag {
    let mut mac = key.0.clone();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

fn check_tolerance(
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
// Shared parsing helpers
// ---------------------------------------------------------------------------------------------

/// The value of a header that must be present exactly once, trimmed of surrounding spaces and
/// tabs, non-empty and visible ASCII.
fn single_header<'h>(
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
fn parse_timestamp(text: &str) -> Result<(i64, &str), &'static str> {
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

/// Decodes a hex signature (either case) of exactly 32 bytes.
fn decode_hex_tag(text: &str) -> Result<Tag, &'static str> {
    if text.is_empty() {
        return Err("the signature is empty");
    }
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("the signature is not hexadecimal");
    }
    if !text.len().is_multiple_of(2) {
        return Err("the signature has an odd number of hex digits");
    }
    if text.len() != 2 * TAG_LEN {
        return Err("the signature is not 32 bytes long");
    }
    let mut tag = [0u8; TAG_LEN];
    hex::decode_to_slice(text, &mut tag).map_err(|_| "the signature is not hexadecimal")?;
    Ok(tag)
}

/// Decodes a standard-alphabet, padded base64 signature of exactly 32 bytes.
fn decode_base64_tag(text: &str) -> Result<Tag, &'static str> {
    const WRONG_LENGTH: &str = "the signature is not 32 bytes long";
    if text.is_empty() {
        return Err("the signature is empty");
    }
    // 88 characters decode to at most 66 bytes: enough room to tell "invalid" from "too long".
    if text.len() > 88 {
        return Err(WRONG_LENGTH);
    }
    let mut buf = [0u8; 66];
    let len = base64::engine::general_purpose::STANDARD
        .decode_slice(text, &mut buf)
        .map_err(|_| "the signature is not valid base64")?;
    let decoded = buf.get(..len).ok_or(WRONG_LENGTH)?;
    Tag::try_from(decoded).map_err(|_| WRONG_LENGTH)
}

/// A header value from generated text (hex, base64, digits, validated ids and prefixes).
fn header_value(text: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(text).ok()
}

/// Appends `(name, value)` to `out` when `value` is a valid header value.
fn push_header(out: &mut Vec<(HeaderName, HeaderValue)>, name: &HeaderName, value: &str) {
    if let Some(value) = header_value(value) {
        out.push((name.clone(), value));
    }
}

/// A `&'static str` for a runtime header name, leaked at most once per distinct name (the set of
/// configured names is small and fixed), so that errors can name the configured header.
fn intern(name: &str) -> &'static str {
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

#[cfg(test)]
mod test_support {
    //! Helpers shared by the scheme tests.
    use super::*;

    pub const TOLERANCE: Duration = Duration::from_secs(300);

    /// The outcome of a verification, in test tables.
    pub type Outcome = Result<(), SignatureError>;

    /// Header (name, value) pairs, in test tables.
    pub type Pairs<'a> = &'a [(&'a str, &'a str)];

    /// A header map from (name, value) pairs; repeated names are appended (duplicates).
    pub fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    /// A header map from `sign`'s output.
    pub fn signed(pairs: Vec<(HeaderName, HeaderValue)>) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name, value);
        }
        map
    }

    /// The value of `name` in `sign`'s output.
    pub fn value_of(pairs: &[(HeaderName, HeaderValue)], name: &str) -> String {
        pairs
            .iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|(_, v)| v.to_str().unwrap().to_owned())
            .unwrap()
    }

    pub fn verifier(scheme: SchemeConfig, secrets: &[&str]) -> Verifier {
        let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
        Verifier::new(scheme, &secrets, TOLERANCE).unwrap()
    }

    /// Independent HMAC-SHA256 over the concatenation (a copy, unlike the code under test).
    pub fn reference_mac(key: &[u8], message: &[u8]) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
        mac.update(message);
        mac.finalize().into_bytes().to_vec()
    }

    pub fn malformed(header: &'static str, reason: &'static str) -> SignatureError {
        SignatureError::Malformed { header, reason }
    }

    /// A non-UTF-8 body.
    pub const BINARY_BODY: &[u8] = &[0xff, 0xfe, 0x00, b'{', 0x80, b'}', 0xc3];
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn secret_debug_and_display_are_redacted() {
        let s = Secret::from_bytes(b"hunter2-very-secret".to_vec());
        assert_eq!(format!("{s:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{s}"), "Secret(<redacted>)");
        assert_eq!(format!("{:#?}", s.clone()), "Secret(<redacted>)");
        assert_eq!(s.expose(), b"hunter2-very-secret");
    }

    #[test]
    fn verifier_debug_reveals_no_secret() {
        let schemes = [
            SchemeConfig::Stripe,
            SchemeConfig::StandardWebhooks,
            SchemeConfig::Github,
            SchemeConfig::Shopify,
            SchemeConfig::Slack,
            SchemeConfig::HmacSha256 {
                header: "X-Sig".into(),
                encoding: Encoding::Hex,
                prefix: None,
            },
        ];
        // "c2VjcmV0LXRleHQ=" is base64 of "secret-text": valid for every scheme.
        for scheme in schemes {
            let v = verifier(
                scheme.clone(),
                &["whsec_c2VjcmV0LXRleHQ=", "whsec_b3RoZXItc2VjcmV0"],
            );
            for text in [format!("{v:?}"), format!("{v:#?}")] {
                assert!(!text.contains("c2VjcmV0"), "{text}");
                assert!(!text.contains("b3RoZXI"), "{text}");
                assert!(!text.contains("secret-text"), "{text}");
                assert!(text.contains("2 x <redacted>"), "{text}");
                assert!(text.contains("Verifier"), "{text}");
            }
        }
    }

    #[test]
    fn scheme_config_deserializes_every_form() {
        let cases: &[(&str, SchemeConfig)] = &[
            (r#"{"scheme":"stripe"}"#, SchemeConfig::Stripe),
            (
                r#"{"scheme":"standard-webhooks"}"#,
                SchemeConfig::StandardWebhooks,
            ),
            (r#"{"scheme":"github"}"#, SchemeConfig::Github),
            (r#"{"scheme":"shopify"}"#, SchemeConfig::Shopify),
            (r#"{"scheme":"slack"}"#, SchemeConfig::Slack),
            (
                r#"{"scheme":"hmac-sha256","header":"X-Signature","encoding":"hex","prefix":"sha256="}"#,
                SchemeConfig::HmacSha256 {
                    header: "X-Signature".into(),
                    encoding: Encoding::Hex,
                    prefix: Some("sha256=".into()),
                },
            ),
            (
                r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base64"}"#,
                SchemeConfig::HmacSha256 {
                    header: "X-Sig".into(),
                    encoding: Encoding::Base64,
                    prefix: None,
                },
            ),
            // Unknown fields are ignored (needed for flatten).
            (
                r#"{"scheme":"stripe","tolerance_secs":60}"#,
                SchemeConfig::Stripe,
            ),
        ];
        for (json, expected) in cases {
            let got: SchemeConfig = serde_json::from_str(json).unwrap();
            assert_eq!(&got, expected, "{json}");
            // Serialize round-trips.
            let back: SchemeConfig =
                serde_json::from_str(&serde_json::to_string(&got).unwrap()).unwrap();
            assert_eq!(&back, expected);
        }
    }

    #[test]
    fn scheme_config_rejects_bad_forms() {
        for json in [
            r#"{"scheme":"nope"}"#,
            r#"{}"#,
            r#"{"scheme":"Stripe"}"#,
            r#"{"scheme":"hmac-sha256","encoding":"hex"}"#,
            r#"{"scheme":"hmac-sha256","header":"X-Sig"}"#,
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"HEX"}"#,
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base32"}"#,
        ] {
            assert!(
                serde_json::from_str::<SchemeConfig>(json).is_err(),
                "{json}"
            );
        }
    }

    #[test]
    fn scheme_config_works_flattened_in_a_bigger_struct() {
        #[derive(Debug, serde::Deserialize)]
        struct Spec {
            #[serde(flatten)]
            scheme: SchemeConfig,
            #[serde(default)]
            tolerance_secs: Option<u64>,
            #[serde(default)]
            event_id: Option<String>,
        }
        let spec: Spec = serde_json::from_str(
            r#"{"scheme":"hmac-sha256","header":"X-Sig","encoding":"base64","tolerance_secs":5,"event_id":"x","other":1}"#,
        )
        .unwrap();
        assert_eq!(
            spec.scheme,
            SchemeConfig::HmacSha256 {
                header: "X-Sig".into(),
                encoding: Encoding::Base64,
                prefix: None
            }
        );
        assert_eq!(spec.tolerance_secs, Some(5));
        assert_eq!(spec.event_id.as_deref(), Some("x"));
        let spec: Spec =
            serde_json::from_str(r#"{"scheme":"standard-webhooks","tolerance_secs":60}"#).unwrap();
        assert_eq!(spec.scheme, SchemeConfig::StandardWebhooks);
    }

    #[test]
    fn error_codes() {
        let cases = [
            (SignatureError::Missing { header: "h" }, "signature_missing"),
            (
                SignatureError::Duplicated { header: "h" },
                "signature_header_duplicated",
            ),
            (
                SignatureError::Malformed {
                    header: "h",
                    reason: "r",
                },
                "signature_malformed",
            ),
            (
                SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                },
                "timestamp_out_of_tolerance",
            ),
            (
                SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                },
                "timestamp_out_of_tolerance",
            ),
            (SignatureError::Mismatch, "signature_invalid"),
        ];
        for (error, code) in cases {
            assert_eq!(error.code(), code, "{error:?}");
        }
    }

    #[test]
    fn error_messages_name_the_header() {
        let m = SignatureError::Missing {
            header: "Stripe-Signature",
        }
        .to_string();
        assert!(m.contains("Stripe-Signature"), "{m}");
        let m = SignatureError::Duplicated {
            header: "webhook-id",
        }
        .to_string();
        assert!(
            m.contains("webhook-id") && m.contains("more than once"),
            "{m}"
        );
        let m = SignatureError::Malformed {
            header: "X-Slack-Signature",
            reason: "the signature is empty",
        }
        .to_string();
        assert!(
            m.contains("X-Slack-Signature") && m.contains("the signature is empty"),
            "{m}"
        );
        let m = SignatureError::TimestampTooOld {
            age_secs: 301,
            tolerance_secs: 300,
        }
        .to_string();
        assert!(
            m.contains("301") && m.contains("300") && m.contains("old"),
            "{m}"
        );
        let m = SignatureError::TimestampInFuture {
            ahead_secs: 400,
            tolerance_secs: 300,
        }
        .to_string();
        assert!(m.contains("400") && m.contains("future"), "{m}");
    }

    #[test]
    fn secret_errors() {
        let schemes = [
            SchemeConfig::Stripe,
            SchemeConfig::StandardWebhooks,
            SchemeConfig::Github,
            SchemeConfig::Shopify,
            SchemeConfig::Slack,
            SchemeConfig::HmacSha256 {
                header: "X-Sig".into(),
                encoding: Encoding::Hex,
                prefix: None,
            },
        ];
        for scheme in schemes {
            assert!(matches!(
                Verifier::new(scheme.clone(), &[], TOLERANCE),
                Err(SecretError::Empty)
            ));
            let e = Verifier::new(
                scheme.clone(),
                &["whsec_c2VjcmV0".into(), String::new()],
                TOLERANCE,
            )
            .unwrap_err();
            assert!(matches!(e, SecretError::Invalid { index: 1, .. }), "{e:?}");
            assert!(!e.to_string().contains("c2VjcmV0"));
            assert!(matches!(
                Verifier::from_secrets(scheme.clone(), &[], TOLERANCE),
                Err(SecretError::Empty)
            ));
            assert!(matches!(
                Verifier::from_secrets(scheme, &[Secret::from_bytes(Vec::new())], TOLERANCE),
                Err(SecretError::Invalid { index: 0, .. })
            ));
        }
        assert_eq!(
            SecretError::Empty.to_string(),
            "no signing secret is configured"
        );
    }

    #[test]
    fn from_secrets_uses_raw_bytes() {
        let v = Verifier::from_secrets(
            SchemeConfig::Github,
            &[Secret::from_bytes(vec![0, 1, 2, 255])],
            TOLERANCE,
        )
        .unwrap();
        let expected = hex::encode(reference_mac(&[0, 1, 2, 255], b"body"));
        let h = headers(&[("x-hub-signature-256", &format!("sha256={expected}"))]);
        assert_eq!(v.verify(&h, b"body", 0), Ok(()));
        assert_eq!(v.secret_count(), 1);
        assert_eq!(v.tolerance(), TOLERANCE);
        assert_eq!(v.scheme(), &SchemeConfig::Github);
    }

    #[test]
    fn signed_headers_per_scheme() {
        let cases: &[(SchemeConfig, &[&str])] = &[
            (SchemeConfig::Stripe, &["stripe-signature"]),
            (
                SchemeConfig::StandardWebhooks,
                &["webhook-id", "webhook-timestamp", "webhook-signature"],
            ),
            (
                SchemeConfig::Github,
                &["x-hub-signature-256", "x-github-delivery", "x-github-event"],
            ),
            (
                SchemeConfig::Shopify,
                &[
                    "x-shopify-hmac-sha256",
                    "x-shopify-webhook-id",
                    "x-shopify-topic",
                ],
            ),
            (
                SchemeConfig::Slack,
                &["x-slack-signature", "x-slack-request-timestamp"],
            ),
            (
                SchemeConfig::HmacSha256 {
                    header: "X-My-Signature".into(),
                    encoding: Encoding::Hex,
                    prefix: None,
                },
                &["x-my-signature"],
            ),
        ];
        for (scheme, expected) in cases {
            let v = verifier(scheme.clone(), &["c2VjcmV0"]);
            assert_eq!(
                v.signed_headers(),
                expected.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{scheme:?}"
            );
        }
    }

    #[test]
    fn every_scheme_round_trips_and_signed_headers_cover_sign() {
        let schemes = [
            SchemeConfig::Stripe,
            SchemeConfig::StandardWebhooks,
            SchemeConfig::Github,
            SchemeConfig::Shopify,
            SchemeConfig::Slack,
            SchemeConfig::HmacSha256 {
                header: "X-Sig".into(),
                encoding: Encoding::Hex,
                prefix: Some("sha256=".into()),
            },
            SchemeConfig::HmacSha256 {
                header: "X-Sig".into(),
                encoding: Encoding::Base64,
                prefix: None,
            },
        ];
        for scheme in schemes {
            let v = verifier(scheme.clone(), &["whsec_c2VjcmV0LXRleHQ="]);
            let out = v.sign(BINARY_BODY, 1_700_000_000, "msg_1");
            let kept = v.signed_headers();
            for (name, _) in &out {
                assert!(
                    kept.contains(&name.as_str().to_owned()),
                    "{scheme:?}: {name}"
                );
            }
            // Re-verifying from only the kept headers works (what the store does).
            let map = signed(
                out.into_iter()
                    .filter(|(n, _)| kept.contains(&n.as_str().to_owned()))
                    .collect(),
            );
            assert_eq!(
                v.verify(&map, BINARY_BODY, 1_700_000_000),
                Ok(()),
                "{scheme:?}"
            );
            assert_eq!(
                v.verify(&map, b"other", 1_700_000_000),
                Err(SignatureError::Mismatch),
                "{scheme:?}"
            );
        }
    }

    #[test]
    fn single_header_rules() {
        let name = HeaderName::from_static("x-h");
        let table: &[(Pairs, Result<&str, SignatureError>)] = &[
            (&[], Err(SignatureError::Missing { header: "X-H" })),
            (
                &[("x-h", "a"), ("X-H", "b")],
                Err(SignatureError::Duplicated { header: "X-H" }),
            ),
            (&[("x-h", "")], Err(malformed("X-H", "the value is empty"))),
            (
                &[("x-h", " \t ")],
                Err(malformed("X-H", "the value is empty")),
            ),
            (&[("x-h", "  abc\t")], Ok("abc")),
            (&[("X-H", "abc")], Ok("abc")),
        ];
        for (pairs, expected) in table {
            let map = headers(pairs);
            assert_eq!(single_header(&map, &name, "X-H"), *expected, "{pairs:?}");
        }
        let mut map = HeaderMap::new();
        map.insert(
            name.clone(),
            HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert_eq!(
            single_header(&map, &name, "X-H"),
            Err(malformed("X-H", "the value is not visible ASCII"))
        );
    }

    #[test]
    fn timestamp_parsing() {
        type Parsed<'a> = Result<(i64, &'a str), ()>;
        let table: &[(&str, Parsed)] = &[
            ("1614265330", Ok((1_614_265_330, "1614265330"))),
            ("0", Ok((0, "0"))),
            ("000", Ok((0, "0"))),
            ("007", Ok((7, "7"))),
            (
                "999999999999999999",
                Ok((999_999_999_999_999_999, "999999999999999999")),
            ),
            ("", Err(())),
            ("-5", Err(())),
            ("+5", Err(())),
            ("1.5", Err(())),
            ("12a", Err(())),
            (" 12", Err(())),
            ("1000000000000000000", Err(())),
            ("99999999999999999999999", Err(())),
        ];
        for (text, expected) in table {
            assert_eq!(parse_timestamp(text).map_err(|_| ()), *expected, "{text:?}");
        }
    }

    #[test]
    fn tolerance_is_inclusive_and_symmetric() {
        let table = [
            (1000, 1000, Ok(())),
            (700, 1000, Ok(())),
            (1300, 1000, Ok(())),
            (
                699,
                1000,
                Err(SignatureError::TimestampTooOld {
                    age_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                1301,
                1000,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: 301,
                    tolerance_secs: 300,
                }),
            ),
            (
                0,
                i64::MAX,
                Err(SignatureError::TimestampTooOld {
                    age_secs: i64::MAX,
                    tolerance_secs: 300,
                }),
            ),
            (
                i64::MAX,
                i64::MIN,
                Err(SignatureError::TimestampInFuture {
                    ahead_secs: i64::MAX,
                    tolerance_secs: 300,
                }),
            ),
        ];
        for (t, now, expected) in table {
            assert_eq!(check_tolerance(t, now, 300), expected, "t={t} now={now}");
        }
        assert_eq!(check_tolerance(5, 5, 0), Ok(()));
        assert!(check_tolerance(5, 6, 0).is_err());
        assert_eq!(check_tolerance(0, i64::MAX, i64::MAX), Ok(()));
    }

    #[test]
    fn hex_decoding() {
        let good = "ab".repeat(32);
        let upper = "AB".repeat(32);
        assert_eq!(decode_hex_tag(&good), Ok([0xab; 32]));
        assert_eq!(decode_hex_tag(&upper), Ok([0xab; 32]));
        let table: &[(String, &str)] = &[
            (String::new(), "the signature is empty"),
            ("ab".repeat(31), "the signature is not 32 bytes long"),
            ("ab".repeat(33), "the signature is not 32 bytes long"),
            (
                good[..63].to_owned(),
                "the signature has an odd number of hex digits",
            ),
            (
                format!("{}zz", "ab".repeat(31)),
                "the signature is not hexadecimal",
            ),
            (
                format!("0x{}", "ab".repeat(31)),
                "the signature is not hexadecimal",
            ),
            (
                format!("{} ", "ab".repeat(32)),
                "the signature is not hexadecimal",
            ),
        ];
        for (text, reason) in table {
            assert_eq!(decode_hex_tag(text), Err(*reason), "{text:?}");
        }
    }

    #[test]
    fn base64_decoding() {
        use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
        let tag = [0xfb; 32];
        assert_eq!(decode_base64_tag(&STANDARD.encode(tag)), Ok(tag));
        let table: &[(String, &str)] = &[
            (String::new(), "the signature is empty"),
            (
                STANDARD.encode([1u8; 31]),
                "the signature is not 32 bytes long",
            ),
            (
                STANDARD.encode([1u8; 33]),
                "the signature is not 32 bytes long",
            ),
            (
                STANDARD.encode([1u8; 64]),
                "the signature is not 32 bytes long",
            ),
            (
                STANDARD.encode([1u8; 200]),
                "the signature is not 32 bytes long",
            ),
            (
                STANDARD.encode(tag)[..43].to_owned(),
                "the signature is not valid base64",
            ),
            (
                STANDARD_NO_PAD.encode(tag),
                "the signature is not valid base64",
            ),
            (URL_SAFE.encode(tag), "the signature is not valid base64"),
            (
                "not base64 at all!!".to_owned(),
                "the signature is not valid base64",
            ),
            ("====".to_owned(), "the signature is not valid base64"),
        ];
        for (text, reason) in table {
            assert_eq!(decode_base64_tag(text), Err(*reason), "{text:?}");
        }
    }

    #[test]
    fn matches_checks_every_secret_against_every_candidate() {
        let v = verifier(SchemeConfig::Github, &["one", "two", "three"]);
        let parts: &[&[u8]] = &[b"ab", b"", b"cd"];
        let tag_of = |k: &str| -> Tag { reference_mac(k.as_bytes(), b"abcd").try_into().unwrap() };
        assert!(v.matches(parts, [tag_of("one")].into_iter()));
        assert!(v.matches(parts, [[0; 32], tag_of("three")].into_iter()));
        assert!(!v.matches(parts, [[0; 32], tag_of("four")].into_iter()));
        assert!(!v.matches(parts, std::iter::empty()));
        assert_eq!(v.sign_tag(parts), tag_of("one"));
    }

    #[test]
    fn interning_returns_the_same_str() {
        let a = intern("X-Interned-Test");
        let b = intern(&String::from("X-Interned-Test"));
        assert_eq!(a, "X-Interned-Test");
        assert!(std::ptr::eq(a, b));
    }
}
