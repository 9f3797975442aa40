//! Catch-up from Stripe's events API, end to end on DynamoDB Local and the local Stripe
//! stand-in: the stand-in's webhooks reach ingest (through a local receiver, forwarded as they
//! came, signature and all) until it is told to drop them for an hour of its clock, as an
//! endpoint Stripe gave up on; top-ups paid meanwhile are made and listed but never delivered.
//! `stripe_charges::catch_up` (what `inboxctl stripe catch-up` runs) lists the events, stores
//! the ones the inbox lacks through ingest's own identity and conditional put, and the normal
//! pipeline (the table's stream, the process function's handlers) credits each payment once;
//! then the dropped webhooks are delivered late anyway and are duplicates that change nothing.

use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::ingest::{Origin, ORIGIN_HEADER};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use integration_tests::receiver::Receiver;
use integration_tests::stripe::{checkout, events, top_up, Standin};
use serde_json::{json, Value};
use std::time::Duration;
use stripe_charges::catch_up::{catch_up, CatchUpRequest, Verdict};
use stripe_charges::events::EventQuery;
use wallet_ledger::payments::checkout::Checkout;
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
            return hits[from..].to_vec();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} webhooks, waited for {}",
            hits.len(),
            from + n
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Each webhook as the stand-in sent it, posted to ingest: ingest's answers.
async fn forward(p: &Pipeline, hits: &[integration_tests::receiver::Hit]) -> Vec<String> {
    let mut codes = Vec::new();
    for hit in hits {
        let headers: Vec<(String, String)> = ["stripe-signature", "content-type"]
            .iter()
            .map(|h| ((*h).to_owned(), hit.header(h).to_owned()))
            .collect();
        let body = String::from_utf8(hit.body.clone()).unwrap();
        codes.push(
            p.harness
                .post("stripe", &headers, &body)
                .await
                .code()
                .to_owned(),
        );
    }
    codes
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

fn request(since: i64, delivery_success: Option<bool>, dry_run: bool) -> CatchUpRequest {
    CatchUpRequest {
        query: EventQuery {
            types: STRIPE_TYPES.iter().map(|t| (*t).to_owned()).collect(),
            created_gte: since,
            created_lte: None,
            delivery_success,
        },
        source: "stripe".into(),
        key_livemode: Some(false),
        dry_run,
        origin: Origin {
            how: "catch-up",
            operator: "it".into(),
            at_ms: SystemClock.now_millis(),
        },
    }
}

#[tokio::test]
async fn webhooks_dropped_for_an_hour_are_caught_up_and_credited_once_and_late_ones_change_nothing()
{
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
    let balance = || async {
        ledger
            .wallet(&acme())
            .await
            .unwrap()
            .unwrap()
            .balance
            .minor()
    };
    let since = SystemClock.now_secs() - 72 * 3600;

    // Before: a top-up's two webhooks arrive and credit it.
    let first = paid(&s, 2500, "catch-up-1").await;
    let hits = hits_from(&receiver, 0, 2).await;
    assert_eq!(forward(&p, &hits).await, ["accepted", "accepted"]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 2500);

    // The endpoint "down" for an hour of Stripe's clock: two top-ups paid, no webhook delivered.
    let down = s.call(
        "POST",
        "/_standin/webhooks",
        Some(&json!({"drop_for_s": 3600})),
    );
    assert_eq!(down["dropping"], true);
    let lost = [
        paid(&s, 1000, "catch-up-2").await,
        paid(&s, 700, "catch-up-3").await,
    ];
    s.advance(3600);
    let back = s.call("GET", "/_standin/webhooks", None);
    assert_eq!(back["dropping"], false);
    let dropped: Vec<Value> = back["dropped"].as_array().unwrap().clone();
    assert_eq!(dropped.len(), 4, "two events of each lost top-up: {back}");
    // After: the next top-up's webhooks arrive again.
    let after = paid(&s, 300, "catch-up-4").await;
    let hits = hits_from(&receiver, 2, 2).await;
    assert_eq!(hits.len(), 2, "nothing of the lost top-ups came");
    assert_eq!(forward(&p, &hits).await, ["accepted", "accepted"]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 2800, "the lost top-ups not credited");

    // What Stripe reports undelivered is exactly what was dropped (a dry run writes nothing).
    let look = catch_up(
        &events(&s),
        &p.harness.service,
        &request(since, Some(false), true),
        |_| {},
    )
    .await
    .unwrap();
    let mut undelivered: Vec<&str> = look.events.iter().map(|e| e.id.as_str()).collect();
    undelivered.sort_unstable();
    let mut want: Vec<&str> = dropped.iter().map(|v| v.as_str().unwrap()).collect();
    want.sort_unstable();
    assert_eq!(undelivered, want);
    assert_eq!((look.new_events(), look.already_had()), (4, 0));
    assert!(
        p.read_stream().await.records.is_empty(),
        "the dry run stored nothing"
    );

    // Catch-up over every delivery: the four missing are stored, the four received are had.
    let report = catch_up(
        &events(&s),
        &p.harness.service,
        &request(since, None, false),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (report.new_events(), report.already_had(), report.refused()),
        (4, 4, 0),
        "{report:?}"
    );
    let new: Vec<&str> = report
        .events
        .iter()
        .filter(|e| e.verdict == Verdict::New)
        .map(|e| e.id.as_str())
        .collect();
    let mut sorted = new.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, want);
    assert!(report.requests >= 1);

    // The normal pipeline processes them: each lost top-up credited once.
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 4500);
    for id in &new {
        let m = p.message_of("stripe", id).await;
        assert_eq!(m.status, Status::Processed, "{id}: {:?}", m.history);
        assert!(m.headers[ORIGIN_HEADER].starts_with("catch-up; operator=it; at="));
    }
    for (pi, minor) in [
        (&first, 2500),
        (&lost[0], 1000),
        (&lost[1], 700),
        (&after, 300),
    ] {
        let row = ledger.payment_row(&acme(), pi).await.unwrap().unwrap();
        assert_eq!(row.credited.get(), minor, "{pi}");
    }

    // Again: nothing is missing.
    let again = catch_up(
        &events(&s),
        &p.harness.service,
        &request(since, None, false),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!((again.new_events(), again.already_had()), (0, 8));

    // The dropped webhooks delivered late anyway: duplicates, nothing moves.
    let late = s.call("POST", "/_standin/webhooks/redeliver", None);
    assert_eq!(late["redelivered"].as_array().unwrap().len(), 4);
    let hits = hits_from(&receiver, 4, 4).await;
    assert_eq!(forward(&p, &hits).await, ["duplicate"; 4]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 4500, "credited exactly once");
    assert!(
        p.receive(&p.quarantine_url).await.records.is_empty(),
        "nothing quarantined"
    );
}

