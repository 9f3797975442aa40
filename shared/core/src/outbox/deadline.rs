//! The running invocation's deadline, as the deliver worker waits against it: [`until_deadline`]
//! runs a batch's deliveries with Lambda's context deadline in scope, and [`spare`] says how long
//! a delivery may still wait and finish before it.

use std::future::Future;

tokio::task_local! {
    /// The running invocation's deadline (the clock's ms), set by [`until_deadline`].
    static DEADLINE: i64;
}

/// No invocation runs longer than Lambda's 15 minutes (a later deadline is read as this).
const MAX_INVOCATION_MS: i64 = 900_000;

/// Runs `work` (a batch's deliveries) against the invocation's deadline `deadline_ms` (the
/// clock's ms: Lambda's context deadline): a delivery whose waits and POST would not end in time
/// is deferred instead. Without it a delivery waits as long as its limits say.
pub async fn until_deadline<F: Future>(deadline_ms: i64, work: F) -> F::Output {
    DEADLINE.scope(deadline_ms, work).await
}

/// How long work that needs `needed_ms` to finish may still wait at `now` before the invocation's
/// deadline (negative: it no longer fits); `None` outside [`until_deadline`].
pub(super) fn spare(now: i64, needed_ms: i64) -> Option<i64> {
    let deadline = DEADLINE.try_with(|d| *d).ok()?;
    Some(
        deadline
            .saturating_sub(now)
            .min(MAX_INVOCATION_MS)
            .saturating_sub(needed_ms),
    )
}
