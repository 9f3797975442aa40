//! Holds the wallet API places, on DynamoDB Local with the real table: core's bounded adjustment
//! (`Effect::AdjustIf`: an `UpdateItem` with a condition, alone and in a transaction); 200
//! concurrent holds against a wallet that affords exactly 100 (100 held, 100 refused, the balance,
//! held amount and entries reconciling); the floor; and a hold settled by the delivery webhooks
//! through the pipeline (`accepted` captures it once, a hard bounce releases it).

use inbox_core::clock::SystemClock;
use inbox_core::store::attr::{get_n, n, s};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{Applied, Bound, Effect, Item, ItemWriter};
use integration_tests::pipeline::Pipeline;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::balance::rules::{EmailState, EntryKind};
use wallet_ledger::email::holds::{HoldOutcome, HoldRequest, Holds, ReleaseOutcome};
use wallet_ledger::reconcile::{reconcile, ReconcileOptions};
use wallet_ledger::{CreateOutcome, Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 20;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// A table with `acme`'s wallet (floor `floor`, at 0.20 an email) topped up with `balance` by a
/// Stripe payment through the pipeline (so its balance is the sum of its entries).
async fn funded(balance: i64, floor: i64) -> (Pipeline, DynamoTable) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let wallet = Wallet::new(acme(), usd().amount(PRICE), usd().amount(floor), None, 0);
    assert_eq!(
        Ledger::new(&store).create(&wallet).await.unwrap(),
        CreateOutcome::Created
    );
    let pi = json!({"id": "evt_pi_1", "object": "event", "type": "payment_intent.succeeded",
        "livemode": false, "data": {"object": {"id": "pi_1", "object": "payment_intent",
        "amount": balance, "amount_received": balance, "currency": "usd", "livemode": false,
        "status": "succeeded", "metadata": {"tenant": "acme"}}}});
    assert_eq!(send(&p, "stripe", "evt_pi_1", pi).await, "accepted");
    process(&p, &store).await;
    assert_eq!(wallet_of(&store).await.balance.minor(), balance);
    (p, store)
}

async fn send(p: &Pipeline, source: &str, id: &str, body: serde_json::Value) -> String {
    let body = body.to_string();
    let headers = p.harness.sign(source, body.as_bytes(), id);
    let event = integration_tests::api_event("POST", source, &headers, Some(&body), false);
    p.harness.send(&event).await.code().to_owned()
}

/// Processes what the stream holds, through the deployed registry.
async fn process(p: &Pipeline, store: &DynamoTable) {
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    processor.handle_stream_batch(p.read_stream().await).await;
}

async fn mail(p: &Pipeline, id: &str, kind: &str, message_id: &str, extra: serde_json::Value) {
    let mut data = json!({"message_id": message_id, "tenant": "acme"});
    if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
        d.extend(e.clone());
    }
    let body = json!({"type": kind, "timestamp": "2026-11-30T10:00:00Z", "data": data});
    assert_eq!(send(p, "mailer", id, body).await, "accepted");
}

async fn wallet_of(store: &DynamoTable) -> Wallet {
    Ledger::new(store).wallet(&acme()).await.unwrap().unwrap()
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

/// No effects of the caller's.
fn none<T>(_: &T) -> Vec<Effect> {
    Vec::new()
}

fn opts() -> ReconcileOptions {
    ReconcileOptions::new(i64::MAX, Duration::from_secs(30 * 86_400))
}

#[tokio::test]
async fn a_bounded_adjustment_is_a_conditional_update_alone_and_in_a_transaction() {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let adjust = |held: i64, max: i64| Effect::AdjustIf {
        pk: "W#1".into(),
        sk: "W".into(),
        add: vec![("held".into(), held)],
        set: vec![("seen".into(), s("yes"))],
        bounds: vec![
            Bound::AtLeast("balance".into(), 10),
            Bound::AtMost("held".into(), max),
        ],
    };
    let get = |k: &'static str| {
        let client = p.harness.client.clone();
        let table = p.harness.table.clone();
        async move {
            client
                .get_item()
                .table_name(table)
                .key("pk", s("W#1"))
                .key("sk", s("W"))
                .consistent_read(true)
                .send()
                .await
                .unwrap()
                .item
                .and_then(|i| get_n(&i, k))
        }
    };
    assert_eq!(
        store.commit(vec![adjust(1, 5)]).await.unwrap(),
        Applied::EffectConflict,
        "the item must exist (not created as Adjust would)"
    );
    assert_eq!(get("held").await, None);
    store
        .commit(vec![Effect::Create(Item::from([
            ("pk".to_string(), s("W#1")),
            ("sk".to_string(), s("W")),
            ("balance".to_string(), n(10)),
            ("held".to_string(), n(0)),
        ]))])
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            store.commit(vec![adjust(2, 4)]).await.unwrap(),
            Applied::Done
        );
    }
    assert_eq!(
        store.commit(vec![adjust(2, 4)]).await.unwrap(),
        Applied::EffectConflict,
        "held is 6: above the bound"
    );
    let other = Item::from([("pk".to_string(), s("O#1")), ("sk".to_string(), s("O"))]);
    assert_eq!(
        store
            .commit(vec![Effect::Create(other.clone()), adjust(1, 100)])
            .await
            .unwrap(),
        Applied::Done,
        "in a transaction"
    );
    let other2 = Item::from([("pk".to_string(), s("O#2")), ("sk".to_string(), s("O"))]);
    assert_eq!(
        store
            .commit(vec![Effect::Create(other2), adjust(1, 6)])
            .await
            .unwrap(),
        Applied::EffectConflict,
        "a failed bound cancels the transaction"
    );
    assert_eq!(get("held").await, Some(7));
    let absent = Effect::AdjustIf {
        pk: "W#1".into(),
        sk: "W".into(),
        add: vec![("held".into(), 1)],
        set: Vec::new(),
        bounds: vec![Bound::AtLeast("missing".into(), 0)],
    };
    assert_eq!(
        store.commit(vec![absent]).await.unwrap(),
        Applied::EffectConflict,
        "an absent attribute fails its bound"
    );
}

