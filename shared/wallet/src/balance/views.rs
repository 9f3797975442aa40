//! [`WalletViews`]: a function instance's cached view of sharded wallets, so that a movement on a
//! wallet of K > 1 shards reads only its own shard strongly (one read unit on that shard's
//! partition) and takes the rest from a copy read at most `WALLET_VIEW_MS` ago: the wallet item
//! (shard 0: price, floor, flags, low / crossings, review, K), the other shards' amounts, and the
//! AUTOPAY item. Without it every movement read all K shards and the AUTOPAY item, so every one
//! of those partitions saw one read per movement of the whole tenant (3,000 read units a second
//! capped a tenant near 3,000 movements a second whatever K).
//!
//! What stays exact, and what may be late:
//!
//! - At K = 1 nothing is cached: the one item is the movement's own shard, read strongly every
//!   time (exactly as without a view).
//! - The money: a hold is a bounded conditional write on its own shard (read fresh), a debit or a
//!   release a commutative add on the shard its hold is on; a hold its own shard cannot pay, a
//!   refusal and every refill read all K shards strongly first (and refresh the view). A view is
//!   read settled (no refill moved during its reads), and a movement whose own shard's refill
//!   counter differs from the view's copy reads the whole wallet again: a refill moves money
//!   between shards, and the fresh shard over the others' old copies would count it twice or
//!   not at all (one between two other shards cancels out in the view's sum).
//! - K only ever rises: a stale K picks within the older range of shards, which all exist.
//! - Notices, the overdrawn / review flags and autopay's threshold decide on the view: at K > 1
//!   they see the other shards up to `WALLET_VIEW_MS` late (level-triggered, so late, not lost;
//!   their ids are deterministic and their writes `CreateIfAbsent`, so nothing is announced
//!   twice). A threshold decision that would write (an attempt, a cap's refusal) is made again on
//!   the AUTOPAY item read strongly, whose write is conditioned on the version read.
//!
//! Built once per instance (`Arc` inside: clones share it) with an injected clock; a TTL of 0 is
//! "no view" ([`WalletViews::disabled`], the default of the handler and of [`crate::email::holds::Holds`]).
//! Only wallets of K > 1 shards (and their AUTOPAY items) are kept: one entry per hot tenant the
//! instance moved, replaced when read again.

use crate::autopay::Autopay;
use crate::balance::items::shards::{refills, shard_key};
use crate::balance::ledger::{read_wallet, unreadable, wallet_and_item, LedgerError};
use crate::balance::model::ShardFigures;
use crate::balance::model::Wallet;
use crate::tenant::TenantId;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::store::{Item, ItemStore};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The default of `WALLET_VIEW_MS`: a view is at most one second old.
pub const DEFAULT_VIEW_MS: u64 = 1_000;

/// One tenant's cached wallet: shard 0's item and the other shards' amounts, as read at `at`.
#[derive(Debug, Clone)]
struct View {
    at: i64,
    item: Item,
    others: Vec<ShardFigures>,
}

#[derive(Default)]
struct Cached {
    wallets: HashMap<TenantId, View>,
    /// The AUTOPAY item (`None`: the tenant has none) and when it was read.
    autopay: HashMap<TenantId, (i64, Option<Autopay>)>,
}

struct Inner {
    ttl_ms: i64,
    clock: Arc<dyn Clock>,
    cached: Mutex<Cached>,
}

/// The per-instance cache of sharded wallets' views (clones share it).
#[derive(Clone)]
pub struct WalletViews {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WalletViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalletViews")
            .field("ttl_ms", &self.inner.ttl_ms)
            .finish_non_exhaustive()
    }
}

impl Default for WalletViews {
    /// No view ([`WalletViews::disabled`]).
    fn default() -> Self {
        Self::disabled()
    }
}

/// A wallet as a movement decides on it, and whether all its shards were just read strongly.
#[derive(Debug, Clone)]
pub(crate) struct Viewed {
    pub wallet: Wallet,
    /// Shard 0's item as read or viewed (the wallet's own attributes).
    item: Item,
    /// Every shard read strongly by this call (K = 1, no view, or none fresh).
    pub whole: bool,
}

impl WalletViews {
    /// Views kept `ttl` on `clock` (a zero `ttl`: none kept).
    pub fn new(ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
                clock,
                cached: Mutex::new(Cached::default()),
            }),
        }
    }

    /// Views kept `ttl` on the system clock (the deployed functions').
    pub fn system(ttl: Duration) -> Self {
        Self::new(ttl, Arc::new(SystemClock))
    }

    /// No view: every movement reads all of its wallet's shards and the AUTOPAY item.
    pub fn disabled() -> Self {
        Self::system(Duration::ZERO)
    }

    /// Whether views are kept at all.
    pub fn enabled(&self) -> bool {
        self.inner.ttl_ms > 0
    }

    /// How many tenants have a wallet view right now (fresh or not; tests and metrics).
    pub fn len(&self) -> usize {
        self.lock().wallets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.inner.cached.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fresh(&self, at: i64) -> bool {
        self.enabled() && self.inner.clock.now_millis().saturating_sub(at) < self.inner.ttl_ms
    }

    fn view(&self, tenant: &TenantId) -> Option<View> {
        let view = self.lock().wallets.get(tenant).cloned()?;
        self.fresh(view.at).then_some(view)
    }

    /// Keeps a wallet of K > 1 shards as just read whole (K = 1 is never kept).
    fn keep(&self, wallet: &Wallet, item: &Item) {
        if !self.enabled() || wallet.shard_count() <= 1 {
            return;
        }
        let view = View {
            at: self.inner.clock.now_millis(),
            item: item.clone(),
            others: wallet
                .shards
                .iter()
                .filter(|p| p.shard != 0)
                .cloned()
                .collect(),
        };
        self.lock().wallets.insert(wallet.tenant.clone(), view);
    }

    /// Puts one shard read fresher into a kept view (its age unchanged).
    fn update(&self, tenant: &TenantId, item: Option<&Item>, part: Option<&ShardFigures>) {
        let mut cached = self.lock();
        let Some(view) = cached.wallets.get_mut(tenant) else {
            return;
        };
        if let Some(item) = item {
            view.item = item.clone();
        }
        if let Some(part) = part {
            if let Some(p) = view.others.iter_mut().find(|p| p.shard == part.shard) {
                *p = part.clone();
            }
        }
    }

    pub(crate) fn autopay(&self, tenant: &TenantId) -> Option<Option<Autopay>> {
        let (at, autopay) = self.lock().autopay.get(tenant).cloned()?;
        self.fresh(at).then_some(autopay)
    }

    pub(crate) fn keep_autopay(&self, tenant: &TenantId, autopay: &Option<Autopay>) {
        if self.enabled() {
            let at = self.inner.clock.now_millis();
            self.lock()
                .autopay
                .insert(tenant.clone(), (at, autopay.clone()));
        }
    }
}

