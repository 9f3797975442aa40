//! The transitions that close an attempt, each built in one place (`ignored`: `super::ignore`):
//! `processed` (the handler's writes committed with it), `retrying` (a transient failure, due
//! again after the backoff) and `failed` (through [`super::notice`]: the notice sent exactly
//! once). Each is conditioned on the version read; a terminal one takes effects with it.

use super::notice::{self, Notified};
use super::{millis, AttemptInfo, InfraError, Outcome, Processor, Skip};
use crate::clock::Clock;
use crate::domain::Status;
use crate::message::{
    clip, FailureReason, HistoryEntry, PendingNotice, StoredMessage, MAX_ERROR_BYTES,
};
use crate::policy::{AfterFailure, FailureKind};
use crate::queue::{Quarantine, RetryQueue};
use crate::store::schema::PENDING_GRACE_MS;
use crate::store::{Applied, MessageStore, StoreError, Transition};

use super::registry::Commit;

/// The history note of a message failed permanently.
pub const NOTE_PERMANENT: &str = "permanent failure; quarantined";
/// The history note of a message whose last attempt failed.
pub const NOTE_EXHAUSTED: &str = "attempts exhausted; quarantined";
/// The history note of a message whose last attempt reported no outcome (counted by the reaper).
pub const NOTE_LOST_LAST: &str = "last attempt lost (no outcome by its deadline); quarantined";

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Processor<S, R, Q, C> {
    /// Commits the handler's writes with the `processed` transition; only once they are durable
    /// are its metrics emitted. `Ok(None)`: an effect conflict (nothing written, nothing emitted).
    /// Store errors are the caller's to classify (an invalid or throttled commit is a failed
    /// attempt, anything else an infrastructure error).
    pub(super) async fn finish(
        &self,
        m: &StoredMessage,
        commit: Commit,
        a: AttemptInfo<'_>,
    ) -> Result<Option<Outcome>, StoreError> {
        let mut entry = HistoryEntry::new(
            a.now,
            Status::Processed,
            format!("processed by {}", a.handler),
        );
        entry.attempt = Some(a.attempt);
        entry.duration_ms = Some(a.duration_ms);
        let t = Transition {
            attempts: a.attempt,
            expires_at: Some(self.expiry(a.now)),
            ..Transition::of(m, Status::Processed, entry)
        };
        match self
            .store
            .transition(&m.key(), m.version, &t, commit.effects)
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

    /// Whether `t`, answered as a conflict, is nevertheless what the store holds now: the write
    /// applied and its answer was lost (a timeout), then the SDK's retry met the version condition
    /// the write itself had moved. Then the caller's follow-up (the retry's send) is still its to
    /// do; otherwise the message would wait for the reaper's grace with no retry on its way.
    async fn wrote(&self, m: &StoredMessage, t: &Transition) -> bool {
        match self.store.get(&m.key()).await {
            Ok(Some(now)) => {
                now.version == m.version + 1
                    && now.status == t.to
                    && now.attempts == t.attempts
                    && now.next_attempt_at == t.next_attempt_at
                    && now.open_due == t.open_due
            }
            _ => false,
        }
    }

    /// A failed attempt: `retrying` with backoff, or `failed` with its quarantine notice.
    pub(super) async fn fail(
        &self,
        m: &StoredMessage,
        kind: FailureKind,
        error: String,
        a: AttemptInfo<'_>,
    ) -> Result<Outcome, InfraError> {
        let key = m.key();
        let error = clip(&error, MAX_ERROR_BYTES);
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
                // Due in the open index a grace period after the retry: the scheduled delivery
                // is not re-driven beside it, and the reaper counts it lost only if it never
                // reported.
                let t = Transition {
                    attempts: a.attempt,
                    next_attempt_at: Some(next),
                    open_due: Some(next + PENDING_GRACE_MS),
                    last_error: Some(error),
                    ..Transition::of(m, Status::Retrying, entry)
                };
                let applied = self
                    .store
                    .transition(&key, m.version, &t, Vec::new())
                    .await?;
                if applied != Applied::Done && !self.wrote(m, &t).await {
                    return Ok(Outcome::Skipped(Skip::Conflict));
                }
                let send = crate::queue::patiently(self.config.queue_patience, || {
                    self.retry.schedule(&key, delay)
                });
                if let Err(e) = send.await {
                    // The message is durably `retrying` with its deadline in the open index: the
                    // reaper re-drives it, so this is not worth failing the batch for. No retry is
                    // on its way, so no grace is owed to one: due at the retry time, the reaper's
                    // next run after it takes it (a minute late at most, not the grace).
                    tracing::warn!(source = %key.source, event_id = %key.event_id, error = %e, "retry not scheduled; the reaper will re-drive it");
                    let mut sent = m.clone();
                    t.apply_to(&mut sent);
                    let due_now = Transition {
                        attempts: sent.attempts,
                        next_attempt_at: Some(next),
                        open_due: Some(next),
                        ..Transition::keeping_history(&sent, Status::Retrying, a.now)
                    };
                    if let Err(e) = self
                        .store
                        .transition(&key, sent.version, &due_now, Vec::new())
                        .await
                    {
                        tracing::warn!(source = %key.source, event_id = %key.event_id, error = %e, "retry not scheduled and its deadline not advanced; the reaper re-drives it after the grace");
                    }
                }
                Ok(Outcome::Retrying {
                    attempt: a.attempt,
                    delay,
                })
            }
            AfterFailure::Quarantine => {
                let (reason, note) = match kind {
                    FailureKind::Permanent => (FailureReason::Permanent, NOTE_PERMANENT),
                    FailureKind::Transient => (FailureReason::Exhausted, NOTE_EXHAUSTED),
                };
                let mut entry = HistoryEntry::new(a.now, Status::Failed, note);
                entry.attempt = Some(a.attempt);
                entry.error = Some(error.clone());
                entry.duration_ms = Some(a.duration_ms);
                let pending = PendingNotice {
                    reason,
                    failed_at: a.now,
                };
                let t = notice::failing(
                    m,
                    entry,
                    a.attempt,
                    error,
                    pending,
                    a.now + millis(self.config.lease),
                );
                match notice::fail_and_notify(
                    &self.store,
                    &self.quarantine,
                    m,
                    &t,
                    Vec::new(),
                    a.now,
                )
                .await?
                {
                    Notified::Lost => Ok(Outcome::Skipped(Skip::Conflict)),
                    Notified::Sent | Notified::Pending => Ok(Outcome::Failed {
                        attempts: a.attempt,
                        permanent: reason == FailureReason::Permanent,
                    }),
                }
            }
        }
    }
}
