//! Configuration, at the bottom of the crate: how a variable is read, what each variable means,
//! and the errors that name the variable at fault (never containing a secret). It depends on
//! nothing else in the crate; each part reads its own settings through it, at cold start:
//!
//! - [`env`]: [`Env`], the one way every function and `inboxctl` read a variable (trimmed, empty
//!   counts as unset, the documented default, errors naming the variable);
//! - [`doc`]: how a variable is documented ([`Var`]) and the tables of `docs/configuration.md` rendered from that;
//! - [`catalog`]: the inbox's variables, each documented once ([`vars`]: their bare names);
//! - here: [`ConfigError`] and the defaults other parts share.
//!
//! Who reads what: the ingest function's [`crate::ingest::IngestConfig`] (sources from
//! `WEBHOOK_SOURCES`, parsed by [`crate::sources`]; secrets from `WEBHOOK_SECRETS` locally or the
//! AWS Secrets Manager secret named by `WEBHOOK_SECRETS_ARN`, [`crate::sources::SecretsManagerSecrets`],
//! read again by a warm function on a TTL: [`crate::sources::live`]), the process function's
//! [`crate::process::ProcessConfig`], the reaper's [`crate::reaper::ReaperConfig`], the deliver
//! function's [`crate::outbox::config::DeliverFunctionConfig`], and where bodies are kept,
//! [`crate::store::dynamo::body::BodyConfig`].

pub mod catalog;
pub mod doc;
pub mod env;

pub use doc::Var;
pub use env::Env;

use std::time::Duration;

/// Default tolerance for signed timestamps (Stripe's default).
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;
/// Default largest accepted body: what Lambda accepts per invocation (6 MiB), so every body the
/// front door delivers (bodies above the inline limit go to S3).
pub const DEFAULT_MAX_BODY_BYTES: usize = 6 * 1024 * 1024;
/// Default most events one batched request may be split into (`MAX_BATCH_EVENTS`).
pub const DEFAULT_MAX_BATCH_EVENTS: usize = 5_000;
/// The largest `MAX_BATCH_EVENTS` accepted.
pub const MAX_MAX_BATCH_EVENTS: usize = 100_000;
/// Default retention of delivery journal records, in days.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;
/// The longest one read of the secrets from Secrets Manager may take, retries included (a warm
/// ingest function reads them within a request: see `ingest::WORST_CASE`).
pub const SECRETS_FETCH_TIMEOUT: Duration = Duration::from_millis(2_000);

/// Environment variable names alone (for messages); each is documented in [`catalog`].
pub mod vars {
    use super::catalog as c;
    pub const TABLE_NAME: &str = c::TABLE_NAME.name;
    pub const WEBHOOK_SOURCES: &str = c::WEBHOOK_SOURCES.name;
    pub const WEBHOOK_SECRETS: &str = c::WEBHOOK_SECRETS.name;
    pub const WEBHOOK_SECRETS_ARN: &str = c::WEBHOOK_SECRETS_ARN.name;
    pub const WEBHOOK_SECRETS_TTL_SECS: &str = c::WEBHOOK_SECRETS_TTL_SECS.name;
    pub const STAGE: &str = c::STAGE.name;
    pub const MAX_BODY_BYTES: &str = c::MAX_BODY_BYTES.name;
    pub const MAX_BATCH_EVENTS: &str = c::MAX_BATCH_EVENTS.name;
    pub const BODY_BUCKET: &str = c::BODY_BUCKET.name;
    pub const BODY_INLINE_MAX_BYTES: &str = c::BODY_INLINE_MAX_BYTES.name;
    pub const DELIVERY_RETENTION_DAYS: &str = c::DELIVERY_RETENTION_DAYS.name;
    pub const RETRY_QUEUE_URL: &str = c::RETRY_QUEUE_URL.name;
    pub const QUARANTINE_QUEUE_URL: &str = c::QUARANTINE_QUEUE_URL.name;
    pub const MAX_ATTEMPTS: &str = c::MAX_ATTEMPTS.name;
    pub const BACKOFF_BASE_MS: &str = c::BACKOFF_BASE_MS.name;
    pub const BACKOFF_CAP_MS: &str = c::BACKOFF_CAP_MS.name;
    pub const LEASE_MS: &str = c::LEASE_MS.name;
    pub const REAPER_MAX_PER_RUN: &str = c::REAPER_MAX_PER_RUN.name;
    pub const PROCESS_CONCURRENCY: &str = c::PROCESS_CONCURRENCY.name;
}

/// A configuration problem; fails the cold start with a message naming the variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("missing environment variable {0}")]
    Missing(&'static str),
    #[error("environment variable {var} is invalid: {reason}")]
    Invalid { var: &'static str, reason: String },
    #[error("could not read the secrets from AWS Secrets Manager ({var}): {reason}")]
    SecretsManager { var: &'static str, reason: String },
}

impl ConfigError {
    /// Says what was expected after the reason of an invalid value (`… (expected …)`).
    pub fn expecting(self, what: &str) -> Self {
        match self {
            Self::Invalid { var, reason } => Self::Invalid {
                var,
                reason: format!("{reason} (expected {what})"),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_documented_once_and_its_name_is_in_vars() {
        let names: Vec<&str> = catalog::ALL
            .iter()
            .chain(catalog::LIBRARY)
            .map(|v| v.name)
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        for name in [
            vars::TABLE_NAME,
            vars::WEBHOOK_SOURCES,
            vars::WEBHOOK_SECRETS,
            vars::WEBHOOK_SECRETS_ARN,
            vars::MAX_BODY_BYTES,
            vars::DELIVERY_RETENTION_DAYS,
            vars::RETRY_QUEUE_URL,
            vars::QUARANTINE_QUEUE_URL,
            vars::MAX_ATTEMPTS,
            vars::BACKOFF_BASE_MS,
            vars::BACKOFF_CAP_MS,
            vars::LEASE_MS,
            vars::REAPER_MAX_PER_RUN,
            vars::PROCESS_CONCURRENCY,
            vars::WEBHOOK_SECRETS_TTL_SECS,
            vars::STAGE,
        ] {
            assert!(names.contains(&name), "{name}");
        }
        // Every documented default parses as its reader parses it.
        let env = Env::from_pairs::<&str, &str>([]);
        assert!(env.parse::<bool>(&catalog::INBOXCTL_JSON).is_ok());
        assert_eq!(env.parse::<String>(&catalog::USER).unwrap(), "operator");
    }
}
