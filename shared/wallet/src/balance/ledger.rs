//! The balance's storage: the wallets as operators, reports and the handler read them, and the
//! writes outside event processing (creating a wallet, registering the wallets created before the
//! registry), as functions of the core's item store. A wallet's limits changed later (floor,
//! review threshold, journaled): `limits.rs`; its count of shards raised: `shards.rs`; its rows and
//! entries read: `rows.rs`. The operator's facade, [`crate::Ledger`], delegates to them (and to
//! autopay's and the payments' own storage); reconciliation reads through it.

mod limits;
mod rows;
mod shards;

pub use limits::{limits_log, set_limits, LimitsChange, LimitsSet};
pub(crate) use rows::rows_of;
pub use rows::{
    email_row, email_rows, entries, payment_index, payment_row, payment_tenant, rows, Entries, Rows,
};
pub use shards::{set_shards, ShardsError, ShardsSet};

use crate::balance::items::shards::{refills, shard_key};
use crate::balance::items::{
    register_wallet, registered_tenant, registry_complete, wallet_pk, KIND_WALLET,
    REGISTRY_COMPLETE_SK, REGISTRY_PK, REGISTRY_PREFIX, WALLET_SK,
};
use crate::balance::model::ShardFigures;
use crate::balance::model::Wallet;
use crate::tenant::TenantId;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter, StoreError};
use std::collections::BTreeSet;

/// How many times [`wallet`] reads a sharded wallet again while refills move under it.
const SETTLE_TRIES: u32 = 8;

/// What [`create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The wallet is stored.
    Created,
    /// The tenant already had a wallet; it was left unchanged.
    AlreadyExists,
}

/// Why a wallet (or one of its rows) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The item exists but is not valid (a missing attribute, an amount that is not a number):
    /// the text says which item and what is wrong. Never read as zero.
    #[error("{0}")]
    Unreadable(String),
}

pub(crate) fn unreadable(what: &str) -> impl FnOnce(String) -> LedgerError + '_ {
    move |reason| LedgerError::Unreadable(format!("{what} is unreadable: {reason}"))
}

/// The tenants that have a wallet, and how they were found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tenants {
    /// Every tenant found, in order.
    pub tenants: Vec<TenantId>,
    /// Whether the registry is complete (then it alone was read: one `Query`, no scan).
    pub registry_complete: bool,
    /// Wallets only the fallback scan found (created before the registry): `inboxctl wallet
    /// reindex` registers them.
    pub unregistered: Vec<TenantId>,
}

/// What [`reindex`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reindexed {
    /// Wallets found by the scan.
    pub wallets: usize,
    /// Of those, the ones that were not registered yet.
    pub newly_registered: usize,
}

/// Registers the tenant, then stores its new wallet unless it has one (a conditional write that
/// never overwrites: an existing wallet's balance is the sum of its entries). Registered first,
/// so the registry always lists every wallet (a registered tenant whose wallet was never written
/// is skipped by reconciliation); each is one single-item write.
pub async fn create<S: ItemWriter>(
    store: &S,
    wallet: &Wallet,
) -> Result<CreateOutcome, StoreError> {
    store.commit(vec![register_wallet(&wallet.tenant)]).await?;
    match store.commit(vec![Effect::Create(wallet.to_item())]).await? {
        Applied::Done => Ok(CreateOutcome::Created),
        Applied::EffectConflict | Applied::MessageConflict => Ok(CreateOutcome::AlreadyExists),
    }
}

/// The wallet of `tenant` (its shards summed) and its wallet item (shard 0) as stored, for the
/// attributes the wallet does not model (the API's extra flags). The K shards are read at once,
/// so a refill committed between two of the reads would count its amount twice or not at all:
/// shard 0 is read again after the others and the whole read repeated (a few times at most)
/// until its refill counter did not move in between. The movements' own path reads without that
/// check ([`read_wallet`]).
pub async fn wallet_and_item<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Option<(Wallet, Item)>, LedgerError> {
    let mut tries = 0;
    loop {
        let Some((wallet, item)) = read_wallet(store, tenant).await? else {
            return Ok(None);
        };
        tries += 1;
        if wallet.shard_count() == 1 || tries >= SETTLE_TRIES {
            return Ok(Some((wallet, item)));
        }
        let again = store.get_item(&wallet_pk(tenant), WALLET_SK).await?;
        if again.as_ref().map(refills) == Some(refills(&item)) {
            return Ok(Some((wallet, item)));
        }
    }
}

/// The wallet of `tenant`, if it has one, settled as [`wallet_and_item`] reads it.
pub async fn wallet<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Option<Wallet>, LedgerError> {
    Ok(wallet_and_item(store, tenant).await?.map(|(w, _)| w))
}

