//! Attempts past their due that the charging pass has not taken: reconciliation's check that
//! every claimed try ends or is re-driven. An attempt's `due` is when the pass must act on it
//! next (a `Charging` try: its lease's end; `Pending`: its next look-up; `Charged`: its credit
//! deadline: [`crate::autopay::attempt`]'s table); the pass runs every minute and takes the
//! oldest due first, so an attempt still due [`OVERDUE_GRACE_MS`] after its `due` means the pass
//! is failing or falling behind. Reconciliation lists them (`OverdueAutopayAttempts`, with its
//! alarm) through the attempts' shards of the open index: no scan. An attempt that cannot be
//! read is the charging pass's report (`AutopayUnreadable`), not counted again here.

use super::table::due_attempts;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::{DueIndex, ItemStore, StoreError};
use serde::Serialize;

/// How long past its `due` an attempt may wait before it counts: the pass runs every minute,
/// so fifteen minutes is fifteen runs that did not take it.
pub const OVERDUE_GRACE_MS: i64 = 900_000;

/// The most overdue attempts one reconciliation lists (the count is a floor beyond it).
pub const OVERDUE_LISTED: usize = 1_000;

/// An attempt still due [`OVERDUE_GRACE_MS`] after its `due`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverdueAttempt {
    pub tenant: TenantId,
    pub attempt_id: String,
    /// `due`, `charging`, `pending` or `charged`.
    pub state: &'static str,
    pub try_no: u32,
    /// When the pass should have acted on it (ms).
    pub due: i64,
}

/// The attempts due before `now − OVERDUE_GRACE_MS` and not terminal, oldest first, at most
/// [`OVERDUE_LISTED`].
pub async fn overdue<S: ItemStore + DueIndex>(
    store: &S,
    now: Millis,
) -> Result<Vec<OverdueAttempt>, StoreError> {
    let before = Millis::new(now.get().saturating_sub(OVERDUE_GRACE_MS));
    let listed = due_attempts(store, before, OVERDUE_LISTED).await?;
    Ok(listed
        .items
        .into_iter()
        .map(|a| OverdueAttempt {
            state: a.state.name(),
            tenant: a.tenant,
            attempt_id: a.id,
            try_no: a.try_no,
            due: a.due.get(),
        })
        .collect())
}
