//! Destinations: where processed events are delivered. Data in the table (not in the template),
//! managed by `inboxctl dest …`, every change journaled beside it ([`JournalEntry`]).
//!
//! A destination has an id, an HTTPS URL, the patterns of the events it wants
//! ([`super::pattern`]), its signing secrets (`whsec_…`; several while one is rotated out, each
//! with an optional end of validity), a rate (requests/second and burst), the most requests in
//! flight at once per worker, a request timeout, a retry schedule, and a state: active, paused
//! (deliveries wait, nothing is sent) or disabled with a reason (by a 410 answer, by the circuit
//! breaker after a long failure, or by an operator).

use super::pattern::Pattern;
use super::schedule::RetrySchedule;
use super::schema::*;
use crate::store::attr::s;
use crate::store::Item;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

mod id;
pub use id::{check_id, DestinationId};

/// Longest destination id, in bytes.
pub const MAX_ID_LEN: usize = 64;
/// Longest request timeout: below the deliver function's timeout (60 s) with room for a batch.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// Defaults of a new destination.
pub const DEFAULT_RATE: f64 = 10.0;
pub const DEFAULT_BURST: u32 = 10;
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 10;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// A signing secret: `whsec_` + base64, redacted in `Debug`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretText(String);

impl SecretText {
    /// A secret as given (checked: `whsec_` + base64 of at least 24 bytes).
    pub fn parse(text: &str) -> Result<Self, DestinationError> {
        let bad = || {
            DestinationError::Invalid(
                "a secret must be whsec_ followed by base64 of 24 to 64 bytes".into(),
            )
        };
        let b64 = text.strip_prefix("whsec_").ok_or_else(bad)?;
        let key = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| bad())?;
        if !(24..=64).contains(&key.len()) {
            return Err(bad());
        }
        Ok(Self(text.to_owned()))
    }

    /// A fresh secret: `whsec_` + base64 of 32 random bytes (from the OS's CSPRNG, through v4 UUIDs).
    pub fn generate() -> Self {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        Self(format!(
            "whsec_{}",
            base64::engine::general_purpose::STANDARD.encode(key)
        ))
    }

    /// The secret's text, for signing and for showing to the operator who created it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretText(<redacted>)")
    }
}

/// One of a destination's secrets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningSecret {
    pub secret: SecretText,
    /// ms since the epoch.
    pub created_at: i64,
    /// Signs until then (ms); `None`: until rotated out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

/// Active, paused or disabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DestinationState {
    Active,
    Paused,
    Disabled,
}

impl DestinationState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Disabled => "disabled",
        }
    }
}

/// A destination as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Destination {
    pub id: DestinationId,
    pub url: String,
    pub patterns: Vec<Pattern>,
    /// Newest first.
    pub secrets: Vec<SigningSecret>,
    pub rate_per_sec: f64,
    pub burst: u32,
    pub max_in_flight: u32,
    pub timeout_ms: u64,
    pub schedule: RetrySchedule,
    pub state: DestinationState,
    /// Why it is paused or disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Optimistic-concurrency version (every change is conditioned on it).
    #[serde(default)]
    pub version: u64,
}

/// A destination was refused, or could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    #[error("{0}")]
    Invalid(String),
    #[error("a stored destination could not be read: {0}")]
    Corrupt(String),
}

/// Checks a URL's shape: `https://host[:port]/…` (or `http://` when `allow_http`), no user info,
/// no fragment, no whitespace. Where it may connect is checked again at connect time, on the
/// resolved address (the deliver function's SSRF guard).
pub fn check_url(url: &str, allow_http: bool) -> Result<(), DestinationError> {
    let invalid = |why: &str| DestinationError::Invalid(format!("url {url:?}: {why}"));
    let uri: http::Uri = url.parse().map_err(|_| invalid("not a URL"))?;
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if allow_http => {}
        Some("http") => {
            return Err(invalid(
                "must be https:// (http:// only for local testing, --allow-http)",
            ))
        }
        _ => return Err(invalid("must be https://")),
    }
    let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("user information is not allowed"));
    }
    if authority.host().is_empty() {
        return Err(invalid("no host"));
    }
    if url.contains('#') || url.chars().any(char::is_whitespace) || url.len() > 2048 {
        return Err(invalid("no fragment, no whitespace, at most 2048 bytes"));
    }
    Ok(())
}

impl Destination {
    /// A new, active destination with the defaults; `secret` generated when not given.
    pub fn new(
        id: &DestinationId,
        url: &str,
        patterns: Vec<Pattern>,
        secret: Option<SecretText>,
        now: i64,
    ) -> Self {
        Self {
            id: id.clone(),
            url: url.to_owned(),
            patterns,
            secrets: vec![SigningSecret {
                secret: secret.unwrap_or_else(SecretText::generate),
                created_at: now,
                expires_at: None,
            }],
            rate_per_sec: DEFAULT_RATE,
            burst: DEFAULT_BURST,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            timeout_ms: u64::try_from(DEFAULT_TIMEOUT.as_millis()).unwrap_or(10_000),
            schedule: RetrySchedule::default(),
            state: DestinationState::Active,
            reason: None,
            created_at: now,
            updated_at: now,
            version: 0,
        }
    }

