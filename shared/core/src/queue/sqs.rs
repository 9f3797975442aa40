//! The SQS adapters of the queue roles: [`SqsRetryQueue`] sends retry requests, [`SqsQuarantine`]
//! quarantine notices, each a small JSON document on its own queue.

use super::{Quarantine, QueueError, RetryQueue};
use crate::domain::MessageKey;
use crate::message::{QuarantineNotice, RetryRequest};
use crate::policy::MAX_BACKOFF;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use aws_sdk_sqs::Client;
use std::time::Duration;

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

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> QueueError {
    QueueError(Box::new(e))
}

fn body(key: &MessageKey) -> Result<String, QueueError> {
    serde_json::to_string(&RetryRequest::from(key)).map_err(boxed)
}

/// SQS delays are whole seconds: round up, so a retry never arrives before it is due.
fn delay_seconds(delay: Duration) -> i32 {
    let d = delay.min(MAX_BACKOFF);
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(900)
}

impl RetryQueue for SqsRetryQueue {
    async fn schedule(&self, key: &MessageKey, delay: Duration) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body(key)?)
            .delay_seconds(delay_seconds(delay))
            .send()
            .await
            .map_err(boxed)?;
        Ok(())
    }

    async fn redrive(&self, keys: &[MessageKey]) -> Result<usize, QueueError> {
        let mut sent = 0;
        for chunk in keys.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body(k)?)
                        .build()
                        .map_err(boxed)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .client
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(boxed)?;
            sent += out.successful.len();
        }
        Ok(sent)
    }
}

impl Quarantine for SqsQuarantine {
    async fn quarantine(&self, notice: &QuarantineNotice) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(serde_json::to_string(notice).map_err(boxed)?)
            .send()
            .await
            .map_err(boxed)?;
        Ok(())
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
