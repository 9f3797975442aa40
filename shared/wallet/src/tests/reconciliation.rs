//! Reconciliation that neither lies nor scans: a wallet compared with its entries consistently
//! while events commit, wallets found through the registry (and the ones created before it through
//! the fallback scan, until `reindex`), invalid numbers reported instead of read as 0, and the
//! orphan window following the retention.

use super::*;
use crate::reconcile::{ReconcileReport, SETTLE_READS};
use inbox_core::clock::Millis;
use inbox_core::store::{DueIndex, Effect, Item, ItemWriter, StoreError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The in-memory store, counting scans, and committing a top-up of `acme` (an entry and its
/// wallet adjustment, one transaction) while `acme`'s entries are being read, `busy_reads` times.
struct Busy {
    inner: Arc<MemoryStore>,
    busy_reads: AtomicUsize,
    scans: AtomicUsize,
    refuse_scans: AtomicBool,
}

impl DueIndex for Busy {
    async fn due_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        self.inner.due_items(shard, now, limit).await
    }
}

impl Busy {
    fn new(inner: Arc<MemoryStore>, busy_reads: usize) -> Self {
        Self {
            inner,
            busy_reads: AtomicUsize::new(busy_reads),
            scans: AtomicUsize::new(0),
            refuse_scans: AtomicBool::new(false),
        }
    }

    async fn concurrent_top_up(&self, n: usize) -> Result<(), StoreError> {
        let e = Entry {
            id: format!("concurrent-{n}-{}", uuid::Uuid::new_v4()),
            tenant: tid("acme"),
            kind: rules::EntryKind::Topup,
            amount: usd().amount(700),
            balance_delta: usd().amount(700),
            held_delta: usd().amount(0),
            subject: format!("pi_c{n}"),
            event_source: "stripe".into(),
            event_id: format!("evt_c{n}"),
            // Older than the orphan window: its event need not be in the inbox.
            at: T0 - 40 * 86_400_000,
        };
        let mv = rules::Movement {
            kind: rules::EntryKind::Topup,
            amount: usd().amount(700),
            balance_delta: usd().amount(700),
            held_delta: usd().amount(0),
        };
        let mut effects = crate::balance::items::adjust_wallet(
            &TenantId::parse("acme").unwrap(),
            0,
            &[mv],
            T0,
            rules::Flags::default(),
            &Default::default(),
        )
        .unwrap();
        effects.push(Effect::Create(e.to_item()));
        let applied = self.inner.commit(effects).await?;
        assert_eq!(applied, inbox_core::store::Applied::Done);
        Ok(())
    }
}

impl ItemStore for Busy {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.inner.get_item(pk, sk).await
    }

    async fn query_items(&self, pk: &str, prefix: &str) -> Result<Vec<Item>, StoreError> {
        if pk == wallet_pk("acme") && prefix == crate::balance::items::ENTRY_PREFIX {
            let left = self.busy_reads.load(Ordering::SeqCst);
            if left > 0 {
                self.busy_reads.store(left - 1, Ordering::SeqCst);
                self.concurrent_top_up(left).await?;
            }
        }
        self.inner.query_items(pk, prefix).await
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        self.scans.fetch_add(1, Ordering::SeqCst);
        assert!(
            !self.refuse_scans.load(Ordering::SeqCst),
            "a full-table scan"
        );
        self.inner.items_of_kind(kind).await
    }
}

/// A world whose wallets are created through the ledger (registered), registry marked complete.
async fn registered(tenants: &[&str]) -> World {
    let w = World::new();
    for t in tenants {
        let created = Ledger::new(&*w.store)
            .create(&Wallet::new(
                tid(t),
                usd().amount(PRICE),
                usd().amount(-1000),
                None,
                T0,
            ))
            .await
            .unwrap();
        assert_eq!(created, CreateOutcome::Created);
    }
    Ledger::new(&*w.store).reindex(T0).await.unwrap();
    w
}

#[tokio::test]
async fn a_busy_wallet_is_compared_once_it_settles_and_never_reported_as_a_mismatch() {
    let w = registered(&["acme"]).await;
    // A top-up commits between the wallet read and its entries read, twice.
    let busy = Busy::new(w.store.clone(), 2);
    let report = reconcile(&busy, T0, opts(i64::MAX)).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!((report.wallets, report.entries), (1, 2));
    assert_eq!(w.balance("acme").balance.minor(), 1400);

    // Busier than the reads allow: reported as unsettled (not compared), not as a mismatch.
    let busier = Busy::new(w.store.clone(), SETTLE_READS);
    let report = reconcile(&busier, T0, opts(i64::MAX)).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.unsettled_wallets, vec!["acme"]);
    assert!(report.mismatched_wallets.is_empty());

    // A real mismatch is still found on a settled wallet.
    let mut tampered = w.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    tampered.insert("balance".into(), attr::n(1));
    w.store.put_item(tampered);
    let report = reconcile(&*w.store, T0, opts(i64::MAX)).await.unwrap();
    assert_eq!(report.mismatched_wallets.len(), 1, "{report:?}");
}

#[tokio::test]
async fn wallets_are_found_through_the_registry_without_a_scan() {
    let w = registered(&["acme", "beta"]).await;
    let store = Busy::new(w.store.clone(), 0);
    store.refuse_scans.store(true, Ordering::SeqCst);
    let report = reconcile(&store, T0, opts(i64::MAX)).await.unwrap();
    assert_eq!(report.wallets, 2);
    assert!(report.registry_complete);
    assert_eq!(store.scans.load(Ordering::SeqCst), 0);
    let tenants = Ledger::new(&store).tenants().await.unwrap();
    assert_eq!(tenants.tenants, vec!["acme", "beta"]);
}

