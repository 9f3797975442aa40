//! The delivery worker ([`Deliverer`]): takes one delivery from `pending`/`retrying` (or a lapsed
//! lease) to its next state, in one tracing span per delivery.
//!
//! 1. Skip what is terminal, leased by another worker, or not due (a failed one whose failure
//!    notice is still pending past its deadline: send the notice, `record.rs`).
//! 2. The destination (cached; a copy that does not know it or says disabled is read again once,
//!    [`super::cache`]): removed or disabled → `failed` without an attempt; not confirmed because
//!    the re-read failed → deferred (no attempt) and re-checked a minute later
//!    ([`UNCONFIRMED_RECHECK`]); paused → parked in the destination's backlog (no attempt, no
//!    queue message, no re-check: [`super::parking`]) until the destination is resumed, which
//!    releases it ([`super::resend::resume`]; else the sweep does once it sees it active).
//! 3. Rate: a token from the destination's shared bucket ([`super::bucket`]; taken several at a
//!    time for a short lease when this worker's demand asks for it, `throttle.rs`); over the rate the
//!    worker waits up to `max_wait`, else defers the delivery until a token frees up, without
//!    counting an attempt. The per-worker in-flight limit is a semaphore. Within an invocation's
//!    deadline ([`until_deadline`]), every wait ends in time for the POST's whole timeout and the
//!    recording of its result ([`DeliverConfig::finish_margin`]) before the deadline: what does
//!    not fit is deferred (no attempt counted), so one slow destination never makes the batch
//!    outlive the invocation (which would retry the batch and repeat its POSTs). Refused a token,
//!    it reads the circuit first: an open one parks the delivery instead of deferring it.
//! 4. Circuit ([`super::breaker`]): open → parked in the destination's backlog
//!    ([`super::parking`]: released when a probe closes it); half-open → one worker takes the
//!    probe lease, the others park theirs.
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
//! Here: steps 1 to 4 (`worker/outcome.rs`: what a delivery did, why one was left alone); `send.rs`: steps 5 and 6; `record.rs`: step 7 and the exits without an attempt; `throttle.rs`: the
//! token and the in-flight limit; `sweep.rs`: the sweep, the fan-out expansion and the direct
//! delivery of what is due; [`super::batch`]: the stream and queue batches.

use super::breaker::{self, Admit, BreakerConfig};
use super::bucket::Rate;
use super::cache::{DestinationCache, Lookup};
pub use super::deadline::until_deadline;
use super::delivery::{DeliveryRef, DeliveryStatus, OutboundDelivery, ParkReason};
use super::destination::{DestinationId, DestinationState};
use super::queue::OutboxQueues;
use super::store::{OutboxStore, WorkerState};
use super::transport::Transport;
use crate::clock::Clock;
use crate::metrics::{EmfWriter, MetricSink};
use crate::process::InfraError;
use crate::store::{ItemStore, ItemWriter, MessageStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod outcome;
pub use outcome::{DeliveryOutcome, Skip};

/// A delivery whose destination could not be confirmed (the re-read of a missing or disabled
/// destination failed) is looked at again after this.
pub const UNCONFIRMED_RECHECK: Duration = Duration::from_secs(60);
/// How soon a delivery deferred for want of the invocation's time is due again (in another one).
pub const OUT_OF_TIME_DELAY: Duration = Duration::from_secs(1);
/// The deferral's reason when the invocation's time ran out before a delivery could be sent.
pub const OUT_OF_TIME: &str = "no time left in this invocation";

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
    /// Kept before the invocation's deadline after a POST's whole timeout: the time to record
    /// its result.
    pub finish_margin: Duration,
    /// How long tokens taken ahead of use stay this worker's ([`super::bucket::TokenLease`]):
    /// the rate's bound over any window grows by this, and a circuit opened by another worker is
    /// seen at most this late.
    pub token_lease: Duration,
    /// The most tokens one write takes for a lease (1: one token per delivery, no lease).
    pub max_leased_tokens: u32,
}

impl Default for DeliverConfig {
    fn default() -> Self {
        Self {
            breaker: BreakerConfig::default(),
            max_wait: Duration::from_secs(2),
            concurrency: 10,
            retention: Duration::from_secs(30 * 86_400),
            lease_margin: Duration::from_secs(30),
            finish_margin: Duration::from_secs(5),
            token_lease: Duration::from_millis(500),
            max_leased_tokens: 10,
        }
    }
}

