//! Failing a message with exactly one quarantine notice.
//!
//! 1. `failed` is committed first, with the notice to send kept in the item (`notice_pending`:
//!    reason and time) and a deadline in the open index (`open_due` = now + the lease). The write
//!    is conditioned on the version read, so of two racing invocations only the winner goes on.
//! 2. The winner sends the notice.
//! 3. It records the notice sent (the marker and the deadline removed, one history entry).
//!
//! A notice that could not be sent (the queue was down, the invocation died) is found by the
//! reaper at the deadline, which takes it over with the same kind of conditional write and sends
//! the same notice ([`QuarantineNotice::pending_of`]). The one case that sends two identical
//! notices: the sender dies between 2 and 3 (SQS cannot take a send back); a second notice of a
//! message already replayed is recognised as stale by `inboxctl replay --from-quarantine`.

use crate::domain::Status;
use crate::message::{HistoryEntry, PendingNotice, QuarantineNotice, StoredMessage};
use crate::queue::Quarantine;
use crate::store::{Applied, Effect, MessageStore, StoreError, Transition};

/// What [`fail_and_notify`] and [`send_pending`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notified {
    /// Another writer moved the message first: nothing written, nothing sent.
    Lost,
    /// Failed (or already failed) and the notice sent.
    Sent,
    /// Failed, the notice not sent: it is pending in the item and the reaper will send it.
    Pending,
}

/// The transition to `failed` with `pending` to send: `attempts` and `error` recorded, in the
/// open index until `deadline` (when the reaper takes the notice over).
pub fn failing(
    m: &StoredMessage,
    entry: HistoryEntry,
    attempts: u32,
    error: String,
    pending: PendingNotice,
    deadline: i64,
) -> Transition {
    Transition {
        attempts,
        last_error: Some(error),
        notice: Some(pending),
        open_due: Some(deadline),
        ..Transition::of(m, Status::Failed, entry)
    }
}

/// Commits `failing` (a transition to `failed` carrying a notice, from [`failing`]) with `effects`
/// on `m` as read; if it won, sends the notice and records it sent.
pub async fn fail_and_notify<S: MessageStore, Q: Quarantine>(
    store: &S,
    quarantine: &Q,
    m: &StoredMessage,
    failing: &Transition,
    effects: Vec<Effect>,
    now: i64,
) -> Result<Notified, StoreError> {
    if store
        .transition(&m.key(), m.version, failing, effects)
        .await?
        != Applied::Done
    {
        return Ok(Notified::Lost);
    }
    let mut failed = m.clone();
    failing.apply_to(&mut failed);
    Ok(send_pending(store, quarantine, &failed, now).await)
}

/// Sends the pending notice of `failed` (as the store holds it, after a write of the caller's that
/// won) and records it sent. Never an error: a notice that was not sent, or not recorded, is
/// found again by the reaper.
pub async fn send_pending<S: MessageStore, Q: Quarantine>(
    store: &S,
    quarantine: &Q,
    failed: &StoredMessage,
    now: i64,
) -> Notified {
    let key = failed.key();
    let Some(notice) = QuarantineNotice::pending_of(failed) else {
        return Notified::Sent;
    };
    if let Err(e) = quarantine.quarantine(&notice).await {
        tracing::warn!(source = %key.source, event_id = %key.event_id, error = %e, "quarantine notice not sent; the reaper will send it");
        return Notified::Pending;
    }
    let entry = HistoryEntry::new(now, Status::Failed, "quarantine notice sent");
    let sent = Transition::of(failed, Status::Failed, entry);
    match store
        .transition(&key, failed.version, &sent, Vec::new())
        .await
    {
        Ok(Applied::Done) => {}
        Ok(_) => {
            tracing::info!(source = %key.source, event_id = %key.event_id, "message changed after its notice was sent (replayed?)")
        }
        Err(e) => {
            tracing::warn!(source = %key.source, event_id = %key.event_id, error = %e.chain(), "quarantine notice sent but not recorded; the reaper may send it again")
        }
    }
    Notified::Sent
}
