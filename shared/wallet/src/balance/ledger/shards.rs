//! A wallet's count of shards raised (`inboxctl wallet set --shards K`): the new shard items
//! created empty and the wallet item's `shards` set, in one transaction conditioned on the count
//! read (see [`crate::balance::items::shards`]). The count is only ever raised: a lower one is refused
//! (a shard's amounts and the holds on it would have to move first; the design keeps shards
//! cheap to keep instead: an idle shard costs nothing but its read).

use super::{wallet, LedgerError};
use crate::balance::items::shards::{new_shard, raise_count, MAX_SHARDS};
use crate::tenant::TenantId;
use inbox_core::store::{Applied, ItemStore, ItemWriter};

/// What [`set_shards`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardsSet {
    pub before: u32,
    pub after: u32,
}

/// Why a wallet's count of shards was not changed.
#[derive(Debug, thiserror::Error)]
pub enum ShardsError {
    #[error("no wallet for tenant {0:?}")]
    NoWallet(String),
    #[error(
        "the wallet has {have} shards; lowering it to {asked} is refused (shards are only ever added)"
    )]
    Lower { have: u32, asked: u32 },
    #[error("a wallet has between 1 and {MAX_SHARDS} shards, not {0}")]
    OutOfRange(u32),
    #[error("the wallet's shards changed while they were raised; run it again")]
    Changed,
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Raises the wallet's count of shards to `k` (the same count: nothing written).
pub async fn set_shards<S: ItemStore + ItemWriter>(
    store: &S,
    tenant: &TenantId,
    k: u32,
) -> Result<ShardsSet, ShardsError> {
    if !(1..=MAX_SHARDS).contains(&k) {
        return Err(ShardsError::OutOfRange(k));
    }
    let Some(wallet) = wallet(store, tenant).await? else {
        return Err(ShardsError::NoWallet(tenant.as_str().to_owned()));
    };
    let have = wallet.shard_count();
    if k < have {
        return Err(ShardsError::Lower { have, asked: k });
    }
    let set = ShardsSet {
        before: have,
        after: k,
    };
    if k == have {
        return Ok(set);
    }
    let mut effects: Vec<_> = (have..k).map(|n| new_shard(tenant, n)).collect();
    effects.push(raise_count(tenant, have, k));
    match store.commit(effects).await.map_err(LedgerError::from)? {
        Applied::Done => Ok(set),
        Applied::EffectConflict | Applied::MessageConflict => Err(ShardsError::Changed),
    }
}
