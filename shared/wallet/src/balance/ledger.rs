//! [`Ledger`]: the wallets as operators, reports and the handler read them, and the writes outside
//! event processing (creating a wallet, registering the wallets created before the registry),
//! over the core's item store. Reconciliation reads through it ([`crate::reconcile`]); it knows
//! nothing of reconciliation. Its autopay (settings, attempts, journal, the operator's changes):
//! `autopay/ledger.rs`; a wallet's limits changed later (floor, review threshold, journaled):
//! `balance/ledger/limits.rs`; its count of shards raised: `balance/ledger/shards.rs`; the unmatched payments (listed, bound to a tenant): `payments/ledger.rs`;
//! its rows and entries read: `balance/ledger/rows.rs`. [`crate::ledger`] gathers them for operators.

mod limits;
mod rows;
mod shards;

pub use limits::{LimitsChange, LimitsSet};
pub(crate) use rows::rows_of;
pub use rows::{Entries, Rows};
pub use shards::{ShardsError, ShardsSet};

use crate::balance::items::shards::{refills, shard_key, Part};
use crate::balance::items::{
    register_wallet, registered_tenant, registry_complete, wallet_pk, KIND_WALLET,
    REGISTRY_COMPLETE_SK, REGISTRY_PK, REGISTRY_PREFIX, WALLET_SK,
};
use crate::balance::model::Wallet;
use crate::tenant::TenantId;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter, StoreError};
use std::collections::BTreeSet;

/// How many times [`Ledger::wallet`] reads a sharded wallet again while refills move under it.
const SETTLE_TRIES: u32 = 8;

/// What [`Ledger::create`] did.
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

/// What [`Ledger::reindex`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Reindexed {
    /// Wallets found by the scan.
    pub wallets: usize,
    /// Of those, the ones that were not registered yet.
    pub newly_registered: usize,
}

/// The wallet ledger on a store (a borrowed view: build one wherever a store is at hand).
#[derive(Debug)]
pub struct Ledger<'s, S> {
    pub(crate) store: &'s S,
}

impl<S> Clone for Ledger<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Ledger<'_, S> {}

impl<'s, S: ItemStore> Ledger<'s, S> {
    pub fn new(store: &'s S) -> Self {
        Self { store }
    }

