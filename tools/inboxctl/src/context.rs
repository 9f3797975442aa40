//! What commands run against: the AWS configuration from the standard environment, and the
//! shared crate's store and queues built from the global options.

use crate::cli::Global;
use crate::error::{usage, Result};
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoInbox;
use std::time::Duration;
use tokio::sync::OnceCell;

/// The global options and lazily loaded AWS clients.
pub struct Context {
    pub global: Global,
    sdk: OnceCell<aws_config::SdkConfig>,
}

impl Context {
    pub fn new(global: Global) -> Self {
        Self {
            global,
            sdk: OnceCell::new(),
        }
    }

    /// Whether to print JSON.
    pub fn json(&self) -> bool {
        self.global.json
    }

    /// The AWS configuration: `aws_config::load_from_env()` honours `AWS_ENDPOINT_URL`, so the
    /// same command works against the local emulator and AWS.
    pub async fn sdk(&self) -> &aws_config::SdkConfig {
        self.sdk.get_or_init(aws_config::load_from_env).await
    }

    /// The table name, or a usage error naming both ways to give it.
    pub fn table(&self) -> Result<&str> {
        self.global
            .table
            .as_deref()
            .filter(|t| !t.is_empty())
            .ok_or_else(|| usage("no table: pass --table NAME or set TABLE_NAME"))
    }

    /// A DynamoDB client for an operator: patient timeouts (scans of a big table take a while),
    /// standard retries.
    pub async fn dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let config = aws_sdk_dynamodb::config::Builder::from(self.sdk().await)
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .operation_attempt_timeout(Duration::from_secs(30))
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(3))
            .build();
        aws_sdk_dynamodb::Client::from_conf(config)
    }

    /// The message store on the table, with the operator's client ([`Self::dynamodb`]).
    pub async fn store(&self) -> Result<DynamoInbox> {
        let table = self.table()?.to_owned();
        Ok(DynamoInbox::new(self.dynamodb().await, table))
    }

    /// An SQS client.
    pub async fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::new(self.sdk().await)
    }

    /// The retry queue URL, or a usage error.
    pub fn retry_url(&self) -> Result<&str> {
        self.global
            .retry_queue_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| {
                usage("replays re-drive through the retry queue: pass --retry-queue-url URL or set RETRY_QUEUE_URL")
            })
    }

    /// The quarantine queue URL, if configured.
    pub fn quarantine_url(&self) -> Option<&str> {
        self.global
            .quarantine_queue_url
            .as_deref()
            .filter(|u| !u.is_empty())
    }

    /// The retry queue replays re-drive through (the only queue a replay writes to).
    pub async fn retry_queue(&self) -> Result<SqsRetryQueue> {
        let url = self.retry_url()?.to_owned();
        Ok(SqsRetryQueue::new(self.sqs().await, url))
    }
}
