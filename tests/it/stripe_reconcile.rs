//! The ledger reconciled against Stripe, end to end on DynamoDB Local and the local Stripe
//! stand-in: the pass the catch-up function runs hourly (`wallet_ledger::reconcile::provider`
//! over `stripe_charges::reconcile::StripePayments` and the ledger) finds nothing in a clean
//! month; a payment whose webhooks were dropped is paid-not-credited until the catch-up stores its
//! events, then clean; a ledger row forged from a signed event naming an intent Stripe never had
//! is credited-not-in-Stripe; a payment credited with another amount is amounts-differ; a bank
//! debit still `processing` is not a difference; a refund made in Stripe (`POST /v1/refunds`)
//! whose `charge.refunded` webhook was dropped is refunds-differ until the catch-up stores it.

use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::ingest::Origin;
use inbox_core::outbox::bucket::shared::LocalBucket;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use integration_tests::receiver::Receiver;
use integration_tests::stripe::{
    charger, checkout, events, quick_config, request, top_up, Standin,
};
use serde_json::json;
use std::time::Duration;
use stripe_charges::catch_up::{catch_up, CatchUpRequest};
use stripe_charges::events::EventQuery;
use stripe_charges::reconcile::StripePayments;
use stripe_charges::StripeClient;
use wallet_ledger::autopay::{ChargeOutcome, Charger};
use wallet_ledger::payments::checkout::Checkout;
use wallet_ledger::reconcile::provider::pass::{compare, Options, ProviderReport};
use wallet_ledger::reconcile::provider::Kind;
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletSources, STRIPE_TYPES};

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

/// The receiver's hits from `from` on, once there are at least `n` of them (polled, 10 s at most).
async fn hits_from(r: &Receiver, from: usize, n: usize) -> Vec<integration_tests::receiver::Hit> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let hits = r.hits();
        if hits.len() >= from + n {
            return hits[from..from + n].to_vec();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} webhooks",
            hits.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each webhook as the stand-in sent it, posted to ingest.
async fn forward(p: &Pipeline, hits: &[integration_tests::receiver::Hit]) {
    for hit in hits {
        let headers: Vec<(String, String)> = ["stripe-signature", "content-type"]
            .iter()
            .map(|h| ((*h).to_owned(), hit.header(h).to_owned()))
            .collect();
        let body = String::from_utf8(hit.body.clone()).unwrap();
        assert_eq!(
            p.harness.post("stripe", &headers, &body).await.code(),
            "accepted"
        );
    }
}

/// A top-up of `minor` paid by the payer: its PaymentIntent's id.
async fn paid(s: &Standin, minor: i64, key: &str) -> String {
    let session = checkout(s)
        .create_session(&top_up(minor, key))
        .await
        .unwrap();
    let out = s.pay(&session.id, json!({"webhook": "after"}));
    out["payment_intent"]["id"].as_str().unwrap().to_owned()
}

/// A `payment_intent.succeeded` for `intent` of `minor` naming acme, signed with the inbox's
/// own Stripe secret and posted to ingest: a ledger row Stripe's records do not back.
async fn forged(p: &Pipeline, event: &str, intent: &str, minor: i64) {
    let body = json!({"id": event, "object": "event", "type": "payment_intent.succeeded",
        "livemode": false, "created": SystemClock.now_secs(), "data": {"object": {
            "id": intent, "object": "payment_intent", "status": "succeeded", "amount": minor,
            "amount_received": minor, "currency": "usd", "metadata": {"tenant": "acme"}}}})
    .to_string();
    let headers = p.harness.sign("stripe", body.as_bytes(), event);
    assert_eq!(
        p.harness.post("stripe", &headers, &body).await.code(),
        "accepted"
    );
}

/// The operator's catch-up of the wallet's event types created from `since` on.
fn catch_up_since(since: i64) -> CatchUpRequest {
    CatchUpRequest {
        query: EventQuery {
            types: STRIPE_TYPES.iter().map(|t| (*t).to_owned()).collect(),
            created_gte: since,
            created_lte: None,
            delivery_success: None,
        },
        source: "stripe".into(),
        key_livemode: Some(false),
        dry_run: false,
        origin: Origin {
            how: "catch-up",
            operator: "it".into(),
            at_ms: SystemClock.now_millis(),
        },
    }
}

fn differences(r: &ProviderReport) -> Vec<(Kind, String)> {
    r.differences
        .iter()
        .map(|d| (d.kind, d.payment.clone()))
        .collect()
}

