//! The ingest function's configuration ([`IngestConfig`]), read through [`Env`] at cold start:
//! the table, the sources and their secrets (from `WEBHOOK_SECRETS`, or from the Secrets Manager
//! secret `WEBHOOK_SECRETS_ARN`, then read again on a TTL), the body and batch limits and the
//! retention.

use crate::config::{
    catalog, vars, ConfigError, Env, DEFAULT_MAX_BODY_BYTES, MAX_MAX_BATCH_EVENTS,
};
use crate::sources::{parse_secrets, refuse_published, Reloader, SecretsManagerSecrets, Sources};
use crate::store::dynamo::body::{BodyConfig, MAX_INLINE_BYTES};
use std::sync::Arc;
use std::time::Duration;

/// Largest body the table can hold next to the message's other attributes (item limit 400 KB):
/// the limit without a body bucket.
pub const MAX_MAX_BODY_BYTES: usize = MAX_INLINE_BYTES;

/// Everything the ingest function needs, read at cold start.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    pub table_name: String,
    pub sources: Sources,
    pub max_body_bytes: usize,
    /// The most events one batched request may be split into (`MAX_BATCH_EVENTS`).
    pub max_batch_events: usize,
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
    /// Manager when `WEBHOOK_SECRETS_ARN` is set and `WEBHOOK_SECRETS` is not. `published`: the
    /// source names the deployment's applications publish their own events under, which no
    /// inbound source may take ([`crate::sources::refuse_published`]).
    pub async fn from_env(
        aws: &aws_config::SdkConfig,
        published: &[&str],
    ) -> Result<Self, ConfigError> {
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
        let mut config = Self::read(&env, secrets_json, published)?;
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
    /// reloader; no source may be named as one of `published` (see [`Self::from_env`]).
    pub fn read(
        env: &Env,
        secrets_json: Option<String>,
        published: &[&str],
    ) -> Result<Self, ConfigError> {
        let table_name = env.required(&catalog::TABLE_NAME)?;
        let sources_json = env.required(&catalog::WEBHOOK_SOURCES)?;
        refuse_published(&sources_json, published)?;
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
        let max_batch_events: usize = env.parse(&catalog::MAX_BATCH_EVENTS)?;
        if !(1..=MAX_MAX_BATCH_EVENTS).contains(&max_batch_events) {
            return Err(ConfigError::Invalid {
                var: vars::MAX_BATCH_EVENTS,
                reason: format!("must be between 1 and {MAX_MAX_BATCH_EVENTS}"),
            });
        }
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
            max_batch_events,
            bodies,
            retention_days,
            secrets_ttl: Duration::from_secs(ttl_secs),
            reloader: None,
        })
    }
}

/// `MAX_BODY_BYTES`: by default what Lambda accepts, or what an item holds without a bucket
/// (ingest's limit, which events stored by other ways than a webhook keep too).
pub fn read_max_body(env: &Env, bodies: &BodyConfig) -> Result<usize, ConfigError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_RETENTION_DAYS;
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
            &[],
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
    fn a_source_named_as_a_published_one_fails_at_start() {
        // Refused for its name alone (it has a secret and a valid scheme), whichever position.
        let published = ["internal"];
        let secrets = r#"{"internal": "whsec_c2VjcmV0", "stripe": "whsec_abc"}"#;
        for sources in [
            r#"{"internal":{"scheme":"github"}}"#,
            r#"{"stripe":{"scheme":"stripe"},"internal":{"scheme":"standard-webhooks"}}"#,
        ] {
            let pairs = [("TABLE_NAME", "t"), ("WEBHOOK_SOURCES", sources)];
            let e = IngestConfig::read(&lookup(&pairs), Some(secrets.into()), &published)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("WEBHOOK_SOURCES")
                    && e.contains("\"internal\"")
                    && e.contains("reserved"),
                "{e}"
            );
        }
        // Names that only look like it are anyone's; with nothing published, so is the name.
        let pairs = [
            ("TABLE_NAME", "t"),
            (
                "WEBHOOK_SOURCES",
                r#"{"internals":{"scheme":"github"},"my-internal":{"scheme":"github"}}"#,
            ),
        ];
        let secrets = r#"{"internals": "k", "my-internal": "k"}"#;
        let cfg = IngestConfig::read(&lookup(&pairs), Some(secrets.into()), &published).unwrap();
        assert_eq!(cfg.sources.names(), vec!["internals", "my-internal"]);
        let pairs = [
            ("TABLE_NAME", "t"),
            ("WEBHOOK_SOURCES", r#"{"internal":{"scheme":"github"}}"#),
        ];
        let secrets = r#"{"internal": "k"}"#;
        assert!(IngestConfig::read(&lookup(&pairs), Some(secrets.into()), &[]).is_ok());
    }

    #[test]
    fn errors_name_the_variable() {
        let err = |pairs: &'static [(&'static str, &'static str)], secrets: Option<&str>| {
            IngestConfig::read(&lookup(pairs), secrets.map(Into::into), &[])
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
        for bad in ["0", "100001", "-1", "many"] {
            let pairs = [
                ("TABLE_NAME", "t"),
                ("WEBHOOK_SOURCES", SOURCES),
                ("MAX_BATCH_EVENTS", bad),
            ];
            let e = IngestConfig::read(&lookup(&pairs), Some(SECRETS.into()), &[])
                .unwrap_err()
                .to_string();
            assert!(e.contains("MAX_BATCH_EVENTS"), "{bad}: {e}");
        }
        let pairs = [
            ("TABLE_NAME", "t"),
            ("WEBHOOK_SOURCES", SOURCES),
            ("MAX_BATCH_EVENTS", "20"),
        ];
        let cfg = IngestConfig::read(&lookup(&pairs), Some(SECRETS.into()), &[]).unwrap();
        assert_eq!(cfg.max_batch_events, 20);
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
                &[],
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
    fn body_limits_follow_the_bucket_and_the_documented_defaults() {
        let cfg = IngestConfig::read(
            &lookup(&[("TABLE_NAME", "t"), ("WEBHOOK_SOURCES", SOURCES)]),
            Some(SECRETS.into()),
            &[],
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
            &[],
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
            cfg.max_batch_events,
            crate::config::DEFAULT_MAX_BATCH_EVENTS
        );
        assert_eq!(
            catalog::MAX_BATCH_EVENTS.default_value(),
            Some(crate::config::DEFAULT_MAX_BATCH_EVENTS.to_string().as_str())
        );
        assert_eq!(
            catalog::MAX_BODY_BYTES.default_value(),
            Some(DEFAULT_MAX_BODY_BYTES.to_string().as_str())
        );
        assert!(catalog::MAX_BODY_BYTES
            .meaning
            .contains(&MAX_MAX_BODY_BYTES.to_string()));
    }
}
