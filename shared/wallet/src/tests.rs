//! Ledger tests on the in-memory store through the real processor: the rules end to end, the
//! flags, reconciliation, and property tests against a reference model.

mod autopay;
mod forged;
mod holds;
mod layout;
mod metrics;
mod reconciliation;
mod shards;
mod stripe;
mod tenants;
mod unmatched;

use super::*;
use crate::balance::items::{wallet_pk, WALLET_SK};
use crate::balance::{events, rules};
use crate::email::providers;
use crate::reconcile::{reconcile, ReconcileOptions};
use inbox_core::clock::ManualClock;
use inbox_core::domain::{BodyDigest, EventId, EventType, MessageKey, SourceName};
use inbox_core::metrics::EmfWriter;
use inbox_core::process::registry::Registry;
use inbox_core::process::{Outcome, Processor, ProcessorConfig};
use inbox_core::queue::memory::{MemoryQuarantine, MemoryRetryQueue};
use inbox_core::store::attr;
use inbox_core::store::memory::MemoryStore;
use inbox_core::store::{Inbox, ItemStore, NewMessage, PutOutcome};
use proptest::prelude::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A tenant of the tests.
fn tid(tenant: &str) -> TenantId {
    TenantId::parse(tenant).unwrap()
}

const T0: i64 = 1_795_000_000_000; // 2026-11-18
const PRICE: i64 = 5;

type P =
    Processor<Arc<MemoryStore>, Arc<MemoryRetryQueue>, Arc<MemoryQuarantine>, Arc<ManualClock>>;

struct World {
    store: Arc<MemoryStore>,
    p: P,
    next: std::sync::atomic::AtomicI64,
}

impl World {
    fn new() -> Self {
        Self::with_sources(WalletSources::default())
    }

    /// A world whose wallet handler takes these sources.
    fn with_sources(sources: WalletSources) -> Self {
        let store = Arc::new(MemoryStore::new());
        let registry = WalletHandler::new(store.clone(), sources).register(Registry::new());
        let p = Processor::new(
            store.clone(),
            Arc::new(MemoryRetryQueue::new()),
            Arc::new(MemoryQuarantine::new()),
            Arc::new(ManualClock::at_millis(T0)),
            registry,
            ProcessorConfig::default(),
        )
        .with_jitter(|| 0.0);
        Self {
            store,
            p,
            next: std::sync::atomic::AtomicI64::new(0),
        }
    }

    fn wallet(self, tenant: &str, floor: i64, review: Option<i64>) -> Self {
        self.store.put_item(
            Wallet::new(
                tid(tenant),
                usd().amount(PRICE),
                usd().amount(floor),
                review.map(|t| usd().amount(t)),
                T0,
            )
            .to_item(),
        );
        self
    }

    fn balance(&self, tenant: &str) -> Wallet {
        let item = self.store.item(&wallet_pk(tenant), WALLET_SK).unwrap();
        Wallet::from_item(&item).unwrap()
    }

    /// Stores a delivery like the ingest path (deduplicated by event id); `None` for a duplicate.
    async fn deliver(
        &self,
        source: &str,
        event_id: &str,
        event_type: &str,
        body: serde_json::Value,
    ) -> Option<MessageKey> {
        let key = MessageKey::new(
            SourceName::parse(source).unwrap(),
            EventId::parse(event_id).unwrap(),
        );
        let body = body.to_string().into_bytes();
        let at = T0 + self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let msg = NewMessage {
            key: key.clone(),
            event_type: Some(EventType::parse(event_type).unwrap()),
            received_at_ms: at,
            body_digest: Some(BodyDigest::of(&body)),
            body,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        };
        match self.store.put_if_absent(&msg).await.unwrap() {
            PutOutcome::Inserted => Some(key),
            PutOutcome::AlreadyExists { .. } => None,
        }
    }

    /// Delivers and processes (a redelivered stream record is processed again: a no-op).
    async fn send(
        &self,
        source: &str,
        event_id: &str,
        event_type: &str,
        body: serde_json::Value,
    ) -> Outcome {
        let key = self.deliver(source, event_id, event_type, body).await;
        let key = key.unwrap_or_else(|| {
            MessageKey::new(
                SourceName::parse(source).unwrap(),
                EventId::parse(event_id).unwrap(),
            )
        });
        self.p.process_key(&key).await.unwrap()
    }