/// The wallet as its K shards read at once (K reads) and its wallet item: exact for one shard;
/// for more, a refill committed during the reads may show its amount twice or not at all. What
/// the movements decide on (a hold's conditional write makes it exact; its refusal is confirmed
/// by [`wallet`]).
pub(crate) async fn read_wallet<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
) -> Result<Option<(Wallet, Item)>, LedgerError> {
    let Some(item) = store.get_item(&wallet_pk(tenant), WALLET_SK).await? else {
        return Ok(None);
    };
    let what = format!("the wallet item of tenant {tenant:?}");
    let wallet = Wallet::from_item(&item).map_err(unreadable(&what))?;
    let k = crate::balance::items::shards::count(&item).map_err(unreadable(&what))?;
    if k == 1 {
        return Ok(Some((wallet, item)));
    }
    // The other shards, read at once: K − 1 more strongly consistent reads (1 read unit each).
    let reads = (1..k).map(|n| async move {
        let (pk, sk) = shard_key(tenant, n);
        (n, store.get_item(&pk, &sk).await)
    });
    let mut others = Vec::new();
    for (n, read) in futures_util::future::join_all(reads).await {
        let what = format!("shard {n} of the wallet of tenant {tenant:?}");
        let item = read?.ok_or_else(|| LedgerError::Unreadable(format!("{what} is missing")))?;
        others.push(ShardFigures::from_item(n, &item).map_err(unreadable(&what))?);
    }
    let wallet = wallet
        .with_shards(others)
        .map_err(|e| LedgerError::Unreadable(format!("{what}: {e}")))?;
    Ok(Some((wallet, item)))
}

/// The tenants with a wallet: the registry (one `Query` of its partition). Until the registry is
/// marked complete (`inboxctl wallet reindex`), wallets created before it existed are found by a
/// scan as well, and listed as unregistered.
pub async fn tenants<S: ItemStore>(store: &S) -> Result<Tenants, StoreError> {
    let complete = store
        .get_item(REGISTRY_PK, REGISTRY_COMPLETE_SK)
        .await?
        .is_some();
    let registered = registered(store).await?;
    if complete {
        return Ok(Tenants {
            tenants: registered.into_iter().collect(),
            registry_complete: true,
            unregistered: Vec::new(),
        });
    }
    let scanned = scanned_tenants(store).await?;
    let unregistered: Vec<TenantId> = scanned.difference(&registered).cloned().collect();
    Ok(Tenants {
        tenants: registered.union(&scanned).cloned().collect(),
        registry_complete: false,
        unregistered,
    })
}

/// The registry alone, never a scan: whether it is marked complete, and its tenants (what a
/// reader without the right to scan, the Stripe reconciliation, reads).
pub async fn registry<S: ItemStore>(store: &S) -> Result<(bool, Vec<TenantId>), StoreError> {
    let complete = store
        .get_item(REGISTRY_PK, REGISTRY_COMPLETE_SK)
        .await?
        .is_some();
    Ok((complete, registered(store).await?.into_iter().collect()))
}

/// The tenants in the registry.
async fn registered<S: ItemStore>(store: &S) -> Result<BTreeSet<TenantId>, StoreError> {
    Ok(store
        .query_items(REGISTRY_PK, REGISTRY_PREFIX)
        .await?
        .iter()
        .filter_map(registered_tenant)
        .collect())
}

/// Every wallet's tenant, by a scan of the table (the registry's fallback and its migration).
async fn scanned_tenants<S: ItemStore>(store: &S) -> Result<BTreeSet<TenantId>, StoreError> {
    Ok(store
        .items_of_kind(KIND_WALLET)
        .await?
        .iter()
        .filter_map(|i| get_s(i, "tenant").and_then(|t| TenantId::stored(t).ok()))
        .collect())
}

/// Registers every wallet (found by one scan) and then marks the registry complete, so that
/// reconciliation stops scanning. Idempotent; run once after upgrading from a version without
/// the registry (wallets created since are registered as they are created).
pub async fn reindex<S: ItemStore + ItemWriter>(
    store: &S,
    now_ms: i64,
) -> Result<Reindexed, StoreError> {
    let registered = registered(store).await?;
    let scanned = scanned_tenants(store).await?;
    let missing: Vec<&TenantId> = scanned.difference(&registered).collect();
    for chunk in missing.chunks(25) {
        let effects = chunk.iter().map(|t| register_wallet(t)).collect();
        store.commit(effects).await?;
    }
    store.commit(vec![registry_complete(now_ms)]).await?;
    Ok(Reindexed {
        wallets: scanned.len(),
        newly_registered: missing.len(),
    })
}
