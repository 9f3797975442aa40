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
//!    is counted here.
//! 6. POST the event's original bytes, signed ([`super::sign`]), with `webhook-id` fixed for the
//!    pair: a crash after the POST and before step 7 lets the lease lapse, and the next attempt
//!    sends the same `webhook-id` again (at least once, never a new id).
//! 7. Record the attempt ([`super::policy::decide`]) conditioned on the claimed version; update the
//!    circuit; disable the destination on a 410 or after failing for too long; schedule the retry
//!    (≤ 15 min through the queue; longer ones are found by the sweep) or announce the failure.
//!
//! `sweep.rs` holds the sweep, the fan-out expansion and the direct delivery of what is due; the
//! batch handlers are in [`super::batch`].

use super::admin;
use super::breaker::{self, Admit, BreakerConfig, Change};
use super::bucket::{self, Rate, Take};
use super::cache::{DestinationCache, Loaded};
use super::delivery::{
    AttemptRecord, DeliveryRef, DeliveryStatus, OutboundDelivery, BODY_HEAD_BYTES,
};
use super::destination::{DestinationError, DestinationState};
use super::policy::{self, AttemptResult};
use super::queue::{DeliveryNotice, OutboxQueues, Work};
use super::sign::{SOURCE_HEADER, TYPE_HEADER};
use super::store::{OutboxStore, TokenAnswer, WorkerState};
use super::transport::{Outgoing, Transport};
use crate::clock::Clock;
use crate::metrics::{EmfWriter, Metric, MetricSink};
use crate::process::InfraError;
use crate::store::{Applied, ItemStore, ItemWriter, MessageStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The metrics namespace of the outbox.
pub const NAMESPACE: &str = "WebhookIngestor/Outbox";
/// The SQS limit on a delay: longer waits are left to the sweep.
const MAX_QUEUE_DELAY_MS: i64 = 900_000;

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
    /// Terminal, leased, not due, or moved by another worker.
    Skipped(&'static str),
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
            Self::Skipped(why) => why,
            Self::Missing => "missing",
            Self::Expanded(_) => "expanded",
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
    jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    pub(super) metrics: Arc<dyn MetricSink>,
    /// The last `tat` seen per destination: the first guess of the next token write.
    guesses: Mutex<HashMap<String, i64>>,
    in_flight: Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>,
    /// Who the journal names for the workers' own changes (a 410, the circuit breaker).
    pub(super) actor: String,
}

impl<S, T, Q, C> std::fmt::Debug for Deliverer<S, T, Q, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn ms(d: Duration) -> i64 {
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
                return Ok(DeliveryOutcome::Skipped("skipped_terminal"))
            }
            DeliveryStatus::Delivering if d.lease_until.is_some_and(|l| l > now) => {
                return Ok(DeliveryOutcome::Skipped("skipped_leased"))
            }
            DeliveryStatus::Pending | DeliveryStatus::Retrying
                if d.next_attempt_at.is_some_and(|t| t > now) =>
            {
                return Ok(DeliveryOutcome::Skipped("skipped_not_due"))
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
            return Ok(DeliveryOutcome::Skipped("skipped_closed"));
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
                    .claim_probe(&dest.id, opened_at, until, now)
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
        let attempt = d.attempts.saturating_add(1);
        claimed.status = DeliveryStatus::Delivering;
        claimed.attempts = attempt;
        claimed.lease_until = Some(now + ms(lease));
        claimed.next_attempt_at = None;
        if self.store.save_delivery(&claimed, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped("skipped_conflict"));
        }
        claimed.version = d.version + 1;
        let Some(message) = self.store.get(&d.key()).await? else {
            return self
                .record(
                    claimed,
                    loaded,
                    state,
                    AttemptResult::Refused(
                        "the event is no longer in the inbox (purged or expired)".into(),
                    ),
                    0,
                    now,
                )
                .await;
        };
        let Some(signer) = &loaded.signer else {
            return self
                .record(
                    claimed,
                    loaded,
                    state,
                    AttemptResult::Refused("the destination has no active signing secret".into()),
                    0,
                    now,
                )
                .await;
        };
        let mut headers = match signer.sign(&d.webhook_id, self.clock.now_secs(), &message.body) {
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
                body: &message.body,
                timeout: dest.timeout(),
            })
            .await;
        let duration = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.record(claimed, loaded, state, result, duration, now)
            .await
    }

    /// Records an attempt's result on the claimed delivery and acts on it.
    async fn record(
        &self,
        mut d: OutboundDelivery,
        loaded: &Loaded,
        state: WorkerState,
        result: AttemptResult,
        duration_ms: u64,
        started_at: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let dest = &loaded.destination;
        let now = self.clock.now_millis();
        let decision = policy::decide(&dest.schedule, d.attempts, &result, now, (self.jitter)());
        let (status, body) = match &result {
            AttemptResult::Answered { status, body, .. } => {
                let head = &body[..body.len().min(BODY_HEAD_BYTES)];
                (Some(*status), String::from_utf8_lossy(head).into_owned())
            }
            _ => (None, String::new()),
        };
        let outcome = match (decision.status, decision.retry_in) {
            (DeliveryStatus::Retrying, Some(delay)) => {
                format!("retry in {}", super::schedule::format_duration(delay))
            }
            (s, _) => s.as_str().to_owned(),
        };
        d.journal_attempt(AttemptRecord {
            at: started_at,
            attempt: d.attempts,
            status,
            duration_ms,
            error: decision.error.clone(),
            body,
            outcome,
        });
        let claimed_version = d.version;
        d.status = decision.status;
        d.lease_until = None;
        d.last_status = status;
        d.last_error = decision.error.clone();
        d.next_attempt_at = decision.retry_in.map(|r| now + ms(r));
        if decision.status == DeliveryStatus::Delivered {
            d.delivered_at = Some(now);
            d.expires_at = Some(
                now.div_euclid(1000)
                    + i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX / 4),
            );
        }
        let recorded = self.store.save_delivery(&d, Some(claimed_version)).await? == Applied::Done;
        if !recorded {
            tracing::warn!(delivery = %d.reference(), "the attempt's result was not recorded: the delivery changed meanwhile (its lease lapsed?)");
        }
        let change = breaker::after(&self.config.breaker, &state.circuit, decision.breaker, now);
        let after = self.store.change_circuit(&dest.id, change, now).await?;
        if let (Change::Fail { open: false, .. }, Some(c)) = (change, after) {
            // Workers that failed at once each counted on the state they read: the one whose
            // count reached the threshold opens the circuit (once: the write is conditional).
            if c.opened_at.is_none()
                && c.failures >= self.config.breaker.failures.max(1)
                && self.store.open_circuit(&dest.id, now).await?
            {
                tracing::warn!(destination = %dest.id, failures = c.failures, "circuit opened");
            }
        }
        let disable = match (change, after) {
            (Change::Fail { disable: true, .. }, _) => true,
            (Change::Fail { .. }, Some(c)) => {
                c.opened_at.is_some()
                    && now.saturating_sub(c.failing_since.unwrap_or(now))
                        >= ms(self.config.breaker.disable_after)
            }
            _ => false,
        };
        if disable {
            let since = after
                .and_then(|c| c.failing_since)
                .or(state.circuit.failing_since)
                .unwrap_or(now);
            let why = format!(
                "failing for {} s without a success (circuit breaker)",
                (now - since) / 1000
            );
            self.disable(&dest.id, &why, now).await;
        }
        if let Some(why) = &decision.disable {
            self.disable(&dest.id, why, now).await;
        }
        if !recorded {
            return Ok(DeliveryOutcome::Skipped("skipped_conflict"));
        }
        match decision.status {
            DeliveryStatus::Delivered => {
                self.metrics
                    .emit(now, &[Metric::count(NAMESPACE, "DeliveriesDelivered", 1)]);
                Ok(DeliveryOutcome::Delivered)
            }
            DeliveryStatus::Retrying => {
                let delay = decision.retry_in.unwrap_or_default();
                self.schedule(&d.reference(), delay).await;
                Ok(DeliveryOutcome::Retrying {
                    attempt: d.attempts,
                    delay,
                })
            }
            _ => {
                self.announce_failure(&d, now).await?;
                Ok(DeliveryOutcome::Failed {
                    attempts: d.attempts,
                })
            }
        }
    }

    /// Puts a delivery off until `until` without counting an attempt.
    pub(super) async fn defer(
        &self,
        d: OutboundDelivery,
        until: i64,
        why: &'static str,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let mut x = d.clone();
        if x.status == DeliveryStatus::Delivering {
            x.status = if x.attempts == 0 {
                DeliveryStatus::Pending
            } else {
                DeliveryStatus::Retrying
            };
        }
        x.lease_until = None;
        x.next_attempt_at = Some(until);
        if x.notes.last().is_none_or(|n| !n.note.starts_with(why)) {
            x.note(now, format!("{why}: deferred"));
        }
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped("skipped_conflict"));
        }
        self.schedule(
            &x.reference(),
            Duration::from_millis(u64::try_from(until - now).unwrap_or(0)),
        )
        .await;
        Ok(DeliveryOutcome::Deferred { until, why })
    }

    /// Fails a delivery that cannot be sent at all (no attempt).
    async fn fail_unsent(
        &self,
        d: OutboundDelivery,
        why: String,
        now: i64,
    ) -> Result<DeliveryOutcome, InfraError> {
        let mut x = d.clone();
        x.status = DeliveryStatus::Failed;
        x.lease_until = None;
        x.next_attempt_at = None;
        x.last_error = Some(why.clone());
        x.note(now, format!("failed without an attempt: {why}"));
        if self.store.save_delivery(&x, Some(d.version)).await? != Applied::Done {
            return Ok(DeliveryOutcome::Skipped("skipped_conflict"));
        }
        self.announce_failure(&x, now).await?;
        Ok(DeliveryOutcome::Failed {
            attempts: x.attempts,
        })
    }

    async fn announce_failure(&self, d: &OutboundDelivery, now: i64) -> Result<(), InfraError> {
        let notice = DeliveryNotice {
            destination: d.destination.clone(),
            source: d.source.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.clone(),
            webhook_id: d.webhook_id.clone(),
            attempts: d.attempts,
            last_error: d.last_error.clone().unwrap_or_default(),
            failed_at: now,
        };
        self.queues.failed(&notice).await?;
        let metric = Metric::count(NAMESPACE, "DeliveriesFailed", 1)
            .with_property("Destination", d.destination.clone());
        self.metrics.emit(now, &[metric]);
        Ok(())
    }

    /// Schedules work through the queue when the delay fits SQS (else the sweep finds it).
    pub(super) async fn schedule(&self, r: &DeliveryRef, delay: Duration) {
        if ms(delay) > MAX_QUEUE_DELAY_MS {
            return;
        }
        if let Err(e) = self
            .queues
            .schedule(&Work::Delivery(r.clone()), delay)
            .await
        {
            // Durable in the open index: the sweep re-drives it.
            tracing::warn!(delivery = %r, error = %e, "retry not queued; the sweep will find it");
        }
    }

    /// Disables a destination (journaled), emitting the operational metric and log line.
    async fn disable(&self, id: &str, why: &str, now: i64) {
        let result = admin::update(&self.store, id, &self.actor, "disabled", now, |d| {
            if d.state == DestinationState::Disabled {
                return Err(DestinationError::Invalid("already disabled".into()));
            }
            d.state = DestinationState::Disabled;
            d.reason = Some(why.to_owned());
            Ok(why.to_owned())
        })
        .await;
        match result {
            Ok(_) => {
                self.destinations.invalidate();
                let metric = Metric::count(NAMESPACE, "DestinationDisabled", 1)
                    .with_property("Destination", id)
                    .with_note(format!("destination {id} disabled: {why}"));
                self.metrics.emit(now, &[metric]);
            }
            Err(admin::AdminError::Destination(_)) => {}
            Err(e) => {
                tracing::error!(destination = id, error = %e, "could not disable the destination")
            }
        }
    }

    fn semaphore(&self, id: &str, permits: u32) -> Arc<tokio::sync::Semaphore> {
        let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(permits.max(1) as usize)))
            .clone()
    }

    /// A token from the destination's bucket: the state after taking it, or when to come back.
    async fn token(&self, id: &str, rate: Rate) -> Result<Result<WorkerState, i64>, InfraError> {
        let started = self.clock.now_millis();
        let mut guess = self.guesses.lock().ok().and_then(|g| g.get(id).copied());
        // Bounded by `max_wait` (every round either sleeps towards it or learns the stored value);
        // the count only guards against a store that keeps answering inconsistently.
        for _ in 0..1_000 {
            let now = self.clock.now_millis();
            match bucket::decide(rate, guess, now.saturating_mul(1000)) {
                Take::Wait(w) => {
                    let until = now + ms(w).max(1);
                    if until - started > ms(self.config.max_wait) {
                        return Ok(Err(until));
                    }
                    tokio::time::sleep(w).await;
                }
                take => match self.store.take_token(id, take).await? {
                    TokenAnswer::Granted(state) => {
                        if let (Some(tat), Ok(mut g)) = (state.tat_us, self.guesses.lock()) {
                            g.insert(id.to_owned(), tat);
                        }
                        return Ok(Ok(state));
                    }
                    TokenAnswer::Refused(seen) => guess = seen,
                },
            }
        }
        Ok(Err(self.clock.now_millis() + rate.interval_us() / 1000 + 1))
    }
}
