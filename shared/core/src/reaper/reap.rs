//! One due message: read it without its body (the index is eventually consistent and projects no
//! version; the decision needs no body, so one kept in S3 is never fetched), check it is still
//! due, then count its lost attempt and re-drive or fail it, or send its pending quarantine
//! notice. Every write is conditioned on the version read: a message that moved
//! meanwhile is left alone.

use super::Reaper;
use crate::clock::Clock;
use crate::domain::Status;
use crate::message::{clip, FailureReason, HistoryEntry, PendingNotice, MAX_ERROR_BYTES};
use crate::policy::{self, AfterFailure, FailureKind};
use crate::process::notice::{self, Notified};
use crate::process::InfraError;
use crate::queue::{Quarantine, RetryQueue};
use crate::store::schema::PENDING_GRACE_MS;
use crate::store::{Applied, DueMessage, MessageStore, Transition};

/// What the reaper did with one due message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reaped {
    /// Gone, no longer due, terminal, or moved by someone else first.
    Skipped,
    /// Its lost attempt counted, re-driven after the backoff.
    Redriven,
    /// Its lost attempt was the last: failed, notice sent (or left pending).
    Failed { notice_sent: bool },
    /// A failed message's pending notice, sent.
    NoticeSent,
    /// A failed message's pending notice, still not sent (the quarantine queue failed).
    NoticePending,
}

fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Reaper<S, R, Q, C> {
    pub(super) async fn reap(&self, d: &DueMessage, now: i64) -> Result<Reaped, InfraError> {
        let Some(m) = self.store.get_head(&d.key).await? else {
            return Ok(Reaped::Skipped);
        };
        let Some(due) = m.open_due.filter(|due| *due <= now) else {
            return Ok(Reaped::Skipped);
        };
        let lease = millis(self.settings.lease);
        let key = m.key();
        match m.status {
            Status::Failed if m.notice_pending.is_some() => {
                // The notice's sender did not record it sent by its deadline: take it over (the
                // deadline moves, so a concurrent run loses this write), then send it.
                let t = Transition {
                    notice: m.notice_pending.clone(),
                    open_due: Some(now + lease),
                    ..Transition::keeping_history(&m, Status::Failed, now)
                };
                if self
                    .store
                    .transition(&key, m.version, &t, Vec::new())
                    .await?
                    != Applied::Done
                {
                    return Ok(Reaped::Skipped);
                }
                let mut claimed = m.clone();
                t.apply_to(&mut claimed);
                Ok(
                    match notice::send_pending(&self.store, &self.quarantine, &claimed, now).await {
                        Notified::Sent => Reaped::NoticeSent,
                        _ => Reaped::NoticePending,
                    },
                )
            }
            Status::Pending | Status::Retrying | Status::Processing => {
                let lost = policy::lost_attempt(m.status, m.attempts);
                let error = clip(
                    &format!(
                        "attempt {lost} reported no outcome by its deadline ({} ms ago): the \
                         invocation crashed or timed out, the store or a queue kept failing, or \
                         the delivery was lost",
                        now - due
                    ),
                    MAX_ERROR_BYTES,
                );
                let policy = self.settings.policy;
                match policy.after_failure(lost, FailureKind::Transient, (self.jitter)()) {
                    AfterFailure::RetryIn(delay) => {
                        let next = now + millis(delay);
                        let mut entry = HistoryEntry::new(
                            now,
                            Status::Retrying,
                            "no outcome by the deadline: attempt counted as lost, re-driven by the reaper",
                        );
                        entry.attempt = Some(lost);
                        entry.error = Some(error.clone());
                        let t = Transition {
                            attempts: lost,
                            next_attempt_at: Some(next),
                            open_due: Some(next + PENDING_GRACE_MS),
                            last_error: Some(error),
                            ..Transition::of(&m, Status::Retrying, entry)
                        };
                        if self
                            .store
                            .transition(&key, m.version, &t, Vec::new())
                            .await?
                            != Applied::Done
                        {
                            return Ok(Reaped::Skipped);
                        }
                        // Durably `retrying` with its next deadline: if this send fails, the next
                        // deadline brings it back.
                        self.retry.schedule(&key, delay).await?;
                        Ok(Reaped::Redriven)
                    }
                    AfterFailure::Quarantine => {
                        let mut entry =
                            HistoryEntry::new(now, Status::Failed, crate::process::NOTE_LOST_LAST);
                        entry.attempt = Some(lost);
                        entry.error = Some(error.clone());
                        let pending = PendingNotice {
                            reason: FailureReason::Exhausted,
                            failed_at: now,
                        };
                        let t = notice::failing(&m, entry, lost, error, pending, now + lease);
                        Ok(
                            match notice::fail_and_notify(
                                &self.store,
                                &self.quarantine,
                                &m,
                                &t,
                                Vec::new(),
                                now,
                            )
                            .await?
                            {
                                Notified::Lost => Reaped::Skipped,
                                Notified::Sent => Reaped::Failed { notice_sent: true },
                                Notified::Pending => Reaped::Failed { notice_sent: false },
                            },
                        )
                    }
                }
            }
            // Terminal (a stale index entry): nothing to do.
            Status::Processed | Status::Ignored | Status::Failed => Ok(Reaped::Skipped),
        }
    }
}
