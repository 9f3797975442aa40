//! The flaky receiver in the same simulation ([`super::simulate`]'s drive): every event
//! answered 500, 500, then 200, on the schedule `0,2s,2s,2s,2s`, the breaker as deployed. How long
//! until every event is delivered, with how many attempts and `webhook-id`s each.

use super::{arrive, draw, Counts, Down, OutageCost, Queue, Sim, Worker, BATCH, DESTINATION, T0};
use inbox_core::clock::ManualClock;
use inbox_core::metrics::RecordingSink;
use inbox_core::outbox::admin;
use inbox_core::outbox::breaker::BreakerConfig;
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::queue::MemoryOutboxQueues;
use inbox_core::outbox::schedule::RetrySchedule;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer};
use inbox_core::store::memory::MemoryStore;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The longest the flaky case is simulated, s.
pub const FLAKY_LIMIT_S: i64 = 3600;

/// What the flaky receiver's events came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flaky {
    /// Events sent to it.
    pub events: usize,
    /// Delivered (their third attempt answered 200).
    pub delivered: usize,
    /// Seconds until the last was delivered (`None`: not all within [`FLAKY_LIMIT_S`]).
    pub completed_after_s: Option<i64>,
    /// POSTs in all, and the most any one `webhook-id` received.
    pub posts: usize,
    pub most_attempts: usize,
    /// Distinct `webhook-id`s (one per event).
    pub webhook_ids: usize,
    /// Queue messages sent and invocations, in all.
    pub sent: usize,
    pub invocations: usize,
}

/// Sends `n` events to the flaky receiver and runs until each is delivered (or the limit).
pub async fn flaky(n: usize) -> Flaky {
    flaky_with(n, DeliverConfig::default().breaker).await
}

/// [`flaky`] with another breaker.
pub async fn flaky_with(n: usize, breaker: BreakerConfig) -> Flaky {
    let store = Arc::new(MemoryStore::new());
    let queues = Arc::new(MemoryOutboxQueues::default());
    let clock = Arc::new(ManualClock::at_millis(T0));
    let down = Arc::new(Down::default());
    down.flaky.store(true, Ordering::SeqCst);
    let config = DeliverConfig {
        breaker,
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    };
    let worker: Worker = Deliverer::new(
        store.clone(),
        down.clone(),
        queues.clone(),
        clock.clone(),
        config,
        Duration::from_secs(5),
    )
    .with_jitter(draw(0x9e37_79b9_7f4a_7c15))
    .with_deferral_jitter(draw(0xd1b5_4a32_d192_ed03))
    .with_metrics(Arc::new(RecordingSink::default()));
    let id = DestinationId::parse(DESTINATION).expect("id");
    let mut dest = Destination::new(
        &id,
        "https://flaky.example/hook",
        vec![Pattern::parse("*").expect("pattern")],
        None,
        T0,
    );
    dest.schedule = RetrySchedule::parse("0,2s,2s,2s,2s").expect("schedule");
    admin::add(&*store, &dest, "bench", false)
        .await
        .expect("add the destination");
    let mut records = Vec::with_capacity(n);
    for i in 0..n {
        records.push(arrive(&store, i).await);
    }
    let mut counts = Counts::default();
    let mut cost = OutageCost::default();
    for chunk in records.chunks(BATCH) {
        let mut event = aws_lambda_events::event::dynamodb::Event::default();
        event.records = chunk.to_vec();
        let (_, summary) = worker.handle_stream_batch(event).await;
        counts.stream_batches += 1;
        cost.tally(summary);
    }
    let mut sim = Sim {
        worker: &worker,
        queues: &queues,
        queue: Queue::default(),
        postponed: 0,
    };
    sim.queue.take_sent(&queues, T0, &mut counts);
    let mut out = Flaky {
        events: n,
        ..Flaky::default()
    };
    for second in 1..=FLAKY_LIMIT_S {
        let now = T0 + second * 1000;
        clock.set_millis(now);
        sim.second(now, &mut counts, &mut cost).await;
        if down.delivered.load(Ordering::SeqCst) >= n {
            out.completed_after_s = Some(second);
            break;
        }
    }
    out.delivered = down.delivered.load(Ordering::SeqCst);
    out.posts = down.posts.load(Ordering::SeqCst);
    let seen = down.seen.lock().expect("seen");
    out.most_attempts = seen.values().copied().max().unwrap_or(0);
    out.webhook_ids = seen.len();
    out.sent = counts.sent;
    out.invocations = counts.invocations();
    out
}
