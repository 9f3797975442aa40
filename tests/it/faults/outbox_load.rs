//! What the outbox writes under load, against the emulator and local receivers: where finished
//! deliveries land in the open index (hashed done shards, not one partition), what a receiver
//! answering 4 KiB of `0xFF` thirty times does to the delivery item, what a paused destination
//! costs (parked, no message per minute) and what resuming it sends, and a `Retry-After` longer
//! than the destination's schedule's longest step.

use inbox_core::clock::{Clock, ManualClock, Millis, SystemClock};
use inbox_core::outbox::breaker::BreakerConfig;
use inbox_core::outbox::delivery::DeliveryStatus;
use inbox_core::outbox::destination::DestinationState;
use inbox_core::outbox::resend;
use inbox_core::outbox::schedule::RetrySchedule;
use inbox_core::outbox::schema::{parked_shard, DONE_SHARD};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::worker::{DeliverConfig, DeliveryOutcome};
use inbox_core::store::attr::get_s;
use integration_tests::emulator::scan_all;
use integration_tests::faults::report::record;
use integration_tests::outbox::{dest_id, reference, OutboxRig};
use integration_tests::receiver::{Answer, Receiver};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

const FINISHED: usize = 32;
const PAUSED: usize = 5;

/// Messages on the delivery queue: (visible, delayed).
async fn queued(rig: &OutboxRig) -> (u64, u64) {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = rig
        .pipeline
        .sqs
        .get_queue_attributes()
        .queue_url(&rig.delivery_url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .expect("queue attributes");
    let attrs = out.attributes.unwrap_or_default();
    let n = |a: A| attrs.get(&a).and_then(|v| v.parse().ok()).unwrap_or(0u64);
    (
        n(A::ApproximateNumberOfMessages),
        n(A::ApproximateNumberOfMessagesDelayed),
    )
}

#[tokio::test]
async fn finished_deliveries_spread_journals_stay_bounded_and_paused_ones_are_parked() {
    // The shared emulators, a table and queues of its own: nothing here pauses or kills them.
    let rig = OutboxRig::new().await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let config = DeliverConfig {
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    };
    let worker = rig.deliverer(clock.clone(), config).await;

    // 1. Finished deliveries: which index partitions they are written under.
    let ok = Receiver::always(200);
    rig.destination("ok", &ok.url, &["*"], |d| {
        d.rate_per_sec = 1_000.0;
        d.burst = 1_000;
    })
    .await;
    for id in rig.pending_deliveries("ok", "evt_done", FINISHED).await {
        assert_eq!(
            worker.deliver(&reference("ok", &id)).await.unwrap(),
            DeliveryOutcome::Delivered
        );
    }
    let items = scan_all(&rig.pipeline.harness.client, &rig.pipeline.harness.table).await;
    let mut partitions: BTreeMap<String, usize> = BTreeMap::new();
    for item in &items {
        let outbound = get_s(item, "pk").is_some_and(|pk| pk.starts_with("OUT#ok#"));
        if let (true, Some(shard)) = (outbound, get_s(item, "open_shard")) {
            *partitions.entry(shard.to_owned()).or_default() += 1;
        }
    }
    let busiest = partitions.values().copied().max().unwrap_or(0);
    let all_done = partitions
        .keys()
        .all(|k| k.starts_with(&format!("{DONE_SHARD}#")));

    // 2. A receiver answering 4 KiB of 0xFF, thirty times (a 30-step schedule of 1 s).
    let junk = Receiver::start(|_, _| Answer::status(500).with_body(vec![0xFF; 4096]));
    rig.destination("junk", &junk.url, &["*"], |d| {
        d.schedule = RetrySchedule::new(vec![Duration::from_secs(1); 30]).unwrap();
    })
    .await;
    let junk_id = &rig.pending_deliveries("junk", "evt_junk", 1).await[0];
    // A breaker that never opens: every step of the schedule is an attempt.
    let patient = rig
        .deliverer(
            clock.clone(),
            DeliverConfig {
                breaker: BreakerConfig {
                    min_requests: 1_000,
                    disable_after: Duration::from_secs(86_400),
                    ..BreakerConfig::default()
                },
                ..config
            },
        )
        .await;
    for _ in 0..60 {
        let outcome = patient.deliver(&reference("junk", junk_id)).await.unwrap();
        clock.advance_millis(2_000);
        if matches!(outcome, DeliveryOutcome::Failed { .. }) {
            break;
        }
    }
    let journaled = rig.delivery("junk", junk_id).await.unwrap();
    let attempts = journaled.attempts;
    let body_bytes: usize = journaled.journal.iter().map(|a| a.body.len()).sum();
    let largest_head = journaled
        .journal
        .iter()
        .map(|a| a.body.len())
        .max()
        .unwrap_or(0);
    let item_bytes = serde_json::to_vec(&journaled).unwrap().len();

    // 3. A paused destination: its deliveries parked, then resumed (a table and a delivery queue
    // of their own: the queue holds only what this part sends).
    let quiet = OutboxRig::new().await;
    let quiet_worker = quiet.deliverer(clock.clone(), config).await;
    let later = Receiver::always(200);
    quiet
        .destination("later", &later.url, &["*"], |d| {
            d.state = DestinationState::Paused;
        })
        .await;
    let paused_ids = quiet
        .pending_deliveries("later", "evt_paused", PAUSED)
        .await;
    let mut parked = 0;
    for id in &paused_ids {
        if let DeliveryOutcome::Parked { .. } =
            quiet_worker.deliver(&reference("later", id)).await.unwrap()
        {
            parked += 1;
        }
    }
    let backlog = quiet
        .store()
        .due_work_items(&parked_shard("later"), Millis::new(i64::MAX), 100)
        .await
        .unwrap()
        .len();
    // A day later: the sweep leaves the paused destination's backlog alone (no message).
    clock.advance_millis(86_400_000);
    let swept = quiet_worker.sweep(1000).await.unwrap();
    let (visible, delayed) = queued(&quiet).await;
    let messages_while_paused = visible + delayed;
    inbox_core::outbox::admin::update(
        &quiet.store(),
        &dest_id("later"),
        "test",
        "resumed",
        clock.now_millis(),
        |d| {
            d.state = DestinationState::Active;
            Ok("resumed".into())
        },
    )
    .await
    .unwrap();
    let redriven = resend::resume(
        &quiet.store(),
        Some(&quiet.queues()),
        &dest_id("later"),
        "test",
        clock.now_millis(),
        resend::RESUME_DELAY,
    )
    .await
    .unwrap();
    let (visible, delayed) = queued(&quiet).await;
    let messages_on_resume = visible + delayed;
    // Released at the destination's rate (10/s by default): the fifth 400 ms after the first.
    clock.advance_millis(resend::RESUME_DELAY.as_millis() as i64 + 400);
    let mut delivered_after = 0;
    for id in &paused_ids {
        if quiet_worker.deliver(&reference("later", id)).await.unwrap()
            == DeliveryOutcome::Delivered
        {
            delivered_after += 1;
        }
    }

    // 4. Retry-After: 7 from a destination whose schedule's longest step is 2 s.
    let busy = Receiver::start(|n, _| {
        if n == 1 {
            Answer::status(429).with_header("retry-after", "7")
        } else {
            Answer::status(200)
        }
    });
    rig.destination("busy", &busy.url, &["*"], |d| {
        d.schedule = RetrySchedule::parse("0,2s,2s,2s,2s").unwrap();
    })
    .await;
    let busy_id = &rig.pending_deliveries("busy", "evt_busy", 1).await[0];
    let retry = worker.deliver(&reference("busy", busy_id)).await.unwrap();

    record(
        "9-outbox_load",
        "finished deliveries written under one open-index partition",
        format!("{FINISHED} deliveries delivered"),
        format!(
            "index partitions written {} (all done shards: {all_done}), the busiest with \
             {busiest}/{FINISHED} (before: 1 partition, {FINISHED}/{FINISHED})",
            partitions.len()
        ),
    );
    record(
        "9-outbox_load",
        "a receiver answering 4 KiB of 0xFF to every attempt",
        format!("{attempts} attempts of one delivery on a 30-step schedule"),
        format!(
            "journal entries {}, the largest head {largest_head} bytes, bodies {body_bytes} bytes in \
             all, the delivery {} KiB (before: 12 KiB of U+FFFD per entry, ~370 KiB)",
            journaled.journal.len(),
            item_bytes / 1024
        ),
    );
    record(
        "9-outbox_load",
        "a paused destination's deliveries, then `dest resume`",
        format!("{PAUSED} deliveries to a paused destination, the destination resumed"),
        format!(
            "parked {parked}, in the destination's backlog partition {backlog} (no re-check: \
             before, hourly), queue messages over a day paused {messages_while_paused} (before: \
             one per delivery per minute, then one per hour); released on resume {redriven} (by \
             one Query of the backlog, no scan), queue messages {messages_on_resume}; delivered \
             after the resume's delay {delivered_after}/{PAUSED}"
        ),
    );
    record(
        "9-outbox_load",
        "a Retry-After longer than the schedule's longest step",
        "a 429 with Retry-After: 7 from a destination on the 0,2s,2s,2s,2s schedule".into(),
        match &retry {
            DeliveryOutcome::Retrying { delay, .. } => format!(
                "next attempt after {} s (before: 2 s, the longest step)",
                delay.as_secs()
            ),
            other => format!("{other:?}"),
        },
    );
    assert!(all_done, "{partitions:?}");
    assert!(partitions.len() > 1, "{partitions:?}");
    assert!(busiest < FINISHED / 2, "{partitions:?}");
    assert_eq!(journaled.status, DeliveryStatus::Failed);
    assert_eq!((attempts, journaled.journal.len()), (30, 30));
    assert!(largest_head <= 4096, "{largest_head}");
    assert!(body_bytes <= 16 * 1024, "{body_bytes}");
    // Parked in the backlog, left alone by a day's sweeps.
    assert_eq!((parked, backlog), (PAUSED, PAUSED));
    assert_eq!((swept.due, swept.redriven, swept.parked.seen), (0, 0, 0));
    assert_eq!(messages_while_paused, 0);
    assert_eq!((redriven, messages_on_resume), (PAUSED, PAUSED as u64));
    assert_eq!(delivered_after, PAUSED);
    assert_eq!(
        retry,
        DeliveryOutcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(7)
        }
    );
}
