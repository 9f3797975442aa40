//! Batched deliveries: a verified body that is a JSON array (SendGrid's Event Webhook) is split
//! into its events ([`crate::batch::split`]) and each is stored as its own message, exactly as a
//! single delivery is: identified by the source's rules applied to the event (SendGrid's
//! `sg_event_id`, else the event's SHA-256), one conditional `PutItem` each, a repeat counted and
//! journaled. Each message keeps the batch's digest, its place in the batch and the signature
//! headers, so the batch can be put back together and re-verified ([`crate::batch::reassemble`]).
//!
//! **Acknowledged only when every event is durable**: the puts run [`BATCH_CONCURRENCY`] at a
//! time (a transaction could not dedupe per event: one existing key would cancel it all); the
//! answer is 200 only once each put answered (inserted or already there). Any store error, or a
//! batch whose writes cannot all start within the journal budget after the request arrived,
//! answers 503: the provider resends the batch, whose stored events are then duplicates. A batch
//! of N events therefore costs N `PutItem`s (no read; each duplicate inside adds its repeat
//! bookkeeping, as a repeated single delivery does).

use futures_util::stream::{FuturesOrdered, StreamExt as _};
use http::HeaderMap;
use serde::Serialize;

use super::{Acknowledgement, IngestError, Ingestor, Outcome};
use crate::batch::Split;
use crate::clock::Clock;
use crate::sources::Source;
use crate::store::{Inbox, StoreError};

/// How many events of one batch are written at once.
pub const BATCH_CONCURRENCY: usize = 32;

/// The answer to a batch: one acknowledgement per event, in the batch's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchAcknowledgement {
    pub events: Vec<Acknowledgement>,
}

impl BatchAcknowledgement {
    /// How many events were new.
    pub fn accepted(&self) -> usize {
        self.events
            .iter()
            .filter(|a| a.outcome == Outcome::Accepted)
            .count()
    }

    /// How many events were stored before (by an earlier delivery, or earlier in this batch).
    pub fn duplicates(&self) -> usize {
        self.events.len() - self.accepted()
    }

    /// `accepted` when any event was new (or the batch was empty), else `duplicate`.
    pub fn outcome(&self) -> Outcome {
        if self.events.is_empty() || self.accepted() > 0 {
            Outcome::Accepted
        } else {
            Outcome::Duplicate
        }
    }

    /// `{"status":…,"accepted":n,"duplicate":m,"events":[{"id":…,"status":…},…]}`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Event<'a> {
            id: &'a str,
            status: Outcome,
        }
        #[derive(Serialize)]
        struct Body<'a> {
            status: Outcome,
            accepted: usize,
            duplicate: usize,
            events: Vec<Event<'a>>,
        }
        let events = self
            .events
            .iter()
            .map(|a| Event {
                id: a.key.event_id.as_str(),
                status: a.outcome,
            })
            .collect();
        serde_json::to_string(&Body {
            status: self.outcome(),
            accepted: self.accepted(),
            duplicate: self.duplicates(),
            events,
        })
        .unwrap_or_else(|_| format!("{{\"status\":\"{}\"}}", self.outcome().as_str()))
    }
}

/// The batch could not be written within its budget (nothing is acknowledged).
#[derive(Debug, thiserror::Error)]
#[error("the batch's writes did not all start within {budget_ms} ms of its arrival")]
struct OverBudget {
    budget_ms: i64,
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// Stores each event of a verified batch once (see the module docs), keeping at most
    /// [`BATCH_CONCURRENCY`] writes under way, in the batch's order.
    pub(super) async fn store_batch(
        &self,
        source: &Source,
        headers: &HeaderMap,
        events: Vec<Split<'_>>,
        received_ms: i64,
    ) -> Result<BatchAcknowledgement, IngestError> {
        let mut acks = Vec::with_capacity(events.len());
        let mut events = events.into_iter();
        let mut under_way = FuturesOrdered::new();
        loop {
            while under_way.len() < BATCH_CONCURRENCY {
                let Some(event) = events.next() else { break };
                under_way.push_back(self.store_event(source, headers, event, received_ms));
            }
            match under_way.next().await {
                Some(ack) => acks.push(ack?),
                None => return Ok(BatchAcknowledgement { events: acks }),
            }
        }
    }

    /// Stores one event of a batch, if its write can still start within the budget.
    async fn store_event(
        &self,
        source: &Source,
        headers: &HeaderMap,
        event: Split<'_>,
        received_ms: i64,
    ) -> Result<Acknowledgement, IngestError> {
        let budget_ms = self.journal_budget_ms;
        if self.clock.now_millis().saturating_sub(received_ms) > budget_ms {
            let late = StoreError::Unavailable(Box::new(OverBudget { budget_ms }));
            return Err(IngestError::Store(late));
        }
        let body = event.bytes.to_vec();
        self.store_verified(source, headers, body, received_ms, Some(event.part))
            .await
    }
}
