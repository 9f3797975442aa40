//! The outbox's own faults, on the shared emulators with a table and queues of its own: a
//! destination the deliver worker's copy is older than, a delivery quarantine that refuses the
//! failure notices, a thousand due deliveries in one shard of the open index, and an open
//! circuit's deliveries parked in their destination's partition of it. Every delivery ends: delivered, or failed with one notice; the sweep serves every
//! shard and its gauge sees the oldest.

use deliver_function::http::HttpTransport;
use inbox_core::clock::Millis;
use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::outbox::admin;
use inbox_core::outbox::breaker::{BreakerConfig, Move};
use inbox_core::outbox::delivery::{DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::DestinationState;
use inbox_core::outbox::queue::{SqsOutboxQueues, Work};
use inbox_core::outbox::schedule::RetrySchedule;
use inbox_core::outbox::schema::{outbox_shard, parked_shard};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer, DeliveryOutcome};
use integration_tests::faults::report::record;
use integration_tests::outbox::{dest_id, key, local_transport, reference, OutboxRig};
use integration_tests::pipeline::{CounterHandler, Pipeline, TYPE};
use integration_tests::receiver::Receiver;
use integration_tests::sdk_config_for;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

fn config() -> DeliverConfig {
    DeliverConfig {
        max_wait: Duration::ZERO,
        breaker: BreakerConfig {
            min_requests: 1_000,
            ..BreakerConfig::default()
        },
        ..DeliverConfig::default()
    }
}

/// A worker that keeps its copy of the destinations for `ttl` (the deployed one: 5 s).
fn cached_worker<C: Clock>(
    rig: &OutboxRig,
    queues: SqsOutboxQueues,
    clock: C,
    ttl: Duration,
) -> Deliverer<(
    inbox_core::store::dynamo::DynamoTable,
    HttpTransport,
    SqsOutboxQueues,
    C,
)> {
    Deliverer::new(rig.store(), local_transport(), queues, clock, config(), ttl).with_jitter(|| 0.5)
}

/// Every notice on the delivery quarantine (each received once: they stay hidden meanwhile).
async fn all_notices(rig: &OutboxRig) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    loop {
        let batch = rig.notices().await;
        if batch.is_empty() {
            return all;
        }
        all.extend(batch);
    }
}

#[tokio::test]
async fn a_destination_added_or_resumed_after_the_worker_s_copy_is_delivered_to() {
    let rig = OutboxRig::new().await;
    let receiver = Receiver::always(200);
    rig.destination("early", &receiver.url, &["*"], |_| {})
        .await;
    rig.destination("resumed", &receiver.url, &["*"], |d| {
        d.state = DestinationState::Disabled
    })
    .await;
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    // The deliver worker reads its copy (a minute's) with the first event's delivery.
    let worker = cached_worker(&rig, rig.queues(), SystemClock, Duration::from_secs(60));
    rig.ingest_and_process(&processor, "evt_first", TYPE).await;
    assert_eq!(
        worker
            .deliver(&reference("early", "evt_first"))
            .await
            .unwrap(),
        DeliveryOutcome::Delivered
    );
    // Within the minute: one destination added, the other resumed; the process function (its
    // copy read now) fans the next event out to both.
    rig.destination("added", &receiver.url, &["*"], |_| {})
        .await;
    let at = SystemClock.now_millis();
    admin::update(
        &rig.store(),
        &dest_id("resumed"),
        "ops",
        "resumed",
        at,
        |d| {
            d.state = DestinationState::Active;
            Ok("resumed".into())
        },
    )
    .await
    .unwrap();
    rig.ingest_and_process(&processor, "evt_next", TYPE).await;
    let mut outcomes = BTreeMap::new();
    for dest in ["early", "added", "resumed"] {
        let o = worker.deliver(&reference(dest, "evt_next")).await.unwrap();
        *outcomes.entry(o.as_str()).or_insert(0) += 1;
    }
    assert_eq!(outcomes, BTreeMap::from([("delivered", 3)]), "{outcomes:?}");
    assert_eq!(receiver.count(), 4);
    let notices = all_notices(&rig).await.len();
    assert_eq!(notices, 0);
    record(
        "8-outbox",
        "a destination added or resumed after the deliver worker's copy was read",
        "the worker's copy of the destinations kept 60 s; within it 1 destination added and 1 \
         resumed (disabled → active), 1 event fanned out to them by a process function reading \
         the table"
            .into(),
        format!(
            "outcomes {outcomes:?} (before: the two failed unsent, \"the destination was removed\" \
             and \"disabled\"); requests {}; failure notices {notices}",
            receiver.count()
        ),
    );
}

