//! [`TableAttempts`]: the charging pass's storage ([`AttemptStore`]) over the core's stores — the
//! wallet's items read and written as [`crate::balance::items`] lays them out, the due attempts and the
//! waiting recurring charges found through the sparse open index ([`DueIndex`], shards
//! `AUTOPAY#ATTEMPT#…` and `AUTOPAY#RECURRING#…`: no scan). Works on DynamoDB and on the
//! in-memory store alike.

use crate::autopay::items::{shards, ATTEMPT_SHARD_PREFIX, RECURRING_SHARD_PREFIX};
use crate::autopay::ledger;
use crate::autopay::{Attempt, AttemptStore, Autopay, Listed, Written};
use crate::balance::ledger::LedgerError;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Applied, DueIndex, Effect, Item, ItemStore, ItemWriter, StoreError};

/// Autopay's attempts and settings in the table.
#[derive(Debug, Clone)]
pub struct TableAttempts<S> {
    store: S,
}

impl<S> TableAttempts<S> {
    pub fn new(store: S) -> Self {
        Self { store }
    }
}

/// An unreadable item is the table's problem, not a reason to stop the pass: it is refused as
/// the store refuses what it cannot take.
fn store_error(e: LedgerError) -> StoreError {
    match e {
        LedgerError::Store(e) => e,
        LedgerError::Unreadable(reason) => StoreError::Unreadable(reason.into()),
    }
}

/// The tenant an index entry's partition names (`WALLET#{tenant}`).
fn tenant_of(item: &Item) -> Option<TenantId> {
    let pk = get_s(item, "pk")?.strip_prefix("WALLET#")?;
    TenantId::stored(pk).ok()
}

/// The index entries due at `now` in every shard of `prefix`, oldest first, at most `limit`.
pub(crate) async fn due_keys<S: DueIndex>(
    store: &S,
    prefix: &str,
    now: Millis,
    limit: usize,
) -> Result<Vec<(TenantId, String)>, StoreError> {
    let mut found = Vec::new();
    for shard in shards(prefix) {
        for item in store.due_items(&shard, now, limit).await? {
            let due = inbox_core::store::attr::get_n(&item, "open_due").unwrap_or(i64::MAX);
            if let (Some(t), Some(sk)) = (tenant_of(&item), get_s(&item, "sk")) {
                found.push((due, t, sk.to_owned()));
            }
        }
    }
    found.sort();
    found.truncate(limit);
    Ok(found.into_iter().map(|(_, t, sk)| (t, sk)).collect())
}

/// The attempts not terminal and due at or before `now`, oldest first, at most `limit`: the
/// index's entries read again (the index lags the table), unreadable ones listed apart.
pub(crate) async fn due_attempts<S: ItemStore + DueIndex>(
    store: &S,
    now: Millis,
    limit: usize,
) -> Result<Listed<Attempt>, StoreError> {
    let mut due = Listed::of(Vec::new());
    // Twice the batch is listed, so a few unreadable items at the head of the index (met
    // first on every run: they stay due) never take the whole batch.
    let listed = limit.saturating_mul(2);
    for (tenant, sk) in due_keys(store, ATTEMPT_SHARD_PREFIX, now, listed).await? {
        let Some(id) = sk.strip_prefix(crate::autopay::items::ATTEMPT_PREFIX) else {
            continue;
        };
        match ledger::attempt(store, &tenant, id).await {
            Ok(Some(a)) if !a.state.is_terminal() && a.due <= now => due.items.push(a),
            Ok(_) => {}
            Err(LedgerError::Unreadable(why)) => due
                .unreadable
                .push(format!("{} {sk}: {why}", tenant.as_str())),
            Err(LedgerError::Store(e)) => return Err(e),
        }
    }
    due.items.sort_by_key(|a| a.due);
    due.items.truncate(limit);
    Ok(due)
}

impl<S: ItemStore + ItemWriter + DueIndex> AttemptStore for TableAttempts<S> {
    async fn due_attempts(&self, now: Millis, limit: usize) -> Result<Listed<Attempt>, StoreError> {
        due_attempts(&self.store, now, limit).await
    }

    async fn due_recurring(
        &self,
        now: Millis,
        limit: usize,
    ) -> Result<Listed<Autopay>, StoreError> {
        let mut due = Listed::of(Vec::new());
        for (tenant, sk) in due_keys(
            &self.store,
            RECURRING_SHARD_PREFIX,
            now,
            limit.saturating_mul(2),
        )
        .await?
        {
            match ledger::autopay(&self.store, &tenant).await {
                Ok(Some(a)) if a.recurring_due().is_some_and(|d| d <= now) => due.items.push(a),
                Ok(_) => {}
                Err(LedgerError::Unreadable(why)) => due
                    .unreadable
                    .push(format!("{} {sk}: {why}", tenant.as_str())),
                Err(LedgerError::Store(e)) => return Err(e),
            }
        }
        due.items.truncate(limit);
        Ok(due)
    }

    async fn autopay(&self, tenant: &TenantId) -> Result<Option<Autopay>, StoreError> {
        ledger::autopay(&self.store, tenant)
            .await
            .map_err(store_error)
    }

    async fn attempt(&self, tenant: &TenantId, id: &str) -> Result<Option<Attempt>, StoreError> {
        ledger::attempt(&self.store, tenant, id)
            .await
            .map_err(store_error)
    }

    async fn write(
        &self,
        attempt: &Attempt,
        autopay: Option<&Autopay>,
        also: Vec<Effect>,
    ) -> Result<Written, StoreError> {
        let mut effects = vec![attempt.replace()];
        effects.extend(autopay.map(Autopay::replace));
        effects.extend(also);
        match self.store.commit(effects).await? {
            Applied::Done => Ok(Written::Done),
            Applied::EffectConflict | Applied::MessageConflict => Ok(Written::Conflict),
        }
    }
}
