//! The wallet ledger's environment variables, documented with the core's [`Var`] (the
//! configuration tables of `docs/configuration.md` list them with the core's), and [`WalletConfig::read`]: what the handler
//! needs (its sources, the Stripe mode it moves money for, the largest amount it accepts, and the
//! retention the core's `DELIVERY_RETENTION_DAYS` gives).

/// The charging pass's variables, documented where the pass reads them.
pub use crate::autopay::pass::{
    AUTOPAY_BATCH, AUTOPAY_CREDIT_WITHIN_SECS, AUTOPAY_LADDER_DAYS, AUTOPAY_LEASE_SECS,
};
use crate::parse::StripeMode;
use inbox_core::config::catalog::DELIVERY_RETENTION_DAYS;
use inbox_core::config::doc::readers::{CATCH_UP, INBOXCTL, PROCESS};
use inbox_core::config::doc::{ReadBy, Unset};
use inbox_core::config::{ConfigError, Env, Var};
use std::time::Duration;

mod sources;
pub use sources::WalletSources;

/// The reconcile function, as `template.yaml` names it.
pub use inbox_core::config::doc::readers::RECONCILE;

/// The charge function (autopay's charging pass), as `template.yaml` names it.
pub use crate::autopay::pass::CHARGE;
/// The wallet API function, as `template.yaml` names it: the wallet's, so named here rather than
/// in the core.
pub const WALLET_API: &str = "wallet-api";

pub const WALLET_STRIPE_SOURCE: Var = Var {
    name: "WALLET_STRIPE_SOURCE",
    read_by: ReadBy::Only(&[PROCESS, CATCH_UP, INBOXCTL]),
    unset: Unset::Default("stripe"),
    meaning: "the source whose Stripe events top up and refund wallets",
};

pub const WALLET_MAILER_SOURCE: Var = Var {
    name: "WALLET_MAILER_SOURCE",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Default("mailer"),
    meaning: "the source whose email delivery events (the mailer's `message.*` format) hold, \
              debit and refund wallets",
};

pub const WALLET_EMAIL_SOURCES: Var = Var {
    name: "WALLET_EMAIL_SOURCES",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Optional,
    meaning: "more sources of email delivery events, as comma-separated `source=provider` pairs \
              (`ses=ses,sendgrid=sendgrid,mailgun=mailgun,postmark=postmark,resend=resend`; a \
              provider is one of `mailer`, `ses`, `sendgrid`, `mailgun`, `postmark`, `resend`): \
              each source's events hold, debit and refund wallets as that provider's event names \
              say (see [Wallet ledger](wallet.md)). Unset: only `WALLET_MAILER_SOURCE`'s. A \
              source named twice, or also as the Stripe or mailer source, is refused",
};

pub const WALLET_STRIPE_MODE: Var = Var {
    name: "WALLET_STRIPE_MODE",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Default("test"),
    meaning:
        "`live` or `test`: the Stripe mode whose events move money; an event whose `livemode` \
              says the other mode (or says nothing) is `ignored` with the reason. `template.yaml` \
              sets `live` for the `prod` stage, `test` for the others",
};

/// The default of [`WALLET_MAX_AMOUNT`]: 10^12 minor units (ten billion dollars).
pub const DEFAULT_MAX_AMOUNT: i64 = 1_000_000_000_000;

pub const WALLET_MAX_AMOUNT: Var = Var {
    name: "WALLET_MAX_AMOUNT",
    read_by: ReadBy::Only(&[PROCESS, INBOXCTL]),
    unset: Unset::Default("1000000000000"),
    meaning: "the largest amount, in minor units, that one Stripe event may credit or refund and \
              that `inboxctl wallet create` accepts as a price, floor or review threshold; a larger \
              one is refused with the reason (the event fails into quarantine), at least 1",
};

/// The default of [`WALLET_DEFAULT_FLOOR`]: 2,000 minor units (USD 20).
pub const DEFAULT_FLOOR: i64 = 2_000;