    async fn email(
        &self,
        event_id: &str,
        kind: &str,
        message_id: &str,
        extra: serde_json::Value,
    ) -> Outcome {
        let mut data = json!({"message_id": message_id, "tenant": "acme"});
        if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        self.send(
            "mailer",
            event_id,
            kind,
            json!({"type": kind, "timestamp": "2026-11-30T10:00:00Z", "data": data}),
        )
        .await
    }

    async fn entries(&self, tenant: &str) -> Vec<Entry> {
        let entries = Ledger::new(&*self.store)
            .entries(&self.balance(tenant))
            .await
            .unwrap();
        assert_eq!(entries.unreadable, 0);
        entries.entries
    }
}

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn futures_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

/// A test-mode Stripe event, shaped like Stripe's (the handler runs in test mode by default).
fn stripe_body(kind: &str, object: serde_json::Value) -> serde_json::Value {
    json!({"id": "evt_x", "object": "event", "api_version": "2024-06-20", "created": 1_795_000_000,
        "livemode": false, "pending_webhooks": 1, "type": kind, "data": {"object": object}})
}

/// Reconciliation with `stale_after_ms` and the default retention (30 days).
fn opts(stale_after_ms: i64) -> ReconcileOptions {
    ReconcileOptions::new(stale_after_ms, std::time::Duration::from_secs(30 * 86_400))
}

#[tokio::test]
async fn an_email_holds_debits_and_is_refunded_on_hard_bounce() {
    let w = World::new().wallet("acme", -1000, None);
    assert_eq!(
        w.email("e1", "message.sent", "m1", json!({})).await,
        Outcome::Processed
    );
    let wallet = w.balance("acme");
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (0, PRICE));
    w.email("e2", "message.accepted", "m1", json!({})).await;
    let wallet = w.balance("acme");
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (-PRICE, 0));
    w.email(
        "e3",
        "message.bounced",
        "m1",
        json!({"bounce_type": "hard"}),
    )
    .await;
    let wallet = w.balance("acme");
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (0, 0));
    // A late `accepted` (another webhook) after the hard bounce debits nothing.
    w.email("e4", "message.accepted", "m1", json!({})).await;
    assert_eq!(w.balance("acme").balance.minor(), 0);
    let kinds: Vec<_> = w
        .entries("acme")
        .await
        .iter()
        .map(|e| (e.kind, e.event_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (rules::EntryKind::Hold, "e1".into()),
            (rules::EntryKind::Debit, "e2".into()),
            (rules::EntryKind::BounceRefund, "e3".into())
        ]
    );
    let row = Ledger::new(&*w.store)
        .email_row(&tid("acme"), "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.events,
        vec!["e1", "e2", "e3", "e4"],
        "every webhook that reached it is linked"
    );
    assert_eq!(row.state, rules::EmailState::Refunded);
}

#[tokio::test]
async fn soft_bounces_deferrals_and_complaints_move_no_money() {
    let w = World::new().wallet("acme", -1000, None);
    w.email("e1", "message.accepted", "m1", json!({})).await;
    w.email(
        "e2",
        "message.bounced",
        "m1",
        json!({"bounce_type": "soft"}),
    )
    .await;
    w.email("e3", "message.deferred", "m1", json!({})).await;
    w.email("e4", "message.complained", "m1", json!({})).await;
    let wallet = w.balance("acme");
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (-PRICE, 0));
    assert_eq!(w.entries("acme").await.len(), 1);
}

#[tokio::test]
async fn a_retried_webhook_never_debits_twice() {
    let w = World::new().wallet("acme", -1000, None);
    for _ in 0..3 {
        w.email("e1", "message.accepted", "m1", json!({})).await;
    }
    // The same event under new webhook ids (a provider that re-sends) moves nothing either.
    w.email("e1b", "message.accepted", "m1", json!({})).await;
    assert_eq!(w.balance("acme").balance.minor(), -PRICE);
    assert_eq!(w.entries("acme").await.len(), 1);
}

/// Rewrites an email's row into the layout before rows kept their entries: each entry an `ENTRY#`
/// item, the row without them.
fn to_layout_without_row_entries(w: &World, message_id: &str) {
    let pk = wallet_pk("acme");
    let mut row = w.store.item(&pk, &format!("EMAIL#{message_id}")).unwrap();
    let kept = crate::balance::items::row_entries(&row).unwrap();
    assert!(!kept.is_empty(), "the row keeps its entries");
    row.remove(crate::balance::items::ROW_ENTRIES);
    w.store.put_item(row);
    for e in &kept {
        w.store
            .put_item(Entry::of_row(e, &tid("acme"), message_id, usd()).to_item());
    }
}

