//! The reaper Lambda's handler: one pass over the open index per scheduled invocation.

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{ConfigError, ReaperConfig};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::queue::RetryQueue;
use inbox_core::reaper::Reaper;
use inbox_core::store::dynamo::{client_for_hot_path, DynamoInbox};
use inbox_core::store::MessageStore;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

/// The reaper as deployed.
pub type Service = Reaper<DynamoInbox, SqsRetryQueue, SystemClock>;

/// Builds the service once per cold start.
pub async fn build() -> Result<Service, ConfigError> {
    let config = ReaperConfig::from_env()?;
    let sdk = aws_config::load_from_env().await;
    let store = DynamoInbox::new(client_for_hot_path(&sdk), config.table_name);
    // The reaper only re-drives: it holds the retry queue and nothing else.
    let retry = SqsRetryQueue::new(aws_sdk_sqs::Client::new(&sdk), config.retry_queue_url);
    Ok(Reaper::new(store, retry, SystemClock, config.max_per_run))
}

/// The Lambda entry point (the scheduled event's content is not needed). Fails the invocation on
/// an infrastructure error so the Errors alarm sees it.
pub async fn handle<S: MessageStore, R: RetryQueue, C: Clock>(
    reaper: &Reaper<S, R, C>,
    _event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let report = reaper.run().await?;
    if report.due > 0 {
        tracing::warn!(due = report.due, redriven = report.redriven, by_status = ?report.by_status, oldest_due = report.oldest_due, "re-drove due messages");
    } else {
        tracing::info!(due = 0, "nothing due");
    }
    Ok(serde_json::to_value(report)?)
}