#[tokio::test]
async fn two_hundred_concurrent_holds_against_a_wallet_affording_a_hundred() {
    // 20.00 above the floor of 20.00 at 0.20 a hold: exactly 100 fit.
    let (p, _) = funded(4_000, 2_000).await;
    // The functions' fail-fast client gives a request 2 s: a burst of transactions on one
    // emulator on a shared machine may take longer to drain than that, so this client waits.
    let sdk = integration_tests::emulator::sdk_config_for(&p.harness.endpoints).await;
    let patient = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_secs(60))
                .build(),
        )
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(patient);
    let store = Arc::new(DynamoTable::new(client, p.harness.table.clone()));
    // All 200 race for the wallet, 25 requests in flight: DynamoDB Local serialises
    // transactions on an item behind a lock, and a longer queue for it fails with its own
    // "waiting for a lock" error (which DynamoDB itself never answers).
    let in_flight = Arc::new(tokio::sync::Semaphore::new(25));
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let store = store.clone();
            let in_flight = in_flight.clone();
            tokio::spawn(async move {
                let _slot = in_flight.acquire().await.unwrap();
                let h = Holds::new(&*store);
                let outcome = h
                    .place(&request(&format!("m{i}"), &format!("h{i}"), None), none)
                    .await
                    .unwrap();
                (outcome, h.take_metrics())
            })
        })
        .collect();
    let (mut held, mut refused, mut conflicted, mut conflicts) = (0, 0, 0, 0);
    for t in tasks {
        let (outcome, metrics) = t.await.unwrap();
        match outcome {
            HoldOutcome::Held(_) => held += 1,
            HoldOutcome::InsufficientFunds { .. } => refused += 1,
            other => panic!("{other:?}"),
        }
        for m in metrics.iter().filter(|m| m.name == "HoldConflicts") {
            conflicted += 1;
            conflicts += m.value;
        }
    }
    eprintln!(
        "200 concurrent holds on DynamoDB Local: {conflicted} met a conflict, {conflicts} retries in all"
    );
    assert_eq!((held, refused), (100, 100));
    let w = wallet_of(&store).await;
    assert_eq!((w.balance.minor(), w.held.minor()), (4_000, 2_000));
    assert_eq!(
        w.available().unwrap(),
        w.floor,
        "down to the floor, not below"
    );
    let rows = Ledger::new(&*store).email_rows(&acme()).await.unwrap();
    assert_eq!(rows.len(), 100);
    assert!(rows.iter().all(|r| r.state == EmailState::Held));
    let now = inbox_core::clock::Clock::now_millis(&SystemClock);
    let report = reconcile(&*store, now, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 101, "the top-up and 100 holds");
}