pub const WALLET_DEFAULT_FLOOR: Var = Var {
    name: "WALLET_DEFAULT_FLOOR",
    read_by: ReadBy::Only(&[INBOXCTL]),
    unset: Unset::Default("2000"),
    meaning: "the floor, in minor units, of a wallet `inboxctl wallet create` makes without \
              `--floor` (the prepaid floor: a hold may not take `available` below it, a \
              webhook-driven debit that does is recorded and flags the wallet `overdrawn`; \
              negative grants credit); per stage: the stack's `WalletDefaultFloor` output (its \
              parameter of the same name); one wallet's: `inboxctl wallet set --floor`",
};

/// The default of [`WALLET_DEFAULT_REVIEW_THRESHOLD`]: 100,000 minor units (USD 1,000).
pub const DEFAULT_REVIEW_THRESHOLD: i64 = 100_000;

pub const WALLET_DEFAULT_REVIEW_THRESHOLD: Var = Var {
    name: "WALLET_DEFAULT_REVIEW_THRESHOLD",
    read_by: ReadBy::Only(&[INBOXCTL]),
    unset: Unset::Default("100000"),
    meaning: "the monthly review threshold, in minor units, of a wallet `inboxctl wallet create` \
              makes without `--review-threshold`: a month's debits above it flag the wallet for \
              review and publish `wallet.review_threshold_reached` once that month; at least 1; \
              per stage: the stack's `WalletDefaultReviewThreshold` output; one wallet's: \
              `inboxctl wallet set --review-threshold`",
};

pub const RECONCILE_STALE_AFTER_HOURS: Var = Var {
    name: "RECONCILE_STALE_AFTER_HOURS",
    read_by: ReadBy::Only(&[RECONCILE]),
    unset: Unset::Default("24"),
    meaning: "hours after which a hold with no terminal event counts as stale, at least 1",
};

pub const RECONCILE_UNMATCHED_AFTER_MINUTES: Var = Var {
    name: "RECONCILE_UNMATCHED_AFTER_MINUTES",
    read_by: ReadBy::Only(&[RECONCILE, INBOXCTL]),
    unset: Unset::Default("60"),
    meaning: "minutes a Stripe payment that succeeded naming no tenant may stay unmatched (no \
              later event named the tenant, no operator bound it) before reconciliation counts \
              it (`UnmatchedPayments`, its alarm; `inboxctl wallet reconcile` and \
              `inboxctl wallet unmatched` use it too); long enough for the ordinary case of an \
              intent whose session arrives a moment later, 1 to 10080",
};

/// [`RECONCILE_UNMATCHED_AFTER_MINUTES`] (or its default), in ms: a whole number of minutes from
/// 1 to a week.
pub fn unmatched_after_ms(env: &Env) -> Result<i64, ConfigError> {
    let minutes: i64 = env
        .parse(&RECONCILE_UNMATCHED_AFTER_MINUTES)
        .map_err(|e| e.expecting("a whole number of minutes"))?;
    if !(1..=10_080).contains(&minutes) {
        return Err(ConfigError::Invalid {
            var: RECONCILE_UNMATCHED_AFTER_MINUTES.name,
            reason: "must be from 1 to 10080 (a week)".into(),
        });
    }
    Ok(minutes * 60_000)
}

pub const WALLET_HOLD_EXPIRES_IN: Var = Var {
    name: "WALLET_HOLD_EXPIRES_IN",
    read_by: ReadBy::Only(&[PROCESS, WALLET_API, INBOXCTL]),
    unset: Unset::Default("86400"),
    meaning: "seconds a hold is valid when its placer names no `expires_in` (the wallet API's \
              default, and every hold a webhook's `sent` places); past it the charge function's \
              sweep releases it (`wallet.hold_expired`). 60 to 604800 (7 days)",
};

pub const WALLET_VIEW_MS: Var = Var {
    name: "WALLET_VIEW_MS",
    read_by: ReadBy::Only(&[PROCESS, WALLET_API]),
    unset: Unset::Default("1000"),
    meaning: "milliseconds a function instance keeps its view of a sharded wallet (K > 1 \
              shards): the wallet item, the other shards and the AUTOPAY item, so that a hold or \
              an email's debit, capture or release reads only its own shard strongly. The money \
              stays exact (a hold is a bounded write on its own shard; one its shard cannot pay, \
              a refusal and a refill read every shard); low-balance and review notices, the \
              overdrawn / review flags and autopay's threshold see the other shards up to this \
              late. `0`: no view (every movement reads every shard and the AUTOPAY item). A \
              wallet of one shard is never kept (see [Wallet ledger](wallet.md))",
};

