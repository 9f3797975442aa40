//! The processor: takes a stored message through its state machine
//! (docs/architecture.md, "The message state machine").
//!
//! `pending`/`retrying` (or `processing` with an expired lease) → the handler chosen by
//! `(source, event type)` → `processed` (effects committed in the same transaction), `ignored`
//! (no handler, or the handler declined it with a reason), `retrying` (transient failure: attempt journaled, retry scheduled with backoff
//! and full jitter, due in the open index at the retry time plus a grace period) or `failed`
//! (the last attempt or a permanent failure). Every transition is conditioned on the version
//! read, so a duplicate delivery or a racing invocation finds a conflict and skips: effects
//! happen once. A handler's metrics are emitted (through a [`MetricSink`], by default the
//! stdout EMF writer) only after its transaction committed, so they happen once too. Decisions
//! come from [`crate::policy`].
//!
//! Attempts are counted by the write that closes them (the outcome), by the claim for handlers
//! that claim, and — for an attempt that never reported (a crash, a timeout, a store that kept
//! failing) — by the reaper when the message's deadline passes ([`crate::reaper`]). A panicking
//! handler is a transient failure like any other. A store that refuses a handler's writes as
//! invalid fails the message permanently with the reason; one that throttles the commit schedules
//! a retry and counts `StoreThrottled`.
//!
//! `finish`: the transitions that close an attempt (the terminal ones are each built in one
//! function, so effects can be added to them); [`notice`]: failing with a quarantine notice sent
//! exactly once; `ignore`: the `ignored` transition; `outbox_hook`: the outbox's deliveries added
//! to the terminal transitions; `records`: the per-record functions for a stream record and a
//! retry-queue message (lifted over a batch by [`crate::invocation`]);
//! [`registry`]: the handlers; `outcome`: the processor's settings and what processing one message
//! did; [`config`]: the process function's configuration, read from the environment.

pub mod config;
mod finish;
mod ignore;
pub mod notice;
mod outbox_hook;
mod outcome;
mod records;
pub mod registry;

pub use config::ProcessConfig;

/// The partition-key patterns the processor itself reads (its handlers read their own, which the
/// composition root adds): the message (`GetItem`) and the outbox's destinations (one `Query` of
/// their partition, cached, fanned out in the terminal transitions). The process function's
/// role may read nothing else (template.yaml's `dynamodb:LeadingKeys` on `ProcessRole`, compared
/// by tests/it/template.rs). `*` ends a prefix; an entry without it is a whole key.
pub const PROCESS_READS: [&str; 2] = ["MSG#*", crate::outbox::schema::DESTINATIONS_PK];
pub use finish::{NOTE_EXHAUSTED, NOTE_LOST_LAST, NOTE_PERMANENT};
pub use outcome::{InfraError, Outcome, ProcessorConfig, Skip};

