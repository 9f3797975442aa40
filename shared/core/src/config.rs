//! Configuration of the functions, read once at cold start from environment variables; an error
//! names the variable at fault and never contains a secret.
//!
//! Sources come from the `WEBHOOK_SOURCES` environment variable (a JSON object, see the README;
//! parsed by [`crate::sources`]); secrets from `WEBHOOK_SECRETS` (JSON: source → list of secrets)
//! locally, or from the AWS Secrets Manager secret named by `WEBHOOK_SECRETS_ARN` in the cloud.

use crate::sources::{parse_secrets, Sources};

/// Default tolerance for signed timestamps (Stripe's default).
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;
/// Default largest accepted body.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 * 1024;
/// Largest body the table can hold next to the message's other attributes (item limit 400 KB).
pub const MAX_MAX_BODY_BYTES: usize = 350 * 1024;
/// Default retention of delivery journal records, in days.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// Environment variable names, in one place so errors and docs agree.
pub mod vars {
    pub const TABLE_NAME: &str = "TABLE_NAME";
    pub const WEBHOOK_SOURCES: &str = "WEBHOOK_SOURCES";
    pub const WEBHOOK_SECRETS: &str = "WEBHOOK_SECRETS";
    pub const WEBHOOK_SECRETS_ARN: &str = "WEBHOOK_SECRETS_ARN";
    pub const MAX_BODY_BYTES: &str = "MAX_BODY_BYTES";
    pub const DELIVERY_RETENTION_DAYS: &str = "DELIVERY_RETENTION_DAYS";
    pub const RETRY_QUEUE_URL: &str = "RETRY_QUEUE_URL";
    pub const QUARANTINE_QUEUE_URL: &str = "QUARANTINE_QUEUE_URL";
    pub const MAX_ATTEMPTS: &str = "MAX_ATTEMPTS";
    pub const BACKOFF_BASE_MS: &str = "BACKOFF_BASE_MS";
    pub const BACKOFF_CAP_MS: &str = "BACKOFF_CAP_MS";
    pub const LEASE_MS: &str = "LEASE_MS";
    pub const REAPER_MAX_PER_RUN: &str = "REAPER_MAX_PER_RUN";
    pub const PROCESS_CONCURRENCY: &str = "PROCESS_CONCURRENCY";
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

/// Everything the ingest function needs, read once at cold start.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    pub table_name: String,
    pub sources: Sources,
    pub max_body_bytes: usize,
    pub retention_days: u32,
}

impl IngestConfig {
    /// Reads the configuration from the process environment, fetching secrets from AWS Secrets
    /// Manager when `WEBHOOK_SECRETS_ARN` is set and `WEBHOOK_SECRETS` is not.
    pub async fn from_env(aws: &aws_config::SdkConfig) -> Result<Self, ConfigError> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let secrets_json = match (env(vars::WEBHOOK_SECRETS), env(vars::WEBHOOK_SECRETS_ARN)) {
            (Some(json), _) => Some(json),
            (None, Some(arn)) => Some(fetch_secret(aws, &arn).await?),
            (None, None) => None,
        };
        Self::from_lookup(env, secrets_json)
    }

    /// Builds the configuration from a variable lookup and the secrets JSON (already fetched).
    pub fn from_lookup(
        env: impl Fn(&str) -> Option<String>,
        secrets_json: Option<String>,
    ) -> Result<Self, ConfigError> {
        let table_name = env(vars::TABLE_NAME).ok_or(ConfigError::Missing(vars::TABLE_NAME))?;
        let sources_json =
            env(vars::WEBHOOK_SOURCES).ok_or(ConfigError::Missing(vars::WEBHOOK_SOURCES))?;
        let secrets_var = if env(vars::WEBHOOK_SECRETS).is_some() {
            vars::WEBHOOK_SECRETS
        } else {
            vars::WEBHOOK_SECRETS_ARN
        };
        let secrets_json = secrets_json.ok_or(ConfigError::Missing(vars::WEBHOOK_SECRETS))?;
        let secrets = parse_secrets(&secrets_json, secrets_var)?;
        let sources = Sources::from_json(&sources_json, &secrets)?;
        let max_body_bytes = parse_var(&env, vars::MAX_BODY_BYTES, DEFAULT_MAX_BODY_BYTES)?;
        if max_body_bytes == 0 || max_body_bytes > MAX_MAX_BODY_BYTES {
            return Err(ConfigError::Invalid {
                var: vars::MAX_BODY_BYTES,
                reason: format!(
                    "must be between 1 and {MAX_MAX_BODY_BYTES} (DynamoDB's item limit)"
                ),
            });
        }
        let retention_days =
            parse_var(&env, vars::DELIVERY_RETENTION_DAYS, DEFAULT_RETENTION_DAYS)?;
        Ok(Self {
            table_name,
            sources,
            max_body_bytes,
            retention_days,
        })
    }
}

