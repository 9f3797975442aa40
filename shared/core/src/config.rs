//! Configuration of the functions and the CLI: what each reads from its environment, read once at
//! cold start; an error names the variable at fault and never contains a secret.
//!
//! Sources come from the `WEBHOOK_SOURCES` environment variable (a JSON object, see the README;
//! parsed by [`crate::sources`]);
//! secrets from `WEBHOOK_SECRETS` (JSON: source → list of secrets) locally, or from the AWS Secrets
//! Manager secret named by `WEBHOOK_SECRETS_ARN` in the cloud ([`SecretsManagerSecrets`], read
//! again by a warm ingest function on a TTL: [`crate::sources::live`]). Everything else is read
//! once at cold start; an error names the variable at fault and never contains a secret.
//!
//! - [`env`]: [`Env`], the one way every function and `inboxctl` read a variable (trimmed, empty
//!   counts as unset, the documented default, errors naming the variable);
//! - [`doc`]: how a variable is documented ([`Var`]) and the README tables rendered from that;
//! - [`catalog`]: the inbox's variables, each documented once ([`vars`]: their bare names);
//! - here: [`IngestConfig`], [`ProcessConfig`], [`ReaperConfig`], read through [`Env`];
//!   [`deliver`]: the deliver function's.

pub mod catalog;
pub mod deliver;
pub mod doc;
pub mod env;

pub use doc::Var;
pub use env::Env;

use crate::sources::{parse_secrets, Reloader, SecretsFetch, Sources};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

/// Default tolerance for signed timestamps (Stripe's default).
pub const DEFAULT_TOLERANCE_SECS: u64 = 300;
/// Default largest accepted body: what Lambda accepts per invocation (6 MiB), so every body the
/// front door delivers (bodies above the inline limit go to S3).
pub const DEFAULT_MAX_BODY_BYTES: usize = 6 * 1024 * 1024;
/// Largest body the table can hold next to the message's other attributes (item limit 400 KB):
/// the limit without a body bucket.
pub const MAX_MAX_BODY_BYTES: usize = crate::store::dynamo::body::MAX_INLINE_BYTES;
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

/// Everything the ingest function needs, read at cold start.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    pub table_name: String,
    pub sources: Sources,
    pub max_body_bytes: usize,
    /// Where bodies above the inline limit go.
    pub bodies: BodyConfig,
    pub retention_days: u32,
    /// How long a warm function keeps the secrets before reading them again.
    pub secrets_ttl: Duration,
    /// What reads them again: `Some` when they come from Secrets Manager (`WEBHOOK_SECRETS`, an
    /// environment variable, cannot change under a running function).
    pub reloader: Option<Reloader>,
}

impl IngestConfig {
    /// Reads the configuration from the process environment, fetching secrets from AWS Secrets
    /// Manager when `WEBHOOK_SECRETS_ARN` is set and `WEBHOOK_SECRETS` is not.
    pub async fn from_env(aws: &aws_config::SdkConfig) -> Result<Self, ConfigError> {
        let env = Env::process();
        let fetch = match (
            env.is_set(&catalog::WEBHOOK_SECRETS),
            env.optional(&catalog::WEBHOOK_SECRETS_ARN),
        ) {
            (false, Some(arn)) => Some(Arc::new(SecretsManagerSecrets::new(aws, arn))),
            _ => None,
        };
        let secrets_json = match &fetch {
            Some(f) => Some(f.read().await?),
            None => env.optional(&catalog::WEBHOOK_SECRETS),
        };
        let mut config = Self::read(&env, secrets_json)?;
        if let Some(fetch) = fetch {
            let sources_json = env.required(&catalog::WEBHOOK_SOURCES)?;
            config.reloader = Some(Reloader::new(
                sources_json,
                vars::WEBHOOK_SECRETS_ARN,
                fetch,
            ));
        }
        Ok(config)
    }

