//! The wallet's notices (`shared/wallet/src/balance/notices.rs`) on DynamoDB Local, through signed
//! webhooks, the ingest, the stream and the deployed registry at its concurrency, to a
//! destination subscribed to them: a burst of debits in one month publishes
//! `wallet.review_threshold_reached` once and `wallet.low_balance` once (when the wallet can no
//! longer afford one more send); a top-up re-arms it, and the next crossing publishes again.

use crate::wallet_events::config;
use inbox_core::clock::SystemClock;
use inbox_core::store::{Effect, ItemWriter as _};
use integration_tests::outbox::OutboxRig;
use integration_tests::pipeline::TestProcessor;
use integration_tests::receiver::Receiver;
use serde_json::{json, Value};
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::{CreateOutcome, Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 7;
const FLOOR: i64 = 2_000;
const THRESHOLD: i64 = 500;

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn send(rig: &OutboxRig, source: &str, id: &str, body: Value) {
    let body = body.to_string();
    let harness = &rig.pipeline.harness;
    let headers = harness.sign(source, body.as_bytes(), id);
    let event = integration_tests::api_event("POST", source, &headers, Some(&body), false);
    assert_eq!(harness.send(&event).await.code(), "accepted");
}

/// `n` debits (`message.accepted` of new emails), then everything the stream brings processed
/// (the burst at the deployed concurrency, then the wallet's own events it published).
async fn debits(rig: &OutboxRig, processor: &TestProcessor<SystemClock>, from: usize, n: usize) {
    for i in from..from + n {
        let body = json!({"type": "message.accepted", "timestamp": "2026-12-01T10:00:00Z",
            "data": {"message_id": format!("m{i}"), "tenant": "acme"}});
        send(rig, "mailer", &format!("msg_acc_{i}"), body).await;
    }
    process_all(rig, processor).await;
}

async fn process_all(rig: &OutboxRig, processor: &TestProcessor<SystemClock>) {
    loop {
        let batch = rig.pipeline.read_stream().await;
        if batch.records.is_empty() {
            return;
        }
        let (response, _) = processor.handle_stream_batch(batch).await;
        assert!(response.batch_item_failures.is_empty());
    }
}

/// The events the subscriber received, as `(type, data)`.
fn received(crm: &Receiver) -> Vec<(String, Value)> {
    crm.hits()
        .iter()
        .map(|h| {
            let body: Value = serde_json::from_slice(&h.body).expect("JSON");
            (
                h.header("webhook-event-type").to_owned(),
                body["data"].clone(),
            )
        })
        .collect()
}

fn of_type<'a>(events: &'a [(String, Value)], t: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(k, _)| k == t)
        .map(|(_, d)| d)
        .collect()
}

#[tokio::test]
async fn review_once_a_month_and_low_balance_once_per_crossing_rearmed_by_a_top_up() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination(
        "crm",
        &crm.url,
        &[
            "wallet:wallet.low_balance",
            "wallet:wallet.review_threshold_reached",
        ],
        |_| {},
    )
    .await;
    let store = rig.store();
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = rig.processor(registry, SystemClock).await;
    let usd = Currency::parse("usd").unwrap();
    let wallet = Wallet::new(
        acme(),
        usd.amount(PRICE),
        usd.amount(FLOOR),
        Some(usd.amount(THRESHOLD)),
        0,
    );
    let ledger = Ledger::new(&store);
    assert_eq!(
        ledger.create(&wallet).await.unwrap(),
        CreateOutcome::Created
    );
    // 27.00: the 100th debit of 0.07 leaves 20.00, which cannot pay one more send above the
    // floor of 20.00; the 72nd passes the review threshold of 5.00.
    store
        .commit(vec![Effect::Adjust {
            pk: wallet_pk("acme"),
            sk: WALLET_SK.into(),
            add: vec![("balance".into(), FLOOR + 100 * PRICE)],
            set: Vec::new(),
        }])
        .await
        .unwrap();
    let worker = rig.deliverer(SystemClock, config()).await;

    debits(&rig, &processor, 0, 200).await;
    worker.deliver_due(100).await.unwrap();
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(w.balance.minor(), FLOOR - 100 * PRICE, "every debit once");
    assert!(w.overdrawn && w.low && w.review, "{w:?}");
    let events = received(&crm);
    let low = of_type(&events, "wallet.low_balance");
    let review = of_type(&events, "wallet.review_threshold_reached");
    assert_eq!(
        (low.len(), review.len()),
        (1, 1),
        "one of each for the whole burst: {events:?}"
    );
    assert_eq!(review[0]["month"].as_str(), w.review_reported.as_deref());
    assert_eq!(review[0]["threshold"], THRESHOLD);
    assert!(review[0]["debits"].as_i64().unwrap() > THRESHOLD);
    assert_eq!(
        (low[0]["floor"].as_i64(), low[0]["price"].as_i64()),
        (Some(FLOOR), Some(PRICE))
    );
    assert!(low[0]["available"].as_i64().unwrap() - PRICE < FLOOR);
    let first = low[0]["crossing"].as_i64().unwrap();

    // A top-up back above the line re-arms it (no event); more debits cross again: a second
    // low balance, and no second review this month.
    let amount = 1_000; // 13.00 → 23.00: above the line; the 42nd debit after it crosses again
    let pi = json!({"id": "evt_topup", "object": "event", "type": "payment_intent.succeeded",
        "livemode": false, "data": {"object": {"id": "pi_topup", "object": "payment_intent",
        "amount": amount, "amount_received": amount, "currency": "usd", "livemode": false,
        "status": "succeeded", "metadata": {"tenant": "acme"}}}});
    send(&rig, "stripe", "evt_topup", pi).await;
    process_all(&rig, &processor).await;
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert!(!w.low, "re-armed: {w:?}");
    assert_eq!(received(&crm).len(), 2, "a top-up announces nothing");

    debits(&rig, &processor, 200, 60).await;
    worker.deliver_due(100).await.unwrap();
    let events = received(&crm);
    let low = of_type(&events, "wallet.low_balance");
    assert_eq!(low.len(), 2, "{events:?}");
    assert!(low[1]["crossing"].as_i64().unwrap() > first);
    assert_eq!(of_type(&events, "wallet.review_threshold_reached").len(), 1);
    assert!(worker.deliver_due(100).await.unwrap().is_empty());
    assert_eq!(crm.count(), 3, "each delivered once");
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert!(w.low);
}
