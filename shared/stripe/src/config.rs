//! The Stripe module's environment variables, documented with the core's [`Var`] (the tables of
//! `docs/configuration.md` list them), and [`StripeConfig`]: the API base URL, the secret key
//! (from the environment locally, from AWS Secrets Manager in the cloud; [`SecretKey`] never
//! shows it), and the account's request rate.

use crate::retry::RetryPolicy;
use inbox_core::config::doc::readers::{CATCH_UP, INBOXCTL};
use inbox_core::config::doc::{ReadBy, Unset};
use inbox_core::config::{ConfigError, Env, Var};
use inbox_core::outbox::bucket::Rate;
use inbox_core::sources::SecretsManagerSecrets;
use std::fmt;
use std::time::Duration;

/// The charging function, as `template.yaml` names it.
pub const CHARGE: &str = "charge";
/// The wallet API function (its hosted top-ups), as `template.yaml` names it.
pub const WALLET_API: &str = "wallet-api";

pub const STRIPE_API_BASE: Var = Var {
    name: "STRIPE_API_BASE",
    read_by: ReadBy::Only(&[CHARGE, WALLET_API, CATCH_UP, INBOXCTL]),
    unset: Unset::Default(DEFAULT_API_BASE),
    meaning: "the Stripe API's base URL: any Stripe-compatible server can stand in (`make dev`: \
              the local stand-in, `scripts/stripe_standin.py`). `https://` or, to a loopback \
              address only, `http://`",
};

pub const STRIPE_SECRET_KEY: Var = Var {
    name: "STRIPE_SECRET_KEY",
    read_by: ReadBy::Only(&[CHARGE, WALLET_API, CATCH_UP, INBOXCTL]),
    unset: Unset::RequiredUnless("STRIPE_SECRET_ARN"),
    meaning: "locally: the Stripe secret key (`sk_test_…`, `rk_…`) the charges and checkout sessions are made with \
              (and `inboxctl stripe catch-up` lists events with); takes precedence over the ARN. Never logged",
};

pub const STRIPE_SECRET_ARN: Var = Var {
    name: "STRIPE_SECRET_ARN",
    read_by: ReadBy::Only(&[CHARGE, WALLET_API, CATCH_UP, INBOXCTL]),
    unset: Unset::RequiredUnless("STRIPE_SECRET_KEY"),
    meaning: "in the cloud: the AWS Secrets Manager secret (ARN or name) whose `SecretString` \
              is the Stripe secret key, read at cold start",
};

pub const STRIPE_RATE: Var = Var {
    name: "STRIPE_RATE",
    read_by: ReadBy::Only(&[CHARGE, WALLET_API, CATCH_UP, INBOXCTL]),
    unset: Unset::Default("20"),
    meaning: "requests a second to the Stripe account, shared by every worker through one token \
              bucket item in the table (burst: a fifth of it, at least 1): by default at most 24 \
              in any second, below test mode's 25 read and 25 write operations a second (live \
              mode allows 100). Between 0.1 and 1000",
};

/// The variables of this module, in the order `docs/configuration.md` lists them.
pub const VARS: &[&Var] = &[
    &STRIPE_API_BASE,
    &STRIPE_SECRET_KEY,
    &STRIPE_SECRET_ARN,
    &STRIPE_RATE,
];

/// Stripe's own API.
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";

/// A Stripe secret key. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey(String);

impl SecretKey {
    /// A key from its text (trimmed); refuses an empty one.
    pub fn new(text: &str) -> Result<Self, ConfigError> {
        let text = text.trim();
        if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(ConfigError::Invalid {
                var: STRIPE_SECRET_KEY.name,
                reason: "a Stripe secret key is one word (sk_test_…, sk_live_…, rk_…)".into(),
            });
        }
        Ok(Self(text.to_owned()))
    }

    /// The mode the key acts in, by its prefix: `Some(true)` live (`sk_live_`, `rk_live_`),
    /// `Some(false)` test (`sk_test_`, `rk_test_`), `None` when it says neither. Stripe answers a
    /// key with its own mode's objects only, so an event of the other mode cannot be an answer
    /// to this key.
    pub fn livemode(&self) -> Option<bool> {
        let rest = ["sk_", "rk_"].iter().find_map(|p| self.0.strip_prefix(p))?;
        if rest.starts_with("live_") {
            Some(true)
        } else if rest.starts_with("test_") {
            Some(false)
        } else {
            None
        }
    }

    /// The `Authorization` header's value.
    pub(crate) fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

/// Everything the Stripe client is configured with.
#[derive(Debug, Clone)]
pub struct StripeConfig {
    /// Without a trailing `/`.
    pub api_base: String,
    pub key: SecretKey,
    pub rate: Rate,
    pub retry: RetryPolicy,
    /// How long one request may take (connect, send, answer).
    pub timeout: Duration,
}

impl StripeConfig {
    /// A configuration with the defaults for `api_base` and `key`.
    pub fn new(api_base: &str, key: SecretKey) -> Self {
        Self {
            api_base: api_base.trim_end_matches('/').to_owned(),
            key,
            rate: rate_of(20.0),
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(30),
        }
    }