#[tokio::test]
async fn an_email_row_and_entries_of_the_old_layout_are_read_settled_and_reconciled() {
    let w = World::new().wallet("acme", -1000, None);
    w.email("e1", "message.sent", "m1", json!({})).await;
    w.email("e2", "message.sent", "m2", json!({})).await;
    to_layout_without_row_entries(&w, "m1");
    to_layout_without_row_entries(&w, "m2");
    let ledger = Ledger::new(&*w.store);
    let old = ledger.email_row(&tid("acme"), "m1").await.unwrap().unwrap();
    assert_eq!((old.state, old.entries.len()), (rules::EmailState::Held, 0));

    // The old rows settle: a debit, a release, each once however often its webhook comes.
    for _ in 0..2 {
        w.email("e3", "message.accepted", "m1", json!({})).await;
        w.email(
            "e4",
            "message.bounced",
            "m2",
            json!({"bounce_type": "hard"}),
        )
        .await;
    }
    let wallet = w.balance("acme");
    assert_eq!((wallet.balance.minor(), wallet.held.minor()), (-PRICE, 0));
    let entries: Vec<_> = w
        .entries("acme")
        .await
        .iter()
        .map(|e| (e.kind, e.subject.clone(), e.event_id.clone()))
        .collect();
    assert_eq!(
        entries,
        vec![
            (rules::EntryKind::Hold, "m1".into(), "e1".into()),
            (rules::EntryKind::Hold, "m2".into(), "e2".into()),
            (rules::EntryKind::Debit, "m1".into(), "e3".into()),
            (rules::EntryKind::HoldRelease, "m2".into(), "e4".into()),
        ],
        "the old entry items and the rows' entries, in time order"
    );
    let settled = ledger.email_row(&tid("acme"), "m1").await.unwrap().unwrap();
    assert_eq!(settled.state, rules::EmailState::Debited);
    assert_eq!(
        settled.entries.iter().map(|e| e.kind).collect::<Vec<_>>(),
        vec![rules::EntryKind::Debit],
        "the new movement is kept in the row, the old one stays an entry item"
    );
    let report = reconcile(&*w.store, T0 + 1000, opts(3_600_000))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 4);
}

