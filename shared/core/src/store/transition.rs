//! A message's status change ([`Transition`]), applied only if the message is still at the version
//! it was read at, and what applying it found ([`Applied`]).

use crate::domain::{MessageKey, Status};
use crate::message::{HistoryEntry, PendingNotice, StoredMessage};

/// A status change, applied only if the message is still at the version it was read at.
///
/// Build one with [`Transition::of`] (from the message as read: its history is bounded and
/// rewritten whole) and adjust the fields that differ with struct-update syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub to: Status,
    /// When, ms since the epoch (the item's `updated_at`).
    pub at: i64,
    pub attempts: u32,
    /// Set while `processing`; removed otherwise.
    pub lease_until: Option<i64>,
    /// Set while `retrying`; removed otherwise.
    pub next_attempt_at: Option<i64>,
    /// `Some(due)`: the message stays in (or joins) the open index, due then; `None`: it leaves it
    /// (a `failed` one keeps an entry among the failed partitions: [`Transition::index_entry`]).
    pub open_due: Option<i64>,
    /// TTL (seconds since the epoch) for processed/ignored messages; removed otherwise.
    pub expires_at: Option<i64>,
    /// Set on failures; kept otherwise (`None` leaves it as it is).
    pub last_error: Option<String>,
    /// `Some`: a failed message whose quarantine notice is still to be sent (it keeps an
    /// `open_due`, so the reaper finds it); `None` removes the marker.
    pub notice: Option<PendingNotice>,
    /// The whole history after this transition (the newest entries, oldest first).
    pub history: Vec<HistoryEntry>,
    /// How many entries the history ever had, after this transition.
    pub history_total: u64,
}

impl Transition {
    /// `m` (as read) moving to `to` with `entry` appended to its bounded history: attempts and
    /// last error kept, everything else cleared (no lease, no next attempt, out of the open index,
    /// no TTL, no pending notice).
    pub fn of(m: &StoredMessage, to: Status, entry: HistoryEntry) -> Self {
        let at = entry.at;
        let (history, history_total) = m.history_after(entry);
        Self {
            history,
            history_total,
            ..Self::keeping_history(m, to, at)
        }
    }

    /// Like [`Transition::of`], without a history entry (a bookkeeping write, e.g. the reaper
    /// taking over a pending notice).
    pub fn keeping_history(m: &StoredMessage, to: Status, at: i64) -> Self {
        Self {
            to,
            at,
            attempts: m.attempts,
            lease_until: None,
            next_attempt_at: None,
            open_due: None,
            expires_at: None,
            last_error: None,
            notice: None,
            history: m.history.clone(),
            history_total: m.history_count(),
        }
    }

    /// The message's open-index entry after this transition (`open_shard`, `open_due`): due in
    /// its `OPEN#` shard while [`Transition::open_due`] is set; once `failed` without one, in its
    /// `FAILED#` partition at the time it failed (the first of its history's newest `failed`
    /// entries; this transition's time without one), where the reaper never reads; otherwise none.
    pub fn index_entry(&self, key: &MessageKey) -> Option<(String, i64)> {
        use crate::store::schema::{failed_shard, open_shard};
        match self.open_due {
            Some(due) => Some((open_shard(key), due)),
            None if self.to == Status::Failed => {
                // The first of the newest run of `failed` entries (its failure; after it, the
                // record of its notice sent is `failed` too).
                let failed_at = self
                    .history
                    .iter()
                    .rev()
                    .take_while(|h| h.status == Status::Failed)
                    .last()
                    .map_or(self.at, |h| h.at);
                Some((failed_shard(key), failed_at))
            }
            None => None,
        }
    }

    /// What `m` becomes once this transition is applied to it (the store's copy after the write).
    pub fn apply_to(&self, m: &mut StoredMessage) {
        m.status = self.to;
        m.attempts = self.attempts;
        m.version += 1;
        m.lease_until = self.lease_until;
        m.next_attempt_at = self.next_attempt_at;
        m.open_due = self.open_due;
        m.expires_at = self.expires_at;
        if self.last_error.is_some() {
            m.last_error = self.last_error.clone();
        }
        m.notice_pending = self.notice.clone();
        m.history = self.history.clone();
        m.history_total = self.history_total;
    }
}

/// What a conditional transition found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The transition and every effect are committed.
    Done,
    /// The message was no longer at the expected version (another invocation moved it): nothing
    /// was written.
    MessageConflict,
    /// An effect's own condition failed (e.g. a handler's row changed meanwhile): nothing was written.
    EffectConflict,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventId, SourceName};
    use crate::store::schema::{failed_shard, open_shard};

    fn key() -> MessageKey {
        MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse("evt_1").unwrap(),
        )
    }

    fn to(status: Status, at: i64, open_due: Option<i64>) -> Transition {
        Transition {
            to: status,
            at,
            attempts: 5,
            lease_until: None,
            next_attempt_at: None,
            open_due,
            expires_at: None,
            last_error: None,
            notice: None,
            history: vec![
                HistoryEntry::new(10, Status::Pending, "received"),
                HistoryEntry::new(20, Status::Failed, "attempt 5 failed"),
                HistoryEntry::new(30, Status::Failed, "quarantine notice sent"),
            ],
            history_total: 3,
        }
    }

    #[test]
    fn the_index_entry_follows_the_status() {
        let k = key();
        assert_eq!(
            to(Status::Retrying, 40, Some(99)).index_entry(&k),
            Some((open_shard(&k), 99)),
            "due: its OPEN# shard"
        );
        assert_eq!(
            to(Status::Failed, 40, Some(99)).index_entry(&k),
            Some((open_shard(&k), 99)),
            "failed with its notice pending: the notice's deadline, where the reaper reads"
        );
        assert_eq!(
            to(Status::Failed, 40, None).index_entry(&k),
            Some((failed_shard(&k), 20)),
            "failed: its FAILED# partition at its failure, not at the notice's record"
        );
        let bare = Transition {
            history: Vec::new(),
            ..to(Status::Failed, 40, None)
        };
        assert_eq!(bare.index_entry(&k), Some((failed_shard(&k), 40)));
        for terminal in [Status::Processed, Status::Ignored] {
            assert_eq!(to(terminal, 40, None).index_entry(&k), None, "{terminal}");
        }
    }
}
