//! The process function's configuration, read through [`Env`] at cold start: the table and the
//! two queues ([`ProcessConfig`]), and how the processor behaves ([`ProcessorConfig::read`]: the
//! retry policy and lease, which the reaper applies alike, [`read_retry`]; retention;
//! concurrency).

use super::ProcessorConfig;
use crate::config::{catalog, vars, ConfigError, Env};
use crate::policy::RetryPolicy;
use std::time::Duration;

/// Everything the process function needs.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    pub table_name: String,
    pub retry_queue_url: String,
    pub quarantine_queue_url: String,
    pub processor: ProcessorConfig,
}

impl ProcessConfig {
    /// Reads the process function's configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let processor = ProcessorConfig::read(env)?;
        Ok(Self {
            table_name: env.required(&catalog::TABLE_NAME)?,
            retry_queue_url: env.required(&catalog::RETRY_QUEUE_URL)?,
            quarantine_queue_url: env.required(&catalog::QUARANTINE_QUEUE_URL)?,
            processor,
        })
    }
}

impl ProcessorConfig {
    /// The retry policy and lease ([`read_retry`]), the retention and the concurrency.
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let (policy, lease) = read_retry(env)?;
        let days: u32 = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
        Ok(Self {
            policy,
            lease,
            retention: Duration::from_secs(u64::from(days) * 86_400),
            concurrency: env.parse::<usize>(&catalog::PROCESS_CONCURRENCY)?.max(1),
            queue_patience: crate::queue::QUEUE_PATIENCE,
        })
    }
}

/// The retry policy and the lease, read alike by the process function and the reaper (which
/// counts the attempts that never reported and re-drives them with the same backoff).
pub fn read_retry(env: &Env) -> Result<(RetryPolicy, Duration), ConfigError> {
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
        RetryPolicy::new(
            max_attempts,
            Duration::from_millis(base_ms),
            Duration::from_millis(cap_ms),
        ),
        Duration::from_millis(lease_ms),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
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
    }
}
