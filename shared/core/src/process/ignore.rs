//! The `ignored` transition: no handler for the message, or its handler declined it. Kept for the
//! retention, listable and replayable, no alarm; the outbox fans it out like a processed one.

use super::{AttemptInfo, InfraError, Outcome, Processor, Skip};
use crate::clock::Clock;
use crate::domain::Status;
use crate::message::{HistoryEntry, StoredMessage};
use crate::queue::{Quarantine, RetryQueue};
use crate::store::{Applied, MessageStore, Transition};

impl<S: MessageStore, R: RetryQueue, Q: Quarantine, C: Clock> Processor<S, R, Q, C> {
    /// Moves the message to `ignored` (kept for the retention, no alarm) with `note` in its
    /// history; `a`: the attempt whose handler declined it (`None`: there is no handler).
    pub(super) async fn ignore(
        &self,
        m: &StoredMessage,
        now: i64,
        note: String,
        a: Option<AttemptInfo<'_>>,
    ) -> Result<Outcome, InfraError> {
        let mut entry = HistoryEntry::new(now, Status::Ignored, note);
        entry.attempt = a.map(|a| a.attempt);
        entry.duration_ms = a.map(|a| a.duration_ms);
        let t = Transition {
            attempts: a.map_or(m.attempts, |a| a.attempt),
            expires_at: Some(self.expiry(now)),
            ..Transition::of(m, Status::Ignored, entry)
        };
        let key = m.key();
        let effects = self.ignored_effects(m, now).await?;
        Ok(
            match self.store.transition(&key, m.version, &t, effects).await? {
                Applied::Done => Outcome::Ignored,
                _ => Outcome::Skipped(Skip::Conflict),
            },
        )
    }
}
