//! The processor: takes a stored message through its state machine
//! (docs/architecture.md, "The message state machine").
//!
//! `pending`/`retrying` (or `processing` with an expired lease) → the handler chosen by
//! `(source, event type)` → `processed` (effects committed in the same transaction), `ignored`
//! (no handler, or the handler declined it with a reason), `retrying` (transient failure: attempt journaled, retry scheduled with backoff
//! and full jitter) or `failed` (5th failure or permanent: quarantine notice). Every transition is
//! conditioned on the version read, so a duplicate delivery or a racing invocation finds a
//! conflict and skips: effects happen once. A handler's metrics are emitted (through a
//! [`MetricSink`], by default the stdout EMF writer) only after its transaction committed, so they
//! happen once too. Decisions come from [`crate::policy`].
//!
//! [`batch`] lifts the per-message function over stream and SQS batches; [`registry`] holds the
//! handlers; `outcome` the configuration and what processing one message did.

pub mod batch;
mod ignore;
mod outbox_hook;
mod outcome;
pub mod registry;

pub use outcome::{InfraError, Outcome, ProcessorConfig, Skip};

use crate::clock::Clock;
use crate::domain::{MessageKey, Status};
use crate::message::{HistoryEntry, QuarantineNotice, StoredMessage};
use crate::metrics::{EmfWriter, MetricSink};
use crate::outbox::fanout::Fanout;
use crate::policy::{self, AfterFailure, FailureKind};
use crate::queue::{Quarantine, RetryQueue};
use crate::store::{Applied, MessageStore, Transition, MAX_EFFECTS};
use registry::{Commit, HandlerOutcome, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a handler is re-run at once when its writes meet a conflict.
pub const EFFECT_CONFLICT_RERUNS: u32 = 3;

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

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
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
        let key = message.key();
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
                to: Status::Processing,
                attempts: attempt,
                lease_until: Some(lease_until),
                next_attempt_at: None,
                open_due: Some(lease_until),
                expires_at: None,
                last_error: None,
                entry,
            };
            if self
                .store
                .transition(&key, message.version, &t, Vec::new())
                .await?
                != Applied::Done
            {
                return Ok(Outcome::Skipped(Skip::Conflict));
            }
            message.version += 1;
            message.status = Status::Processing;
            message.attempts = attempt;
            message.lease_until = Some(lease_until);
        }
        // A handler's writes may meet a conflict (the email or payment row it read changed): re-run
        // it on fresh state a few times before counting the attempt as failed.
        let mut reruns = 0;
        loop {
            let started = Instant::now();
            let outcome = handler.handle(&message).await;
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
            };
            match self.finish(&message, commit, a).await? {
                Some(outcome) => return Ok(outcome),
                None if reruns < EFFECT_CONFLICT_RERUNS => reruns += 1,
                None => {
                    let error =
                        "a write's condition failed repeatedly (state changed concurrently)"
                            .to_string();
                    return self.fail(&message, FailureKind::Transient, error, a).await;
                }
            }
        }
    }

    fn expiry(&self, now_ms: i64) -> i64 {
        now_ms.div_euclid(1000)
            + i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX / 2)
    }

    /// Commits the handler's writes with the `processed` transition; only once they are durable
    /// are its metrics emitted. `None`: an effect conflict (nothing written, nothing emitted).
    async fn finish(
        &self,
        m: &StoredMessage,
        commit: Commit,
        a: AttemptInfo<'_>,
    ) -> Result<Option<Outcome>, InfraError> {
        let mut entry = HistoryEntry::new(
            a.now,
            Status::Processed,
            format!("processed by {}", a.handler),
        );
        entry.attempt = Some(a.attempt);
        entry.duration_ms = Some(a.duration_ms);
        let t = Transition {
            to: Status::Processed,
            attempts: a.attempt,
            lease_until: None,
            next_attempt_at: None,
            open_due: None,
            expires_at: Some(self.expiry(a.now)),
            last_error: None,
            entry,
        };
        let mut effects = commit.effects;
        match self
            .outbox_effects(m, Status::Processed, effects.len(), a.now)
            .await?
        {
            Ok(extra) => effects.extend(extra),
            Err(why) => return self.fail(m, FailureKind::Permanent, why, a).await.map(Some),
        }
        match self
            .store
            .transition(&m.key(), m.version, &t, effects)
            .await?
        {
            Applied::Done => {
                self.metrics.emit(a.now, &commit.metrics);
                Ok(Some(Outcome::Processed))
            }
            Applied::MessageConflict => Ok(Some(Outcome::Skipped(Skip::Conflict))),
            // The handler decided on state that changed meanwhile: nothing was written.
            Applied::EffectConflict => Ok(None),
        }
    }

    async fn fail(
        &self,
        m: &StoredMessage,
        kind: FailureKind,
        error: String,
        a: AttemptInfo<'_>,
    ) -> Result<Outcome, InfraError> {
        let key = m.key();
        let error: String = error.chars().take(1000).collect();
        match self
            .config
            .policy
            .after_failure(a.attempt, kind, (self.jitter)())
        {
            AfterFailure::RetryIn(delay) => {
                let next = a.now + millis(delay);
                let mut entry =
                    HistoryEntry::new(a.now, Status::Retrying, "attempt failed; retry scheduled");
                entry.attempt = Some(a.attempt);
                entry.error = Some(error.clone());
                entry.duration_ms = Some(a.duration_ms);
                let t = Transition {
                    to: Status::Retrying,
                    attempts: a.attempt,
                    lease_until: None,
                    next_attempt_at: Some(next),
                    open_due: Some(next),
                    expires_at: None,
                    last_error: Some(error),
                    entry,
                };
                if self
                    .store
                    .transition(&key, m.version, &t, Vec::new())
                    .await?
                    != Applied::Done
                {
                    return Ok(Outcome::Skipped(Skip::Conflict));
                }
                if let Err(e) = self.retry.schedule(&key, delay).await {
                    // The message is durably `retrying` with its due time in the open index: the
                    // reaper re-drives it, so this is not worth failing the batch for.
                    tracing::warn!(source = %key.source, event_id = %key.event_id, error = %e, "retry not scheduled; the reaper will re-drive it");
                }
                Ok(Outcome::Retrying {
                    attempt: a.attempt,
                    delay,
                })
            }
            AfterFailure::Quarantine => {
                let permanent = kind == FailureKind::Permanent;
                let notice = QuarantineNotice {
                    source: m.source.clone(),
                    event_id: m.event_id.clone(),
                    event_type: m.event_type.clone(),
                    attempts: a.attempt,
                    last_error: error.clone(),
                    reason: if permanent { "permanent" } else { "exhausted" }.into(),
                    failed_at: a.now,
                };
                // Notice first: if the status write then fails, the record is retried and may send a
                // second notice (harmless: replay checks the status) — never a failed message
                // without one.
                self.quarantine.quarantine(&notice).await?;
                let note = if permanent {
                    "permanent failure; quarantined"
                } else {
                    "attempts exhausted; quarantined"
                };
                let mut entry = HistoryEntry::new(a.now, Status::Failed, note);
                entry.attempt = Some(a.attempt);
                entry.error = Some(error.clone());
                entry.duration_ms = Some(a.duration_ms);
                let t = Transition {
                    to: Status::Failed,
                    attempts: a.attempt,
                    lease_until: None,
                    next_attempt_at: None,
                    open_due: None,
                    expires_at: None,
                    last_error: Some(error),
                    entry,
                };
                Ok(
                    match self
                        .store
                        .transition(&key, m.version, &t, Vec::new())
                        .await?
                    {
                        Applied::Done => Outcome::Failed {
                            attempts: a.attempt,
                            permanent,
                        },
                        _ => Outcome::Skipped(Skip::Conflict),
                    },
                )
            }
        }
    }
}

#[derive(Clone, Copy)]
struct AttemptInfo<'a> {
    attempt: u32,
    duration_ms: u64,
    now: i64,
    handler: &'a str,
}

#[cfg(test)]
mod tests;
