//! The deliver function's configuration ([`DeliverFunctionConfig`]), read through [`Env`] like
//! every other function's; each variable documented once in [`crate::config::catalog`].

use super::breaker::BreakerConfig;
use super::worker::DeliverConfig;
use crate::config::{catalog, ConfigError, Env, Var};
use std::time::Duration;

/// Everything the deliver function needs.
#[derive(Debug, Clone)]
pub struct DeliverFunctionConfig {
    pub table_name: String,
    pub delivery_queue_url: String,
    pub delivery_quarantine_queue_url: String,
    /// Loopback and plain `http://` destinations allowed (local only).
    pub allow_loopback: bool,
    pub destination_cache: Duration,
    pub sweep_max_per_run: usize,
    pub worker: DeliverConfig,
}

/// How long destinations are cached (the process function reads this too).
pub fn destination_cache(env: &Env) -> Result<Duration, ConfigError> {
    Ok(Duration::from_millis(
        env.parse(&catalog::DESTINATION_CACHE_MS)?,
    ))
}

impl DeliverFunctionConfig {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let at_least_1 = |v: &Var, most: u32| -> Result<u32, ConfigError> {
            let x: u32 = env.parse(v)?;
            if x == 0 || x > most {
                return Err(ConfigError::Invalid {
                    var: v.name,
                    reason: format!("must be 1 to {most}"),
                });
            }
            Ok(x)
        };
        let days: u32 = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
        let ms = |v: &Var| env.parse::<u64>(v).map(Duration::from_millis);
        Ok(Self {
            table_name: env.required(&catalog::TABLE_NAME)?,
            delivery_queue_url: env.required(&catalog::DELIVERY_QUEUE_URL)?,
            delivery_quarantine_queue_url: env.required(&catalog::DELIVERY_QUARANTINE_QUEUE_URL)?,
            allow_loopback: env.parse(&catalog::DELIVERY_ALLOW_LOOPBACK)?,
            destination_cache: destination_cache(env)?,
            sweep_max_per_run: env.parse(&catalog::DELIVERY_SWEEP_MAX_PER_RUN)?,
            worker: DeliverConfig {
                breaker: BreakerConfig {
                    window: ms(&catalog::BREAKER_WINDOW_MS)?,
                    min_requests: at_least_1(&catalog::BREAKER_MIN_REQUESTS, u32::MAX)?,
                    failure_rate: at_least_1(&catalog::BREAKER_FAILURE_RATE, 100)?,
                    half_open_probes: at_least_1(&catalog::BREAKER_HALF_OPEN_PROBES, 1_000)?,
                    cooldown: ms(&catalog::BREAKER_COOLDOWN_MS)?,
                    max_cooldown: ms(&catalog::BREAKER_MAX_COOLDOWN_MS)?,
                    disable_after: ms(&catalog::BREAKER_DISABLE_AFTER_MS)?,
                },
                max_wait: ms(&catalog::DELIVERY_MAX_WAIT_MS)?,
                concurrency: env.parse::<usize>(&catalog::DELIVERY_CONCURRENCY)?.max(1),
                retention: Duration::from_secs(u64::from(days) * 86_400),
                ..DeliverConfig::default()
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones_and_errors_name_the_variable() {
        let env = Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("DELIVERY_QUEUE_URL", "q"),
            ("DELIVERY_QUARANTINE_QUEUE_URL", "dq"),
        ]);
        let c = DeliverFunctionConfig::read(&env).unwrap();
        assert!(!c.allow_loopback);
        assert_eq!(c.destination_cache, Duration::from_secs(5));
        assert_eq!(c.worker.breaker, BreakerConfig::default());
        assert_eq!(c.worker.max_wait, DeliverConfig::default().max_wait);
        assert_eq!(c.worker.concurrency, 10);
        assert_eq!(c.worker.retention, Duration::from_secs(30 * 86_400));
        assert_eq!(c.sweep_max_per_run, 1000);
        let missing = DeliverFunctionConfig::read(&Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("DELIVERY_QUEUE_URL", "q"),
        ]))
        .unwrap_err();
        assert!(missing
            .to_string()
            .contains("DELIVERY_QUARANTINE_QUEUE_URL"));
        let bad = DeliverFunctionConfig::read(&Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("DELIVERY_QUEUE_URL", "q"),
            ("DELIVERY_QUARANTINE_QUEUE_URL", "dq"),
            ("BREAKER_MIN_REQUESTS", "0"),
        ]))
        .unwrap_err();
        assert!(bad.to_string().contains("BREAKER_MIN_REQUESTS"));
        let over = DeliverFunctionConfig::read(&Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("DELIVERY_QUEUE_URL", "q"),
            ("DELIVERY_QUARANTINE_QUEUE_URL", "dq"),
            ("BREAKER_FAILURE_RATE", "101"),
        ]))
        .unwrap_err();
        assert!(over.to_string().contains("BREAKER_FAILURE_RATE"));
        let local = DeliverFunctionConfig::read(&Env::from_pairs([
            ("TABLE_NAME", "t"),
            ("DELIVERY_QUEUE_URL", "q"),
            ("DELIVERY_QUARANTINE_QUEUE_URL", "dq"),
            ("DELIVERY_ALLOW_LOOPBACK", "true"),
            ("DELIVERY_CONCURRENCY", "0"),
        ]))
        .unwrap();
        assert!(local.allow_loopback);
        assert_eq!(local.worker.concurrency, 1);
    }
}
