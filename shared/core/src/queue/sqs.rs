//! The SQS adapters of the queue roles: [`SqsRetryQueue`] sends retry requests, [`SqsQuarantine`]
//! quarantine notices, each a small JSON document on its own queue. [`send`] and [`send_batch`]
//! are the one way this crate sends to SQS (the outbox's queues use them too).

use super::{Quarantine, QueueError, RetryQueue};
use crate::domain::MessageKey;
use crate::message::{QuarantineNotice, RetryRequest};
use crate::policy::MAX_BACKOFF;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use std::time::Duration;

/// The SQS client the process function uses: a request that gets no answer (the queue
/// unreachable, a connection that hangs) fails within 5 s instead of holding the invocation until
/// its timeout, so the patient retries ([`super::patiently`]) can try again.
pub fn fail_fast_sqs(sdk: &aws_config::SdkConfig) -> Client {
    let config = aws_sdk_sqs::config::Builder::from(sdk)
        .timeout_config(
            aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_millis(1_000))
                .operation_attempt_timeout(Duration::from_millis(2_000))
                .operation_timeout(Duration::from_millis(5_000))
                .build(),
        )
        .build();
    Client::from_conf(config)
}

/// The retry queue, by URL.
#[derive(Debug, Clone)]
pub struct SqsRetryQueue {
    client: Client,
    url: String,
}

impl SqsRetryQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

/// The quarantine queue, by URL.
#[derive(Debug, Clone)]
pub struct SqsQuarantine {
    client: Client,
    url: String,
}

impl SqsQuarantine {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn url(&self) -> &str {
        &self.url
    }
}

pub(crate) fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> QueueError {
    QueueError(Box::new(e))
}

/// SQS delays are whole seconds: round up, so a retry never arrives before it is due; at most
/// SQS's 15 minutes.
pub(crate) fn delay_seconds(delay: Duration) -> i32 {
    let d = delay.min(MAX_BACKOFF);
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(900)
}

/// One JSON document to the queue at `url`, delayed by `delay` (rounded up to whole seconds).
pub(crate) async fn send(
    client: &Client,
    url: &str,
    document: &impl serde::Serialize,
    delay: Option<Duration>,
) -> Result<(), QueueError> {
    client
        .send_message()
        .queue_url(url)
        .message_body(serde_json::to_string(document).map_err(boxed)?)
        .set_delay_seconds(delay.map(delay_seconds))
        .send()
        .await
        .map_err(boxed)?;
    Ok(())
}

/// JSON documents to the queue at `url`, 10 per request (SQS's batch limit); how many SQS
/// accepted.
pub(crate) async fn send_batch<T: serde::Serialize>(
    client: &Client,
    url: &str,
    documents: &[T],
) -> Result<usize, QueueError> {
    let mut sent = 0;
    for chunk in documents.chunks(10) {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, d)| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(serde_json::to_string(d).map_err(boxed)?)
                    .build()
                    .map_err(boxed)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let out = client
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(boxed)?;
        sent += out.successful.len();
    }
    Ok(sent)
}

impl RetryQueue for SqsRetryQueue {
    async fn schedule(&self, key: &MessageKey, delay: Duration) -> Result<(), QueueError> {
        send(
            &self.client,
            &self.url,
            &RetryRequest::from(key),
            Some(delay),
        )
        .await
    }

    async fn redrive(&self, keys: &[MessageKey]) -> Result<usize, QueueError> {
        let requests: Vec<RetryRequest> = keys.iter().map(RetryRequest::from).collect();
        send_batch(&self.client, &self.url, &requests).await
    }

    async fn redeliver_in(&self, receipt_handle: &str, after: Duration) -> Result<(), QueueError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(delay_seconds(after))
            .send()
            .await
            .map_err(boxed)?;
        Ok(())
    }
}

impl Quarantine for SqsQuarantine {
    async fn quarantine(&self, notice: &QuarantineNotice) -> Result<(), QueueError> {
        send(&self.client, &self.url, notice, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_round_up_and_cap() {
        assert_eq!(delay_seconds(Duration::ZERO), 0);
        assert_eq!(delay_seconds(Duration::from_millis(1)), 1);
        assert_eq!(delay_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(delay_seconds(Duration::from_secs(3)), 3);
        assert_eq!(delay_seconds(Duration::from_secs(3600)), 900);
    }
}