/// `WALLET_VIEW_MS` (or its default) as a duration (0: no view).
pub fn view_ttl(env: &Env) -> Result<Duration, ConfigError> {
    let ms: u64 = env.parse(&WALLET_VIEW_MS)?;
    Ok(Duration::from_millis(ms))
}

/// The wallet ledger's variables, in the order `docs/configuration.md` lists them.
pub const VARS: &[&Var] = &[
    &WALLET_STRIPE_SOURCE,
    &WALLET_MAILER_SOURCE,
    &WALLET_EMAIL_SOURCES,
    &WALLET_STRIPE_MODE,
    &WALLET_MAX_AMOUNT,
    &WALLET_DEFAULT_FLOOR,
    &WALLET_DEFAULT_REVIEW_THRESHOLD,
    &WALLET_VIEW_MS,
    &WALLET_HOLD_EXPIRES_IN,
    &RECONCILE_STALE_AFTER_HOURS,
    &RECONCILE_UNMATCHED_AFTER_MINUTES,
    &AUTOPAY_LADDER_DAYS,
    &AUTOPAY_LEASE_SECS,
    &AUTOPAY_CREDIT_WITHIN_SECS,
    &AUTOPAY_BATCH,
];

/// Everything the [`crate::WalletHandler`] is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletConfig {
    pub sources: WalletSources,
    /// Events of the other mode move no money.
    pub stripe_mode: StripeMode,
    /// The largest amount (minor units) one Stripe event may move.
    pub max_amount: i64,
    /// How long records kept for a payment no wallet knows yet (a refund that came first) live.
    pub retention: Duration,
    /// How long a webhook's hold is valid (`WALLET_HOLD_EXPIRES_IN`).
    pub hold_expires_in: Duration,
}

impl Default for WalletConfig {
    /// The documented defaults: sources `stripe` and `mailer`, test mode, 10^12, 30 days.
    fn default() -> Self {
        Self {
            sources: WalletSources::default(),
            stripe_mode: StripeMode::Test,
            max_amount: DEFAULT_MAX_AMOUNT,
            retention: Duration::from_secs(30 * 86_400),
            hold_expires_in: crate::email::holds::expiry::DEFAULT_EXPIRES_IN,
        }
    }
}

impl From<WalletSources> for WalletConfig {
    fn from(sources: WalletSources) -> Self {
        Self {
            sources,
            ..Self::default()
        }
    }
}

impl WalletConfig {
    /// The configuration from `env`: [`WalletSources::read`], `WALLET_STRIPE_MODE`,
    /// `WALLET_MAX_AMOUNT` and `DELIVERY_RETENTION_DAYS`.
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let days: u32 = env.parse(&DELIVERY_RETENTION_DAYS)?;
        Ok(Self {
            sources: WalletSources::read(env)?,
            stripe_mode: env.parse(&WALLET_STRIPE_MODE)?,
            max_amount: max_amount(env)?,
            retention: Duration::from_secs(u64::from(days) * 86_400),
            hold_expires_in: hold_expires_in(env)?,
        })
    }
}

/// `WALLET_HOLD_EXPIRES_IN` (or its default), within the bounds of a hold's validity.
pub fn hold_expires_in(env: &Env) -> Result<Duration, ConfigError> {
    let secs: u64 = env
        .parse(&WALLET_HOLD_EXPIRES_IN)
        .map_err(|e| e.expecting("a whole number of seconds"))?;
    crate::email::holds::expiry::bounded(Duration::from_secs(secs)).map_err(|reason| {
        ConfigError::Invalid {
            var: WALLET_HOLD_EXPIRES_IN.name,
            reason,
        }
    })
}

