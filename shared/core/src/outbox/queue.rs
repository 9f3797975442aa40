//! The deliver function's queues: the delivery queue (work to do now or after a delay, at most
//! 15 minutes; longer waits are found by the sweep) and the delivery quarantine (a notice per
//! failed delivery, for operators and the alarm). [`OutboxQueues`] is the capability, with SQS
//! and in-memory implementations.

use super::delivery::DeliveryRef;
use crate::domain::{EventId, EventType, SourceName};
use crate::policy::MAX_BACKOFF;
use crate::queue::QueueError;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// A delivery-queue message: which work item.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Send (or re-send) this delivery.
    Delivery(DeliveryRef),
    /// Expand this event's fan-out item.
    Fanout {
        source: SourceName,
        event_id: EventId,
    },
}

/// The notice of a failed delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNotice {
    pub destination: String,
    pub source: SourceName,
    pub event_id: EventId,
    #[serde(default)]
    pub event_type: Option<EventType>,
    pub webhook_id: String,
    pub attempts: u32,
    pub last_error: String,
    /// ms since the epoch.
    pub failed_at: i64,
}

/// The deliver function's queues.
pub trait OutboxQueues: Send + Sync {
    /// `work` again after `delay` (at most 15 minutes).
    fn schedule(
        &self,
        work: &Work,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
    /// Each of `work` now; how many were sent.
    fn redrive(&self, work: &[Work]) -> impl Future<Output = Result<usize, QueueError>> + Send;
    /// Announces a failed delivery.
    fn failed(
        &self,
        notice: &DeliveryNotice,
    ) -> impl Future<Output = Result<(), QueueError>> + Send;
}

/// The queues on SQS, by URL.
#[derive(Debug, Clone)]
pub struct SqsOutboxQueues {
    client: aws_sdk_sqs::Client,
    work_url: String,
    quarantine_url: String,
}

impl SqsOutboxQueues {
    pub fn new(
        client: aws_sdk_sqs::Client,
        work_url: impl Into<String>,
        quarantine_url: impl Into<String>,
    ) -> Self {
        Self {
            client,
            work_url: work_url.into(),
            quarantine_url: quarantine_url.into(),
        }
    }
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> QueueError {
    QueueError(Box::new(e))
}

/// SQS delays are whole seconds: round up, cap at 15 minutes.
pub fn delay_seconds(delay: Duration) -> i32 {
    let d = delay.min(MAX_BACKOFF);
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(900)
}

impl OutboxQueues for SqsOutboxQueues {
    async fn schedule(&self, work: &Work, delay: Duration) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.work_url)
            .message_body(serde_json::to_string(work).map_err(boxed)?)
            .delay_seconds(delay_seconds(delay))
            .send()
            .await
            .map_err(boxed)?;
        Ok(())
    }

    async fn redrive(&self, work: &[Work]) -> Result<usize, QueueError> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
        let mut sent = 0;
        for chunk in work.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(serde_json::to_string(w).map_err(boxed)?)
                        .build()
                        .map_err(boxed)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .client
                .send_message_batch()
                .queue_url(&self.work_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(boxed)?;
            sent += out.successful.len();
        }
        Ok(sent)
    }

    async fn failed(&self, notice: &DeliveryNotice) -> Result<(), QueueError> {
        self.client
            .send_message()
            .queue_url(&self.quarantine_url)
            .message_body(serde_json::to_string(notice).map_err(boxed)?)
            .send()
            .await
            .map_err(boxed)?;
        Ok(())
    }
}

/// In-memory queues: what was scheduled, re-driven and announced (tests).
#[derive(Debug, Default)]
pub struct MemoryOutboxQueues {
    pub scheduled: Mutex<Vec<(Work, Duration)>>,
    pub redriven: Mutex<Vec<Work>>,
    pub notices: Mutex<Vec<DeliveryNotice>>,
}

impl OutboxQueues for MemoryOutboxQueues {
    async fn schedule(&self, work: &Work, delay: Duration) -> Result<(), QueueError> {
        if let Ok(mut s) = self.scheduled.lock() {
            s.push((work.clone(), delay));
        }
        Ok(())
    }

    async fn redrive(&self, work: &[Work]) -> Result<usize, QueueError> {
        if let Ok(mut r) = self.redriven.lock() {
            r.extend(work.iter().cloned());
        }
        Ok(work.len())
    }

    async fn failed(&self, notice: &DeliveryNotice) -> Result<(), QueueError> {
        if let Ok(mut n) = self.notices.lock() {
            n.push(notice.clone());
        }
        Ok(())
    }
}

impl<T: OutboxQueues> OutboxQueues for std::sync::Arc<T> {
    fn schedule(
        &self,
        work: &Work,
        delay: Duration,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).schedule(work, delay)
    }
    fn redrive(&self, work: &[Work]) -> impl Future<Output = Result<usize, QueueError>> + Send {
        (**self).redrive(work)
    }
    fn failed(
        &self,
        notice: &DeliveryNotice,
    ) -> impl Future<Output = Result<(), QueueError>> + Send {
        (**self).failed(notice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_messages_are_small_tagged_json() {
        let w = Work::Delivery(DeliveryRef {
            destination: "crm".into(),
            source: SourceName::parse("stripe").unwrap(),
            event_id: EventId::parse("evt_1").unwrap(),
        });
        let json = serde_json::to_string(&w).unwrap();
        assert_eq!(
            json,
            r#"{"delivery":{"destination":"crm","source":"stripe","event_id":"evt_1"}}"#
        );
        assert_eq!(serde_json::from_str::<Work>(&json).unwrap(), w);
        let f: Work =
            serde_json::from_str(r#"{"fanout":{"source":"stripe","event_id":"e"}}"#).unwrap();
        assert!(matches!(f, Work::Fanout { .. }));
        assert!(serde_json::from_str::<Work>(r#"{"source":"stripe"}"#).is_err());
        assert_eq!(delay_seconds(Duration::from_millis(1)), 1);
        assert_eq!(delay_seconds(Duration::from_secs(7200)), 900);
    }
}