#[tokio::test]
async fn an_email_movement_writes_its_entry_in_the_row_and_no_entry_item() {
    let w = World::new().wallet("acme", -1000, None);
    w.email("e1", "message.sent", "m1", json!({})).await;
    w.email("e2", "message.accepted", "m1", json!({})).await;
    let items = w
        .store
        .query_items(&wallet_pk("acme"), crate::balance::items::ENTRY_PREFIX)
        .await
        .unwrap();
    assert!(items.is_empty(), "{items:?}");
    let row = Ledger::new(&*w.store)
        .email_row(&tid("acme"), "m1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row.entries
            .iter()
            .map(|e| (e.kind, e.amount.get(), e.event_id.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (rules::EntryKind::Hold, PRICE, "e1"),
            (rules::EntryKind::Debit, PRICE, "e2")
        ]
    );
}

#[tokio::test]
async fn unknown_tenant_fails_permanently_and_replays_once_the_wallet_exists() {
    let w = World::new();
    let outcome = w.email("e1", "message.sent", "m1", json!({})).await;
    assert_eq!(
        outcome,
        Outcome::Failed {
            attempts: 1,
            permanent: true
        }
    );
    let key = MessageKey::new(
        SourceName::parse("mailer").unwrap(),
        EventId::parse("e1").unwrap(),
    );
    let failed = w.store.message(&key).unwrap();
    assert!(failed
        .last_error
        .unwrap()
        .contains("no wallet for tenant \"acme\""));
    let w = w.wallet("acme", 0, None);
    let clock = ManualClock::at_millis(T0);
    let replayed =
        inbox_core::ops::replay(&*w.store, w.p.retry_queue(), &clock, &key, "ops", false)
            .await
            .unwrap();
    assert_eq!(replayed, inbox_core::ops::ReplayOutcome::Replayed);
    assert_eq!(w.p.process_key(&key).await.unwrap(), Outcome::Processed);
    assert_eq!(w.balance("acme").held.minor(), PRICE);
}

#[tokio::test]
async fn stripe_credits_once_per_payment_intent_and_refunds_once_per_refund() {
    let w = World::new().wallet("acme", 0, None);
    let session = json!({"id": "cs_1", "payment_intent": "pi_1", "amount_total": 2000, "currency": "usd",
        "payment_status": "paid", "metadata": {"tenant": "acme"}});
    let intent = json!({"id": "pi_1", "amount_received": "2000", "currency": "usd", "metadata": {"tenant": "acme"}});
    assert_eq!(
        w.send(
            "stripe",
            "evt_1",
            "checkout.session.completed",
            stripe_body("checkout.session.completed", session)
        )
        .await,
        Outcome::Processed
    );
    assert_eq!(
        w.send(
            "stripe",
            "evt_2",
            "payment_intent.succeeded",
            stripe_body("payment_intent.succeeded", intent)
        )
        .await,
        Outcome::Processed
    );
    assert_eq!(
        w.balance("acme").balance.minor(),
        2000,
        "both events of one intent credit once"
    );
    // Refunds: cumulative totals, in any order, each counted once; the charge has no tenant.
    let refund = |total| json!({"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": total, "currency": "usd"});
    w.send(
        "stripe",
        "evt_4",
        "charge.refunded",
        stripe_body("charge.refunded", refund(1200)),
    )
    .await;
    w.send(
        "stripe",
        "evt_3",
        "charge.refunded",
        stripe_body("charge.refunded", refund(500)),
    )
    .await;
    w.send(
        "stripe",
        "evt_4",
        "charge.refunded",
        stripe_body("charge.refunded", refund(1200)),
    )
    .await;
    assert_eq!(w.balance("acme").balance.minor(), 800);
    let entries = w.entries("acme").await;
    assert_eq!(
        entries.iter().map(|e| e.amount.minor()).collect::<Vec<_>>(),
        vec![2000, 1200]
    );
    assert!(reconcile(&*w.store, T0, opts(3_600_000))
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn unusable_payments_fail_permanently_with_a_reason() {
    let w = World::new().wallet("acme", 0, None);
    let cases = [
        (
            json!({"id": "pi_9", "amount_received": 100, "currency": "eur", "metadata": {"tenant": "acme"}}),
            "currency eur",
        ),
        (
            json!({"id": "pi_9", "amount_received": 10_000_000_000_000_i64, "currency": "usd", "metadata": {"tenant": "acme"}}),
            "above the largest accepted amount",
        ),
        (
            json!({"id": "pi_9", "amount_received": "1.5", "currency": "usd", "metadata": {"tenant": "acme"}}),
            "not an integer",
        ),
        (
            json!({"id": "pi_9", "amount_received": 100, "currency": "usd", "metadata": {"tenant": "ghost"}}),
            "no wallet for tenant \"ghost\"",
        ),
    ];
    for (i, (object, reason)) in cases.into_iter().enumerate() {
        let id = format!("evt_bad_{i}");
        let outcome = w
            .send(
                "stripe",
                &id,
                "payment_intent.succeeded",
                stripe_body("payment_intent.succeeded", object),
            )
            .await;
        assert_eq!(
            outcome,
            Outcome::Failed {
                attempts: 1,
                permanent: true
            },
            "{reason}"
        );
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(&id).unwrap(),
        );
        let error = w.store.message(&key).unwrap().last_error.unwrap();
        assert!(error.contains(reason), "{error:?} should say {reason:?}");
    }
    assert_eq!(w.balance("acme").balance.minor(), 0);
}

#[tokio::test]
async fn a_refund_before_its_payment_is_settled_by_its_credit() {
    let w = World::new().wallet("acme", 0, None);
    let refund =
        json!({"id": "ch_1", "payment_intent": "pi_1", "amount_refunded": 500, "currency": "usd"});
    let outcome = w
        .send(
            "stripe",
            "evt_r",
            "charge.refunded",
            stripe_body("charge.refunded", refund),
        )
        .await;
    assert_eq!(
        outcome,
        Outcome::Processed,
        "recorded on the payment's index, no retry, no alarm"
    );
    assert_eq!(w.balance("acme").balance.minor(), 0);
    let paid = json!({"id": "pi_1", "amount_received": 2000, "currency": "usd", "metadata": {"tenant": "acme"}});
    w.send(
        "stripe",
        "evt_p",
        "payment_intent.succeeded",
        stripe_body("payment_intent.succeeded", paid),
    )
    .await;
    assert_eq!(w.balance("acme").balance.minor(), 1500);
    let kinds: Vec<_> = w
        .entries("acme")
        .await
        .iter()
        .map(|e| (e.kind, e.amount.minor(), e.event_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (rules::EntryKind::Topup, 2000, "evt_p".to_string()),
            (rules::EntryKind::TopupRefund, 500, "evt_p".to_string())
        ],
        "the credit settles the refund that came first"
    );
}

#[tokio::test]
async fn overdraft_is_recorded_and_flagged_and_review_threshold_flags_the_tenant() {
    let w = World::new().wallet("acme", -PRICE, Some(2 * PRICE));
    w.email("e1", "message.sent", "m1", json!({})).await;
    assert!(!w.balance("acme").overdrawn, "exactly at the floor");
    w.email("e2", "message.sent", "m2", json!({})).await;
    let wallet = w.balance("acme");
    assert!(
        wallet.overdrawn,
        "below the floor: still recorded, but flagged"
    );
    assert_eq!(wallet.held.minor(), 2 * PRICE);
    w.email("e3", "message.accepted", "m1", json!({})).await;
    w.email("e4", "message.accepted", "m2", json!({})).await;
    assert!(!w.balance("acme").review, "at the threshold");
    w.email("e5", "message.accepted", "m3", json!({})).await;
    let wallet = w.balance("acme");
    assert!(wallet.review);
    assert_eq!(
        wallet.month_debits.get(&month_of(T0)).map(|d| d.get()),
        Some(3 * PRICE)
    );
    assert_eq!(month_of(T0), "2026_11");
}

#[tokio::test]
async fn reconciliation_finds_stale_holds_mismatches_and_orphans() {
    let w = World::new()
        .wallet("acme", -1000, None)
        .wallet("beta", 0, None);
    w.email("e1", "message.sent", "m1", json!({})).await;
    w.email("e2", "message.accepted", "m2", json!({})).await;
    let clean = reconcile(&*w.store, T0 + 1000, opts(3_600_000))
        .await
        .unwrap();
    assert!(clean.is_clean(), "{clean:?}");
    assert_eq!((clean.wallets, clean.entries), (2, 2));

    let stale = reconcile(&*w.store, T0 + 3_600_001, opts(3_600_000))
        .await
        .unwrap();
    assert_eq!(
        stale
            .stale_holds
            .iter()
            .map(|h| h.message_id.as_str())
            .collect::<Vec<_>>(),
        vec!["m1"]
    );

    // Someone edits a balance by hand, and an entry points at an event that is not in the inbox.
    let mut tampered = w
        .store
        .get_item(&wallet_pk("beta"), WALLET_SK)
        .await
        .unwrap()
        .unwrap();
    tampered.insert("balance".into(), attr::n(100));
    w.store.put_item(tampered);
    let orphan = Entry {
        id: "x".into(),
        tenant: tid("acme"),
        kind: rules::EntryKind::Topup,
        amount: usd().amount(0),
        balance_delta: usd().amount(0),
        held_delta: usd().amount(0),
        subject: "pi_0".into(),
        event_source: "stripe".into(),
        event_id: "evt_gone".into(),
        at: T0,
    };
    w.store.put_item(orphan.to_item());
    let report = reconcile(&*w.store, T0 + 1000, opts(3_600_000))
        .await
        .unwrap();
    assert_eq!(report.mismatched_wallets.len(), 1);
    assert_eq!(
        (
            report.mismatched_wallets[0].tenant.as_str(),
            report.mismatched_wallets[0].balance
        ),
        ("beta", 100)
    );
    assert_eq!(
        report
            .orphan_entries
            .iter()
            .map(|o| o.event_id.as_str())
            .collect::<Vec<_>>(),
        vec!["evt_gone"]
    );
    // Entries older than the window are not checked: their messages may have expired by TTL.
    let window = ReconcileOptions {
        stale_after_ms: 3_600_000,
        orphan_window_ms: 5_000,
        unmatched_after_ms: crate::reconcile::DEFAULT_UNMATCHED_AFTER_MS,
    };
    let old = reconcile(&*w.store, T0 + 10_000, window).await.unwrap();
    assert!(old.orphan_entries.is_empty(), "{old:?}");
    let documents = EmfWriter::stdout().documents(T0, &report.metrics());
    assert_eq!(documents.len(), 1, "the three counts in one document");
    let emf: serde_json::Value = serde_json::from_str(&documents[0]).unwrap();
    assert_eq!(
        emf["_aws"]["CloudWatchMetrics"][0]["Namespace"],
        "WebhookIngestor/Wallet"
    );
    assert_eq!(
        (
            emf["MismatchedWallets"].as_u64(),
            emf["OrphanEntries"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[test]
fn months_are_utc_calendar_months() {
    assert_eq!(month_of(0), "1970_01");
    assert_eq!(month_of(951_782_400_000), "2000_02"); // 2000-02-29
    assert_eq!(month_of(1_798_761_599_999), "2026_12"); // 2026-12-31T23:59:59.999Z
    assert_eq!(month_of(1_798_761_600_000), "2027_01");
}

// ---- Property tests: any order, any duplicates, same wallet as the reference model. ----

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Sent,
    Accepted,
    Hard,
    Soft,
    Deferred,
    Complained,
}

impl Kind {
    /// The kind's name for [`crate::email::providers::tests::sample`].
    fn name(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Accepted => "accepted",
            Self::Hard => "hard",
            Self::Soft => "soft",
            Self::Deferred => "deferred",
            Self::Complained => "complained",
        }
    }

    fn event(self) -> (&'static str, serde_json::Value) {
        match self {
            Self::Sent => ("message.sent", json!({})),
            Self::Accepted => ("message.accepted", json!({})),
            Self::Hard => ("message.bounced", json!({"bounce_type": "hard"})),
            Self::Soft => ("message.bounced", json!({"bounce_type": "soft"})),
            Self::Deferred => ("message.deferred", json!({})),
            Self::Complained => ("message.complained", json!({})),
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Sent),
        Just(Kind::Accepted),
        Just(Kind::Hard),
        Just(Kind::Soft),
        Just(Kind::Deferred),
        Just(Kind::Complained)
    ]
}

/// The reference model: per email, only WHICH kinds arrived matters. A hard bounce cancels
/// everything; else an acceptance debits the price; else a send holds it.
fn model(events: &[(u8, Kind)]) -> (i64, i64) {
    let mut seen: HashMap<u8, HashSet<Kind>> = HashMap::new();
    for (m, k) in events {
        seen.entry(*m).or_default().insert(*k);
    }
    seen.values().fold((0, 0), |(balance, held), kinds| {
        if kinds.contains(&Kind::Hard) {
            (balance, held)
        } else if kinds.contains(&Kind::Accepted) {
            (balance - PRICE, held)
        } else if kinds.contains(&Kind::Sent) {
            (balance, held + PRICE)
        } else {
            (balance, held)
        }
    })
}

/// A delivery plan: events over three emails, each delivered 1–3 times, in a shuffled order.
fn email_plan() -> impl Strategy<Value = Vec<(u8, Kind, usize)>> {
    prop::collection::vec((0u8..3, kind(), 1usize..4), 1..12).prop_flat_map(|events| {
        let deliveries: Vec<(u8, Kind, usize)> = events
            .iter()
            .enumerate()
            .flat_map(|(i, (m, k, copies))| std::iter::repeat_n((*m, *k, i), *copies))
            .collect();
        Just(deliveries).prop_shuffle()
    })
}

/// The events of a plan as processed: each once, in the order of its first delivery.
fn distinct(plan: &[(u8, Kind, usize)]) -> Vec<(u8, Kind)> {
    let mut seen = HashSet::new();
    plan.iter()
        .filter(|(_, _, i)| seen.insert(*i))
        .map(|(m, k, _)| (*m, *k))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn email_events_in_any_order_with_duplicates_match_the_model(plan in email_plan()) {
        let w = World::new().wallet("acme", -1_000_000, None);
        futures_block(async {
            for (m, k, i) in &plan {
                let (kind, extra) = k.event();
                w.email(&format!("evt_{i}"), kind, &format!("m{m}"), extra).await;
            }
        });
        let distinct = distinct(&plan);
        let wallet = w.balance("acme");
        prop_assert_eq!((wallet.balance.minor(), wallet.held.minor()), model(&distinct));
        let report = futures_block(reconcile(&*w.store, T0, opts(i64::MAX)));
        prop_assert!(report.unwrap().is_clean());
    }
}

// ---- The same, for every email provider: each email sent through one provider's source. ----

/// Every provider, each on the source named after it (the mailer's is `mailer`).
fn every_provider() -> WalletSources {
    WalletSources::with_email(
        EmailProvider::ALL
            .into_iter()
            .filter(|p| *p != EmailProvider::Mailer)
            .map(|p| (p.as_str().to_owned(), p)),
    )
}

fn provider() -> impl Strategy<Value = EmailProvider> {
    prop::sample::select(EmailProvider::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_providers_events_in_any_order_with_duplicates_match_the_model(
        providers in prop::collection::vec(provider(), 3),
        plan in email_plan(),
    ) {
        let w = World::with_sources(every_provider()).wallet("acme", -1_000_000, None);
        let mut delivered = Vec::new();
        let mut seen = HashSet::new();
        futures_block(async {
            for (m, k, i) in &plan {
                let provider = providers[usize::from(*m)];
                let Some((event_type, body)) =
                    providers::tests::sample(provider, k.name(), &format!("m{m}"), "acme")
                else {
                    continue; // the provider has no such event (Postmark sends none before delivery)
                };
                let outcome = w.send(provider.as_str(), &format!("evt_{i}"), &event_type, body).await;
                // Processed, or (a repeated delivery) found already processed.
                assert!(
                    matches!(outcome, Outcome::Processed | Outcome::Skipped(_)),
                    "{provider:?} {k:?}: {outcome:?}"
                );
                if seen.insert(*i) {
                    delivered.push((*m, *k));
                }
            }
        });
        let wallet = w.balance("acme");
        prop_assert_eq!((wallet.balance.minor(), wallet.held.minor()), model(&delivered));
        let report = futures_block(reconcile(&*w.store, T0, opts(i64::MAX)));
        prop_assert!(report.unwrap().is_clean());
    }
}

#[tokio::test]
async fn each_provider_debits_and_refunds_through_its_own_source() {
    let w = World::with_sources(every_provider()).wallet("acme", -1000, None);
    for provider in EmailProvider::ALL {
        let id = format!("m-{}", provider.as_str());
        for (n, kind) in ["accepted", "hard"].into_iter().enumerate() {
            let (t, body) = providers::tests::sample(provider, kind, &id, "acme").unwrap();
            let event = format!("{}-{n}", provider.as_str());
            assert_eq!(
                w.send(provider.as_str(), &event, &t, body).await,
                Outcome::Processed
            );
        }
        let row = Ledger::new(&*w.store)
            .email_row(&tid("acme"), &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.state, rules::EmailState::Refunded, "{provider:?}");
    }
    let kinds: Vec<_> = w.entries("acme").await.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds.len(),
        12,
        "a debit and its refund per provider: {kinds:?}"
    );
    assert_eq!(w.balance("acme").balance.minor(), 0);
    // A provider's event on a source that is not configured as an email source moves nothing.
    let w = World::new().wallet("acme", -1000, None);
    let (t, body) =
        providers::tests::sample(EmailProvider::Resend, "accepted", "m", "acme").unwrap();
    w.send("resend", "r-1", &t, body).await;
    assert_eq!(w.balance("acme").balance.minor(), 0);
}

// ---- The notices, against the same model: exactly once per crossing and per month. ----

/// Per prefix of the processing order (distinct events only): the wallet's available amount and
/// the month's debits, as the model sees them (an email holds or debits its price unless it
/// hard-bounced; it counts as a debit if accepted before any hard bounce).
fn model_states(events: &[(u8, Kind)]) -> Vec<(i64, i64)> {
    let mut seen: HashMap<u8, HashSet<Kind>> = HashMap::new();
    let mut debited: HashSet<u8> = HashSet::new();
    let mut states = Vec::new();
    for (m, k) in events {
        let kinds = seen.entry(*m).or_default();
        if *k == Kind::Accepted && !kinds.contains(&Kind::Hard) {
            debited.insert(*m);
        }
        kinds.insert(*k);
        let available = seen
            .values()
            .filter(|k| {
                !k.contains(&Kind::Hard) && (k.contains(&Kind::Sent) || k.contains(&Kind::Accepted))
            })
            .count() as i64
            * -PRICE;
        states.push((available, debited.len() as i64 * PRICE));
    }
    states
}

fn wallet_event(w: &World, id: &str) -> bool {
    let key = MessageKey::new(
        SourceName::parse(events::SOURCE).unwrap(),
        EventId::parse(id).unwrap(),
    );
    let pk = inbox_core::store::schema::message_pk(&key);
    w.store
        .item(&pk, inbox_core::store::schema::MESSAGE_SK)
        .is_some()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn notices_are_published_once_per_crossing_and_once_per_month_in_any_order(plan in email_plan()) {
        // Floor −10, price 5: low at −10 available and below (it cannot afford one more send);
        // review past 5 of debits (the second debit).
        let w = World::new().wallet("acme", -10, Some(PRICE));
        futures_block(async {
            for (m, k, i) in &plan {
                let (kind, extra) = k.event();
                w.email(&format!("evt_{i}"), kind, &format!("m{m}"), extra).await;
            }
        });
        let distinct = distinct(&plan);
        let states = model_states(&distinct);
        let low = |available: i64| available - PRICE < -10;
        let mut crossings = 0;
        let mut before = 0;
        for (available, _) in &states {
            if low(*available) && !low(before) {
                crossings += 1;
            }
            before = *available;
        }
        let wallet = w.balance("acme");
        prop_assert_eq!(wallet.available().unwrap().minor(), before);
        prop_assert_eq!((wallet.low, wallet.low_crossings), (low(before), crossings));
        for n in 1..=crossings {
            prop_assert!(wallet_event(&w, &format!("wevt_acme_low_{n}")), "crossing {} published", n);
        }
        let next = format!("wevt_acme_low_{}", crossings + 1);
        prop_assert!(!wallet_event(&w, &next), "no event beyond the crossings: {}", next);
        let reviewed = states.iter().any(|(_, debits)| *debits > PRICE);
        prop_assert_eq!(wallet_event(&w, "wevt_acme_review_2026_11"), reviewed);
        prop_assert_eq!(wallet.review_reported.is_some(), reviewed);
    }
}

#[tokio::test]
async fn an_operator_changes_a_wallets_limits_without_touching_its_amounts() {
    let w = World::new().wallet("acme", 0, Some(1000));
    w.email("e1", "message.accepted", "m1", json!({})).await;
    let ledger = Ledger::new(&*w.store);
    let change = LimitsChange {
        floor: Some(-500),
        review_threshold: Some(None),
    };
    let set = ledger
        .set_limits(&tid("acme"), "ops", T0 + 10, change)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (set.before.floor.minor(), set.before.review_threshold),
        (0, Some(usd().amount(1000)))
    );
    assert_eq!(
        (set.after.floor.minor(), set.after.review_threshold),
        (-500, None)
    );
    let wallet = w.balance("acme");
    assert_eq!(wallet.limits(), set.after);
    assert_eq!(
        (wallet.balance.minor(), wallet.changes),
        (-PRICE, 1),
        "the movement before is kept"
    );
    // Only the floor this time: the threshold stays removed; a movement after adds as ever.
    let floor_only = LimitsChange {
        floor: Some(2000),
        ..LimitsChange::default()
    };
    ledger
        .set_limits(&tid("acme"), "ops2", T0 + 20, floor_only)
        .await
        .unwrap();
    w.email("e2", "message.accepted", "m2", json!({})).await;
    let wallet = w.balance("acme");
    assert_eq!(
        (
            wallet.floor.minor(),
            wallet.review_threshold,
            wallet.balance.minor()
        ),
        (2000, None, -2 * PRICE)
    );
    assert!(wallet.overdrawn, "the new floor counts for the next debit");
    let journal = ledger.limits_log(&tid("acme")).await.unwrap();
    assert_eq!(
        journal
            .iter()
            .map(|l| (
                l.actor.as_str(),
                l.before.floor.minor(),
                l.after.floor.minor()
            ))
            .collect::<Vec<_>>(),
        vec![("ops", 0, -500), ("ops2", -500, 2000)]
    );
    assert_eq!(journal[1].after.review_threshold, None);
    assert_eq!(
        ledger
            .set_limits(&tid("ghost"), "ops", T0, floor_only)
            .await
            .unwrap(),
        None,
        "no wallet: nothing written"
    );
    assert!(w.store.item(&wallet_pk("ghost"), WALLET_SK).is_none());
}