    pub fn store(&self) -> &'s S {
        self.store
    }

    /// Registers the tenant, then stores its new wallet unless it has one (a conditional write
    /// that never overwrites: an existing wallet's balance is the sum of its entries). Registered
    /// first, so the registry always lists every wallet (a registered tenant whose wallet was
    /// never written is skipped by reconciliation); each is one single-item write.
    pub async fn create(&self, wallet: &Wallet) -> Result<CreateOutcome, StoreError>
    where
        S: ItemWriter,
    {
        self.store
            .commit(vec![register_wallet(&wallet.tenant)])
            .await?;
        match self
            .store
            .commit(vec![Effect::Create(wallet.to_item())])
            .await?
        {
            Applied::Done => Ok(CreateOutcome::Created),
            Applied::EffectConflict | Applied::MessageConflict => Ok(CreateOutcome::AlreadyExists),
        }
    }

    /// The wallet of `tenant`, if it has one: for a wallet of K > 1 shards their sums as of one
    /// moment as far as refills go (K + 1 reads: see [`Ledger::wallet_and_item`]).
    pub async fn wallet(&self, tenant: &TenantId) -> Result<Option<Wallet>, LedgerError> {
        Ok(self.wallet_and_item(tenant).await?.map(|(w, _)| w))
    }

    /// The wallet of `tenant` (its shards summed) and its wallet item (shard 0) as stored, for
    /// the attributes the wallet does not model (the API's extra flags). The K shards are read
    /// at once, so a refill committed between two of the reads would count its amount twice or
    /// not at all: shard 0 is read again after the others and the whole read repeated (a few
    /// times at most) until its refill counter did not move in between. The movements' own
    /// path reads without that check ([`Ledger::wallet_as_read`]).
    pub async fn wallet_and_item(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<(Wallet, Item)>, LedgerError> {
        let mut tries = 0;
        loop {
            let Some((wallet, item)) = self.read_wallet(tenant).await? else {
                return Ok(None);
            };
            tries += 1;
            if wallet.shard_count() == 1 || tries >= SETTLE_TRIES {
                return Ok(Some((wallet, item)));
            }
            let again = self.store.get_item(&wallet_pk(tenant), WALLET_SK).await?;
            if again.as_ref().map(refills) == Some(refills(&item)) {
                return Ok(Some((wallet, item)));
            }
        }
    }

    /// The wallet as its K shards read at once (K reads): exact for one shard; for more, a refill
    /// committed during the reads may show its amount twice or not at all. What the movements
    /// decide on (a hold's conditional write makes it exact; its refusal is confirmed by
    /// [`Ledger::wallet`]).
    pub async fn wallet_as_read(&self, tenant: &TenantId) -> Result<Option<Wallet>, LedgerError> {
        Ok(self.read_wallet(tenant).await?.map(|(w, _)| w))
    }

    pub(crate) async fn read_wallet(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<(Wallet, Item)>, LedgerError> {
        let Some(item) = self.store.get_item(&wallet_pk(tenant), WALLET_SK).await? else {
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
            (n, self.store.get_item(&pk, &sk).await)
        });
        let mut others = Vec::new();
        for (n, read) in futures_util::future::join_all(reads).await {
            let what = format!("shard {n} of the wallet of tenant {tenant:?}");
            let item =
                read?.ok_or_else(|| LedgerError::Unreadable(format!("{what} is missing")))?;
            others.push(Part::from_item(n, &item).map_err(unreadable(&what))?);
        }
        let wallet = wallet
            .with_shards(others)
            .map_err(|e| LedgerError::Unreadable(format!("{what}: {e}")))?;
        Ok(Some((wallet, item)))
    }

    /// The tenants with a wallet: the registry (one `Query` of its partition). Until the registry
    /// is marked complete (`inboxctl wallet reindex`), wallets created before it existed are
    /// found by a scan as well, and listed as unregistered.
    pub async fn tenants(&self) -> Result<Tenants, StoreError> {
        let complete = self
            .store
            .get_item(REGISTRY_PK, REGISTRY_COMPLETE_SK)
            .await?
            .is_some();
        let registered = self.registered().await?;
        if complete {
            return Ok(Tenants {
                tenants: registered.into_iter().collect(),
                registry_complete: true,
                unregistered: Vec::new(),
            });
        }
        let scanned = self.scanned_tenants().await?;
        let unregistered: Vec<TenantId> = scanned.difference(&registered).cloned().collect();
        Ok(Tenants {
            tenants: registered.union(&scanned).cloned().collect(),
            registry_complete: false,
            unregistered,
        })
    }

    /// The tenants in the registry.
    async fn registered(&self) -> Result<BTreeSet<TenantId>, StoreError> {
        Ok(self
            .store
            .query_items(REGISTRY_PK, REGISTRY_PREFIX)
            .await?
            .iter()
            .filter_map(registered_tenant)
            .collect())
    }

    /// Every wallet's tenant, by a scan of the table (the registry's fallback and its migration).
    async fn scanned_tenants(&self) -> Result<BTreeSet<TenantId>, StoreError> {
        Ok(self
            .store
            .items_of_kind(KIND_WALLET)
            .await?
            .iter()
            .filter_map(|i| get_s(i, "tenant").and_then(|t| TenantId::stored(t).ok()))
            .collect())
    }

    /// Registers every wallet (found by one scan) and then marks the registry complete, so that
    /// reconciliation stops scanning. Idempotent; run once after upgrading from a version without
    /// the registry (wallets created since are registered as they are created).
    pub async fn reindex(&self, now_ms: i64) -> Result<Reindexed, StoreError>
    where
        S: ItemWriter,
    {
        let registered = self.registered().await?;
        let scanned = self.scanned_tenants().await?;
        let missing: Vec<&TenantId> = scanned.difference(&registered).collect();
        for chunk in missing.chunks(25) {
            let effects = chunk.iter().map(|t| register_wallet(t)).collect();
            self.store.commit(effects).await?;
        }
        self.store.commit(vec![registry_complete(now_ms)]).await?;
        Ok(Reindexed {
            wallets: scanned.len(),
            newly_registered: missing.len(),
        })
    }
}
