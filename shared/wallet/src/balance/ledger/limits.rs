//! A wallet's limits changed after it was created (`inboxctl wallet set`): the floor and the
//! review threshold are set on the wallet item by themselves (its amounts, which movements adjust
//! with unconditional `ADD`s, are not written, so a movement committed meanwhile is kept), with
//! the change's journal entry in the same transaction.

use super::{unreadable, wallet, LedgerError};
use crate::balance::items::{self, wallet_pk, LimitsLog, LIMITS_LOG_PREFIX};
use crate::balance::model::Limits;
use crate::tenant::TenantId;
use inbox_core::store::{Applied, ItemStore, ItemWriter, StoreError};

/// A change of a wallet's limits, in the wallet currency's minor unit; `None` keeps one as it is
/// (`Some(None)`: no review threshold any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitsChange {
    pub floor: Option<i64>,
    pub review_threshold: Option<Option<i64>>,
}

/// What [`set_limits`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitsSet {
    pub before: Limits,
    pub after: Limits,
}

/// Sets the wallet's limits as `actor` at `now_ms` and journals it; `None` if the tenant has
/// no wallet (nothing written). A hold placed meanwhile is conditioned on the floor it read,
/// so it is re-tried against the new one; the notices (`low`) follow at the next movement.
pub async fn set_limits<S: ItemStore + ItemWriter>(
    store: &S,
    tenant: &TenantId,
    actor: &str,
    now_ms: i64,
    change: LimitsChange,
) -> Result<Option<LimitsSet>, LedgerError> {
    let Some(wallet) = wallet(store, tenant).await? else {
        return Ok(None);
    };
    let before = wallet.limits();
    let after = Limits {
        floor: change
            .floor
            .map_or(before.floor, |f| wallet.currency.amount(f)),
        review_threshold: change
            .review_threshold
            .map_or(before.review_threshold, |t| {
                t.map(|t| wallet.currency.amount(t))
            }),
    };
    let log = LimitsLog {
        at: now_ms,
        actor: actor.to_owned(),
        before,
        after,
    };
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let effects = vec![
        items::set_limits(tenant, &after),
        log.create(tenant, &unique),
    ];
    match store.commit(effects).await? {
        Applied::Done => Ok(Some(LimitsSet { before, after })),
        other => Err(LedgerError::Store(StoreError::Invalid(
            format!("setting the limits of {tenant:?}: {other:?}").into(),
        ))),
    }
}

/// The wallet's limits journal, oldest first.
pub async fn limits_log<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Vec<LimitsLog>, LedgerError> {
    let Some(wallet) = wallet(store, tenant).await? else {
        return Ok(Vec::new());
    };
    store
        .query_items(&wallet_pk(tenant), LIMITS_LOG_PREFIX)
        .await?
        .iter()
        .map(|i| {
            LimitsLog::from_item(i, wallet.currency)
                .map_err(unreadable(&format!("a limits journal entry of {tenant:?}")))
        })
        .collect()
}
