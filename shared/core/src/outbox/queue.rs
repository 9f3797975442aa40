//! The deliver function's queues: the delivery queue (work to do now or after a delay, at most
//! 15 minutes; longer waits are found by the sweep) and the delivery quarantine (a notice per
//! failed delivery, for operators and the alarm). [`OutboxQueues`] is the capability, with SQS
//! and in-memory implementations.

use super::delivery::{DeliveryRef, OutboundDelivery};
use super::destination::DestinationId;
use crate::domain::{EventId, EventType, SourceName};
use crate::queue::{sqs, QueueError};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// The largest delivery a queue message carries whole ([`Work::carrying`]): one 64 KiB SQS
/// request with room for the envelope. Larger ones (a long journal) go by reference.
pub const CARRY_MAX_BYTES: usize = 60 * 1024;

/// A delivery-queue message: which work item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Work {
    /// Send (or re-send) this delivery: the worker reads it first.
    Delivery(DeliveryRef),
    /// Send this delivery, as it was stored when its attempt was scheduled (its version
    /// included), as a stream image carries it: the worker starts from this copy without reading
    /// the item. A copy that is no longer the stored one fails its first conditional write, and
    /// the worker then reads the delivery and goes on from what is stored.
    Attempt(Box<OutboundDelivery>),
    /// Expand this event's fan-out item.
    Fanout {
        source: SourceName,
        event_id: EventId,
    },
}

impl Work {
    /// The message that schedules `d` (as stored, at its version): the delivery itself when it
    /// fits [`CARRY_MAX_BYTES`], else its reference.
    pub fn carrying(d: &OutboundDelivery) -> Self {
        match serde_json::to_vec(d) {
            Ok(json) if json.len() <= CARRY_MAX_BYTES => Self::Attempt(Box::new(d.clone())),
            _ => Self::Delivery(d.reference()),
        }
    }
}

/// The notice of a failed delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryNotice {
    pub destination: DestinationId,
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

impl OutboxQueues for SqsOutboxQueues {
    async fn schedule(&self, work: &Work, delay: Duration) -> Result<(), QueueError> {
        sqs::send(&self.client, &self.work_url, work, Some(delay)).await
    }

    async fn redrive(&self, work: &[Work]) -> Result<usize, QueueError> {
        sqs::send_batch(&self.client, &self.work_url, work).await
    }

    async fn failed(&self, notice: &DeliveryNotice) -> Result<(), QueueError> {
        sqs::send(&self.client, &self.quarantine_url, notice, None).await
    }
}

/// In-memory queues: what was scheduled, re-driven and announced (tests).
#[derive(Debug, Default)]
pub struct MemoryOutboxQueues {
    pub scheduled: Mutex<Vec<(Work, Duration)>>,
    pub redriven: Mutex<Vec<Work>>,
    pub notices: Mutex<Vec<DeliveryNotice>>,
    /// How many of the next notices are refused (an outage of the delivery quarantine).
    pub refuse_notices: std::sync::atomic::AtomicUsize,
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
        use std::sync::atomic::Ordering::SeqCst;
        let refused = self
            .refuse_notices
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(QueueError("the delivery quarantine is down".into()));
        }
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
    use crate::outbox::destination::did;

    #[test]
    fn work_messages_are_small_tagged_json() {
        let w = Work::Delivery(DeliveryRef {
            destination: did("crm"),
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
    }
}