    /// Checks every field (`allow_http`: accept `http://` URLs, for local use).
    pub fn validate(&self, allow_http: bool) -> Result<(), DestinationError> {
        check_url(&self.url, allow_http)?;
        let invalid = |s: String| Err(DestinationError::Invalid(s));
        if self.patterns.is_empty() {
            return invalid("at least one pattern (`*` for every event)".into());
        }
        if self.secrets.is_empty() {
            return invalid("at least one secret".into());
        }
        if !(self.rate_per_sec.is_finite()
            && self.rate_per_sec > 0.0
            && self.rate_per_sec <= 10_000.0)
        {
            return invalid(format!(
                "rate {} must be above 0 and at most 10000 per second",
                self.rate_per_sec
            ));
        }
        if !(1..=10_000).contains(&self.burst) || !(1..=1_000).contains(&self.max_in_flight) {
            return invalid("burst 1-10000, max in flight 1-1000".into());
        }
        if self.timeout_ms == 0 || Duration::from_millis(self.timeout_ms) > MAX_TIMEOUT {
            return invalid(format!(
                "timeout must be 1 ms to {} s",
                MAX_TIMEOUT.as_secs()
            ));
        }
        Ok(())
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Whether an event of `source`/`event_type` is wanted (the state is not looked at).
    pub fn wants(&self, source: &str, event_type: Option<&str>) -> bool {
        super::pattern::any_matches(&self.patterns, source, event_type)
    }

    /// The secrets that sign at `now`, newest first.
    pub fn active_secrets(&self, now: i64) -> impl Iterator<Item = &SecretText> {
        self.secrets
            .iter()
            .filter(move |s| s.expires_at.is_none_or(|e| e > now))
            .map(|s| &s.secret)
    }

    /// Adds `secret` as the newest; the others sign for `keep_old` more, then are dropped at the
    /// next change. Returns nothing: the caller journals the rotation (never the secret).
    pub fn rotate(&mut self, secret: SecretText, keep_old: Duration, now: i64) {
        let until = now.saturating_add(i64::try_from(keep_old.as_millis()).unwrap_or(i64::MAX));
        self.secrets
            .retain(|s| s.expires_at.is_none_or(|e| e > now));
        for s in &mut self.secrets {
            s.expires_at = Some(s.expires_at.map_or(until, |e| e.min(until)));
        }
        self.secrets.insert(
            0,
            SigningSecret {
                secret,
                created_at: now,
                expires_at: None,
            },
        );
    }

    /// The item (`pk`, `sk`, `kind` and every field; `version` is set by the store's `Replace`).
    pub fn to_item(&self) -> Result<Item, DestinationError> {
        let mut item: Item =
            serde_dynamo::to_item(self).map_err(|e| DestinationError::Corrupt(e.to_string()))?;
        item.insert(crate::store::schema::PK.into(), s(DESTINATIONS_PK));
        item.insert(
            crate::store::schema::SK.into(),
            s(destination_sk(self.id.as_str())),
        );
        item.insert(crate::store::schema::KIND.into(), s(KIND_DESTINATION));
        Ok(item)
    }

    /// Reads an item written by [`Self::to_item`].
    pub fn from_item(item: Item) -> Result<Self, DestinationError> {
        serde_dynamo::from_item(item).map_err(|e| DestinationError::Corrupt(e.to_string()))
    }
}

/// One change to a destination, journaled under its partition in the same transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// ms since the epoch.
    pub at: i64,
    /// Who: an operator's name, or `deliver` for the workers (a 410, the circuit breaker).
    pub actor: String,
    /// `added`, `paused`, `resumed`, `disabled`, `secret-rotated`, `removed`, …
    pub action: String,
    /// What changed, in words (never a secret).
    #[serde(default)]
    pub detail: String,
}

impl JournalEntry {
    pub fn new(at: i64, actor: &str, action: &str, detail: impl Into<String>) -> Self {
        Self {
            at,
            actor: actor.to_owned(),
            action: action.to_owned(),
            detail: detail.into(),
        }
    }

    /// The journal item of destination `id`.
    pub fn to_item(&self, id: &DestinationId) -> Result<Item, DestinationError> {
        let mut item: Item =
            serde_dynamo::to_item(self).map_err(|e| DestinationError::Corrupt(e.to_string()))?;
        item.insert(
            crate::store::schema::PK.into(),
            s(destination_pk(id.as_str())),
        );
        item.insert(
            crate::store::schema::SK.into(),
            s(log_sk(self.at, &uuid::Uuid::new_v4())),
        );
        item.insert(crate::store::schema::KIND.into(), s(KIND_DESTINATION_LOG));
        Ok(item)
    }
}

#[cfg(test)]
mod tests;

/// A destination id for tests (panics on an invalid one).
#[cfg(test)]
pub(crate) fn did(id: &str) -> DestinationId {
    DestinationId::parse(id).unwrap()
}
