//! Contention as DynamoDB reports it, through the real SDK against DynamoDB Local: the first
//! requests of an operation are answered as DynamoDB answers under contention (a transaction
//! cancelled with a `TransactionConflict` reason, a single write answered
//! `TransactionConflictException`) by an HTTP client wrapped around the real one
//! ([`integration_tests::contention::Contended`]), the rest reach the emulator. The store sends
//! such a write again after a backoff (recorded here, never slept), a bounded number of times,
//! and counts it; past the bound the processor's conflict path (re-run, then retry) takes over.
//! Every movement happens exactly once.

use inbox_core::clock::{Draw, Pause, SystemClock};
use inbox_core::domain::{EventId, MessageKey, SourceName, Status};
use inbox_core::metrics::RecordingSink;
use inbox_core::policy::{CONFLICT_RETRIES, CONFLICT_RETRY};
use inbox_core::process::EFFECT_CONFLICT_RERUNS;
use inbox_core::store::attr::s;
use inbox_core::store::dynamo::{
    Contention, DynamoTable, TRANSACTION_CONFLICTS, TRANSACTION_CONFLICTS_EXHAUSTED,
};
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter, MessageStore};
use integration_tests::contention::Contended;
use integration_tests::pipeline::{Pipeline, TestProcessor};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wallet_ledger::{CreateOutcome, Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 7;
/// Sends of one write before it is given up: the first and its retries.
const SENDS: usize = CONFLICT_RETRIES as usize + 1;

/// The store's side of a test: the injection, the waits it asked for, its counts.
struct Rig {
    p: Pipeline,
    contended: Arc<Contended>,
    waits: Arc<Mutex<Vec<Duration>>>,
    counts: Arc<RecordingSink>,
    /// Reads and the wallet's set-up, on a client of its own (nothing injected).
    plain: DynamoTable,
    /// Writes through the injection.
    store: DynamoTable,
}

impl Rig {
    async fn new() -> Self {
        let p = Pipeline::new().await;
        let contended = Contended::new();
        let waits = Arc::new(Mutex::new(Vec::new()));
        let w = waits.clone();
        let pause: Pause = Arc::new(move |d| {
            w.lock().unwrap().push(d);
            Box::pin(async {})
        });
        // The whole ceiling: the waits say which retry each was.
        let draw: Draw = Arc::new(|| 1.0);
        let counts = Arc::new(RecordingSink::new());
        let sdk = integration_tests::sdk_config_for(&p.harness.endpoints).await;
        let store = DynamoTable::new(contended.client(&sdk), p.harness.table.clone())
            .with_contention(
                Contention::default()
                    .with_pause(pause, draw)
                    .with_metrics(counts.clone()),
            );
        let plain = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
        Self {
            p,
            contended,
            waits,
            counts,
            plain,
            store,
        }
    }

    /// The deployed registry (its reads on the plain client), the processor's writes through
    /// the injection, and a wallet for `acme`.
    async fn wallet_processor(&self) -> TestProcessor<SystemClock> {
        let registry = process_function::registry(self.plain.clone(), WalletSources::default());
        let wallet = Wallet::new(
            TenantId::parse("acme").unwrap(),
            usd().amount(PRICE),
            usd().amount(-1_000_000),
            Some(usd().amount(1_000_000)),
            0,
        );
        assert_eq!(
            Ledger::new(&self.plain).create(&wallet).await.unwrap(),
            CreateOutcome::Created
        );
        self.p
            .processor_on(self.store.clone(), registry, SystemClock)
    }

    /// A signed `message.accepted` of `acme` (the wallet debits it) ingested as `webhook_id`.
    async fn accepted(&self, webhook_id: &str, message_id: &str) -> MessageKey {
        self.mail(webhook_id, "message.accepted", message_id).await
    }

    async fn mail(&self, webhook_id: &str, kind: &str, message_id: &str) -> MessageKey {
        let body = json!({"type": kind, "timestamp": "2026-11-30T10:00:00Z",
                          "data": {"message_id": message_id, "tenant": "acme"}})
        .to_string();
        let headers = self.p.harness.sign("mailer", body.as_bytes(), webhook_id);
        let event = integration_tests::api_event("POST", "mailer", &headers, Some(&body), false);
        let r = self.p.harness.send(&event).await;
        assert_eq!(r.code(), "accepted", "{:?}", r.json);
        MessageKey::new(
            SourceName::parse("mailer").unwrap(),
            EventId::parse(webhook_id).unwrap(),
        )
    }

    /// Processes what the stream holds (one record): it ends as `outcome`, no batch failure.
    async fn process(&self, processor: &TestProcessor<SystemClock>, outcome: &str) {
        let (response, summary) = processor
            .handle_stream_batch(self.p.read_stream().await)
            .await;
        assert!(response.batch_item_failures.is_empty(), "{summary:?}");
        assert_eq!(summary.outcomes.get(outcome), Some(&1), "{summary:?}");
    }

    /// Requests of `operation` answered as conflicts, and forwarded to the table.
    fn sent(&self, operation: &str) -> (usize, usize) {
        (
            self.contended.injected(operation),
            self.contended.forwarded(operation),
        )
    }

    /// The waits the store asked for, in milliseconds, since the last call.
    fn waits(&self) -> Vec<u128> {
        std::mem::take(&mut *self.waits.lock().unwrap())
            .iter()
            .map(Duration::as_millis)
            .collect()
    }

    /// The sum of a count's values for `operation`.
    fn counted(&self, name: &str, operation: &str) -> i64 {
        self.counts
            .emitted()
            .iter()
            .filter(|(_, m)| {
                m.name == name
                    && m.properties
                        .iter()
                        .any(|(k, v)| k == "Operation" && v == operation)
            })
            .map(|(_, m)| m.value)
            .sum()
    }

    /// The wallet's balance and its ledger entries' count.
    async fn ledger(&self) -> (i64, usize) {
        let ledger = Ledger::new(&self.plain);
        let w = ledger
            .wallet(&TenantId::parse("acme").unwrap())
            .await
            .unwrap()
            .unwrap();
        let entries = ledger.entries(&w).await.unwrap();
        assert_eq!(entries.unreadable, 0);
        (w.balance.minor(), entries.entries.len())
    }
}

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

/// The ceilings of the first `n` retries (the draw is 1.0): 10, 20, 40, … ms.
fn ceilings(n: usize) -> Vec<u128> {
    (1..=n as u32)
        .map(|f| CONFLICT_RETRY.next_try(f, 1.0).unwrap().as_millis())
        .collect()
}

#[tokio::test]
async fn a_debit_whose_transaction_meets_three_conflicts_is_sent_again_and_commits_once() {
    let rig = Rig::new().await;
    let processor = rig.wallet_processor().await;
    let key = rig.accepted("msg_contended_3", "m_contended_3").await;
    rig.contended.conflict("TransactWriteItems", 3);

    rig.process(&processor, "processed").await;
    assert_eq!(
        rig.sent("TransactWriteItems"),
        (3, 1),
        "three answered as conflicts, the fourth send reached the table"
    );
    assert_eq!(
        rig.waits(),
        ceilings(3),
        "a backoff before each resend, doubling"
    );
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS, "TransactWriteItems"),
        3,
        "every retry counted"
    );
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS_EXHAUSTED, "TransactWriteItems"),
        0
    );
    assert_eq!(rig.ledger().await, (-PRICE, 1), "one debit");
    let m = rig.plain.get(&key).await.unwrap().unwrap();
    assert_eq!((m.status, m.attempts), (Status::Processed, 1));
}

