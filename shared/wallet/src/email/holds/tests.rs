//! Holds on the in-memory store: placed, refused (no wallet, the floor, the row exists),
//! released; exact under 200 concurrent places; a conflicting commit retried with backoff, then
//! `Busy`. The webhooks' settlement of a hold is tested through the processor in
//! `tests/holds.rs`.

use super::*;
use crate::balance::items::{email_sk, wallet_pk, WALLET_SK};
use crate::balance::model::{Entry, Wallet};
use crate::balance::rules::{self, EntryKind};
use crate::email::holds::items::{hold_sk, HOLDS_SOURCE};
use crate::money::Currency;
use crate::reconcile::{reconcile, ReconcileOptions};
use crate::Ledger;
use inbox_core::clock::ManualClock;
use inbox_core::clock::Millis;
use inbox_core::store::attr::{get_s, n, s};
use inbox_core::store::memory::MemoryStore;
use inbox_core::store::{Applied, Effect, Item, StoreError};
use std::sync::atomic::{AtomicUsize, Ordering};

const T0: i64 = 1_795_000_000_000;
const PRICE: i64 = 5;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// A store over the in-memory one that yields to other tasks before every request (so
/// concurrent places interleave between their read and their commit), and answers the first
/// `fail` commits with a conflict (writing nothing).
#[derive(Default)]
struct Interleaved {
    inner: MemoryStore,
    fail: AtomicUsize,
    commits: AtomicUsize,
}

impl ItemStore for Interleaved {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        tokio::task::yield_now().await;
        self.inner.get_item(pk, sk).await
    }

    async fn query_items(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.inner.query_items(pk, sk_prefix).await
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        self.inner.items_of_kind(kind).await
    }
}

impl ItemWriter for Interleaved {
    async fn commit(&self, effects: Vec<Effect>) -> Result<Applied, StoreError> {
        tokio::task::yield_now().await;
        self.commits.fetch_add(1, Ordering::SeqCst);
        let failed = self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failed {
            return Ok(Applied::EffectConflict);
        }
        self.inner.commit(effects).await
    }
}

/// A store with `tenant`'s wallet at `balance` and `floor` (nothing held), the wallet registered.
async fn store_with(balance: i64, floor: i64) -> Interleaved {
    let store = Interleaved::default();
    let mut wallet = Wallet::new(acme(), usd().amount(PRICE), usd().amount(floor), None, T0);
    wallet.balance = usd().amount(balance);
    Ledger::new(&store.inner).create(&wallet).await.unwrap();
    store.inner.put_item(old_topup(balance));
    store
}

/// The entry of a top-up of `amount` to `acme`'s wallet, older than the inbox's retention (so
/// reconciliation looks for no webhook of it): a wallet's balance as the sum of its entries.
pub(crate) fn old_topup(amount: i64) -> Item {
    let topup = rules::payment(
        rules::PaymentState::default(),
        rules::PaymentEvent::Paid { amount },
        usd(),
    )
    .unwrap()
    .1[0];
    let long_ago = T0 - 40 * 86_400_000;
    Entry::of(
        "topup".into(),
        &acme(),
        &topup,
        "pi_1",
        ("stripe", "evt_1"),
        long_ago,
    )
    .to_item()
}

/// Holds that never sleep, at `T0`, recording the waits they asked for.
fn holds<S: ItemStore + ItemWriter>(store: &S, waits: Arc<Mutex<Vec<Duration>>>) -> Holds<'_, S> {
    Holds::new(store)
        .with_clock(Arc::new(ManualClock::at_millis(T0)))
        .with_pause(
            Arc::new(move |d| {
                waits.lock().unwrap().push(d);
                Box::pin(async {})
            }),
            Arc::new(|| 0.5),
        )
}

fn request(message_id: &str, hold_id: &str, amount: Option<i64>) -> HoldRequest {
    HoldRequest {
        tenant: acme(),
        message_id: message_id.into(),
        amount,
        hold_id: hold_id.into(),
        expires_in: None,
    }
}

fn nothing<T>(_: &T) -> Vec<Effect> {
    Vec::new()
}

fn wallet(store: &Interleaved) -> Wallet {
    Wallet::from_item(&store.inner.item(&wallet_pk("acme"), WALLET_SK).unwrap()).unwrap()
}

fn opts() -> ReconcileOptions {
    ReconcileOptions::new(i64::MAX, Duration::from_secs(30 * 86_400))
}

