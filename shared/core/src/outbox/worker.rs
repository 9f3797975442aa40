//! The delivery worker ([`Deliverer`]): takes one delivery from `pending`/`retrying` (or a lapsed
//! lease) to its next state, in one tracing span per delivery.
//!
//! 1. Skip what is terminal, leased by another worker, or not due.
//! 2. The destination (cached): removed or disabled → `failed` without an attempt; paused →
//!    deferred (no attempt) and re-checked a minute later.
//! 3. Rate: a token from the destination's shared bucket ([`super::bucket`]); over the rate the
//!    worker waits up to `max_wait`, else defers the delivery until a token frees up, without
//!    counting an attempt. The per-worker in-flight limit is a semaphore.
//! 4. Circuit ([`super::breaker`]): open → deferred until the cool-down ends; half-open → one
//!    worker takes the probe lease, the others defer.
//! 5. Claim: `delivering` with a lease (the request's timeout plus a margin), conditioned on the
//!    version read: never two concurrent deliveries of the same (destination, event). The attempt
//!    is counted here, within the schedule's limit: one whose last attempt never reported fails.
//! 6. POST the event's original bytes (read once for the deliveries of the event in flight, and
//!    refused for good when unreadable: `body.rs`), signed ([`super::sign`]), with `webhook-id`
//!    fixed for the pair: a crash after the POST and before step 7 lets the lease lapse, and the
//!    next attempt sends the same `webhook-id` again (at least once, never a new id).
//! 7. Record the attempt ([`super::attempt::decide`]) conditioned on the claimed version; update the
//!    circuit; disable the destination on a 410 or after failing for too long; schedule the retry
//!    (≤ 15 min through the queue; longer ones are found by the sweep) or announce the failure.
//!
//! Here: steps 1 to 6; `record.rs`: step 7 and the exits without an attempt; `throttle.rs`: the
//! token and the in-flight limit; `sweep.rs`: the sweep, the fan-out expansion and the direct
//! delivery of what is due; [`super::batch`]: the stream and queue batches.

use super::attempt::AttemptResult;
use super::breaker::{self, Admit, BreakerConfig};
use super::bucket::Rate;
use super::cache::{DestinationCache, Loaded};
use super::delivery::{AttemptRecord, DeliveryRef, DeliveryStatus, OutboundDelivery};
use super::destination::{DestinationId, DestinationState};
use super::queue::OutboxQueues;
use super::sign::{SOURCE_HEADER, TYPE_HEADER};
use super::store::{OutboxStore, WorkerState};
use super::transport::{Outgoing, Transport};
use crate::clock::Clock;
use crate::metrics::{EmfWriter, MetricSink};
use crate::process::InfraError;
use crate::store::{Applied, ItemStore, ItemWriter, MessageStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The metrics namespace of the outbox.
pub const NAMESPACE: &str = "WebhookIngestor/Outbox";
/// The SQS limit on a delay: longer waits are left to the sweep.
pub(super) const MAX_QUEUE_DELAY_MS: i64 = 900_000;

/// How the workers behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliverConfig {
    pub breaker: BreakerConfig,
    /// The longest a worker waits in-process for a token before deferring the delivery.
    pub max_wait: Duration,
    /// Deliveries of a batch sent at once.
    pub concurrency: usize,
    /// How long delivered deliveries are kept (TTL).
    pub retention: Duration,
    /// A lease is the request's timeout plus this.
    pub lease_margin: Duration,
    /// A paused destination's deliveries are looked at again after this.
    pub paused_recheck: Duration,
}

impl Default for DeliverConfig {
    fn default() -> Self {
        Self {
            breaker: BreakerConfig::default(),
            max_wait: Duration::from_secs(2),
            concurrency: 10,
            retention: Duration::from_secs(30 * 86_400),
            lease_margin: Duration::from_secs(30),
            paused_recheck: Duration::from_secs(60),
        }
    }
}

/// What one delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    Delivered,
    Retrying {
        attempt: u32,
        delay: Duration,
    },
    Failed {
        attempts: u32,
    },
    /// Not attempted now (rate, circuit, paused destination); due again at `until`.
    Deferred {
        until: i64,
        why: &'static str,
    },
    /// Left alone: see [`Skip`].
    Skipped(Skip),
    /// No such delivery.
    Missing,
    /// A fan-out item expanded into this many deliveries.
    Expanded(usize),
}

