//! The instance's view of a sharded wallet on DynamoDB Local, its reads counted at the SDK
//! (`KeyMeter`): on a wallet of 8 shards with a warm view, a hold (`Holds::place`, as the wallet
//! API calls it) and a webhook's debit (the mailer's `message.accepted`, through the processor's
//! wallet handler: a capture of a held email, or a debit of one never held) each read exactly one
//! shard item, strongly, and not the AUTOPAY item; without the view each reads all 8 and the
//! AUTOPAY item. The money is exact either way.

use inbox_core::clock::{ManualClock, SystemClock};
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::process::Outcome;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::balance::items::shards::{pick, shard_key};
use wallet_ledger::balance::items::wallet_pk;
use wallet_ledger::email::holds::{HoldOutcome, HoldRequest, Holds};
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletSources, WalletViews};

const PRICE: i64 = 25;
const SHARDS: u32 = 8;
const FUNDS: i64 = 1_000_000;

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// A wallet of 8 shards, each shard topped up with `FUNDS / 8` by a Stripe payment (through the
/// pipeline) whose payment intent hashes to it, on the counted client.
async fn sharded() -> (Pipeline, DynamoTable) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone());
    let usd = Currency::parse("usd").unwrap();
    let w = Wallet::new(acme(), usd.amount(PRICE), usd.amount(0), None, 0);
    Ledger::new(&store).create(&w).await.unwrap();
    Ledger::new(&store)
        .set_shards(&acme(), SHARDS)
        .await
        .unwrap();
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    for shard in 0..SHARDS {
        let pi = (0..)
            .map(|i| format!("pi_{i}"))
            .find(|pi| pick(pi, SHARDS) == shard)
            .unwrap();
        let session = json!({"object": "checkout.session", "id": format!("cs_{pi}"),
            "payment_intent": pi, "amount_total": FUNDS / i64::from(SHARDS), "currency": "usd",
            "payment_status": "paid", "metadata": {"tenant": "acme"}});
        let r = p
            .ingest(
                &format!("evt_{pi}"),
                "checkout.session.completed",
                json!({"livemode": false, "data": {"object": session}}),
            )
            .await;
        assert_eq!(r.code(), "accepted");
        processor.handle_stream_batch(p.read_stream().await).await;
    }
    let w = Ledger::new(&store).wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(w.balance.minor(), FUNDS);
    assert!(
        w.shards.iter().all(|s| s.balance.get() > 0),
        "{:?}",
        w.shards
    );
    (p, store)
}

fn request(message_id: &str) -> HoldRequest {
    HoldRequest {
        tenant: acme(),
        message_id: message_id.into(),
        amount: None,
        hold_id: format!("hold_{message_id}"),
        expires_in: None,
    }
}

async fn hold(store: &DynamoTable, views: &WalletViews, message_id: &str) {
    let outcome = Holds::new(store)
        .with_views(views.clone())
        .place(&request(message_id), |_| Vec::new())
        .await
        .unwrap();
    assert!(matches!(outcome, HoldOutcome::Held(_)), "{outcome:?}");
}

/// The mailer's `message.accepted` of `message_id`, ingested (signed, through the real handler).
async fn accepted(p: &Pipeline, message_id: &str) -> MessageKey {
    let id = format!("evt_{message_id}");
    let body = json!({"type": "message.accepted", "timestamp": "2026-11-30T10:00:00Z",
        "data": {"message_id": message_id, "tenant": "acme"}})
    .to_string();
    let headers = p.harness.sign("mailer", body.as_bytes(), &id);
    let event = integration_tests::api_event("POST", "mailer", &headers, Some(&body), false);
    assert_eq!(p.harness.send(&event).await.code(), "accepted", "{id}");
    MessageKey::new(
        SourceName::parse("mailer").unwrap(),
        EventId::parse(&id).unwrap(),
    )
}

/// The shard items a movement read (each key with its read's half units), and whether it read
/// the AUTOPAY item.
type MovementReads = (Vec<((String, String), u64)>, bool);