/// Everything the process function needs.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub quarantine_queue_url: String,
    pub processor: crate::process::ProcessorConfig,
}

fn required(
    env: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<String, ConfigError> {
    env(var).ok_or(ConfigError::Missing(var))
}

impl ProcessConfig {
    /// Reads the process function's configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        use std::time::Duration;
        let max_attempts: u32 = parse_var(&env, vars::MAX_ATTEMPTS, 5)?;
        let base_ms: u64 = parse_var(&env, vars::BACKOFF_BASE_MS, 2_000)?;
        let cap_ms: u64 = parse_var(&env, vars::BACKOFF_CAP_MS, 900_000)?;
        if max_attempts == 0 {
            return Err(ConfigError::Invalid {
                var: vars::MAX_ATTEMPTS,
                reason: "must be at least 1".into(),
            });
        }
        if cap_ms > 900_000 {
            return Err(ConfigError::Invalid {
                var: vars::BACKOFF_CAP_MS,
                reason: "must be at most 900000 (15 minutes, SQS's largest delay)".into(),
            });
        }
        let lease_ms: u64 = parse_var(&env, vars::LEASE_MS, 60_000)?;
        let days: u32 = parse_var(&env, vars::DELIVERY_RETENTION_DAYS, DEFAULT_RETENTION_DAYS)?;
        Ok(Self {
            table_name: required(&env, vars::TABLE_NAME)?,
            retry_queue_url: required(&env, vars::RETRY_QUEUE_URL)?,
            quarantine_queue_url: required(&env, vars::QUARANTINE_QUEUE_URL)?,
            processor: crate::process::ProcessorConfig {
                policy: crate::policy::RetryPolicy::new(
                    max_attempts,
                    Duration::from_millis(base_ms),
                    Duration::from_millis(cap_ms),
                ),
                lease: Duration::from_millis(lease_ms),
                retention: Duration::from_secs(u64::from(days) * 86_400),
                concurrency: parse_var(&env, vars::PROCESS_CONCURRENCY, 10)?.max(1),
            },
        })
    }
}

/// Everything the reaper needs.
#[derive(Debug, Clone)]
pub struct ReaperConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub max_per_run: usize,
}

impl ReaperConfig {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            table_name: required(&env, vars::TABLE_NAME)?,
            retry_queue_url: required(&env, vars::RETRY_QUEUE_URL)?,
            max_per_run: parse_var(&env, vars::REAPER_MAX_PER_RUN, 1_000)?,
        })
    }
}

fn parse_var<T: std::str::FromStr>(
    env: &impl Fn(&str) -> Option<String>,
    var: &'static str,
    default: T,
) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    match env(var) {
        None => Ok(default),
        Some(v) => v.trim().parse().map_err(|e: T::Err| ConfigError::Invalid {
            var,
            reason: e.to_string(),
        }),
    }
}