    /// Builds the configuration from `env` and the secrets JSON (already fetched), without a
    /// reloader.
    pub fn read(env: &Env, secrets_json: Option<String>) -> Result<Self, ConfigError> {
        let table_name = env.required(&catalog::TABLE_NAME)?;
        let sources_json = env.required(&catalog::WEBHOOK_SOURCES)?;
        let secrets_var = if env.is_set(&catalog::WEBHOOK_SECRETS) {
            vars::WEBHOOK_SECRETS
        } else {
            vars::WEBHOOK_SECRETS_ARN
        };
        let secrets_json = secrets_json.ok_or(ConfigError::Missing(vars::WEBHOOK_SECRETS))?;
        let secrets = parse_secrets(&secrets_json, secrets_var)?;
        let sources = Sources::from_json(&sources_json, &secrets)?;
        let bodies = BodyConfig::read(env)?;
        let max_body_bytes = read_max_body(env, &bodies)?;
        let retention_days = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
        let ttl_secs: u64 = env.parse(&catalog::WEBHOOK_SECRETS_TTL_SECS)?;
        if ttl_secs == 0 {
            return Err(ConfigError::Invalid {
                var: vars::WEBHOOK_SECRETS_TTL_SECS,
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self {
            table_name,
            sources,
            max_body_bytes,
            bodies,
            retention_days,
            secrets_ttl: Duration::from_secs(ttl_secs),
            reloader: None,
        })
    }
}

/// Where message bodies are kept: the S3 bucket of bodies above the inline limit, if any
/// (`BODY_BUCKET`, `BODY_INLINE_MAX_BYTES`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyConfig {
    pub bucket: Option<String>,
    pub inline_max: usize,
}

impl BodyConfig {
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let inline_max: usize = env.parse(&catalog::BODY_INLINE_MAX_BYTES)?;
        if inline_max > MAX_MAX_BODY_BYTES {
            return Err(ConfigError::Invalid {
                var: vars::BODY_INLINE_MAX_BYTES,
                reason: format!("must be at most {MAX_MAX_BODY_BYTES} (DynamoDB's item limit)"),
            });
        }
        Ok(Self {
            bucket: env.optional(&catalog::BODY_BUCKET),
            inline_max,
        })
    }

    /// The S3 side of the store, when a bucket is configured.
    pub fn s3(&self, aws: &aws_config::SdkConfig) -> Option<crate::store::dynamo::S3Bodies> {
        let bucket = self.bucket.as_ref()?;
        let config = aws_sdk_s3::config::Builder::from(aws)
            // Path-style addressing for a configured endpoint (`AWS_ENDPOINT_URL`: the emulator),
            // which serves no bucket subdomains.
            .force_path_style(aws.endpoint_url().is_some())
            .build();
        Some(crate::store::dynamo::S3Bodies::new(
            aws_sdk_s3::Client::from_conf(config),
            bucket.clone(),
            self.inline_max,
        ))
    }
}

/// `MAX_BODY_BYTES`: by default what Lambda accepts, or what an item holds without a bucket.
fn read_max_body(env: &Env, bodies: &BodyConfig) -> Result<usize, ConfigError> {
    let cap = if bodies.bucket.is_some() {
        usize::MAX
    } else {
        MAX_MAX_BODY_BYTES
    };
    if !env.is_set(&catalog::MAX_BODY_BYTES) {
        return Ok(DEFAULT_MAX_BODY_BYTES.min(cap));
    }
    let max: usize = env.parse(&catalog::MAX_BODY_BYTES)?;
    if max == 0 || max > cap {
        return Err(ConfigError::Invalid {
            var: vars::MAX_BODY_BYTES,
            reason: format!(
                "must be between 1 and {MAX_MAX_BODY_BYTES} without {} (DynamoDB's item limit)",
                vars::BODY_BUCKET
            ),
        });
    }
    Ok(max)
}

/// Everything the process function needs.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub quarantine_queue_url: String,
    pub processor: crate::process::ProcessorConfig,
}

impl ProcessConfig {
    /// Reads the process function's configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        use std::time::Duration;
        let (policy, lease) = read_policy(env)?;
        let days: u32 = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
        Ok(Self {
            table_name: env.required(&catalog::TABLE_NAME)?,
            retry_queue_url: env.required(&catalog::RETRY_QUEUE_URL)?,
            quarantine_queue_url: env.required(&catalog::QUARANTINE_QUEUE_URL)?,
            processor: crate::process::ProcessorConfig {
                policy,
                lease,
                retention: Duration::from_secs(u64::from(days) * 86_400),
                concurrency: env.parse::<usize>(&catalog::PROCESS_CONCURRENCY)?.max(1),
            },
        })
    }
}

/// The retry policy and the lease, read alike by the process function and the reaper (which
/// counts the attempts that never reported and re-drives them with the same backoff).
fn read_policy(
    env: &Env,
) -> Result<(crate::policy::RetryPolicy, std::time::Duration), ConfigError> {
    use std::time::Duration;
    let max_attempts: u32 = env.parse(&catalog::MAX_ATTEMPTS)?;
    let base_ms: u64 = env.parse(&catalog::BACKOFF_BASE_MS)?;
    let cap_ms: u64 = env.parse(&catalog::BACKOFF_CAP_MS)?;
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
    let lease_ms: u64 = env.parse(&catalog::LEASE_MS)?;
    Ok((
        crate::policy::RetryPolicy::new(
            max_attempts,
            Duration::from_millis(base_ms),
            Duration::from_millis(cap_ms),
        ),
        Duration::from_millis(lease_ms),
    ))
}