impl DeliveryOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Retrying { .. } => "retrying",
            Self::Failed { .. } => "failed",
            Self::Deferred { .. } => "deferred",
            Self::Skipped(why) => why.as_str(),
            Self::Missing => "missing",
            Self::Expanded(_) => "expanded",
        }
    }
}

/// Why a delivery was left alone (as [`crate::process::Skip`] is for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Delivered or failed.
    Terminal,
    /// Another worker holds a live lease.
    Leased,
    /// A retry or a deferral that is not due yet.
    NotDue,
    /// The worker is shutting down (its in-flight limit was closed).
    Closed,
    /// Another worker moved it between our read and our write.
    Conflict,
}

impl Skip {
    /// The name logs and batch summaries count it under.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "skipped_terminal",
            Self::Leased => "skipped_leased",
            Self::NotDue => "skipped_not_due",
            Self::Closed => "skipped_closed",
            Self::Conflict => "skipped_conflict",
        }
    }
}

/// The delivery worker, built once per cold start.
pub struct Deliverer<S, T, Q, C> {
    pub(super) store: S,
    pub(super) transport: T,
    pub(super) queues: Q,
    pub(super) clock: C,
    pub(super) config: DeliverConfig,
    pub(super) destinations: DestinationCache<S>,
    pub(super) jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    pub(super) metrics: Arc<dyn MetricSink>,
    /// The last `tat` seen per destination: the first guess of the next token write.
    pub(super) guesses: Mutex<HashMap<DestinationId, i64>>,
    pub(super) in_flight: Mutex<HashMap<DestinationId, Arc<tokio::sync::Semaphore>>>,
    /// Who the journal names for the workers' own changes (a 410, the circuit breaker).
    pub(super) actor: String,
    pub(super) bodies: super::body::SharedBodies,
}

impl<S, T, Q, C> std::fmt::Debug for Deliverer<S, T, Q, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