#[tokio::test]
async fn wallets_created_before_the_registry_are_found_by_the_fallback_until_reindexed() {
    // `World::wallet` puts the wallet item the way the code before the registry did.
    let w = World::new().wallet("legacy", 0, None);
    Ledger::new(&*w.store)
        .create(&Wallet::new(
            tid("fresh"),
            usd().amount(PRICE),
            usd().amount(0),
            None,
            T0,
        ))
        .await
        .unwrap();
    let store = Busy::new(w.store.clone(), 0);
    let report = reconcile(&store, T0, opts(i64::MAX)).await.unwrap();
    assert_eq!(report.wallets, 2, "both found");
    assert!(!report.registry_complete);
    assert_eq!(report.unregistered_wallets, vec!["legacy"]);
    assert!(report.is_clean(), "unregistered is not a problem by itself");
    assert_eq!(store.scans.load(Ordering::SeqCst), 1, "the fallback scan");

    let done = Ledger::new(&*w.store).reindex(T0).await.unwrap();
    assert_eq!((done.wallets, done.newly_registered), (2, 1));
    assert_eq!(
        Ledger::new(&*w.store)
            .reindex(T0)
            .await
            .unwrap()
            .newly_registered,
        0,
        "idempotent"
    );
    store.refuse_scans.store(true, Ordering::SeqCst);
    let report = reconcile(&store, T0, opts(i64::MAX)).await.unwrap();
    assert_eq!(report.wallets, 2);
    assert!(report.registry_complete && report.unregistered_wallets.is_empty());
}

#[tokio::test]
async fn a_balance_that_is_not_a_number_is_an_error_never_zero() {
    let w = registered(&["acme"]).await;
    let mut item = w.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    item.insert("balance".into(), attr::s("lots"));
    w.store.put_item(item.clone());
    let err = Ledger::new(&*w.store)
        .wallet(&tid("acme"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the wallet item of tenant \"acme\" is unreadable: balance is not a number"
    );
    let report = reconcile(&*w.store, T0, opts(i64::MAX)).await.unwrap();
    assert!(!report.is_clean());
    assert_eq!(report.unreadable_wallets[0].tenant, "acme");
    let documents = EmfWriter::stdout().documents(T0, &report.metrics());
    let emf: serde_json::Value = serde_json::from_str(&documents[0]).unwrap();
    assert_eq!(emf["MismatchedWallets"], 1, "counted with the mismatches");

    // A number too large for 64 bits (DynamoDB keeps 38 digits), or a missing one: the same.
    for (k, v) in [
        ("balance", Some("99999999999999999999")),
        ("held", None),
        ("debits_2026_11", Some("1.5")),
    ] {
        let mut bad = w.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
        bad.insert("balance".into(), attr::n(0));
        match v {
            Some(n) => bad.insert(k.into(), number(n)),
            None => bad.remove(k),
        };
        assert!(Wallet::from_item(&bad).unwrap_err().contains(k), "{k}");
    }
    // Handlers fail such an event permanently, with the reason, instead of moving money.
    let outcome = w.email("e1", "message.sent", "m1", json!({})).await;
    assert_eq!(
        outcome,
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
}

/// A number attribute as DynamoDB returns it (any text).
fn number(text: &str) -> aws_sdk_dynamodb::types::AttributeValue {
    aws_sdk_dynamodb::types::AttributeValue::N(text.into())
}

#[tokio::test]
async fn corrupt_rows_are_errors_too() {
    let w = registered(&["acme"]).await;
    w.email("e1", "message.sent", "m1", json!({})).await;
    let sk = "EMAIL#m1";
    let mut row = w.store.item(&wallet_pk("acme"), sk).unwrap();
    row.insert("state".into(), attr::s("dunno"));
    w.store.put_item(row);
    let err = Ledger::new(&*w.store)
        .email_row(&tid("acme"), "m1")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("state \"dunno\" is not a known state"),
        "{err}"
    );
    let report = reconcile(&*w.store, T0, opts(i64::MAX)).await.unwrap();
    assert_eq!(report.unreadable_wallets.len(), 1, "{report:?}");
}

#[tokio::test]
async fn the_orphan_window_follows_the_retention() {
    let w = registered(&["acme"]).await;
    let day = 86_400_000;
    let orphan = |id: &str, at: i64| Entry {
        id: id.into(),
        tenant: tid("acme"),
        kind: rules::EntryKind::Topup,
        amount: usd().amount(0),
        balance_delta: usd().amount(0),
        held_delta: usd().amount(0),
        subject: "pi_0".into(),
        event_source: "stripe".into(),
        event_id: format!("evt_{id}"),
        at,
    };
    w.store.put_item(orphan("6d", T0 - 6 * day).to_item());
    w.store.put_item(orphan("8d", T0 - 8 * day).to_item());
    let with =
        |days: u64| ReconcileOptions::new(3_600_000, std::time::Duration::from_secs(days * 86_400));
    let found = |r: ReconcileReport| {
        r.orphan_entries
            .into_iter()
            .map(|o| o.entry_id)
            .collect::<Vec<_>>()
    };
    let seven = reconcile(&*w.store, T0, with(7)).await.unwrap();
    assert_eq!(
        found(seven),
        vec!["6d"],
        "the 8-day-old event may have expired"
    );
    let thirty = reconcile(&*w.store, T0, with(30)).await.unwrap();
    assert_eq!(found(thirty), vec!["8d", "6d"]);
    assert_eq!(with(30).orphan_window_ms, 30 * day - 3_600_000);
}