    /// The configuration from `env`, the key read from Secrets Manager through `aws` when only
    /// `STRIPE_SECRET_ARN` is set.
    pub async fn read(env: &Env, aws: &aws_config::SdkConfig) -> Result<Self, ConfigError> {
        let key = match (
            env.optional(&STRIPE_SECRET_KEY),
            env.optional(&STRIPE_SECRET_ARN),
        ) {
            (Some(key), _) => SecretKey::new(&key)?,
            (None, Some(arn)) => {
                let text = SecretsManagerSecrets::new(aws, arn)
                    .read_for(STRIPE_SECRET_ARN.name)
                    .await?;
                SecretKey::new(&text)?
            }
            (None, None) => return Err(ConfigError::Missing(STRIPE_SECRET_KEY.name)),
        };
        Self::read_with_key(env, key)
    }

    /// The configuration from `env` with `key` (no Secrets Manager).
    pub fn read_with_key(env: &Env, key: SecretKey) -> Result<Self, ConfigError> {
        let base: String = env.parse(&STRIPE_API_BASE)?;
        let base = api_base(&base).map_err(|reason| ConfigError::Invalid {
            var: STRIPE_API_BASE.name,
            reason,
        })?;
        let per_sec: f64 = env.parse(&STRIPE_RATE)?;
        if !(0.1..=1000.0).contains(&per_sec) {
            return Err(ConfigError::Invalid {
                var: STRIPE_RATE.name,
                reason: format!("{per_sec} is not between 0.1 and 1000"),
            });
        }
        Ok(Self {
            rate: rate_of(per_sec),
            ..Self::new(&base, key)
        })
    }
}

/// The bucket's rate for `per_sec` requests a second: a burst of a fifth of it, at least 1.
pub fn rate_of(per_sec: f64) -> Rate {
    Rate {
        per_sec,
        burst: ((per_sec / 5.0).floor() as u32).max(1),
    }
}

/// A base URL checked: `https://…`, or `http://` to a loopback host; no trailing `/`.
fn api_base(text: &str) -> Result<String, String> {
    let uri: http::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    let host = uri.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(text.trim_end_matches('/').to_owned()),
        Some("http") if loopback => Ok(text.trim_end_matches('/').to_owned()),
        _ => Err(format!(
            "{text:?}: https://, or http:// to a loopback address (a local stand-in)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SecretKey {
        SecretKey::new("sk_test_abc").unwrap()
    }

    #[test]
    fn the_key_never_shows() {
        let config = StripeConfig::new(DEFAULT_API_BASE, key());
        assert!(!format!("{config:?}").contains("sk_test_abc"));
        assert_eq!(key().bearer(), "Bearer sk_test_abc");
        assert!(SecretKey::new("  ").is_err());
        assert!(SecretKey::new("sk_test a").is_err());
        let mode = |k: &str| SecretKey::new(k).unwrap().livemode();
        assert_eq!(
            [
                mode("sk_live_x"),
                mode("rk_live_x"),
                mode("sk_test_x"),
                mode("rk_test_x")
            ],
            [Some(true), Some(true), Some(false), Some(false)]
        );
        assert_eq!([mode("pk_live_x"), mode("whsec_x")], [None, None]);
    }

    #[test]
    fn defaults_and_bounds() {
        let c = StripeConfig::read_with_key(&Env::from_pairs::<&str, &str>([]), key()).unwrap();
        assert_eq!(c.api_base, "https://api.stripe.com");
        assert_eq!(
            c.rate,
            Rate {
                per_sec: 20.0,
                burst: 4
            }
        );
        // At most burst + rate requests in any second: under test mode's 25.
        assert!(f64::from(c.rate.burst) + c.rate.per_sec < 25.0);
        let env = Env::from_pairs([
            ("STRIPE_API_BASE", "http://127.0.0.1:5203/"),
            ("STRIPE_RATE", "2"),
        ]);
        let c = StripeConfig::read_with_key(&env, key()).unwrap();
        assert_eq!(
            (c.api_base.as_str(), c.rate.burst),
            ("http://127.0.0.1:5203", 1)
        );
        for (var, value) in [
            ("STRIPE_API_BASE", "http://stripe.example"),
            ("STRIPE_API_BASE", "ftp://127.0.0.1"),
            ("STRIPE_RATE", "0"),
            ("STRIPE_RATE", "fast"),
        ] {
            let env = Env::from_pairs([(var, value)]);
            assert!(
                StripeConfig::read_with_key(&env, key()).is_err(),
                "{var}={value}"
            );
        }
    }

    #[tokio::test]
    async fn the_key_comes_from_the_environment_first_and_is_required() {
        let aws = aws_config::SdkConfig::builder().build();
        let env = Env::from_pairs([
            ("STRIPE_SECRET_KEY", "sk_test_env"),
            ("STRIPE_SECRET_ARN", "arn:x"),
        ]);
        let c = StripeConfig::read(&env, &aws).await.unwrap();
        assert_eq!(c.key, SecretKey::new("sk_test_env").unwrap());
        let none = StripeConfig::read(&Env::from_pairs::<&str, &str>([]), &aws).await;
        assert!(matches!(
            none,
            Err(ConfigError::Missing("STRIPE_SECRET_KEY"))
        ));
    }
}