use crate::clock::Clock;
use crate::domain::{MessageKey, Status};
use crate::message::{HistoryEntry, StoredMessage};
use crate::metrics::{EmfWriter, Metric, MetricSink};
use crate::outbox::fanout::Fanout;
use crate::policy::{self, FailureKind};
use crate::queue::{Quarantine, RetryQueue};
use crate::store::{Applied, MessageStore, StoreError, Transition, MAX_EFFECTS};
use registry::{Commit, Handler, HandlerOutcome, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a handler is re-run at once when its writes meet a conflict.
pub const EFFECT_CONFLICT_RERUNS: u32 = 3;

/// The CloudWatch namespace of the inbox's own metrics.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/Inbox";

/// The metric counting store requests the store throttled (property `Operation`: `commit` when a
/// handler's commit was throttled and a retry scheduled, `request` otherwise).
pub const STORE_THROTTLED: &str = "StoreThrottled";

/// The processor, built once per cold start: the store, the retry queue `R` (scheduled retries), the
/// quarantine `Q` (notices of failed messages) and the clock.
pub struct Processor<S, R, Q, C> {
    store: S,
    retry: R,
    quarantine: Q,
    clock: C,
    registry: Registry,
    config: ProcessorConfig,
    jitter: Arc<dyn Fn() -> f64 + Send + Sync>,
    metrics: Arc<dyn MetricSink>,
    /// The outbox's fan-out into terminal transitions (`None`: no outbox).
    fanout: Option<Arc<dyn Fanout>>,
}

impl<S, R, Q, C> std::fmt::Debug for Processor<S, R, Q, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("registry", &self.registry)
            .field("config", &self.config)
            .finish()
    }
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Runs the handler; a panic becomes a transient failure naming it (the invocation, the batch and
/// the other records go on).
async fn run_handler(handler: &dyn Handler, message: &StoredMessage) -> HandlerOutcome {
    use futures_util::FutureExt;
    match std::panic::AssertUnwindSafe(handler.handle(message))
        .catch_unwind()
        .await
    {
        Ok(outcome) => outcome,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            HandlerOutcome::Retry(format!("the handler panicked: {what}"))
        }
    }
}

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Processor<S, R, Q, C> {
    pub fn new(
        store: S,
        retry: R,
        quarantine: Q,
        clock: C,
        registry: Registry,
        config: ProcessorConfig,
    ) -> Self {
        Self {
            store,
            retry,
            quarantine,
            clock,
            registry,
            config,
            jitter: Arc::new(fastrand::f64),
            metrics: Arc::new(EmfWriter::stdout()),
            fanout: None,
        }
    }

    /// Replaces the random draw behind the backoff's jitter (tests pin it).
    pub fn with_jitter(mut self, jitter: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.jitter = Arc::new(jitter);
        self
    }

    /// Replaces where handlers' metrics go (tests record them; the default writes EMF to stdout).
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// The retry queue (replays re-drive through it).
    pub fn retry_queue(&self) -> &R {
        &self.retry
    }

    pub fn quarantine(&self) -> &Q {
        &self.quarantine
    }

    /// Reads the message and processes it (retry-queue deliveries, re-drives).
    pub async fn process_key(&self, key: &MessageKey) -> Result<Outcome, InfraError> {
        match self.store.get(key).await? {
            Some(m) => self.process(m).await,
            None => Ok(Outcome::Missing),
        }
    }

    /// Processes a message as read (from the stream's new image or `GetItem`).
    pub async fn process(&self, mut message: StoredMessage) -> Result<Outcome, InfraError> {
        let now = self.clock.now_millis();
        if let Err(why) = policy::claimable(
            message.status,
            message.lease_until,
            message.next_attempt_at,
            now,
        ) {
            return Ok(Outcome::Skipped(why.into()));
        }
        let Some(handler) = self.registry.get(&message).cloned() else {
            let note = "no handler for this source and event type".to_owned();
            return self.ignore(&message, now, note, None).await;
        };
        let attempt = message.attempts.saturating_add(1);
        if handler.needs_claim() {
            let lease_until = now + millis(self.config.lease);
            let mut entry = HistoryEntry::new(
                now,
                Status::Processing,
                format!("claimed by {}", handler.name()),
            );
            entry.attempt = Some(attempt);
            let t = Transition {
                attempts: attempt,
                lease_until: Some(lease_until),
                open_due: Some(lease_until),
                ..Transition::of(&message, Status::Processing, entry)
            };
            if self
                .store
                .transition(&message.key(), message.version, &t, Vec::new())
                .await?
                != Applied::Done
            {
                return Ok(Outcome::Skipped(Skip::Conflict));
            }
            t.apply_to(&mut message);
        }
        // A handler's writes may meet a conflict (the email or payment row it read changed): re-run
        // it on fresh state a few times before counting the attempt as failed.
        let mut reruns = 0;
        loop {
            let started = Instant::now();
            let outcome = run_handler(handler.as_ref(), &message).await;
            let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let now = self.clock.now_millis();
            let a = AttemptInfo {
                attempt,
                duration_ms,
                now,
                handler: handler.name(),
            };
            let commit = match outcome {
                HandlerOutcome::Commit(commit) if commit.effects.len() > MAX_EFFECTS => {
                    let error = format!(
                        "the handler returned {} writes; at most {MAX_EFFECTS} fit in one transaction",
                        commit.effects.len()
                    );
                    return self.fail(&message, FailureKind::Permanent, error, a).await;
                }
                HandlerOutcome::Commit(commit) => commit,
                HandlerOutcome::Done => Commit::default(),
                HandlerOutcome::Ignore(reason) => {
                    let reason: String = reason.chars().take(1000).collect();
                    let note = format!("ignored by {}: {reason}", a.handler);
                    return self.ignore(&message, now, note, Some(a)).await;
                }
                HandlerOutcome::Retry(error) => {
                    return self.fail(&message, FailureKind::Transient, error, a).await
                }
                HandlerOutcome::Permanent(error) => {
                    return self.fail(&message, FailureKind::Permanent, error, a).await
                }
                HandlerOutcome::Refused { reason, metrics } => {
                    let outcome = self
                        .fail(&message, FailureKind::Permanent, reason, a)
                        .await?;
                    if matches!(outcome, Outcome::Failed { .. }) {
                        self.metrics.emit(now, &metrics);
                    }
                    return Ok(outcome);
                }
            };
            let mut commit = commit;
            match self
                .outbox_effects(&message, Status::Processed, commit.effects.len(), now)
                .await?
            {
                Ok(deliveries) => commit.effects.extend(deliveries),
                Err(why) => return self.fail(&message, FailureKind::Permanent, why, a).await,
            }
            match self.finish(&message, commit, a).await {
                Ok(Some(outcome)) => return Ok(outcome),
                Ok(None) if reruns < EFFECT_CONFLICT_RERUNS => reruns += 1,
                Ok(None) => {
                    let error =
                        "a write's condition failed repeatedly (state changed concurrently)"
                            .to_string();
                    return self.fail(&message, FailureKind::Transient, error, a).await;
                }
                // The same writes would be refused again: no point retrying them.
                Err(e @ StoreError::Invalid(_)) => {
                    let error = format!("the store refused the handler's writes: {}", e.chain());
                    return self.fail(&message, FailureKind::Permanent, error, a).await;
                }
                Err(e @ StoreError::Throttled(_)) => {
                    self.count_throttled(now, "commit");
                    let error = format!("the store throttled the commit: {}", e.chain());
                    return self.fail(&message, FailureKind::Transient, error, a).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Counts a throttled store request ([`STORE_THROTTLED`]).
    pub(crate) fn count_throttled(&self, now: i64, operation: &str) {
        self.metrics.emit(
            now,
            &[Metric::count(METRICS_NAMESPACE, STORE_THROTTLED, 1)
                .with_property("Operation", operation)],
        );
    }

    fn expiry(&self, now_ms: i64) -> i64 {
        now_ms.div_euclid(1000)
            + i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX / 2)
    }
}

/// The attempt being closed: its number, how long the handler took, when, and by whom.
#[derive(Clone, Copy)]
struct AttemptInfo<'a> {
    attempt: u32,
    duration_ms: u64,
    now: i64,
    handler: &'a str,
}

#[cfg(test)]
mod tests;
