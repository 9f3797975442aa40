//! The reaper Lambda's handler: one pass over the open index per scheduled invocation.

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::ConfigError;
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::queue::{Quarantine, RetryQueue};
use inbox_core::reaper::Reaper;
use inbox_core::reaper::ReaperConfig;
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::MessageStore;
use lambda_runtime::{Error, LambdaEvent};
use serde_json::Value;

/// The reaper as deployed.
pub type Service = Reaper<DynamoTable, SqsRetryQueue, SqsQuarantine, SystemClock>;

/// Builds the service once per cold start.
pub async fn build() -> Result<Service, ConfigError> {
    let config = ReaperConfig::from_env()?;
    let sdk = inbox_core::tls::sdk_config(&inbox_core::config::Env::process()).await?;
    Ok(compose(config, &sdk, SystemClock))
}

/// The reaper as deployed, on `clock`: the table (with the bucket of large bodies, where a
/// message it fails has its body exempted from expiry), the retry queue it re-drives through,
/// and the quarantine queue of the notices of messages it fails (their last attempt never
/// reported) and of the notices left pending.
pub fn compose<C: Clock>(
    config: ReaperConfig,
    sdk: &aws_config::SdkConfig,
    clock: C,
) -> Reaper<DynamoTable, SqsRetryQueue, SqsQuarantine, C> {
    let store = DynamoTable::new(fail_fast_client(sdk), config.table_name)
        .with_bodies(config.bodies.s3(sdk));
    let sqs = aws_sdk_sqs::Client::new(sdk);
    let retry = SqsRetryQueue::new(sqs.clone(), config.retry_queue_url);
    let quarantine = SqsQuarantine::new(sqs, config.quarantine_queue_url);
    Reaper::new(store, retry, quarantine, clock, config.settings)
}

/// The Lambda entry point (the scheduled event's content is not needed). Fails the invocation on
/// an infrastructure error (the index unreadable, or messages it could not handle) so the Errors
/// alarm sees it; the report is logged either way.
pub async fn handle<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock>(
    reaper: &Reaper<S, R, Q, C>,
    _event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let report = reaper.run().await?;
    if report.due > 0 {
        tracing::warn!(due = report.due, redriven = report.redriven, failed = report.failed, notices_sent = report.notices_sent, skipped = report.skipped, errors = report.errors, by_status = ?report.by_status, oldest_due = report.oldest_due, "handled due messages");
    } else {
        tracing::info!(due = 0, "nothing due");
    }
    if report.errors > 0 {
        return Err(format!(
            "{} due message(s) could not be handled (store or queue errors); the next run tries again",
            report.errors
        )
        .into());
    }
    Ok(serde_json::to_value(report)?)
}