/// Reads the secrets JSON from the AWS Secrets Manager secret `arn` (its `SecretString`).
pub async fn fetch_secret(aws: &aws_config::SdkConfig, arn: &str) -> Result<String, ConfigError> {
    let client = aws_sdk_secretsmanager::Client::new(aws);
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| ConfigError::SecretsManager {
            var: vars::WEBHOOK_SECRETS_ARN,
            reason: aws_sdk_secretsmanager::error::DisplayErrorContext(e).to_string(),
        })?;
    out.secret_string
        .ok_or_else(|| ConfigError::SecretsManager {
            var: vars::WEBHOOK_SECRETS_ARN,
            reason: "the secret has no SecretString".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::FieldRule;

    const SOURCES: &str = r#"{
        "stripe": {"scheme": "stripe"},
        "mailer": {"scheme": "standard-webhooks", "tolerance_secs": 60},
        "custom": {"scheme": "hmac-sha256", "header": "X-Sig", "encoding": "base64",
                   "event_id": {"header": "X-Id"}, "event_type": {"json_pointer": "/kind"}}
    }"#;
    const SECRETS: &str = r#"{"stripe": "whsec_abc", "mailer": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], "custom": ["k1", "k2"]}"#;

    fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn parses_sources_with_defaults_and_overrides() {
        let cfg = IngestConfig::from_lookup(
            lookup(&[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", SOURCES),
                ("MAX_BODY_BYTES", "1024"),
            ]),
            Some(SECRETS.into()),
        )
        .unwrap();
        assert_eq!(cfg.table_name, "t");
        assert_eq!(cfg.max_body_bytes, 1024);
        assert_eq!(cfg.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!(cfg.sources.names(), vec!["custom", "mailer", "stripe"]);
        let stripe = cfg.sources.get("stripe").unwrap();
        assert_eq!(stripe.event_id, FieldRule::JsonPointer("/id".into()));
        assert!(stripe.needs_json());
        let mailer = cfg.sources.get("mailer").unwrap();
        assert_eq!(mailer.event_id, FieldRule::Header("webhook-id".into()));
        let custom = cfg.sources.get("custom").unwrap();
        assert_eq!(custom.event_id, FieldRule::Header("X-Id".into()));
        assert_eq!(
            custom.event_type,
            Some(FieldRule::JsonPointer("/kind".into()))
        );
        assert!(custom.kept_headers().iter().any(|h| h == "x-id"));
    }

    #[test]
    fn errors_name_the_variable() {
        let err = |pairs: &'static [(&'static str, &'static str)], secrets: Option<&str>| {
            IngestConfig::from_lookup(lookup(pairs), secrets.map(Into::into))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("WEBHOOK_SOURCES", SOURCES)], Some(SECRETS)).contains("TABLE_NAME"));
        assert!(err(&[("TABLE_NAME", "t")], Some(SECRETS)).contains("WEBHOOK_SOURCES"));
        assert!(
            err(&[("TABLE_NAME", "t"), ("WEBHOOK_SOURCES", SOURCES)], None)
                .contains("WEBHOOK_SECRETS")
        );
        assert!(err(
            &[("TABLE_NAME", "t"), ("WEBHOOK_SOURCES", "[]")],
            Some(SECRETS)
        )
        .contains("WEBHOOK_SOURCES"));
        assert!(err(
            &[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", r#"{"Bad Name":{"scheme":"github"}}"#)
            ],
            Some(SECRETS)
        )
        .contains("WEBHOOK_SOURCES"));
        assert!(err(
            &[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", r#"{"x":{"scheme":"nope"}}"#)
            ],
            Some(SECRETS)
        )
        .contains("WEBHOOK_SOURCES"));
        let no_secret = err(
            &[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", r#"{"gh":{"scheme":"github"}}"#),
            ],
            Some(SECRETS),
        );
        assert!(
            no_secret.contains("WEBHOOK_SECRETS") && no_secret.contains("gh"),
            "{no_secret}"
        );
        let bad_size = err(
            &[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", SOURCES),
                ("MAX_BODY_BYTES", "x"),
            ],
            Some(SECRETS),
        );
        assert!(bad_size.contains("MAX_BODY_BYTES"));
        let too_big = err(
            &[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", SOURCES),
                ("MAX_BODY_BYTES", "999999999"),
            ],
            Some(SECRETS),
        );
        assert!(too_big.contains("MAX_BODY_BYTES"));
    }

    #[test]
    fn process_and_reaper_config() {
        let p = ProcessConfig::from_lookup(lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("MAX_ATTEMPTS", "7"),
            ("BACKOFF_CAP_MS", "60000"),
        ]))
        .unwrap();
        assert_eq!(p.processor.policy.max_attempts, 7);
        assert_eq!(p.processor.policy.cap, std::time::Duration::from_secs(60));
        assert_eq!(p.processor.lease, std::time::Duration::from_secs(60));
        let missing =
            ProcessConfig::from_lookup(lookup(&[("TABLE_NAME", "t"), ("RETRY_QUEUE_URL", "r")]))
                .unwrap_err();
        assert!(missing.to_string().contains("QUARANTINE_QUEUE_URL"));
        let cap = ProcessConfig::from_lookup(lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("BACKOFF_CAP_MS", "900001"),
        ]))
        .unwrap_err();
        assert!(cap.to_string().contains("BACKOFF_CAP_MS"));
        let r = ReaperConfig::from_lookup(lookup(&[("TABLE_NAME", "t"), ("RETRY_QUEUE_URL", "r")]))
            .unwrap();
        assert_eq!(r.max_per_run, 1000);
    }
}