/// The scheduled catch-up (the catch-up function's handler, in-process) on DynamoDB Local and
/// the stand-in: webhooks dropped for an hour, top-ups paid meanwhile; one run stores exactly
/// what was lost (the last minutes' events left for their webhooks), the pipeline credits each
/// payment once, the checkpoint advances; the next run finds nothing new; the dropped webhooks
/// delivered late change nothing.
#[tokio::test]
async fn the_scheduled_catch_up_heals_a_gap_in_webhooks_once_and_its_next_run_finds_nothing() {
    use catch_up_function::{run, stripe_source, Service};
    use inbox_core::clock::ManualClock;
    use inbox_core::ingest::Ingestor;
    use inbox_core::metrics::RecordingSink;
    use std::sync::Arc;
    use stripe_charges::catch_up::checkpoint;
    use stripe_charges::catch_up::scheduled::{Scheduled, CAUGHT_UP};
    use stripe_charges::catch_up::window::SETTLE_SECS;

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
    let balance = || async {
        ledger
            .wallet(&acme())
            .await
            .unwrap()
            .unwrap()
            .balance
            .minor()
    };
    // The function's clock is the stand-in's (the events' `created` are on it).
    let clock = Arc::new(ManualClock::at_secs(s.advance(0)));
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
        against: None,
        clock: clock.clone(),
        metrics: metrics.clone(),
    };
    let caught_up = || {
        metrics
            .emitted()
            .iter()
            .filter(|(_, m)| m.name == CAUGHT_UP)
            .map(|(_, m)| m.value)
            .collect::<Vec<i64>>()
    };

    // Before: a top-up's webhooks arrive and credit it.
    let first = paid(&s, 2500, "scheduled-1").await;
    let hits = hits_from(&receiver, 0, 2).await;
    assert_eq!(forward(&p, &hits).await, ["accepted", "accepted"]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 2500);

    // The endpoint "down" for an hour of Stripe's clock: two top-ups paid, no webhook delivered.
    s.call(
        "POST",
        "/_standin/webhooks",
        Some(&json!({"drop_for_s": 3600})),
    );
    let lost = [
        paid(&s, 1000, "scheduled-2").await,
        paid(&s, 700, "scheduled-3").await,
    ];
    let now = s.advance(3600);
    let dropped = s.call("GET", "/_standin/webhooks", None)["dropped"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(dropped.len(), 4, "two events of each lost top-up");
    // Back: the next top-up's webhooks arrive (processed by the run below as already had).
    let after = paid(&s, 300, "scheduled-4").await;
    let hits = hits_from(&receiver, 2, 2).await;
    assert_eq!(forward(&p, &hits).await, ["accepted", "accepted"]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 2800, "the lost top-ups not credited");

    // The scheduled run: the four lost events stored, the first top-up's two had; the last
    // top-up's (created this minute, after the window's `created[lte]`) not even listed: left
    // for their webhooks.
    clock.set_millis(now * 1000);
    let report = run(&service, None).await.unwrap();
    assert_eq!(
        (
            &report["new"],
            &report["already_had"],
            &report["refused"],
            &report["too_recent"]
        ),
        (&json!(4), &json!(2), &json!(0), &json!(0)),
        "{report}"
    );
    assert_eq!(report["listed"], 6);
    assert_eq!(report["window"]["start"], "first");
    let mut missing: Vec<&str> = report["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    missing.sort_unstable();
    let mut want: Vec<&str> = dropped.iter().map(|v| v.as_str().unwrap()).collect();
    want.sort_unstable();
    assert_eq!(missing, want);
    assert_eq!(caught_up(), [4], "counted once the events are stored");
    let cp = checkpoint::load(&store, "stripe").await.unwrap().checkpoint;
    assert_eq!(cp.covered_until, Some(now - SETTLE_SECS));

    // The pipeline credits each lost payment once, from the table's stream.
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 4500);
    for id in &want {
        let m = p.message_of("stripe", id).await;
        assert_eq!(m.status, Status::Processed, "{id}: {:?}", m.history);
        assert!(m.headers[ORIGIN_HEADER].starts_with("catch-up; operator=schedule; at="));
    }
    for (pi, minor) in [
        (&first, 2500),
        (&lost[0], 1000),
        (&lost[1], 700),
        (&after, 300),
    ] {
        let row = ledger.payment_row(&acme(), pi).await.unwrap().unwrap();
        assert_eq!(row.credited.get(), minor, "{pi}");
    }

    // The next run, 15 minutes later: its window overlaps the last; nothing new.
    clock.advance_millis(15 * 60 * 1000);
    let again = run(&service, None).await.unwrap();
    assert_eq!(again["window"]["start"], "after_last");
    assert_eq!(
        (&again["new"], &again["already_had"]),
        (&json!(0), &json!(2)),
        "{again}"
    );
    assert_eq!(caught_up(), [4, 0]);

    // The dropped webhooks delivered late anyway: duplicates, nothing moves.
    let late = s.call("POST", "/_standin/webhooks/redeliver", None);
    assert_eq!(late["redelivered"].as_array().unwrap().len(), 4);
    let hits = hits_from(&receiver, 4, 4).await;
    assert_eq!(forward(&p, &hits).await, ["duplicate"; 4]);
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(balance().await, 4500, "credited exactly once");
    assert!(
        p.receive(&p.quarantine_url).await.records.is_empty(),
        "nothing quarantined"
    );
}