#[tokio::test]
async fn conflicts_past_the_bound_go_to_the_conflict_path_and_still_debit_once() {
    let rig = Rig::new().await;
    let processor = rig.wallet_processor().await;

    // 1. One more conflict than the store's bound: the store gives up (counted), the processor
    //    re-runs the handler on fresh state, whose commit goes through.
    let key = rig
        .accepted("msg_contended_bound", "m_contended_bound")
        .await;
    rig.contended.conflict("TransactWriteItems", SENDS);
    rig.process(&processor, "processed").await;
    assert_eq!(
        rig.sent("TransactWriteItems"),
        (SENDS, 1),
        "the bound's sends conflicted; the re-run's went through"
    );
    assert_eq!(rig.waits(), ceilings(CONFLICT_RETRIES as usize));
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS, "TransactWriteItems"),
        i64::from(CONFLICT_RETRIES)
    );
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS_EXHAUSTED, "TransactWriteItems"),
        1,
        "the exhausted write counted"
    );
    assert_eq!(rig.ledger().await, (-PRICE, 1), "one debit, nothing twice");
    let m = rig.plain.get(&key).await.unwrap().unwrap();
    assert_eq!((m.status, m.attempts), (Status::Processed, 1));

    // 2. Conflicts through every re-run as well: the attempt fails as a conflict and is retried
    //    through the retry queue, which then commits the debit once.
    let key = rig.accepted("msg_contended_all", "m_contended_all").await;
    let runs = EFFECT_CONFLICT_RERUNS as usize + 1;
    rig.contended.conflict("TransactWriteItems", SENDS * runs);
    rig.process(&processor, "retrying").await;
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS_EXHAUSTED, "TransactWriteItems"),
        1 + runs as i64,
        "each run's write exhausted and counted"
    );
    let m = rig.plain.get(&key).await.unwrap().unwrap();
    assert_eq!(m.status, Status::Retrying);
    assert!(
        m.last_error
            .as_deref()
            .is_some_and(|e| e.contains("condition failed repeatedly")),
        "{:?}",
        m.last_error
    );
    assert_eq!(rig.ledger().await, (-PRICE, 1), "nothing written for it");
    assert_eq!(
        rig.contended.injected("TransactWriteItems"),
        SENDS * (1 + runs)
    );
    assert_eq!(rig.p.drain_retry_once(&processor).await, 1, "its retry");
    let m = rig.plain.get(&key).await.unwrap().unwrap();
    assert_eq!((m.status, m.attempts), (Status::Processed, 2));
    assert_eq!(rig.ledger().await, (-2 * PRICE, 2), "one debit each");
}