#[tokio::test]
async fn a_hold_below_the_floor_is_refused_and_the_webhooks_settle_a_hold() {
    let (p, store) = funded(2_100, 2_000).await;
    let h = Holds::new(&store);
    assert_eq!(
        h.place(&request("m0", "h0", Some(101)), none)
            .await
            .unwrap(),
        HoldOutcome::InsufficientFunds {
            available: usd().amount(2_100),
            floor: usd().amount(2_000),
            amount: usd().amount(101),
        }
    );
    for i in 1..=3 {
        let placed = h
            .place(&request(&format!("m{i}"), &format!("h{i}"), None), none)
            .await
            .unwrap();
        assert!(matches!(placed, HoldOutcome::Held(_)), "{placed:?}");
    }
    assert_eq!(wallet_of(&store).await.held.minor(), 3 * PRICE);
    // m1: sent (nothing more held), delivered twice: one debit capturing it.
    mail(&p, "w1", "message.sent", "m1", json!({})).await;
    mail(&p, "w2", "message.accepted", "m1", json!({})).await;
    mail(&p, "w3", "message.accepted", "m1", json!({})).await;
    // m2: a hard bounce releases it.
    mail(
        &p,
        "w4",
        "message.bounced",
        "m2",
        json!({"bounce_type": "hard"}),
    )
    .await;
    process(&p, &store).await;
    let w = wallet_of(&store).await;
    assert_eq!((w.balance.minor(), w.held.minor()), (2_100 - PRICE, PRICE));
    let ledger = Ledger::new(&store);
    let state = |m: &'static str| {
        let ledger = &ledger;
        async move { ledger.email_row(&acme(), m).await.unwrap().unwrap().state }
    };
    assert_eq!(state("m1").await, EmailState::Debited);
    assert_eq!(state("m2").await, EmailState::Released);
    // m3: released by the API; m1 can no longer be.
    assert!(matches!(
        h.release(&acme(), "h3", none).await.unwrap(),
        ReleaseOutcome::Released(_)
    ));
    assert_eq!(
        h.release(&acme(), "h1", none).await.unwrap(),
        ReleaseOutcome::Settled {
            state: EmailState::Debited
        }
    );
    let w = wallet_of(&store).await;
    assert_eq!((w.balance.minor(), w.held.minor()), (2_100 - PRICE, 0));
    let mut kinds: Vec<_> = ledger
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
        vec![
            EntryKind::Topup,
            EntryKind::Hold,
            EntryKind::Hold,
            EntryKind::Hold,
            EntryKind::HoldRelease,
            EntryKind::HoldRelease,
            EntryKind::Debit
        ]
    );
    let now = inbox_core::clock::Clock::now_millis(&SystemClock);
    let report = reconcile(&store, now, opts()).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn an_expired_hold_is_found_through_the_index_and_released_once() {
    use wallet_ledger::email::holds::expiry::HoldSweep;
    let (_p, store) = funded(1000, 0).await;
    let mut short = request("m-exp", "h-exp", None);
    short.expires_in = Some(Duration::from_secs(60));
    let HoldOutcome::Held(held) = Holds::new(&store).place(&short, none).await.unwrap() else {
        panic!("not held")
    };
    assert!(matches!(
        Holds::new(&store)
            .place(&request("m-long", "h-long", None), none)
            .await
            .unwrap(),
        HoldOutcome::Held(_)
    ));
    let sweep = |at: i64| HoldSweep {
        store: store.clone(),
        clock: Arc::new(inbox_core::clock::ManualClock::at_millis(at)),
        batch: 10,
    };
    let early = sweep(held.expires_at - 1).run().await;
    assert_eq!((early.due, early.expired, early.errors), (0, 0, 0));
    let report = sweep(held.expires_at).run().await;
    assert_eq!(
        (report.due, report.expired, report.errors),
        (1, 1, 0),
        "{report:?}"
    );
    let wallet = wallet_of(&store).await;
    assert_eq!(
        (wallet.balance.minor(), wallet.held.minor()),
        (1000, PRICE),
        "the expired hold released, the other still held"
    );
    let row = Ledger::new(&store)
        .email_row(&acme(), "m-exp")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, EmailState::Expired);
    let again = sweep(held.expires_at + 1).run().await;
    assert_eq!(again.due, 0, "out of the index once expired");
    let now = held.expires_at + 1;
    let reconciled = reconcile(&store, now, opts()).await.unwrap();
    assert!(reconciled.is_clean(), "{reconciled:?}");
    integration_tests::faults::report::record(
        "8-wallet",
        "a hold whose send never happened, never captured nor released",
        "2 API holds (expires_in 60 s, and the 24 h default); the expiry sweep 1 ms before the \
         first's expiry, at it, and after"
            .into(),
        format!(
            "before: due {}, expired {}; at the expiry: due {}, expired {} (the 24 h hold still \
             held: {} minor units); after: due {}; the row `{:?}`; reconciliation clean: {}",
            early.due,
            early.expired,
            report.due,
            report.expired,
            wallet.held.minor(),
            again.due,
            row.state,
            reconciled.is_clean()
        ),
    );
}
