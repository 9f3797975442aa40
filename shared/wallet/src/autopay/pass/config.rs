//! The charging pass's settings, read from the charging function's environment (the variables
//! are documented here and listed with the ledger's in [`crate::config`]: `AUTOPAY_LADDER_DAYS`,
//! `AUTOPAY_LEASE_SECS`, `AUTOPAY_CREDIT_WITHIN_SECS`, `AUTOPAY_BATCH`).

use super::Timings;
use crate::autopay::ladder::Ladder;
use inbox_core::config::doc::{ReadBy, Unset};
use inbox_core::config::{ConfigError, Env, Var};
use std::time::Duration;

/// The charge function (the charging pass's), as `template.yaml` names it: the wallet's, so named
/// here rather than in the core.
pub const CHARGE: &str = "charge";

pub const AUTOPAY_LADDER_DAYS: Var = Var {
    name: "AUTOPAY_LADDER_DAYS",
    read_by: ReadBy::Only(&[CHARGE]),
    unset: Unset::Default("0,1,3,5,7"),
    meaning: "the dunning ladder: days from an autopay charge's FIRST failure on which a soft \
              decline is tried again (comma-separated, starting at 0, strictly increasing); after \
              the last, autopay is suspended; a wallet that set its own (`inboxctl wallet \
              autopay set --ladder`, other than the default) follows that one (see \
              [Autopay](autopay.md))",
};

pub const AUTOPAY_LEASE_SECS: Var = Var {
    name: "AUTOPAY_LEASE_SECS",
    read_by: ReadBy::Only(&[CHARGE]),
    unset: Unset::Default("300"),
    meaning: "seconds a try being charged holds its attempt: an attempt whose answer was never \
              recorded (a crash after the call, an indeterminate answer) is tried again after it \
              with the SAME idempotency key; longer than the function's timeout, 1 to 3600",
};

pub const AUTOPAY_CREDIT_WITHIN_SECS: Var = Var {
    name: "AUTOPAY_CREDIT_WITHIN_SECS",
    read_by: ReadBy::Only(&[CHARGE]),
    unset: Unset::Default("3600"),
    meaning: "seconds a successful autopay charge may wait for its payment's webhook to credit \
              the wallet; then the provider is asked and the charge reported \
              (`AutopayUncredited`), never charged again; at least 1",
};

pub const AUTOPAY_BATCH: Var = Var {
    name: "AUTOPAY_BATCH",
    read_by: ReadBy::Only(&[CHARGE]),
    unset: Unset::Default("50"),
    meaning: "most due autopay attempts (and most wallets with a recurring charge due) one run of \
              the charging function handles; the rest wait for the next minute; at least 1",
};

/// The longest lease: well below the 24 hours a provider keeps an idempotency key (Stripe's),
/// so a repeated try always meets its saved answer.
const MAX_LEASE_SECS: u64 = 3600;

/// The pass's settings (the charging function reads them from its environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassConfig {
    /// The dunning ladder: days from the first failure.
    pub ladder: Ladder,
    /// How long a claimed try holds before it is repeated with the same key (a crash after the
    /// call); longer than one call with the provider module's own retries.
    pub lease: Duration,
    /// How long after a success its credit (its payment's webhook) may take before
    /// reconciliation asks the provider.
    pub credit_within: Duration,
    /// Most attempts (and most recurring wallets) per run.
    pub batch: usize,
    /// The time one call may take (the provider module's retries included): a try is not started
    /// when less than this is left before the invocation's deadline.
    pub call_budget: Duration,
}

impl Default for PassConfig {
    /// The documented defaults: ladder 0,1,3,5,7; lease 300 s; credit within 3600 s; 50 a run;
    /// 30 s a call.
    fn default() -> Self {
        Self {
            ladder: Ladder::default(),
            lease: Duration::from_secs(300),
            credit_within: Duration::from_secs(3600),
            batch: 50,
            call_budget: Duration::from_secs(30),
        }
    }
}

impl PassConfig {
    /// The settings from `env`, the defaults where unset.
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let days = env.optional(&AUTOPAY_LADDER_DAYS);
        let ladder = match days {
            Some(text) => Ladder::parse(&text).map_err(|e| ConfigError::Invalid {
                var: AUTOPAY_LADDER_DAYS.name,
                reason: e.to_string(),
            })?,
            None => Ladder::default(),
        };
        let lease: u64 = env.parse(&AUTOPAY_LEASE_SECS)?;
        if lease == 0 || lease > MAX_LEASE_SECS {
            return Err(ConfigError::Invalid {
                var: AUTOPAY_LEASE_SECS.name,
                reason: format!("must be 1 to {MAX_LEASE_SECS} seconds"),
            });
        }
        let credit_within: u64 = env.parse(&AUTOPAY_CREDIT_WITHIN_SECS)?;
        let batch: usize = env.parse(&AUTOPAY_BATCH)?;
        if credit_within == 0 || batch == 0 {
            return Err(ConfigError::Invalid {
                var: if batch == 0 {
                    AUTOPAY_BATCH.name
                } else {
                    AUTOPAY_CREDIT_WITHIN_SECS.name
                },
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self {
            ladder,
            lease: Duration::from_secs(lease),
            credit_within: Duration::from_secs(credit_within),
            batch,
            ..Self::default()
        })
    }

    pub(super) fn timings(&self) -> Timings {
        Timings {
            ladder: self.ladder.clone(),
            lease: self.lease,
            credit_within: self.credit_within,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_documented_and_bad_values_refused() {
        let read =
            |pairs: &[(&str, &str)]| PassConfig::read(&Env::from_pairs(pairs.iter().copied()));
        assert_eq!(read(&[]).expect("defaults"), PassConfig::default());
        let c = read(&[("AUTOPAY_LADDER_DAYS", "0, 2, 4"), ("AUTOPAY_BATCH", "7")]).expect("set");
        assert_eq!((c.ladder.days(), c.batch), (&[0, 2, 4][..], 7));
        for bad in [
            ("AUTOPAY_LADDER_DAYS", "1,3"),
            ("AUTOPAY_LEASE_SECS", "0"),
            ("AUTOPAY_LEASE_SECS", "86400"),
            ("AUTOPAY_BATCH", "0"),
            ("AUTOPAY_CREDIT_WITHIN_SECS", "soon"),
        ] {
            let e = read(&[bad]).expect_err(bad.0);
            assert!(e.to_string().contains(bad.0), "{e}");
        }
    }
}
