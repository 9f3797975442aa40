//! The DynamoDB client every function uses ([`fail_fast_client`]: short timeouts, few retries)
//! and how a [`DynamoTable`] is built: its table, where large bodies go, how writes that meet
//! another transaction are sent again ([`Contention`]).

use super::{Contention, DynamoTable, S3Bodies};
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::Client;
use std::time::Duration;

/// The longest one request of [`fail_fast_client`] may take, retries included: what the ingest
/// function's timeout is sized from (see `ingest::WORST_CASE`).
pub const FAIL_FAST_OPERATION_TIMEOUT: Duration = Duration::from_millis(5_000);

/// Builds the DynamoDB client every function uses: short timeouts and few retries, so an outage
/// turns into a fast error that is retried by whoever sent the work (the provider, after the
/// ingest's 503; Lambda, after a batch item failure) rather than into a Lambda timeout.
pub fn fail_fast_client(sdk: &aws_config::SdkConfig) -> Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_millis(1_000))
                .operation_attempt_timeout(Duration::from_millis(2_000))
                .operation_timeout(FAIL_FAST_OPERATION_TIMEOUT)
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .build();
    Client::from_conf(config)
}

impl DynamoTable {
    /// Every body inline (compressed): what fits an item ([`super::body::MAX_INLINE_BYTES`]).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            bodies: None,
            secrets_key: None,
            contention: Contention::default(),
        }
    }

    /// How writes that meet another transaction are sent again and counted (by default
    /// [`crate::policy::CONFLICT_RETRY`], tokio's sleep, a random jitter, EMF on stdout).
    pub fn with_contention(mut self, contention: Contention) -> Self {
        self.contention = contention;
        self
    }

    /// Bodies above the inline limit go to S3 (and are read back); `None` keeps every body inline.
    pub fn with_bodies(mut self, bodies: Option<S3Bodies>) -> Self {
        self.bodies = bodies;
        self
    }

    /// Where large bodies are, if anywhere.
    pub fn bodies(&self) -> Option<&S3Bodies> {
        self.bodies.as_ref()
    }

    /// The table this store writes to.
    pub fn table(&self) -> &str {
        &self.table
    }
}