#[tokio::test]
async fn a_hold_writes_its_row_pointer_entry_and_held_amount_in_one_commit() {
    let store = store_with(10_000, 2_000).await;
    let h = holds(&store, Arc::default());
    let idempotency = |held: &Held| {
        vec![Effect::Create(Item::from([
            ("pk".to_string(), s("IDEMPOTENCY#k1")),
            ("sk".to_string(), s("KEY")),
            ("hold".to_string(), s(&held.hold_id)),
        ]))]
    };
    let outcome = h
        .place(&request("m1", "h1", Some(300)), idempotency)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        HoldOutcome::Held(Held {
            hold_id: "h1".into(),
            message_id: "m1".into(),
            amount: usd().amount(300),
            available: usd().amount(9_700),
            expires_at: T0 + 86_400_000,
        })
    );
    let w = wallet(&store);
    assert_eq!(
        (w.balance.minor(), w.held.minor(), w.changes),
        (10_000, 300, 1)
    );
    let row = Ledger::new(&store)
        .email_row(&acme(), "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            row.state,
            row.amount.get(),
            row.hold_id.as_deref(),
            row.held_at,
            row.version
        ),
        (
            EmailState::Held,
            300,
            Some("h1"),
            Some(Millis::new(T0)),
            Some(0)
        )
    );
    let pointer = store
        .inner
        .item(&wallet_pk("acme"), &hold_sk("h1"))
        .unwrap();
    assert_eq!(get_s(&pointer, "message_id"), Some("m1"));
    let entries = Ledger::new(&store).entries(&w).await.unwrap().entries;
    let hold = entries.iter().find(|e| e.kind == EntryKind::Hold).unwrap();
    assert_eq!(
        (
            hold.subject.as_str(),
            hold.event_source.as_str(),
            hold.event_id.as_str()
        ),
        ("m1", HOLDS_SOURCE, "h1")
    );
    assert_eq!(hold.held_delta.minor(), 300);
    let key = store.inner.item("IDEMPOTENCY#k1", "KEY").unwrap();
    assert_eq!(
        get_s(&key, "hold"),
        Some("h1"),
        "the caller's effect, committed with it"
    );
    // The default amount is the wallet's price.
    let Ok(HoldOutcome::Held(second)) = h.place(&request("m2", "h2", None), nothing).await else {
        panic!("the second hold")
    };
    assert_eq!(second.amount.minor(), PRICE);
    let report = reconcile(&store.inner, T0, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_hold_is_refused_below_the_floor_for_an_existing_row_or_without_a_wallet() {
    let store = store_with(2_500, 2_000).await;
    let h = holds(&store, Arc::default());
    assert_eq!(
        h.place(&request("m1", "h1", Some(501)), nothing)
            .await
            .unwrap(),
        HoldOutcome::InsufficientFunds {
            available: usd().amount(2_500),
            floor: usd().amount(2_000),
            amount: usd().amount(501),
        },
        "available − amount would be 1 below the floor"
    );
    assert_eq!(wallet(&store).held.minor(), 0, "nothing written");
    assert!(store
        .inner
        .item(&wallet_pk("acme"), &email_sk("m1"))
        .is_none());
    assert!(
        matches!(
            h.place(&request("m1", "h1", Some(500)), nothing).await.unwrap(),
            HoldOutcome::Held(Held { available, .. }) if available.minor() == 2_000
        ),
        "exactly down to the floor"
    );
    assert_eq!(
        h.place(&request("m2", "h2", Some(1)), nothing)
            .await
            .unwrap(),
        HoldOutcome::InsufficientFunds {
            available: usd().amount(2_000),
            floor: usd().amount(2_000),
            amount: usd().amount(1),
        }
    );
    // The same message again (under another hold id), or another message under a taken id:
    // the wallet at its floor (found by a read, nothing tried), then affordable (found by the
    // failed condition, read again, not retried).
    let taken = HoldOutcome::AlreadyExists {
        hold_id: Some("h1".into()),
        state: EmailState::Held,
    };
    let commits = store.commits.load(Ordering::SeqCst);
    let again = [request("m1", "h9", Some(1)), request("m5", "h1", Some(1))];
    for (tries, raise) in [(0, 1_000), (2, 0)] {
        for r in &again {
            assert_eq!(h.place(r, nothing).await.unwrap(), taken, "{r:?}");
        }
        assert_eq!(store.commits.load(Ordering::SeqCst), commits + tries);
        store
            .inner
            .commit(vec![Effect::Adjust {
                pk: wallet_pk("acme"),
                sk: WALLET_SK.into(),
                add: vec![("balance".into(), raise)],
                set: Vec::new(),
            }])
            .await
            .unwrap();
    }
    let other = HoldRequest {
        tenant: TenantId::parse("nobody").unwrap(),
        ..request("m3", "h3", None)
    };
    assert_eq!(
        h.place(&other, nothing).await.unwrap(),
        HoldOutcome::NoWallet
    );
    assert!(h
        .place(&request("m4", "h4", Some(0)), nothing)
        .await
        .is_err());
}

#[tokio::test]
async fn a_raised_floor_or_a_lowered_balance_fails_the_bound_and_is_read_again() {
    // The wallet item as read and as stored differ: the condition, not the read, decides.
    let store = store_with(10_000, 0).await;
    let h = holds(&store, Arc::default());
    let Ok(HoldOutcome::Held(_)) = h.place(&request("m1", "h1", Some(100)), nothing).await else {
        panic!("the first hold")
    };
    let mut raised = store.inner.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    raised.insert("floor".into(), n(9_900));
    store.inner.put_item(raised);
    assert_eq!(
        h.place(&request("m2", "h2", Some(1)), nothing)
            .await
            .unwrap(),
        HoldOutcome::InsufficientFunds {
            available: usd().amount(9_900),
            floor: usd().amount(9_900),
            amount: usd().amount(1),
        }
    );
}

#[tokio::test]
async fn a_release_frees_the_held_amount_once() {
    let store = store_with(10_000, 2_000).await;
    let h = holds(&store, Arc::default());
    let Ok(HoldOutcome::Held(_)) = h.place(&request("m1", "h1", Some(300)), nothing).await else {
        panic!("the hold")
    };
    let outcome = h.release(&acme(), "h1", nothing).await.unwrap();
    assert_eq!(
        outcome,
        ReleaseOutcome::Released(Released {
            hold_id: "h1".into(),
            message_id: "m1".into(),
            amount: usd().amount(300),
            available: usd().amount(10_000),
        })
    );
    let w = wallet(&store);
    assert_eq!((w.balance.minor(), w.held.minor()), (10_000, 0));
    let row = Ledger::new(&store)
        .email_row(&acme(), "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (row.state, row.hold_id.as_deref()),
        (EmailState::Released, Some("h1"))
    );
    assert_eq!(
        h.release(&acme(), "h1", nothing).await.unwrap(),
        ReleaseOutcome::Settled {
            state: EmailState::Released
        }
    );
    assert_eq!(
        h.release(&acme(), "h-unknown", nothing).await.unwrap(),
        ReleaseOutcome::NotFound
    );
    assert_eq!(
        h.release(&TenantId::parse("nobody").unwrap(), "h1", nothing)
            .await
            .unwrap(),
        ReleaseOutcome::NoWallet
    );
    // (The same millisecond on the manual clock: entries then sort by their ids.)
    let mut kinds: Vec<_> = Ledger::new(&store)
        .entries(&w)
        .await
        .unwrap()
        .entries
        .iter()
        .map(|e| e.kind)
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![EntryKind::Topup, EntryKind::Hold, EntryKind::HoldRelease]
    );
    let report = reconcile(&store.inner, T0, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_hold_of_the_old_layout_its_entry_an_item_is_released_and_reconciled() {
    let store = store_with(10_000, 2_000).await;
    let h = holds(&store, Arc::default());
    let Ok(HoldOutcome::Held(_)) = h.place(&request("m1", "h1", Some(300)), nothing).await else {
        panic!("the hold")
    };
    // The layout before rows kept their entries: the row without them, the entry an item.
    let mut row = store
        .inner
        .item(&wallet_pk("acme"), &email_sk("m1"))
        .unwrap();
    let kept = crate::balance::items::row_entries(&row).unwrap();
    assert_eq!(kept.len(), 1, "the hold's entry is in its row");
    row.remove(crate::balance::items::ROW_ENTRIES);
    store.inner.put_item(row);
    store
        .inner
        .put_item(Entry::of_row(&kept[0], &acme(), "m1", usd()).to_item());

    assert!(matches!(
        h.release(&acme(), "h1", nothing).await.unwrap(),
        ReleaseOutcome::Released(_)
    ));
    assert_eq!(
        h.release(&acme(), "h1", nothing).await.unwrap(),
        ReleaseOutcome::Settled {
            state: EmailState::Released
        },
        "released once"
    );
    let w = wallet(&store);
    assert_eq!((w.balance.minor(), w.held.minor()), (10_000, 0));
    let row = Ledger::new(&store)
        .email_row(&acme(), "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.entries.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![EntryKind::HoldRelease],
        "the release is kept in the row, the hold stays an item"
    );
    let mut kinds: Vec<_> = Ledger::new(&store)
        .entries(&w)
        .await
        .unwrap()
        .entries
        .iter()
        .map(|e| e.kind)
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![EntryKind::Topup, EntryKind::Hold, EntryKind::HoldRelease]
    );
    let report = reconcile(&store.inner, T0, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_holds_against_a_wallet_affording_a_hundred() {
    // 2,000 above the floor of 2,000 at 20 a hold: exactly 100 fit.
    let store = Arc::new(store_with(4_000, 2_000).await);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let h = holds(&*store, Arc::default());
                let outcome = h
                    .place(
                        &request(&format!("m{i}"), &format!("h{i}"), Some(20)),
                        nothing,
                    )
                    .await
                    .unwrap();
                (outcome, h.take_metrics())
            })
        })
        .collect();
    let (mut held, mut refused, mut conflicts) = (0, 0, 0);
    for t in tasks {
        let (outcome, metrics) = t.await.unwrap();
        match outcome {
            HoldOutcome::Held(_) => held += 1,
            HoldOutcome::InsufficientFunds { .. } => refused += 1,
            other => panic!("{other:?}"),
        }
        conflicts += metrics.iter().filter(|m| m.name == "HoldConflicts").count();
    }
    assert_eq!((held, refused), (100, 100), "{conflicts} met a conflict");
    assert!(
        conflicts > 0,
        "the places interleaved: some were refused by the bound, not by their read"
    );
    eprintln!("{conflicts} of 200 concurrent places met a conflict");
    let w = wallet(&store);
    assert_eq!((w.balance.minor(), w.held.minor()), (4_000, 2_000));
    assert_eq!(w.available().unwrap(), w.floor);
    let rows = Ledger::new(&store.inner).email_rows(&acme()).await.unwrap();
    assert_eq!(rows.len(), 100);
    let report = reconcile(&store.inner, T0, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 101, "the top-up and 100 holds");
}