/// `WALLET_MAX_AMOUNT` (or its default): a whole number of minor units, at least 1.
pub fn max_amount(env: &Env) -> Result<i64, ConfigError> {
    let max: i64 = env
        .parse(&WALLET_MAX_AMOUNT)
        .map_err(|e| e.expecting("a whole number of minor units"))?;
    if max < 1 {
        return Err(ConfigError::Invalid {
            var: WALLET_MAX_AMOUNT.name,
            reason: "must be at least 1".into(),
        });
    }
    Ok(max)
}

/// The limits a new wallet gets when its creator names none: `WALLET_DEFAULT_FLOOR` and
/// `WALLET_DEFAULT_REVIEW_THRESHOLD` (or their defaults), in minor units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultLimits {
    pub floor: i64,
    pub review_threshold: i64,
}

impl Default for DefaultLimits {
    /// 2,000 and 100,000 minor units.
    fn default() -> Self {
        Self {
            floor: DEFAULT_FLOOR,
            review_threshold: DEFAULT_REVIEW_THRESHOLD,
        }
    }
}

impl DefaultLimits {
    /// From `env`: whole numbers of minor units, the threshold at least 1.
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let floor: i64 = env
            .parse(&WALLET_DEFAULT_FLOOR)
            .map_err(|e| e.expecting("a whole number of minor units"))?;
        let review_threshold: i64 = env
            .parse(&WALLET_DEFAULT_REVIEW_THRESHOLD)
            .map_err(|e| e.expecting("a whole number of minor units"))?;
        if review_threshold < 1 {
            return Err(ConfigError::Invalid {
                var: WALLET_DEFAULT_REVIEW_THRESHOLD.name,
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self {
            floor,
            review_threshold,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::events::PUBLISHED_SOURCES;
    use crate::email::providers::EmailProvider;

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
                mailer: "mail".into(),
                email: Vec::new(),
            }
        );
    }

    #[test]
    fn email_sources_name_their_provider_once_each() {
        let env = Env::from_pairs([(
            "WALLET_EMAIL_SOURCES",
            " ses=ses, sg = SendGrid ,mg=mailgun,pm=postmark,rs=resend,old=mailer, ",
        )]);
        let sources = WalletSources::read(&env).unwrap();
        assert_eq!(
            sources.email,
            vec![
                ("ses".to_owned(), EmailProvider::Ses),
                ("sg".to_owned(), EmailProvider::Sendgrid),
                ("mg".to_owned(), EmailProvider::Mailgun),
                ("pm".to_owned(), EmailProvider::Postmark),
                ("rs".to_owned(), EmailProvider::Resend),
                ("old".to_owned(), EmailProvider::Mailer),
            ]
        );
        assert_eq!(
            sources.email_provider("mailer"),
            Some(EmailProvider::Mailer)
        );
        assert_eq!(sources.email_provider("sg"), Some(EmailProvider::Sendgrid));
        assert_eq!(sources.email_provider("stripe"), None);
        assert_eq!(
            sources.email_sources().collect::<Vec<_>>(),
            vec!["mailer", "ses", "sg", "mg", "pm", "rs", "old"]
        );
        for (bad, says) in [
            ("ses", "not source=provider"),
            ("ses=", "not source=provider"),
            ("x=sparkpost", "not an email provider"),
            ("a=ses,a=resend", "named twice"),
            ("stripe=sendgrid", "named twice"),
            ("mailer=ses", "named twice"),
        ] {
            let e = WalletSources::read(&Env::from_pairs([("WALLET_EMAIL_SOURCES", bad)]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("WALLET_EMAIL_SOURCES") && e.contains(says),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn no_wallet_source_may_be_the_wallets_own() {
        assert!(PUBLISHED_SOURCES.contains(&crate::balance::events::SOURCE));
        for (var, value) in [
            ("WALLET_STRIPE_SOURCE", "wallet"),
            ("WALLET_MAILER_SOURCE", " wallet "),
            ("WALLET_EMAIL_SOURCES", "ses=ses,wallet=mailer"),
        ] {
            let e = WalletSources::read(&Env::from_pairs([(var, value)]))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(var) && e.contains("\"wallet\"") && e.contains("reserved"),
                "{var}: {e}"
            );
        }
    }

    #[test]
    fn new_wallets_limits_default_to_the_prepaid_floor_and_the_review_threshold() {
        let none = Env::from_pairs::<&str, &str>([]);
        assert_eq!(
            DefaultLimits::read(&none).unwrap(),
            DefaultLimits {
                floor: 2_000,
                review_threshold: 100_000
            }
        );
        assert_eq!(
            DefaultLimits::read(&none).unwrap(),
            DefaultLimits::default()
        );
        assert_eq!(
            WALLET_DEFAULT_FLOOR.default_value(),
            Some(DEFAULT_FLOOR.to_string().as_str())
        );
        assert_eq!(
            WALLET_DEFAULT_REVIEW_THRESHOLD.default_value(),
            Some(DEFAULT_REVIEW_THRESHOLD.to_string().as_str())
        );
        let set = Env::from_pairs([
            ("WALLET_DEFAULT_FLOOR", " -500 "),
            ("WALLET_DEFAULT_REVIEW_THRESHOLD", "7"),
        ]);
        assert_eq!(
            DefaultLimits::read(&set).unwrap(),
            DefaultLimits {
                floor: -500,
                review_threshold: 7
            }
        );
        for (var, bad) in [
            ("WALLET_DEFAULT_FLOOR", "20.00"),
            ("WALLET_DEFAULT_REVIEW_THRESHOLD", "0"),
            ("WALLET_DEFAULT_REVIEW_THRESHOLD", "lots"),
        ] {
            let e = DefaultLimits::read(&Env::from_pairs([(var, bad)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(var), "{var}={bad}: {e}");
        }
    }

    #[test]
    fn the_config_defaults_to_the_documented_values_and_refuses_bad_ones() {
        let none = Env::from_pairs::<&str, &str>([]);
        assert_eq!(WalletConfig::read(&none).unwrap(), WalletConfig::default());
        assert_eq!(
            WALLET_MAX_AMOUNT.default_value(),
            Some(DEFAULT_MAX_AMOUNT.to_string().as_str())
        );
        let set = Env::from_pairs([
            ("WALLET_STRIPE_MODE", " Live "),
            ("WALLET_MAX_AMOUNT", "5000"),
            ("DELIVERY_RETENTION_DAYS", "7"),
        ]);
        let c = WalletConfig::read(&set).unwrap();
        assert_eq!(
            (c.stripe_mode, c.max_amount, c.retention),
            (StripeMode::Live, 5000, Duration::from_secs(7 * 86_400))
        );
        assert_eq!(unmatched_after_ms(&none).unwrap(), 3_600_000);
        assert_eq!(view_ttl(&none).unwrap(), Duration::from_millis(1_000));
        assert_eq!(
            WALLET_VIEW_MS.default_value(),
            Some(crate::balance::views::DEFAULT_VIEW_MS.to_string().as_str())
        );
        let off = Env::from_pairs([("WALLET_VIEW_MS", "0")]);
        assert_eq!(view_ttl(&off).unwrap(), Duration::ZERO);
        for bad in ["-1", "1.5", "x"] {
            let e = view_ttl(&Env::from_pairs([("WALLET_VIEW_MS", bad)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("WALLET_VIEW_MS"), "{bad}: {e}");
        }
        assert_eq!(
            unmatched_after_ms(&Env::from_pairs([(
                "RECONCILE_UNMATCHED_AFTER_MINUTES",
                " 5 "
            )]))
            .unwrap(),
            300_000
        );
        for bad in ["0", "-1", "1.5", "x", "10081"] {
            let e = unmatched_after_ms(&Env::from_pairs([(
                "RECONCILE_UNMATCHED_AFTER_MINUTES",
                bad,
            )]))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("RECONCILE_UNMATCHED_AFTER_MINUTES"),
                "{bad}: {e}"
            );
        }
        for (var, bad) in [
            ("WALLET_STRIPE_MODE", "prod"),
            ("WALLET_MAX_AMOUNT", "0"),
            ("WALLET_MAX_AMOUNT", "1e12"),
            ("WALLET_MAX_AMOUNT", "-5"),
        ] {
            let e = WalletConfig::read(&Env::from_pairs([(var, bad)]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(var), "{var}={bad}: {e}");
        }
    }
}