/// Everything the reaper needs.
#[derive(Debug, Clone)]
pub struct ReaperConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub quarantine_queue_url: String,
    pub settings: crate::reaper::ReaperSettings,
}

impl ReaperConfig {
    /// Reads the reaper's configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let (policy, lease) = read_policy(env)?;
        Ok(Self {
            table_name: env.required(&catalog::TABLE_NAME)?,
            retry_queue_url: env.required(&catalog::RETRY_QUEUE_URL)?,
            quarantine_queue_url: env.required(&catalog::QUARANTINE_QUEUE_URL)?,
            settings: crate::reaper::ReaperSettings {
                max_per_run: env.parse(&catalog::REAPER_MAX_PER_RUN)?,
                policy,
                lease,
            },
        })
    }
}

/// The secrets JSON in an AWS Secrets Manager secret (its `SecretString`), read with a client
/// whose every read ends within [`SECRETS_FETCH_TIMEOUT`] (it runs inside a request when a warm
/// function re-reads it).
#[derive(Debug, Clone)]
pub struct SecretsManagerSecrets {
    client: aws_sdk_secretsmanager::Client,
    arn: String,
}

impl SecretsManagerSecrets {
    pub fn new(aws: &aws_config::SdkConfig, arn: impl Into<String>) -> Self {
        use aws_sdk_secretsmanager::config::timeout::TimeoutConfig;
        let config = aws_sdk_secretsmanager::config::Builder::from(aws)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_millis(1_000))
                    .operation_attempt_timeout(Duration::from_millis(1_000))
                    .operation_timeout(SECRETS_FETCH_TIMEOUT)
                    .build(),
            )
            .build();
        Self {
            client: aws_sdk_secretsmanager::Client::from_conf(config),
            arn: arn.into(),
        }
    }

    /// Reads the secret now.
    pub async fn read(&self) -> Result<String, ConfigError> {
        read_secret(&self.client, &self.arn).await
    }
}

impl SecretsFetch for SecretsManagerSecrets {
    fn fetch(&self) -> BoxFuture<'_, Result<String, ConfigError>> {
        Box::pin(self.read())
    }
}

/// Reads the secrets JSON from the AWS Secrets Manager secret `arn` (its `SecretString`).
pub async fn fetch_secret(aws: &aws_config::SdkConfig, arn: &str) -> Result<String, ConfigError> {
    SecretsManagerSecrets::new(aws, arn).read().await
}