#[tokio::test]
async fn a_conflicting_commit_is_retried_with_backoff_then_busy() {
    let store = store_with(10_000, 0).await;
    store.fail.store(3, Ordering::SeqCst);
    let waits = Arc::new(Mutex::new(Vec::new()));
    let h = holds(&store, waits.clone());
    let Ok(HoldOutcome::Held(_)) = h.place(&request("m1", "h1", Some(100)), nothing).await else {
        panic!("held on the fourth try")
    };
    assert_eq!(store.commits.load(Ordering::SeqCst), 4);
    // Full jitter (the draw is 0.5) under a ceiling doubling from 10 ms.
    assert_eq!(
        *waits.lock().unwrap(),
        vec![
            Duration::from_millis(5),
            Duration::from_millis(10),
            Duration::from_millis(20)
        ]
    );
    let metrics = h.take_metrics();
    let conflicts: Vec<_> = metrics
        .iter()
        .filter(|m| m.name == "HoldConflicts")
        .collect();
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].value, 3);
    assert!(h.take_metrics().is_empty(), "taken once");
    // Past the bound: busy, nothing written.
    store.fail.store(usize::MAX, Ordering::SeqCst);
    let before = store.commits.load(Ordering::SeqCst);
    assert_eq!(
        h.place(&request("m2", "h2", Some(100)), nothing)
            .await
            .unwrap(),
        HoldOutcome::Busy
    );
    assert_eq!(
        store.commits.load(Ordering::SeqCst) - before,
        RETRY.max_attempts as usize
    );
    assert!(store
        .inner
        .item(&wallet_pk("acme"), &email_sk("m2"))
        .is_none());
    assert_eq!(wallet(&store).held.minor(), 100);
    assert!(h.take_metrics().iter().any(|m| m.name == "HoldBusy"));
    assert_eq!(
        h.release(&acme(), "h1", nothing).await.unwrap(),
        ReleaseOutcome::Busy
    );
    store.fail.store(1, Ordering::SeqCst);
    assert!(matches!(
        h.release(&acme(), "h1", nothing).await.unwrap(),
        ReleaseOutcome::Released(_)
    ));
    assert_eq!(wallet(&store).held.minor(), 0);
}
