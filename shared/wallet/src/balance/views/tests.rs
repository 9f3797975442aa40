//! The view on the in-memory store, its reads counted: at K > 1 a warm view makes a hold read
//! its own shard alone (not the other shards, not the AUTOPAY item); the TTL on the injected
//! clock expires it; a raised K is picked up once it does; without a view, or at K = 1, every
//! hold reads as before; a hold its own shard cannot pay reads every shard.

use super::*;
use crate::balance::items::shards::{pick, shard_key};
use crate::balance::items::wallet_pk;
use crate::email::holds::{HoldOutcome, HoldRequest, Holds};
use crate::money::Currency;
use crate::Ledger;
use inbox_core::clock::ManualClock;
use inbox_core::store::attr::n;
use inbox_core::store::memory::MemoryStore;
use inbox_core::store::Effect;
use inbox_core::store::{Applied, ItemWriter, StoreError};

const T0: i64 = 1_795_000_000_000;
const TTL: Duration = Duration::from_millis(1_000);

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// The in-memory store, every `get_item`'s key recorded.
#[derive(Default)]
struct Reads {
    inner: MemoryStore,
    keys: Mutex<Vec<(String, String)>>,
}

impl Reads {
    fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *self.keys.lock().unwrap())
    }
}

impl ItemStore for Reads {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.keys.lock().unwrap().push((pk.into(), sk.into()));
        self.inner.get_item(pk, sk).await
    }

    async fn query_items(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.inner.query_items(pk, sk_prefix).await
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        self.inner.items_of_kind(kind).await
    }
}

impl ItemWriter for Reads {
    async fn commit(&self, effects: Vec<Effect>) -> Result<Applied, StoreError> {
        self.inner.commit(effects).await
    }
}

/// A wallet of `k` shards, each with 1,000 (shard 0 above its floor of 0 too), price 5.
async fn wallet_of(k: u32) -> Reads {
    let store = Reads::default();
    let usd = Currency::parse("usd").unwrap();
    let mut wallet = Wallet::new(acme(), usd.amount(5), usd.amount(0), None, T0);
    wallet.balance = usd.amount(1_000);
    let ledger = Ledger::new(&store.inner);
    ledger.create(&wallet).await.unwrap();
    ledger.set_shards(&acme(), k).await.unwrap();
    fund(&store, 1..k, 1_000).await;
    store.take();
    store
}

/// Sets the balance of shards `range` (n ≥ 1) to `balance`.
async fn fund(store: &Reads, range: std::ops::Range<u32>, balance: i64) {
    for shard in range {
        let (pk, sk) = shard_key("acme", shard);
        let mut item = store.inner.get_item(&pk, &sk).await.unwrap().unwrap();
        item.insert("balance".into(), n(balance));
        store.inner.put_item(item);
    }
}

fn holds<'s>(store: &'s Reads, views: &WalletViews) -> Holds<'s, Reads> {
    Holds::new(store)
        .with_clock(Arc::new(ManualClock::at_millis(T0)))
        .with_pause(Arc::new(|_| Box::pin(async {})), Arc::new(|| 0.0))
        .with_views(views.clone())
}

async fn hold(store: &Reads, views: &WalletViews, message_id: &str, amount: i64) -> HoldOutcome {
    let request = HoldRequest {
        tenant: acme(),
        message_id: message_id.into(),
        amount: Some(amount),
        hold_id: format!("hold_{message_id}"),
        expires_in: None,
    };
    holds(store, views)
        .place(&request, |_| Vec::new())
        .await
        .unwrap()
}

/// The wallet's items a hold read: (its shard items, whether it read the AUTOPAY item).
fn read_of(keys: &[(String, String)]) -> (Vec<(String, String)>, bool) {
    let autopay = keys
        .iter()
        .any(|(pk, sk)| pk == &wallet_pk("acme") && sk == "AUTOPAY");
    let shards = (0..64)
        .map(|s| shard_key("acme", s))
        .filter(|k| keys.contains(k))
        .collect();
    (shards, autopay)
}

fn views_on(clock: &Arc<ManualClock>) -> WalletViews {
    WalletViews::new(TTL, clock.clone())
}

#[tokio::test]
async fn a_warm_view_makes_a_hold_read_its_own_shard_alone_until_the_ttl() {
    let store = wallet_of(8).await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let views = views_on(&clock);
    // Cold: every shard and the AUTOPAY item, as without a view.
    assert!(matches!(
        hold(&store, &views, "m0", 5).await,
        HoldOutcome::Held(_)
    ));
    let (shards, autopay) = read_of(&store.take());
    assert_eq!((shards.len(), autopay), (8, true));
    assert_eq!(views.len(), 1);
    // Warm: the hold's own shard, strongly, and nothing else.
    for i in 1..20 {
        let m = format!("m{i}");
        assert!(matches!(
            hold(&store, &views, &m, 5).await,
            HoldOutcome::Held(_)
        ));
        let keys = store.take();
        assert_eq!(keys, vec![shard_key("acme", pick(&m, 8))], "hold {m}");
    }
    // The TTL passed on the view's clock: read whole again.
    clock.advance_millis(1_000);
    assert!(matches!(
        hold(&store, &views, "m20", 5).await,
        HoldOutcome::Held(_)
    ));
    let (shards, autopay) = read_of(&store.take());
    assert_eq!((shards.len(), autopay), (8, true));
    // And the money is exact: 21 holds of 5 on the sum.
    let wallet = Ledger::new(&store).wallet(&acme()).await.unwrap().unwrap();
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (8_000, 105));
}

