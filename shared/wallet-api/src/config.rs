//! The wallet API's environment variables, documented with the core's [`Var`] (the tables of
//! `docs/configuration.md` list them), and [`ApiConfig::read`].

use inbox_core::config::doc::{ReadBy, Unset};
use inbox_core::config::{ConfigError, Env, Var};
use std::time::Duration;

/// The wallet API function, as `template.yaml` names it.
pub use wallet_ledger::config::WALLET_API;

pub const WALLET_API_IDEMPOTENCY_HOURS: Var = Var {
    name: "WALLET_API_IDEMPOTENCY_HOURS",
    read_by: ReadBy::Only(&[WALLET_API]),
    unset: Unset::Default("24"),
    meaning: "hours the wallet API keeps a POST's answer under its `Idempotency-Key` (the same \
              key and request answer it again, `Idempotent-Replayed: true`; another request with \
              the key is a 422); after that the key is free again. 1 to 720 (see \
              [Wallet API](wallet-api.md))",
};

/// The wallet API's variables, in the order `docs/configuration.md` lists them.
pub const VARS: &[&Var] = &[&WALLET_API_IDEMPOTENCY_HOURS];

/// How long a run holds its key before a retry may take it over: longer than the function's
/// timeout (`template.yaml`: 29 s, under API Gateway's 30 s), so a run still going is never
/// taken over.
pub const LEASE: Duration = Duration::from_secs(60);

/// What the API is configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiConfig {
    /// How long an answer is kept under its idempotency key.
    pub idempotency_retention: Duration,
    /// See [`LEASE`].
    pub lease: Duration,
    /// A hold's validity when its request names none (`WALLET_HOLD_EXPIRES_IN`).
    pub hold_expires_in: Duration,
}

impl Default for ApiConfig {
    /// The documented defaults: 24 hours, a 60 s lease.
    fn default() -> Self {
        Self {
            idempotency_retention: Duration::from_secs(24 * 3600),
            lease: LEASE,
            hold_expires_in: wallet_ledger::email::holds::expiry::DEFAULT_EXPIRES_IN,
        }
    }
}

impl ApiConfig {
    /// The configuration from `env` (`WALLET_API_IDEMPOTENCY_HOURS`, the ledger's
    /// `WALLET_HOLD_EXPIRES_IN`).
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let hours: u64 = env
            .parse(&WALLET_API_IDEMPOTENCY_HOURS)
            .map_err(|e| e.expecting("a whole number of hours"))?;
        if !(1..=720).contains(&hours) {
            return Err(ConfigError::Invalid {
                var: WALLET_API_IDEMPOTENCY_HOURS.name,
                reason: "must be from 1 to 720".into(),
            });
        }
        Ok(Self {
            idempotency_retention: Duration::from_secs(hours * 3600),
            hold_expires_in: wallet_ledger::config::hold_expires_in(env)?,
            ..Self::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retention_defaults_to_a_day_and_refuses_what_is_out_of_range() {
        let none = Env::from_pairs::<&str, &str>([]);
        assert_eq!(ApiConfig::read(&none).unwrap(), ApiConfig::default());
        assert_eq!(WALLET_API_IDEMPOTENCY_HOURS.default_value(), Some("24"));
        let set = Env::from_pairs([("WALLET_API_IDEMPOTENCY_HOURS", " 2 ")]);
        assert_eq!(
            ApiConfig::read(&set).unwrap().idempotency_retention,
            Duration::from_secs(7200)
        );
        for bad in ["0", "721", "-1", "1.5", "a day"] {
            let e = ApiConfig::read(&Env::from_pairs([("WALLET_API_IDEMPOTENCY_HOURS", bad)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("WALLET_API_IDEMPOTENCY_HOURS"), "{bad}: {e}");
        }
    }
}
