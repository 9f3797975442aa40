//! A hosted top-up end to end, as deployed but in one process: a Checkout Session created
//! through the Stripe module (`StripeCheckout`) on the local Stripe stand-in, paid, each of its
//! two events posted signed to ingest and processed on DynamoDB Local one at a time, in either
//! order (Stripe does not order them). With the PaymentIntent's first, the intent names its
//! tenant (`payment_intent_data.metadata`), so it credits the wallet at once, nothing unmatched
//! or ignored; the other event finds the payment credited and moves nothing; a redelivery is a
//! duplicate. The method saved on the customer Checkout created is autopay's.

use inbox_core::clock::SystemClock;
use inbox_core::domain::Status;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use integration_tests::stripe::{checkout, top_up, Standin};
use serde_json::{json, Value};
use wallet_ledger::payments::checkout::Checkout;
use wallet_ledger::{Currency, Funds, Ledger, TenantId, Wallet, WalletSources};

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn send(p: &Pipeline, event: &Value) -> String {
    let id = event["id"].as_str().expect("an event id");
    let body = event.to_string();
    let headers = p.harness.sign("stripe", body.as_bytes(), id);
    let request = integration_tests::api_event("POST", "stripe", &headers, Some(&body), false);
    p.harness.send(&request).await.code().to_owned()
}

#[tokio::test]
async fn a_hosted_top_up_paid_intent_first_is_credited_once_to_its_tenant() {
    top_up_paid("intent_first").await;
}

#[tokio::test]
async fn a_hosted_top_up_paid_session_first_is_credited_once_to_its_tenant() {
    top_up_paid("session_first").await;
}

/// The case, its events raised (and ingested) in `order`.
async fn top_up_paid(order: &str) {
    let s = Standin::start();
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let ledger = Ledger::new(&store);
    let usd = Currency::parse("usd").unwrap();
    let wallet = Wallet::new(acme(), usd.amount(7), usd.amount(0), None, 0);
    ledger.create(&wallet).await.unwrap();

    let session = checkout(&s)
        .create_session(&top_up(2500, "wallet-api-acme-1"))
        .await
        .unwrap();
    let paid = s.pay(
        &session.id,
        json!({"order": order, "webhook": "never", "email": "ops@acme.test"}),
    );
    let intent_id = paid["payment_intent"]["id"].as_str().unwrap().to_owned();
    let events: Vec<Value> = s
        .events(paid["events"].as_array().unwrap())
        .into_iter()
        .filter(|e| {
            ["payment_intent.succeeded", "checkout.session.completed"]
                .contains(&e["type"].as_str().unwrap())
        })
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let mut want = ["payment_intent.succeeded", "checkout.session.completed"];
    if order == "session_first" {
        want.reverse();
    }
    assert_eq!(kinds, want);
    let (first, second) = (&events[0], &events[1]);

    // The first event, processed alone: it names its tenant, so it credits at once.
    assert_eq!(send(&p, first).await, "accepted");
    processor.handle_stream_batch(p.read_stream().await).await;
    let one = p.message_of("stripe", first["id"].as_str().unwrap()).await;
    assert_eq!(one.status, Status::Processed, "{:?}", one.history);
    assert_eq!(
        ledger
            .wallet(&acme())
            .await
            .unwrap()
            .unwrap()
            .balance
            .minor(),
        2500
    );
    assert_eq!(
        ledger.payment_tenant(&intent_id).await.unwrap(),
        Some(acme()),
        "the payment's index names the tenant"
    );

    // Then the other, and a redelivery of each: nothing more moves.
    assert_eq!(send(&p, second).await, "accepted");
    assert_eq!(send(&p, first).await, "duplicate");
    assert_eq!(send(&p, second).await, "duplicate");
    processor.handle_stream_batch(p.read_stream().await).await;
    let two = p.message_of("stripe", second["id"].as_str().unwrap()).await;
    assert_eq!(two.status, Status::Processed, "{:?}", two.history);
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(w.balance.minor(), 2500, "credited exactly once");
    let row = ledger
        .payment_row(&acme(), &intent_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.funds, row.credited.get()), (Funds::Paid, 2500));
    assert!(
        p.receive(&p.quarantine_url).await.records.is_empty(),
        "nothing quarantined"
    );

    // The card was saved on the customer Checkout made: autopay can charge it.
    let method = ledger
        .autopay(&acme())
        .await
        .unwrap()
        .and_then(|a| a.method);
    let method = method.expect("the method saved for autopay");
    assert_eq!(
        method.customer,
        paid["object"]["customer"].as_str().unwrap()
    );
    assert_eq!(
        method.payment_method,
        paid["payment_intent"]["payment_method"].as_str().unwrap()
    );
}