/// What a [`Deliverer`] works with: a store, a transport, the queues and a clock, each with the
/// capabilities the worker's steps need. Written once here, so that each of the worker's files
/// says `impl<P: DeliveryPorts> Deliverer<P>` instead of repeating four bounds; any tuple
/// `(store, transport, queues, clock)` of such types is one, e.g. `Deliverer<(DynamoTable,
/// HttpTransport, SqsOutboxQueues, SystemClock)>`.
pub trait DeliveryPorts {
    /// Where deliveries, destinations, messages and their bodies are read and written.
    type Store: OutboxStore + MessageStore + ItemStore + ItemWriter + Clone;
    /// How a delivery is POSTed.
    type Transport: Transport;
    /// Where retries and failure notices are queued.
    type Queues: OutboxQueues;
    /// The time of every decision.
    type Clock: Clock;
}

impl<S, T, Q, C> DeliveryPorts for (S, T, Q, C)
where
    S: OutboxStore + MessageStore + ItemStore + ItemWriter + Clone,
    T: Transport,
    Q: OutboxQueues,
    C: Clock,
{
    type Store = S;
    type Transport = T;
    type Queues = Q;
    type Clock = C;
}

/// The delivery worker, built once per cold start.
pub struct Deliverer<P: DeliveryPorts> {
    pub(super) store: P::Store,
    pub(super) transport: P::Transport,
    pub(super) queues: P::Queues,
    pub(super) clock: P::Clock,
    pub(super) config: DeliverConfig,
    pub(super) destinations: DestinationCache<P::Store>,
    pub(super) jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    /// The draw that spreads deferrals ([`super::deferral`]).
    pub(super) deferral_jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    pub(super) metrics: Arc<dyn MetricSink>,
    /// The last `tat` seen per destination: the first guess of the next token write.
    pub(super) guesses: Mutex<HashMap<DestinationId, i64>>,
    /// This worker's lease of each destination's tokens, with the state its write returned (and
    /// whether this worker changed the circuit since).
    pub(super) leases:
        Mutex<HashMap<DestinationId, (super::bucket::TokenLease, WorkerState, bool)>>,
    /// Whose turn it is to ask the store for a destination's tokens.
    pub(super) takers: Mutex<HashMap<DestinationId, Arc<tokio::sync::Mutex<()>>>>,
    pub(super) in_flight: Mutex<HashMap<DestinationId, Arc<tokio::sync::Semaphore>>>,
    /// Who the journal names for the workers' own changes (a 410, the circuit breaker).
    pub(super) actor: String,
    pub(super) bodies: super::body::SharedBodies,
}

impl<P: DeliveryPorts> std::fmt::Debug for Deliverer<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

pub(super) fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl<S, T, Q, C> Deliverer<(S, T, Q, C)>
where
    (S, T, Q, C): DeliveryPorts<Store = S, Transport = T, Queues = Q, Clock = C>,
{
    /// A worker; destinations are cached for `cache_ttl`. (Here rather than with the other
    /// methods so that the ports are inferred from the arguments.)
    pub fn new(
        store: S,
        transport: T,
        queues: Q,
        clock: C,
        config: DeliverConfig,
        cache_ttl: Duration,
    ) -> Self {
        Self::with_ports(store, transport, queues, clock, config, cache_ttl)
    }
}