#[tokio::test]
async fn the_ledger_against_stripe_reports_each_difference_by_kind_and_nothing_in_flight() {
    let receiver = Receiver::always(200);
    let s = Standin::delivering(&receiver.url, &integration_tests::local_secret("stripe"));
    // A bank debit stays `processing` for the whole test.
    s.configure(json!({"settle_after_s": 40 * 86_400}));
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let ledger = Ledger::new(&store);
    let usd = Currency::parse("usd").unwrap();
    ledger
        .create(&Wallet::new(acme(), usd.amount(7), usd.amount(0), None, 0))
        .await
        .unwrap();
    let payments = StripePayments::on(
        StripeClient::from_config(&quick_config(&s), LocalBucket::default()).unwrap(),
    );
    let month = Options {
        window_secs: 30 * 86_400,
        ..Options::default()
    };
    // Each pass two hours of Stripe's clock later: what was paid is past the grace.
    let pass = || async {
        let now = s.advance(2 * 3600);
        compare(&payments, &ledger, now, month).await.unwrap()
    };

    // A clean month: a top-up's webhooks arrive and credit it.
    paid(&s, 2500, "reconcile-1").await;
    forward(&p, &hits_from(&receiver, 0, 2).await).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let clean = pass().await;
    assert!(clean.is_clean(), "{clean:?}");
    assert_eq!((clean.product, clean.retrieved), (1, 0), "{clean:?}");
    assert!(clean.requests >= 1);

    // Webhooks dropped: the payment is made in Stripe, the ledger never hears of it.
    let since = s.advance(0) - 3600;
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": true})));
    let lost = paid(&s, 1000, "reconcile-2").await;
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": false})));
    let found = pass().await;
    assert_eq!(differences(&found), [(Kind::PaidNotCredited, lost.clone())]);
    let d = &found.differences[0];
    assert_eq!(
        (
            d.tenant.as_ref(),
            d.stripe.as_ref().map(|r| r.received),
            d.ledger.as_ref()
        ),
        (Some(&acme()), Some(1000), None)
    );

    // The catch-up stores the dropped events; the pipeline credits them: clean again.
    let caught = catch_up(
        &events(&s),
        &p.harness.service,
        &catch_up_since(since),
        |_| {},
    )
    .await
    .unwrap();
    assert!(caught.new_events() >= 1, "{caught:?}");
    processor.handle_stream_batch(p.read_stream().await).await;
    let healed = pass().await;
    assert!(healed.is_clean(), "{healed:?}");

    // A row forged in the ledger for an intent Stripe never had.
    forged(&p, "evt_forged_1", "pi_forged_1", 5000).await;
    // A payment made in Stripe (its webhooks dropped), credited from a forged event with
    // another amount.
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": true})));
    let short = paid(&s, 1500, "reconcile-3").await;
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": false})));
    forged(&p, "evt_forged_2", &short, 999).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(
        ledger
            .payment_row(&acme(), "pi_forged_1")
            .await
            .unwrap()
            .unwrap()
            .credited
            .get(),
        5000
    );
    // A bank debit of an autopay attempt, still processing.
    let (customer, pm) = s.customer("pm_sepa_debit");
    let reply = charger(&s)
        .charge(&request(&customer, &pm, "attempt-sepa"))
        .await;
    assert_eq!(reply.outcome, ChargeOutcome::Pending, "{reply:?}");

    let report = pass().await;
    let mut got = differences(&report);
    got.sort();
    assert_eq!(
        got,
        [
            (Kind::CreditedNotInStripe, "pi_forged_1".to_owned()),
            (Kind::AmountsDiffer, short.clone()),
        ]
    );
    assert_eq!(
        report.retrieved, 1,
        "the forged row, retrieved by id: {report:?}"
    );
    assert_eq!(
        report
            .waiting
            .get("processing: a bank debit takes days to settle"),
        Some(&1),
        "{report:?}"
    );
    let by_name: std::collections::HashMap<String, i64> = report
        .metrics()
        .into_iter()
        .map(|m| (m.name, m.value))
        .collect();
    assert_eq!(
        (
            by_name["StripePaidNotCredited"],
            by_name["StripeCreditedNotInStripe"],
            by_name["StripeAmountsDiffer"],
            by_name["StripeRefundsDiffer"]
        ),
        (0, 1, 1, 0)
    );

    // The catch-up function's run at the top of an hour reconciles after catching up, and
    // emits the same counts (in the wallet's namespace) with its report.
    use catch_up_function::against::Against;
    use catch_up_function::{run, stripe_source, Service};
    use inbox_core::clock::ManualClock;
    use inbox_core::ingest::Ingestor;
    use inbox_core::metrics::RecordingSink;
    use std::sync::Arc;
    use stripe_charges::catch_up::scheduled::Scheduled;
    let top_of_hour = (s.advance(0) / 3600 + 1) * 3600 + 60;
    let metrics = Arc::new(RecordingSink::default());
    let service = Service {
        scheduled: Scheduled {
            events: events(&s),
            ingestor: Ingestor::new(
                stripe_source(r#"{"stripe":{"scheme":"stripe"}}"#, "stripe").unwrap(),
                store.clone(),
                SystemClock,
                64 * 1024,
                30,
            ),
            types: STRIPE_TYPES.iter().map(|t| (*t).to_owned()).collect(),
            source: "stripe".into(),
            key_livemode: Some(false),
        },
        against: Some(Against {
            payments: StripePayments::on(
                StripeClient::from_config(&quick_config(&s), LocalBucket::default()).unwrap(),
            ),
            options: month,
        }),
        clock: Arc::new(ManualClock::at_secs(top_of_hour)),
        metrics: metrics.clone(),
    };
    let value = run(&service, None).await.unwrap();
    let counts = &value["stripe_reconcile"]["counts"];
    assert_eq!(
        (&counts["credited_not_in_stripe"], &counts["amounts_differ"]),
        (&json!(1), &json!(1)),
        "{value}"
    );
    let emitted: std::collections::HashMap<String, i64> = metrics
        .emitted()
        .into_iter()
        .filter(|(_, m)| m.namespace == wallet_ledger::METRICS_NAMESPACE)
        .map(|(_, m)| (m.name, m.value))
        .collect();
    assert_eq!(
        (
            emitted["StripeCreditedNotInStripe"],
            emitted["StripeAmountsDiffer"],
            emitted["StripePaidNotCredited"]
        ),
        (1, 1, 0),
        "{emitted:?}"
    );
}

#[tokio::test]
async fn a_refund_whose_webhook_was_dropped_differs_until_caught_up() {
    let receiver = Receiver::always(200);
    let s = Standin::delivering(&receiver.url, &integration_tests::local_secret("stripe"));
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let ledger = Ledger::new(&store);
    let usd = Currency::parse("usd").unwrap();
    ledger
        .create(&Wallet::new(acme(), usd.amount(7), usd.amount(0), None, 0))
        .await
        .unwrap();
    let payments = StripePayments::on(
        StripeClient::from_config(&quick_config(&s), LocalBucket::default()).unwrap(),
    );
    let month = Options {
        window_secs: 30 * 86_400,
        ..Options::default()
    };
    let pass = || async {
        let now = s.advance(2 * 3600);
        compare(&payments, &ledger, now, month).await.unwrap()
    };
    let intent = paid(&s, 2500, "refund-1").await;
    forward(&p, &hits_from(&receiver, 0, 2).await).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let clean = pass().await;
    assert!(clean.is_clean(), "{clean:?}");

    // Refunded in part in Stripe; the webhook dropped.
    let since = s.advance(0) - 3600;
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": true})));
    let refund = s.post_form(
        "/v1/refunds",
        &format!("payment_intent={intent}&amount=700"),
    );
    s.call("POST", "/_standin/webhooks", Some(&json!({"drop": false})));
    assert_eq!(
        (refund["status"].as_str(), refund["amount"].as_i64()),
        (Some("succeeded"), Some(700)),
        "{refund}"
    );
    let found = pass().await;
    assert_eq!(differences(&found), [(Kind::RefundsDiffer, intent.clone())]);
    let d = &found.differences[0];
    assert_eq!(
        (
            d.stripe.as_ref().map(|r| (r.received, r.refunded)),
            d.ledger.as_ref().map(|b| (b.credited, b.refund_total))
        ),
        (Some((2500, 700)), Some((2500, 0)))
    );
    assert_eq!(
        ledger
            .payment_row(&acme(), &intent)
            .await
            .unwrap()
            .unwrap()
            .refund_total
            .get(),
        0
    );

    // The catch-up stores the dropped `charge.refunded`; the pipeline records it: clean again.
    let caught = catch_up(
        &events(&s),
        &p.harness.service,
        &catch_up_since(since),
        |_| {},
    )
    .await
    .unwrap();
    assert!(caught.new_events() >= 1, "{caught:?}");
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(
        ledger
            .payment_row(&acme(), &intent)
            .await
            .unwrap()
            .unwrap()
            .refund_total
            .get(),
        700
    );
    let healed = pass().await;
    assert!(healed.is_clean(), "{healed:?}");
}