#[tokio::test]
async fn a_transition_meeting_a_transaction_is_sent_again() {
    let rig = Rig::new().await;
    let processor = rig.wallet_processor().await;
    // An event the wallet has nothing to write for: processed by one conditional UpdateItem.
    let key = rig
        .mail("msg_contended_opened", "message.opened", "m_x")
        .await;
    rig.contended.conflict("UpdateItem", 2);
    rig.process(&processor, "processed").await;
    assert_eq!(rig.sent("UpdateItem"), (2, 1));
    assert_eq!(rig.contended.forwarded("TransactWriteItems"), 0);
    assert_eq!(rig.waits(), ceilings(2));
    assert_eq!(rig.counted(TRANSACTION_CONFLICTS, "UpdateItem"), 2);
    let m = rig.plain.get(&key).await.unwrap().unwrap();
    assert_eq!((m.status, m.attempts), (Status::Processed, 1));
}

fn item(pk: &str) -> Item {
    Item::from([
        ("pk".to_string(), s(pk)),
        ("sk".to_string(), s("CONTENDED")),
        ("kind".to_string(), s("contended")),
    ])
}

#[tokio::test]
async fn a_single_write_meeting_a_transaction_is_sent_again_within_the_bound() {
    let rig = Rig::new().await;
    let exists = |pk: &'static str| {
        let plain = rig.plain.clone();
        async move { plain.get_item(pk, "CONTENDED").await.unwrap().is_some() }
    };

    // Two conflicts, then the put goes through.
    rig.contended.conflict("PutItem", 2);
    let done = rig
        .store
        .commit(vec![Effect::Create(item("CONTENDED#a"))])
        .await
        .unwrap();
    assert_eq!(done, Applied::Done);
    assert!(exists("CONTENDED#a").await);
    assert_eq!(rig.sent("PutItem"), (2, 1));
    assert_eq!(rig.waits(), ceilings(2));
    assert_eq!(rig.counted(TRANSACTION_CONFLICTS, "PutItem"), 2);

    // Past the bound: a conflict for the caller to decide, nothing written, counted. An item
    // created only if absent is not taken as existing.
    rig.contended.conflict("PutItem", SENDS);
    let given_up = rig
        .store
        .commit(vec![Effect::CreateIfAbsent(item("CONTENDED#b"))])
        .await
        .unwrap();
    assert_eq!(given_up, Applied::EffectConflict);
    assert!(!exists("CONTENDED#b").await, "nothing written");
    assert_eq!(rig.contended.injected("PutItem"), 2 + SENDS);
    assert_eq!(rig.counted(TRANSACTION_CONFLICTS_EXHAUSTED, "PutItem"), 1);
    assert_eq!(
        rig.counted(TRANSACTION_CONFLICTS, "PutItem"),
        2 + i64::from(CONFLICT_RETRIES)
    );
    // Sent again by the caller, it is created once.
    let again = rig
        .store
        .commit(vec![Effect::CreateIfAbsent(item("CONTENDED#b"))])
        .await
        .unwrap();
    assert_eq!(again, Applied::Done);
    assert!(exists("CONTENDED#b").await);
}