/// The wallet of shard 0's `item` and the other shards' amounts.
fn assemble(
    tenant: &TenantId,
    item: &Item,
    others: Vec<ShardFigures>,
) -> Result<Wallet, LedgerError> {
    let what = format!("the wallet item of tenant {tenant:?}");
    let wallet = Wallet::from_item(item).map_err(unreadable(&what))?;
    wallet
        .with_shards(others)
        .map_err(|e| LedgerError::Unreadable(format!("{what}: {e}")))
}

/// The wallet a movement of `tenant` starts from: a fresh view of a sharded wallet as kept
/// (no read), else every shard read strongly ([`read_wallet`]) and kept. Then
/// [`own_shard`] reads the movement's shard.
pub(crate) async fn viewed<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    views: &WalletViews,
) -> Result<Option<Viewed>, LedgerError> {
    if let Some(view) = views.view(tenant) {
        let wallet = assemble(tenant, &view.item, view.others)?;
        return Ok(Some(Viewed {
            wallet,
            item: view.item,
            whole: false,
        }));
    }
    let Some((wallet, item)) = settled(store, tenant, views).await? else {
        return Ok(None);
    };
    views.keep(&wallet, &item);
    Ok(Some(Viewed {
        wallet,
        item,
        whole: true,
    }))
}

/// The K shards read strongly: settled (no refill moved during the reads, see
/// [`wallet_and_item`]: one more read) when a view is kept from them, so that the
/// view's sum is one moment's; as read at once when views are off.
async fn settled<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    views: &WalletViews,
) -> Result<Option<(Wallet, Item)>, LedgerError> {
    if views.enabled() {
        wallet_and_item(store, tenant).await
    } else {
        read_wallet(store, tenant).await
    }
}

/// Every shard read strongly (K reads, settled when kept), and the view kept.
pub(crate) async fn whole<S: ItemStore>(
    store: &S,
    tenant: &TenantId,
    views: &WalletViews,
) -> Result<Option<Wallet>, LedgerError> {
    let Some((wallet, item)) = settled(store, tenant, views).await? else {
        return Ok(None);
    };
    views.keep(&wallet, &item);
    Ok(Some(wallet))
}

/// The wallet with shard `shard` read strongly (one read) over the view; as it is when all
/// its shards were just read.
pub(crate) async fn own_shard<S: ItemStore>(
    store: &S,
    viewed: Viewed,
    shard: u32,
    views: &WalletViews,
) -> Result<Wallet, LedgerError> {
    if viewed.whole {
        return Ok(viewed.wallet);
    }
    let wallet = viewed.wallet;
    let tenant = wallet.tenant.clone();
    let (pk, sk) = shard_key(&tenant, shard);
    let what = format!("shard {shard} of the wallet of tenant {tenant:?}");
    let read = store
        .get_item(&pk, &sk)
        .await?
        .ok_or_else(|| LedgerError::Unreadable(format!("{what} is missing")))?;
    // A refill that moved this shard since the view was read moved money between it and
    // shards the view still has as they were: the sum would count that money twice or not
    // at all. Its counter says so, and the whole wallet is read again instead. (Refills
    // between other shards cancel out in the view's sum: it was read settled.)
    let seen = if shard == 0 {
        Some(refills(&viewed.item))
    } else {
        wallet
            .shards
            .iter()
            .find(|p| p.shard == shard)
            .map(|p| p.refills)
    };
    if seen.unwrap_or(0) != refills(&read) {
        return whole(store, &tenant, views)
            .await?
            .ok_or_else(|| LedgerError::Unreadable(format!("{what}: the wallet is gone")));
    }
    let others: Vec<ShardFigures> = wallet.shards.into_iter().filter(|p| p.shard != 0).collect();
    if shard == 0 {
        views.update(&tenant, Some(&read), None);
        return assemble(&tenant, &read, others);
    }
    let fresh = ShardFigures::from_item(shard, &read).map_err(unreadable(&what))?;
    views.update(&tenant, None, Some(&fresh));
    // A shard past the viewed count (a hold placed since K rose) joins the sum.
    let mut others: Vec<ShardFigures> = others.into_iter().filter(|p| p.shard != shard).collect();
    others.push(fresh);
    others.sort_by_key(|p| p.shard);
    assemble(&tenant, &viewed.item, others)
}

#[cfg(test)]
mod tests;
