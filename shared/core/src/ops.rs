//! Operator actions shared by the CLI and the tests: replay a message.

use crate::clock::Clock;
use crate::domain::{MessageKey, Status};
use crate::message::HistoryEntry;
use crate::process::InfraError;
use crate::queue::RetryQueue;
use crate::store::schema::PENDING_GRACE_MS;
use crate::store::{Applied, MessageStore, Transition};

/// What a replay did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayOutcome {
    /// Back to `pending` with attempts reset, and re-driven through the retry queue.
    Replayed,
    /// No such message.
    Missing,
    /// Its status does not allow a replay (only failed and ignored messages, or any with `force`
    /// except one being processed right now).
    NotReplayable(Status),
    /// It changed while we replayed it; try again.
    Conflict,
}

/// Puts a failed or ignored message back to `pending` (attempts reset, a history entry naming the
/// operator) and re-drives it. The status change is durable before the re-drive is sent. The
/// message's body is renewed first (it lives a whole retention from the replay: a failed
/// message's body, kept until now, expires with the replayed message again); a body that is
/// gone refuses the replay ([`crate::store::StoreError::Unreadable`]).
pub async fn replay<S: MessageStore, R: RetryQueue, C: Clock>(
    store: &S,
    retry: &R,
    clock: &C,
    key: &MessageKey,
    operator: &str,
    force: bool,
) -> Result<ReplayOutcome, InfraError> {
    let Some(m) = store.get_head(key).await? else {
        return Ok(ReplayOutcome::Missing);
    };
    let allowed = match m.status {
        Status::Failed | Status::Ignored => true,
        Status::Processing => false,
        Status::Pending | Status::Retrying | Status::Processed => force,
    };
    if !allowed {
        return Ok(ReplayOutcome::NotReplayable(m.status));
    }
    store.renew_body(key).await?;
    let now = clock.now_millis();
    let entry = HistoryEntry::new(
        now,
        Status::Pending,
        format!("replayed by {operator} (was {})", m.status),
    );
    // Attempts start again; a notice still pending for a failed message is moot now.
    let t = Transition {
        attempts: 0,
        open_due: Some(now + PENDING_GRACE_MS),
        ..Transition::of(&m, Status::Pending, entry)
    };
    match store.transition(key, m.version, &t, Vec::new()).await? {
        Applied::Done => {
            retry.redrive(std::slice::from_ref(key)).await?;
            Ok(ReplayOutcome::Replayed)
        }
        _ => Ok(ReplayOutcome::Conflict),
    }
}
