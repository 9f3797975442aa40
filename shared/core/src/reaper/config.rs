//! The reaper's configuration, read through [`Env`] at cold start: the table, the bucket of large
//! bodies and the two queues ([`ReaperConfig`]), and its [`ReaperSettings`] (its budget, and the processor's retry policy
//! and lease, read as the process function reads them: [`crate::process::config::read_retry`]).

use super::ReaperSettings;
use crate::config::{catalog, ConfigError, Env};
use crate::process::config::read_retry;
use crate::store::dynamo::body::BodyConfig;

/// Everything the reaper needs.
#[derive(Debug, Clone)]
pub struct ReaperConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub quarantine_queue_url: String,
    /// The bucket of large bodies (`BODY_BUCKET`): the reaper never reads a body, but a message it
    /// fails has its body exempted from expiry there.
    pub bodies: BodyConfig,
    pub settings: ReaperSettings,
}

impl ReaperConfig {
    /// Reads the reaper's configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let (policy, lease) = read_retry(env)?;
        Ok(Self {
            table_name: env.required(&catalog::TABLE_NAME)?,
            retry_queue_url: env.required(&catalog::RETRY_QUEUE_URL)?,
            quarantine_queue_url: env.required(&catalog::QUARANTINE_QUEUE_URL)?,
            bodies: BodyConfig::read(env)?,
            settings: ReaperSettings {
                max_per_run: env.parse(&catalog::REAPER_MAX_PER_RUN)?,
                policy,
                lease,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::ProcessConfig;

    fn lookup(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
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
        assert_eq!(r.bodies.bucket, None, "BODY_BUCKET is optional");
        let with_bucket = ReaperConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RETRY_QUEUE_URL", "r"),
            ("QUARANTINE_QUEUE_URL", "q"),
            ("BODY_BUCKET", "bodies"),
        ]))
        .unwrap();
        assert_eq!(with_bucket.bodies.bucket.as_deref(), Some("bodies"));
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
    fn errors_name_the_variable() {
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
}