async fn read_secret(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<String, ConfigError> {
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

    fn lookup(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn parses_sources_with_defaults_and_overrides() {
        let cfg = IngestConfig::read(
            &lookup(&[
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
            IngestConfig::read(&lookup(pairs), secrets.map(Into::into))
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
        let p = ProcessConfig::read(&lookup(&[
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
            ProcessConfig::read(&lookup(&[("TABLE_NAME", "t"), ("RETRY_QUEUE_URL", "r")]))
                .unwrap_err();
        assert!(missing.to_string().contains("QUARANTINE_QUEUE_URL"));
        let cap = ProcessConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("BACKOFF_CAP_MS", "900001"),
        ]))
        .unwrap_err();
        assert!(cap.to_string().contains("BACKOFF_CAP_MS"));
        let r = ReaperConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("MAX_ATTEMPTS", "7"),
            ("BACKOFF_CAP_MS", "60000"),
        ]))
        .unwrap();
        assert_eq!(r.settings.max_per_run, 1000);
        assert_eq!(
            (r.settings.policy, r.settings.lease),
            (p.processor.policy, p.processor.lease),
            "the reaper applies the processor's policy to lost attempts"
        );
        let no_quarantine =
            ReaperConfig::read(&lookup(&[("TABLE_NAME", "t"), ("RETRY_QUEUE_URL", "r")]))
                .unwrap_err();
        assert!(no_quarantine.to_string().contains("QUARANTINE_QUEUE_URL"));
    }

    #[test]
    fn unset_blank_and_padded_values_follow_the_env_rules() {
        // Every default is the documented one, and the typed constants agree with the docs.
        let p = ProcessConfig::read(&lookup(&[
            ("TABLE_NAME", " t "),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("MAX_ATTEMPTS", ""),
            ("LEASE_MS", "  "),
            ("PROCESS_CONCURRENCY", "0"),
        ]))
        .unwrap();
        assert_eq!(p.table_name, "t");
        let policy = crate::policy::RetryPolicy::new(
            5,
            std::time::Duration::from_millis(2_000),
            std::time::Duration::from_millis(900_000),
        );
        assert_eq!(p.processor.policy, policy);
        assert_eq!(p.processor.lease, std::time::Duration::from_millis(60_000));
        assert_eq!(
            p.processor.retention,
            std::time::Duration::from_secs(30 * 86_400)
        );
        assert_eq!(p.processor.concurrency, 1, "0 counts as 1");
        let blank = ProcessConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "   "),
        ]))
        .unwrap_err();
        assert_eq!(
            blank.to_string(),
            "missing environment variable QUARANTINE_QUEUE_URL"
        );
        let cfg = IngestConfig::read(
            &lookup(&[("TABLE_NAME", "t"), ("WEBHOOK_SOURCES", SOURCES)]),
            Some(SECRETS.into()),
        )
        .unwrap();
        assert_eq!(
            cfg.max_body_bytes, MAX_MAX_BODY_BYTES,
            "without a body bucket: what an item holds"
        );
        assert_eq!(cfg.bodies.bucket, None);
        let with_bucket = IngestConfig::read(
            &lookup(&[
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", SOURCES),
                ("BODY_BUCKET", "bodies"),
            ]),
            Some(SECRETS.into()),
        )
        .unwrap();
        assert_eq!(with_bucket.max_body_bytes, DEFAULT_MAX_BODY_BYTES);
        assert_eq!(with_bucket.bodies.bucket.as_deref(), Some("bodies"));
        assert_eq!(
            with_bucket.bodies.inline_max,
            crate::store::dynamo::body::DEFAULT_INLINE_MAX_BYTES
        );
        assert_eq!(cfg.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!(
            catalog::MAX_BODY_BYTES.default_value(),
            Some(DEFAULT_MAX_BODY_BYTES.to_string().as_str())
        );
        assert!(catalog::MAX_BODY_BYTES
            .meaning
            .contains(&MAX_MAX_BODY_BYTES.to_string()));
        let r = ReaperConfig::read(&lookup(&[("TABLE_NAME", "t")])).unwrap_err();
        assert!(r.to_string().contains("RETRY_QUEUE_URL"), "{r}");
        let bad = ReaperConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("REAPER_MAX_PER_RUN", "-1"),
        ]))
        .unwrap_err();
        assert!(bad.to_string().contains("REAPER_MAX_PER_RUN"), "{bad}");
    }

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

    #[test]
    fn secret_parse_errors_do_not_echo_secrets() {
        let e = parse_secrets(
            r#"{"stripe": ["whsec_supersecret", 5]}"#,
            vars::WEBHOOK_SECRETS,
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("WEBHOOK_SECRETS"));
        assert!(!text.contains("supersecret"), "{text}");
        let e =
            parse_secrets(r#"{"stripe": "whsec_supersecret"#, vars::WEBHOOK_SECRETS).unwrap_err();
        assert!(!e.to_string().contains("supersecret"));
    }

    #[test]
    fn secrets_ttl_defaults_to_five_minutes_and_is_at_least_one_second() {
        let read = |ttl: &'static str| {
            IngestConfig::read(
                &lookup(&[
                    ("TABLE_NAME", "t"),
                    ("WEBHOOK_SOURCES", SOURCES),
                    ("WEBHOOK_SECRETS_TTL_SECS", ttl),
                ]),
                Some(SECRETS.into()),
            )
        };
        let cfg = read("").unwrap();
        assert_eq!(cfg.secrets_ttl, std::time::Duration::from_secs(300));
        assert!(
            cfg.reloader.is_none(),
            "secrets from the environment never change"
        );
        assert_eq!(read("60").unwrap().secrets_ttl.as_secs(), 60);
        for bad in ["0", "-1", "5m"] {
            let e = read(bad).unwrap_err().to_string();
            assert!(e.contains("WEBHOOK_SECRETS_TTL_SECS"), "{bad}: {e}");
        }
    }

    #[test]
    fn empty_secret_list_is_refused() {
        let secrets = parse_secrets(r#"{"stripe": []}"#, vars::WEBHOOK_SECRETS).unwrap();
        let e = Sources::from_json(r#"{"stripe":{"scheme":"stripe"}}"#, &secrets).unwrap_err();
        assert!(e.to_string().contains("stripe"));
    }
}