pub(super) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl<S, T, Q, C> Deliverer<S, T, Q, C>
where
    S: OutboxStore + MessageStore + ItemStore + ItemWriter + Clone,
    T: Transport,
    Q: OutboxQueues,
    C: Clock,
{
    /// A worker; destinations are cached for `cache_ttl`.
    pub fn new(
        store: S,
        transport: T,
        queues: Q,
        clock: C,
        config: DeliverConfig,
        cache_ttl: Duration,
    ) -> Self {
        Self {
            destinations: DestinationCache::new(store.clone(), cache_ttl),
            store,
            transport,
            queues,
            clock,
            config,
            jitter: Arc::new(fastrand::f64),
            metrics: Arc::new(EmfWriter::stdout()),
            guesses: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            actor: "deliver".into(),
            bodies: Default::default(),
        }
    }

    /// Replaces the jitter's random draw (tests pin it).
    pub fn with_jitter(mut self, jitter: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.jitter = Arc::new(jitter);
        self
    }

    /// Replaces where metrics go.
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Reads a delivery and delivers it.
    pub async fn deliver(&self, r: &DeliveryRef) -> Result<DeliveryOutcome, InfraError> {
        match self.store.delivery(r).await? {
            Some(d) => self.deliver_item(d).await,
            None => Ok(DeliveryOutcome::Missing),
        }
    }

    /// Delivers a delivery as read (from the stream's new image or `GetItem`).
    pub async fn deliver_item(&self, d: OutboundDelivery) -> Result<DeliveryOutcome, InfraError> {
        let now = self.clock.now_millis();
        match d.status {
            DeliveryStatus::Delivered | DeliveryStatus::Failed => {
                return Ok(DeliveryOutcome::Skipped(Skip::Terminal))
            }
            DeliveryStatus::Delivering if d.lease_until.is_some_and(|l| l > now) => {
                return Ok(DeliveryOutcome::Skipped(Skip::Leased))
            }
            DeliveryStatus::Pending | DeliveryStatus::Retrying
                if d.next_attempt_at.is_some_and(|t| t > now) =>
            {
                return Ok(DeliveryOutcome::Skipped(Skip::NotDue))
            }
            _ => {}
        }
        let snapshot = self.destinations.snapshot(now).await?;
        let Some(loaded) = snapshot.get(&d.destination).cloned() else {
            return self
                .fail_unsent(d, "the destination was removed".into(), now)
                .await;
        };
        let dest = &loaded.destination;
        match dest.state {
            DestinationState::Active => {}
            DestinationState::Paused => {
                let until = now + ms(self.config.paused_recheck);
                return self.defer(d, until, "destination paused", now).await;
            }
            DestinationState::Disabled => {
                let why = format!(
                    "the destination is disabled: {}",
                    dest.reason.as_deref().unwrap_or("no reason given")
                );
                return self.fail_unsent(d, why, now).await;
            }
        }
        let semaphore = self.semaphore(&dest.id, dest.max_in_flight);
        let Ok(_permit) = semaphore.acquire_owned().await else {
            return Ok(DeliveryOutcome::Skipped(Skip::Closed));
        };
        let state = match self
            .token(
                &dest.id,
                Rate {
                    per_sec: dest.rate_per_sec,
                    burst: dest.burst,
                },
            )
            .await?
        {
            Ok(state) => state,
            Err(until) => {
                return self
                    .defer(d, until, "rate limit", self.clock.now_millis())
                    .await
            }
        };
        let now = self.clock.now_millis();
        let lease = dest.timeout() + self.config.lease_margin;
        match breaker::admit(&self.config.breaker, &state.circuit, now, lease) {
            Admit::Send => {}
            Admit::Hold { until } => return self.defer(d, until, "circuit open", now).await,
            Admit::Probe { opened_at, until } => {
                if !self
                    .store
                    .claim_probe(&dest.id, opened_at.into(), until.into(), now.into())
                    .await?
                {
                    return self
                        .defer(d, until, "circuit half-open: another worker probes", now)
                        .await;
                }
            }
        }
        self.attempt(d, &loaded, state, now, lease).await
    }

    /// Steps 5 to 7: claim, send, record.
    async fn attempt(
        &self,
        d: OutboundDelivery,
        loaded: &Loaded,
        state: WorkerState,
        now: i64,
        lease: Duration,
    ) -> Result<DeliveryOutcome, InfraError> {
        let dest = &loaded.destination;
        let mut claimed = d.clone();
        if d.status == DeliveryStatus::Delivering {
            claimed.journal_attempt(AttemptRecord {
                at: d.lease_until.unwrap_or(now),
                attempt: d.attempts,
                status: None,
                duration_ms: 0,
                error: Some("no result recorded: the worker stopped after claiming (its lease lapsed); the request may have been sent".into()),
                body: String::new(),
                outcome: "lease lapsed".into(),
            });
        }
        if let Some(why) = super::attempt::exhausted(&dest.schedule, d.attempts) {
            return self.fail_unsent(claimed, why, now).await;
        }
        let attempt = d.attempts.saturating_add(1);
        claimed.status = DeliveryStatus::Delivering;
        claimed.attempts = attempt;
        claimed.lease_until = Some(now + ms(lease));
        claimed.next_attempt_at = None;
        if self.store.save_delivery(&claimed, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped(Skip::Conflict));
        }
        claimed.version = d.version + 1;
        let (body, signer) = match self.sendable(&d.key(), loaded).await? {
            Ok(sendable) => sendable,
            Err(why) => {
                let refused = AttemptResult::Refused(why);
                return self.record(claimed, loaded, state, refused, 0, now).await;
            }
        };
        let mut headers = match signer.sign(&d.webhook_id, self.clock.now_secs(), body.bytes()) {
            Ok(h) => h,
            Err(e) => {
                return self
                    .record(
                        claimed,
                        loaded,
                        state,
                        AttemptResult::Refused(e.to_string()),
                        0,
                        now,
                    )
                    .await
            }
        };
        headers.push(("content-type".into(), "application/json".into()));
        headers.push((SOURCE_HEADER.into(), d.source.to_string()));
        if let Some(t) = &d.event_type {
            headers.push((TYPE_HEADER.into(), t.to_string()));
        }
        let started = Instant::now();
        let result = self
            .transport
            .post(Outgoing {
                url: &dest.url,
                headers: &headers,
                body: body.bytes(),
                timeout: dest.timeout(),
            })
            .await;
        let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.record(claimed, loaded, state, result, duration, now)
            .await
    }
}

#[cfg(test)]
mod tests;