#[tokio::test]
async fn failure_notices_the_delivery_quarantine_refused_are_sent_by_the_sweep() {
    const EACH: usize = 10;
    let rig = OutboxRig::new().await;
    let receiver = Receiver::always(500);
    rig.destination("failing", &receiver.url, &["*"], |d| {
        d.schedule = RetrySchedule::parse("0").unwrap()
    })
    .await;
    let ids = rig.pending_deliveries("failing", "evt_nq", EACH).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    // Queues whose endpoint refuses every connection.
    let down = aws_sdk_sqs::Client::new(
        &sdk_config_for(&integration_tests::Endpoints::one("http://127.0.0.1:9")).await,
    );
    let down_queues = SqsOutboxQueues::new(
        down,
        rig.delivery_url.clone(),
        rig.delivery_quarantine_url.clone(),
    );
    let refused = cached_worker(&rig, down_queues, clock.clone(), Duration::ZERO);
    let mut first = BTreeMap::new();
    for id in &ids {
        let o = refused.deliver(&reference("failing", id)).await.unwrap();
        *first.entry(o.as_str()).or_insert(0) += 1;
    }
    assert_eq!(first, BTreeMap::from([("failed", EACH)]));
    let mut pending = 0;
    for id in &ids {
        let d = rig.delivery("failing", id).await.unwrap();
        assert_eq!(d.status, DeliveryStatus::Failed);
        pending += usize::from(d.notice_pending.is_some());
    }
    assert_eq!(pending, EACH, "failed, each notice pending");

    // The queue is back; the sweep's re-drive reaches a worker once the senders' deadline passed.
    let worker = cached_worker(&rig, rig.queues(), clock.clone(), Duration::ZERO);
    let early = worker.deliver_due(100).await.unwrap().len();
    assert_eq!(early, 0, "not before the deadline");
    clock.advance_millis(30_000);
    let mut later = BTreeMap::new();
    for o in worker.deliver_due(100).await.unwrap() {
        *later.entry(o.as_str()).or_insert(0) += 1;
    }
    assert_eq!(later, BTreeMap::from([("notice_sent", EACH)]), "{later:?}");
    assert!(worker.deliver_due(100).await.unwrap().is_empty());
    let notices = all_notices(&rig).await;
    let events: BTreeSet<String> = notices
        .iter()
        .map(|n| n["event_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!((notices.len(), events.len()), (EACH, EACH));
    let mut cleared = 0;
    for id in &ids {
        cleared += usize::from(
            rig.delivery("failing", id)
                .await
                .unwrap()
                .notice_pending
                .is_none(),
        );
    }
    assert_eq!(cleared, EACH);
    record(
        "8-outbox",
        "delivery quarantine unavailable (deliver worker, then the sweep)",
        format!(
            "{EACH} deliveries failing for good (a 500 on a one-step schedule); their failure \
             notices could not be sent"
        ),
        format!(
            "`failed` with the notice pending {pending}/{EACH} (before: the worker's error after \
             `failed` was written, no notice ever); found by the sweep after the senders' 30 s: \
             {:?}; notices {} for {} deliveries, pending afterwards {}",
            later,
            notices.len(),
            events.len(),
            EACH - cleared
        ),
    );
}

#[tokio::test]
async fn a_thousand_due_deliveries_in_one_shard_do_not_starve_the_others() {
    use futures_util::StreamExt;
    const CROWD: usize = 1_000;
    const LIMIT: usize = 100;
    let rig = OutboxRig::new().await;
    let store = rig.store();
    let now = SystemClock.now_millis();
    // An event id per shard: `CROWD` in shard 0 (due a second ago), one in each other (ten
    // minutes ago).
    let mut wanted: BTreeMap<String, usize> = (1..16).map(|s| (format!("OUTBOX#{s}"), 1)).collect();
    wanted.insert("OUTBOX#0".into(), CROWD);
    let mut deliveries = Vec::new();
    for i in 0.. {
        if wanted.values().all(|n| *n == 0) {
            break;
        }
        let id = format!("evt_crowd_{i}");
        let shard = outbox_shard(&reference("crowded", &id).pk());
        if let Some(n) = wanted.get_mut(&shard).filter(|n| **n > 0) {
            *n -= 1;
            let created = if shard == "OUTBOX#0" {
                now - 1_000
            } else {
                now - 600_000
            };
            deliveries.push(OutboundDelivery::new(
                &dest_id("crowded"),
                &key(&id),
                None,
                created,
            ));
        }
    }
    // Written 8 at a time; a write that errs (a loaded emulator's timeout) is written again.
    let write = |d: &OutboundDelivery| {
        let store = &store;
        let d = d.clone();
        async move {
            let mut tries = 0;
            loop {
                tries += 1;
                match store.save_delivery(&d, None).await {
                    Err(e) if tries >= 5 => return Err(e),
                    Err(_) => continue,
                    Ok(_) => return Ok(()),
                }
            }
        }
    };
    let written: Vec<_> = futures_util::stream::iter(deliveries.iter().map(write))
        .buffer_unordered(8)
        .collect()
        .await;
    let failed: Vec<_> = written.iter().filter_map(|w| w.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );

    let worker = rig.deliverer(SystemClock, config()).await;
    let (work, oldest) = worker.due_work(LIMIT).await.unwrap();
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for w in &work {
        if let Work::Delivery(r) = w {
            *by.entry(outbox_shard(&r.pk())).or_default() += 1;
        }
    }
    assert_eq!(by.len(), 16, "every shard served: {by:?}");
    assert!(oldest >= 600, "the oldest is in a later shard: {oldest} s");
    let report = worker.sweep(LIMIT).await.unwrap();
    assert_eq!((report.due, report.redriven), (LIMIT, LIMIT));
    assert!(report.oldest_due_secs >= 600);
    // What it re-drove is taken (its due time moved on, conditionally): the next sweep, before
    // any worker took a message, re-drives none of it again.
    let (again, _) = worker.due_work(LIMIT).await.unwrap();
    let twice: Vec<_> = again.iter().filter(|w| work.contains(w)).collect();
    assert!(twice.is_empty(), "re-driven twice: {twice:?}");

    // An open circuit parks its deliveries in the destination's backlog: its own partition of
    // the index (PARKED#open, ordered by creation), one Query away, none in the swept shards;
    // once the circuit is closed the sweep releases them.
    let receiver = Receiver::always(200);
    rig.destination("open", &receiver.url, &["*"], |d| {
        d.rate_per_sec = 1_000.0;
        d.burst = 100;
    })
    .await;
    let opened = SystemClock.now_millis();
    assert!(store
        .move_circuit(&dest_id("open"), Move::Open, Millis::new(opened))
        .await
        .unwrap());
    let ids = rig.pending_deliveries("open", "evt_open", 20).await;
    let parker = rig.deliverer(SystemClock, config()).await;
    for id in &ids {
        let o = parker.deliver(&reference("open", id)).await.unwrap();
        assert_eq!(
            o,
            DeliveryOutcome::Parked {
                why: "circuit open"
            }
        );
    }
    assert_eq!(receiver.count(), 0);
    let backlog = store
        .due_work_items(&parked_shard("open"), Millis::new(i64::MAX), 100)
        .await
        .unwrap();
    let mut found: Vec<String> = backlog.iter().map(|i| i.event_id.clone()).collect();
    found.sort();
    assert_eq!(
        found, ids,
        "the whole backlog, by one Query of its partition"
    );
    assert!(
        backlog.windows(2).all(|w| w[0].due <= w[1].due),
        "oldest first"
    );
    let (swept, _) = parker.due_work(10_000).await.unwrap();
    let in_swept = swept
        .iter()
        .filter(|w| matches!(w, Work::Delivery(r) if r.destination.as_str() == "open"))
        .count();
    assert_eq!(in_swept, 0, "parked deliveries are not in the swept shards");
    assert!(store
        .move_circuit(
            &dest_id("open"),
            Move::Close { from: opened },
            Millis::new(SystemClock.now_millis()),
        )
        .await
        .unwrap());
    let released = parker.sweep(LIMIT).await.unwrap().parked.released;
    let left = store
        .due_work_items(&parked_shard("open"), Millis::new(i64::MAX), 100)
        .await
        .unwrap()
        .len();
    assert_eq!((released, left), (20, 0));
    record(
        "8-outbox",
        "a thousand due deliveries in one open-index shard (an open circuit's)",
        format!(
            "{CROWD} due deliveries in shard 0, 1 older (10 min) in each of the 15 others; a \
             sweep of limit {LIMIT}; then 20 deliveries to a destination whose circuit is open"
        ),
        format!(
            "shards served {} of 16 (shard 0: {}; before: shard 0 only, 100); \
             OldestDueDeliverySeconds {} (before: 1); re-driven {}; the open circuit's 20 parked \
             in PARKED#open, found by one Query, 0 in the swept shards (before: deferred, a \
             message each per cool-down), released {released} once it closed",
            by.len(),
            by.get("OUTBOX#0").copied().unwrap_or(0),
            report.oldest_due_secs / 60 * 60,
            report.redriven,
        ),
    );
}