#[tokio::test]
async fn without_a_view_or_at_one_shard_every_hold_reads_as_before() {
    // No view: all 8 shards and the AUTOPAY item, every time.
    let store = wallet_of(8).await;
    let none = WalletViews::disabled();
    for i in 0..3 {
        hold(&store, &none, &format!("m{i}"), 5).await;
        let (shards, autopay) = read_of(&store.take());
        assert_eq!((shards.len(), autopay), (8, true));
    }
    assert!(none.is_empty());
    // K = 1 with a view: the one item (the hold's own shard) and the AUTOPAY item, every time.
    let store = wallet_of(1).await;
    let views = views_on(&Arc::new(ManualClock::at_millis(T0)));
    for i in 0..3 {
        hold(&store, &views, &format!("m{i}"), 5).await;
        let (shards, autopay) = read_of(&store.take());
        assert_eq!((shards, autopay), (vec![shard_key("acme", 0)], true));
    }
    assert!(views.is_empty(), "a wallet of one shard is never kept");
}

#[tokio::test]
async fn a_hold_its_own_shard_cannot_pay_reads_every_shard() {
    let store = wallet_of(4).await;
    let views = views_on(&Arc::new(ManualClock::at_millis(T0)));
    hold(&store, &views, "warm", 5).await;
    store.take();
    // A message whose shard holds 1,000 asks for 1,500: the whole wallet (4,000) affords it.
    let m = (0..)
        .map(|i| format!("big{i}"))
        .find(|m| pick(m, 4) == 1)
        .unwrap();
    assert!(matches!(
        hold(&store, &views, &m, 1_500).await,
        HoldOutcome::Held(_)
    ));
    let (shards, _) = read_of(&store.take());
    assert_eq!(shards.len(), 4, "read whole before its refill");
    // A refusal: more than the whole wallet has.
    let outcome = hold(&store, &views, "huge", 100_000).await;
    assert!(matches!(outcome, HoldOutcome::InsufficientFunds { .. }));
    let (shards, _) = read_of(&store.take());
    assert!(shards.len() >= 4, "refused on every shard read strongly");
}

#[tokio::test]
async fn a_raised_count_of_shards_is_picked_up_when_the_view_expires() {
    let store = wallet_of(2).await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let views = views_on(&clock);
    hold(&store, &views, "warm", 5).await;
    Ledger::new(&store.inner)
        .set_shards(&acme(), 8)
        .await
        .unwrap();
    fund(&store, 2..8, 1_000).await;
    store.take();
    // Within the TTL the holds pick within the two shards viewed (both exist).
    for i in 0..10 {
        let m = format!("m{i}");
        hold(&store, &views, &m, 5).await;
        assert_eq!(store.take(), vec![shard_key("acme", pick(&m, 2))]);
    }
    clock.advance_millis(1_000);
    hold(&store, &views, "after", 5).await;
    let (shards, _) = read_of(&store.take());
    assert_eq!(shards.len(), 8);
    let m = (0..)
        .map(|i| format!("k{i}"))
        .find(|m| pick(m, 8) >= 2)
        .unwrap();
    hold(&store, &views, &m, 5).await;
    assert_eq!(store.take(), vec![shard_key("acme", pick(&m, 8))]);
}

#[tokio::test]
async fn a_refill_another_instance_made_on_a_viewed_shard_makes_the_next_hold_there_read_them_all()
{
    // 8 shards of 1,000; this instance's view is warm.
    let store = wallet_of(8).await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let views = views_on(&clock);
    let warm = (0..)
        .map(|i| format!("w{i}"))
        .find(|m| pick(m, 8) == 1)
        .unwrap();
    assert!(matches!(
        hold(&store, &views, &warm, 5).await,
        HoldOutcome::Held(_)
    ));
    // Another instance (no view) holds 1,500 on shard 2: the others refill it, so money moves
    // between shard 2 and shards this view still has as they were.
    let big = (0..)
        .map(|i| format!("b{i}"))
        .find(|m| pick(m, 8) == 2)
        .unwrap();
    let HoldOutcome::Held(_) = hold(&store, &WalletViews::disabled(), &big, 1_500).await else {
        panic!("the wallet affords it")
    };
    store.take();
    // The next hold on shard 2 through the view: its counter says a refill moved it since the
    // view was read, so every shard is read again and the total is exact (8,000 − 5 − 1,500 − 5),
    // not shard 2's new balance over the others' old ones.
    let next = (0..)
        .map(|i| format!("n{i}"))
        .find(|m| pick(m, 8) == 2)
        .unwrap();
    let HoldOutcome::Held(held) = hold(&store, &views, &next, 5).await else {
        panic!("the wallet affords it")
    };
    assert_eq!(held.available.minor(), 8_000 - 5 - 1_500 - 5);
    let (shards, _) = read_of(&store.take());
    assert_eq!(shards.len(), 8, "all of them, read again: {shards:?}");
    // A shard no refill moved (the donors were the last two, richest first by shard) reads
    // alone again, over the view just refreshed.
    let calm = (0..)
        .map(|i| format!("c{i}"))
        .find(|m| pick(m, 8) == 3)
        .unwrap();
    let HoldOutcome::Held(held) = hold(&store, &views, &calm, 5).await else {
        panic!("the wallet affords it")
    };
    // Its total is the view's: late by the one hold on shard 2 since the view was read (the
    // ordinary window), never by money a refill moved.
    assert_eq!(held.available.minor(), 8_000 - 5 - 1_500 - 5);
    let (shards, _) = read_of(&store.take());
    assert_eq!(shards, vec![shard_key("acme", 3)]);
}
