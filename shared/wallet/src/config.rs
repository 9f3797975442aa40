//! The wallet ledger's environment variables, documented with the core's [`Var`] (the README's
//! configuration tables list them with the core's), and [`WalletSources::read`].

use crate::WalletSources;
use inbox_core::config::doc::readers::PROCESS;
use inbox_core::config::doc::{ReadBy, Unset};
use inbox_core::config::{ConfigError, Env, Var};

/// The reconcile function, as `template.yaml` names it.
pub const RECONCILE: &str = "reconcile";

pub const WALLET_STRIPE_SOURCE: Var = Var {
    name: "WALLET_STRIPE_SOURCE",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Default("stripe"),
    meaning: "the source whose Stripe events top up and refund wallets",
};

pub const WALLET_MAILER_SOURCE: Var = Var {
    name: "WALLET_MAILER_SOURCE",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Default("mailer"),
    meaning: "the source whose email delivery events hold, debit and refund wallets",
};

pub const RECONCILE_STALE_AFTER_HOURS: Var = Var {
    name: "RECONCILE_STALE_AFTER_HOURS",
    read_by: ReadBy::Only(&[RECONCILE]),
    unset: Unset::Default("24"),
    meaning: "hours after which a hold with no terminal event counts as stale, at least 1",
};

/// The wallet ledger's variables, in the order the README lists them.
pub const VARS: &[&Var] = &[
    &WALLET_STRIPE_SOURCE,
    &WALLET_MAILER_SOURCE,
    &RECONCILE_STALE_AFTER_HOURS,
];

impl WalletSources {
    /// The wallet's sources from `env` (`WALLET_STRIPE_SOURCE`, `WALLET_MAILER_SOURCE`).
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            stripe: env.parse(&WALLET_STRIPE_SOURCE)?,
            mailer: env.parse(&WALLET_MAILER_SOURCE)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_default_to_the_documented_names_and_are_trimmed() {
        let none = Env::from_pairs::<&str, &str>([]);
        assert_eq!(
            WalletSources::read(&none).unwrap(),
            WalletSources::default()
        );
        let blank = Env::from_pairs([("WALLET_STRIPE_SOURCE", " ")]);
        assert_eq!(
            WalletSources::read(&blank).unwrap(),
            WalletSources::default()
        );
        let set = Env::from_pairs([
            ("WALLET_STRIPE_SOURCE", " pay "),
            ("WALLET_MAILER_SOURCE", "mail"),
        ]);
        assert_eq!(
            WalletSources::read(&set).unwrap(),
            WalletSources {
                stripe: "pay".into(),
                mailer: "mail".into()
            }
        );
    }
}
