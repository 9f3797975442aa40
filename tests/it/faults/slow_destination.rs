//! A slow destination inside one invocation: eight deliveries to a destination that answers after
//! 2 s with one request in flight, and four to a healthy one, all in one batch with 15 s left
//! before the invocation's deadline. Without a bound on the in-flight wait the slow ones take
//! 16 s, past the deadline: Lambda would retry the whole batch and repeat the POSTs already sent.
//! With it, what cannot finish in time is deferred unsent, the healthy destination is not held up,
//! and nothing is sent twice. Then a 429 with `Retry-After` holds the destination's shared rate
//! limit in the table: another worker's delivery to it waits too.

use futures_util::future::join_all;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::outbox::delivery::DeliveryStatus;
use inbox_core::outbox::worker::{until_deadline, DeliverConfig, DeliveryOutcome, OUT_OF_TIME};
use integration_tests::faults::report::record;
use integration_tests::outbox::{reference, OutboxRig};
use integration_tests::receiver::{Answer, Receiver};
use std::time::{Duration, Instant};

const SLOW: usize = 8;
const FAST: usize = 4;

#[tokio::test]
async fn a_slow_destination_is_deferred_before_the_deadline_and_holds_up_no_other() {
    // The shared emulators, a table and queues of its own: nothing here pauses or kills them.
    let rig = OutboxRig::new().await;
    let slow = Receiver::start(|_, _| Answer::status(200).after(Duration::from_secs(2)));
    let fast = Receiver::always(200);
    rig.destination("slow", &slow.url, &["*"], |d| {
        d.max_in_flight = 1;
        d.timeout_ms = 3_000;
    })
    .await;
    rig.destination("fast", &fast.url, &["*"], |d| d.timeout_ms = 3_000)
        .await;
    let slow_ids = rig.pending_deliveries("slow", "evt_slow", SLOW).await;
    let fast_ids = rig.pending_deliveries("fast", "evt_fast", FAST).await;
    let config = DeliverConfig {
        concurrency: SLOW + FAST,
        ..DeliverConfig::default()
    };
    let worker = rig.deliverer(SystemClock, config).await;

    // Each POST needs its 3 s timeout and the 5 s finish margin: with 15 s left, a wait for the
    // slow destination's slot may last 7 s, so about four are sent (at 0, 2, 4 and 6 s) and the
    // others deferred at 7 s.
    let left = Duration::from_secs(15);
    let started = Instant::now();
    let deadline = SystemClock.now_millis() + left.as_millis() as i64;
    let refs: Vec<_> = slow_ids
        .iter()
        .map(|id| reference("slow", id))
        .chain(fast_ids.iter().map(|id| reference("fast", id)))
        .collect();
    let outcomes = until_deadline(
        deadline,
        join_all(refs.iter().map(|r| async {
            let outcome = worker.deliver(r).await.expect("no infrastructure error");
            (r.destination.to_string(), outcome, started.elapsed())
        })),
    )
    .await;
    let took = started.elapsed();

    let of = |dest: &'static str| outcomes.iter().filter(move |(d, _, _)| d == dest);
    let delivered = |dest: &'static str| {
        of(dest)
            .filter(|(_, o, _)| *o == DeliveryOutcome::Delivered)
            .count()
    };
    let deferred = of("slow")
        .filter(
            |(_, o, _)| matches!(o, DeliveryOutcome::Deferred { why, .. } if *why == OUT_OF_TIME),
        )
        .count();
    let fast_last = of("fast").map(|(_, _, at)| *at).max().unwrap_or_default();
    let mut unsent_attempts = 0;
    for id in &slow_ids {
        let d = rig.delivery("slow", id).await.expect("the delivery");
        if d.status != DeliveryStatus::Delivered {
            unsent_attempts += d.attempts;
        }
    }
    let posts = |r: &Receiver| {
        let mut ids: Vec<String> = r
            .hits()
            .iter()
            .map(|h| h.header("webhook-id").to_owned())
            .collect();
        let all = ids.len();
        ids.sort();
        ids.dedup();
        all - ids.len()
    };
    let repeated = posts(&slow) + posts(&fast);

    // A 429 asking for 3 s: another worker (another instance) finds the destination held.
    let limited = Receiver::start(|n, _| {
        if n == 1 {
            Answer::status(429).with_header("retry-after", "3")
        } else {
            Answer::status(200)
        }
    });
    rig.destination("limited", &limited.url, &["*"], |d| {
        d.rate_per_sec = 100.0;
        d.burst = 100;
    })
    .await;
    let limited_ids = rig.pending_deliveries("limited", "evt_limited", 2).await;
    let first = worker
        .deliver(&reference("limited", &limited_ids[0]))
        .await
        .expect("no infrastructure error");
    let other = rig.deliverer(SystemClock, config).await;
    let second = other
        .deliver(&reference("limited", &limited_ids[1]))
        .await
        .expect("no infrastructure error");
    let held = matches!(second, DeliveryOutcome::Deferred { why: "rate limit", until }
        if until >= SystemClock.now_millis() + 2_000);

    record(
        "8-slow_destination",
        "a slow destination in one invocation (one request in flight, 2 s per answer)",
        format!(
            "{SLOW} deliveries to it and {FAST} to a healthy one in one batch, {} s before the \
             invocation's deadline (unbounded: {} s of waiting for the slot); then a 429 with \
             Retry-After: 3 and another worker's delivery to that destination",
            left.as_secs(),
            2 * SLOW
        ),
        format!(
            "batch done after {:.1} s; slow: {} delivered, {deferred} deferred unsent (attempts \
             counted on them {unsent_attempts}); healthy: {}/{FAST} delivered, the last after \
             {:.1} s; POSTs repeated {repeated}; after the 429 the other worker's delivery {}",
            took.as_secs_f64(),
            delivered("slow"),
            delivered("fast"),
            fast_last.as_secs_f64(),
            if held {
                "waited for the receiver's 3 s (the rate limit held in the table)"
            } else {
                "was sent at once"
            }
        ),
    );
    assert!(took < left, "the batch outlived the deadline: {took:?}");
    assert_eq!(delivered("fast"), FAST, "{outcomes:?}");
    let slow_last = of("slow").map(|(_, _, at)| *at).max().unwrap_or_default();
    assert!(
        fast_last < slow_last,
        "the healthy destination waited: {fast_last:?}"
    );
    assert_eq!(delivered("slow") + deferred, SLOW, "{outcomes:?}");
    assert!(deferred > 0 && delivered("slow") > 0, "{outcomes:?}");
    assert_eq!(unsent_attempts, 0);
    assert_eq!(repeated, 0);
    assert!(
        matches!(first, DeliveryOutcome::Retrying { .. }),
        "{first:?}"
    );
    assert!(held, "{second:?}");
    assert_eq!(limited.count(), 1, "nothing sent during the Retry-After");
}