/// The wallet's shard items and whether the AUTOPAY item were read since the last reset, each
/// shard with its read's half units.
fn wallet_reads(p: &Pipeline) -> MovementReads {
    let reads = p.keys.items_read();
    let shards: Vec<_> = (0..SHARDS).map(|n| shard_key("acme", n)).collect();
    let autopay = reads
        .iter()
        .any(|(pk, sk, _)| pk == &wallet_pk("acme") && sk == "AUTOPAY");
    let read = reads
        .into_iter()
        .filter(|(pk, sk, _)| shards.contains(&(pk.clone(), sk.clone())))
        .map(|(pk, sk, half)| ((pk, sk), half))
        .collect();
    (read, autopay)
}

/// What the measured movements read, one [`MovementReads`] each.
type Reads = Vec<MovementReads>;

async fn measure(
    p: &Pipeline,
    store: &DynamoTable,
    views: &WalletViews,
    tag: &str,
) -> (Reads, Reads, Vec<u32>) {
    let registry =
        process_function::registry_with(store.clone(), WalletSources::default(), views.clone());
    let processor = p.processor(registry, SystemClock).await;
    // Warm: the view read whole once (by a hold the measurement leaves out).
    hold(store, views, &format!("{tag}-warm")).await;
    let mut holds = Vec::new();
    let mut expected = Vec::new();
    for i in 0..8 {
        let m = format!("{tag}-held-{i}");
        p.keys.reset();
        hold(store, views, &m).await;
        holds.push(wallet_reads(p));
        expected.push(pick(&m, SHARDS));
    }
    // The debits: four captures of those holds, four emails never held.
    let mut debits = Vec::new();
    for i in 0..8 {
        let m = if i < 4 {
            format!("{tag}-held-{i}")
        } else {
            format!("{tag}-unheld-{i}")
        };
        let key = accepted(p, &m).await;
        p.keys.reset();
        assert_eq!(
            processor.process_key(&key).await.unwrap(),
            Outcome::Processed
        );
        debits.push(wallet_reads(p));
        expected.push(pick(&m, SHARDS));
    }
    (holds, debits, expected)
}

#[tokio::test]
async fn with_a_warm_view_a_movement_reads_its_own_shard_alone_and_all_eight_without() {
    let (p, store) = sharded().await;
    let clock = Arc::new(ManualClock::at_millis(1_796_032_800_000));
    let views = WalletViews::new(Duration::from_secs(60), clock);
    let (holds, debits, expected) = measure(&p, &store, &views, "viewed").await;
    for (i, (read, autopay)) in holds.iter().chain(&debits).enumerate() {
        let own = shard_key("acme", expected[i]);
        assert_eq!(
            read,
            &vec![(own, 2)],
            "movement {i}: its own shard, strongly, alone"
        );
        assert!(!autopay, "movement {i} read the AUTOPAY item");
    }
    // Without the view: all 8 and the AUTOPAY item, every time.
    let (holds, debits, _) = measure(&p, &store, &WalletViews::disabled(), "whole").await;
    for (i, (read, autopay)) in holds.iter().chain(&debits).enumerate() {
        assert_eq!(read.len(), SHARDS as usize, "movement {i}: {read:?}");
        assert!(read.iter().all(|(_, half)| *half == 2), "{read:?}");
        assert!(autopay, "movement {i}");
    }
    // The money is exact: every hold held once, every debit once (4 captured, 4 never held).
    let w = Ledger::new(&store).wallet(&acme()).await.unwrap().unwrap();
    let holds = 2 * 9;
    assert_eq!(
        (w.balance.minor(), w.held.minor()),
        (FUNDS - 2 * 8 * PRICE, (holds - 2 * 4) * PRICE)
    );
    println!(
        "reads per movement at K = {SHARDS}: a hold or a debit with the view 1 shard item, \
         without it {SHARDS} and the AUTOPAY item"
    );
}