impl<P: DeliveryPorts> Deliverer<P> {
    /// A worker of these ports; destinations are cached for `cache_ttl` ([`Deliverer::new`]).
    fn with_ports(
        store: P::Store,
        transport: P::Transport,
        queues: P::Queues,
        clock: P::Clock,
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
            deferral_jitter: Arc::new(fastrand::f64),
            metrics: Arc::new(EmfWriter::stdout()),
            guesses: Mutex::new(HashMap::new()),
            leases: Mutex::new(HashMap::new()),
            takers: Mutex::new(HashMap::new()),
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

    /// Replaces the random draw that spreads deferral times (tests pin it).
    pub fn with_deferral_jitter(mut self, draw: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.deferral_jitter = Arc::new(draw);
        self
    }

    /// Replaces where metrics go.
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    pub fn store(&self) -> &P::Store {
        &self.store
    }

    /// How long a delivery to a destination with request timeout `timeout` may still wait at
    /// `now` and finish before the invocation's deadline (negative: it no longer fits); `None`
    /// outside [`until_deadline`].
    fn spare(&self, now: i64, timeout: Duration) -> Option<i64> {
        super::deadline::spare(now, ms(timeout + self.config.finish_margin))
    }

    /// Reads a delivery and delivers it.
    pub async fn deliver(&self, r: &DeliveryRef) -> Result<DeliveryOutcome, InfraError> {
        match self.store.delivery(r).await? {
            Some(d) => self.deliver_item(d).await,
            None => Ok(DeliveryOutcome::Missing),
        }
    }

    /// Delivers the copy of a delivery a queue message carried ([`super::queue::Work::Attempt`]):
    /// as read, unless it is no longer the stored one (its first conditional write failed): then
    /// from the item as stored, as a message by reference would.
    pub async fn deliver_carried(
        &self,
        d: OutboundDelivery,
    ) -> Result<DeliveryOutcome, InfraError> {
        let r = d.reference();
        match self.deliver_item(d).await? {
            DeliveryOutcome::Skipped(Skip::Conflict) => self.deliver(&r).await,
            outcome => Ok(outcome),
        }
    }

    /// Delivers a delivery as read (from the stream's new image or `GetItem`).
    pub async fn deliver_item(&self, d: OutboundDelivery) -> Result<DeliveryOutcome, InfraError> {
        let now = self.clock.now_millis();
        match d.status {
            DeliveryStatus::Failed if d.due_at().is_some_and(|due| due <= now) => {
                return self.finish_notice(d, now).await
            }
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
        let loaded = match self.destinations.lookup(&d.destination, now).await? {
            Lookup::Known(loaded) => loaded,
            Lookup::Removed => {
                return self
                    .fail_unsent(d, "the destination was removed".into(), now)
                    .await
            }
            Lookup::Unconfirmed => {
                let until = now + ms(UNCONFIRMED_RECHECK);
                return self.defer(d, until, "destination not confirmed", now).await;
            }
        };
        let dest = &loaded.destination;
        match dest.state {
            DestinationState::Active => {}
            DestinationState::Paused => return self.park(d, ParkReason::Paused, now).await,
            DestinationState::Disabled => {
                let why = format!(
                    "the destination is disabled: {}",
                    dest.reason.as_deref().unwrap_or("no reason given")
                );
                return self.fail_unsent(d, why, now).await;
            }
        }
        let semaphore = self.semaphore(&dest.id, dest.max_in_flight);
        let permit = match self.spare(now, dest.timeout()) {
            None => semaphore.acquire_owned().await,
            Some(spare) => {
                let wait = Duration::from_millis(u64::try_from(spare).unwrap_or(0));
                match tokio::time::timeout(wait, semaphore.acquire_owned()).await {
                    Ok(permit) => permit,
                    Err(_) => return self.out_of_time(d).await,
                }
            }
        };
        let Ok(_permit) = permit else {
            return Ok(DeliveryOutcome::Skipped(Skip::Closed));
        };
        let max_wait = match self.spare(self.clock.now_millis(), dest.timeout()) {
            None => self.config.max_wait,
            Some(spare) if spare < 0 => return self.out_of_time(d).await,
            Some(spare) => self
                .config
                .max_wait
                .min(Duration::from_millis(u64::try_from(spare).unwrap_or(0))),
        };
        let state = match self
            .token(
                &dest.id,
                Rate {
                    per_sec: dest.rate_per_sec,
                    burst: dest.burst,
                },
                max_wait,
            )
            .await?
        {
            Ok(state) => state,
            Err(until) => {
                let now = self.clock.now_millis();
                // An open circuit parks what the rate refused: it would only come back to it.
                let circuit = self.store.worker_state(&dest.id).await?.circuit;
                let lease = dest.timeout() + self.config.lease_margin;
                if let Admit::Hold { .. } =
                    breaker::admit(&self.config.breaker, &circuit, now, lease)
                {
                    return self.park(d, ParkReason::Circuit, now).await;
                }
                return self.defer(d, until, "rate limit", now).await;
            }
        };
        let now = self.clock.now_millis();
        if self.spare(now, dest.timeout()).is_some_and(|s| s < 0) {
            return self.out_of_time(d).await;
        }
        let lease = dest.timeout() + self.config.lease_margin;
        match breaker::admit(&self.config.breaker, &state.circuit, now, lease) {
            Admit::Send => {}
            Admit::Hold { .. } => return self.park(d, ParkReason::Circuit, now).await,
            Admit::Probe { opened_at, until } => {
                if !self
                    .store
                    .claim_probe(&dest.id, opened_at.into(), until.into(), now.into())
                    .await?
                {
                    // Another worker probes: its result releases the backlog or keeps it.
                    return self.park(d, ParkReason::Circuit, now).await;
                }
            }
        }
        self.attempt(d, &loaded, state, now, lease).await
    }

    /// Defers a delivery that the invocation has no time left for (no attempt counted).
    async fn out_of_time(&self, d: OutboundDelivery) -> Result<DeliveryOutcome, InfraError> {
        let now = self.clock.now_millis();
        self.defer(d, now + ms(OUT_OF_TIME_DELAY), OUT_OF_TIME, now)
            .await
    }
}

#[cfg(test)]
mod tests;
