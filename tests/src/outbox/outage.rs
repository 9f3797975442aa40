//! What a destination's outage costs, and how its backlog drains once it is back: a simulation,
//! not a timed test. The deliver worker runs on the core's in-memory store and
//! queues with a [`ManualClock`], driven as the Lambda drives it, one simulated second at a time:
//!
//! - at the start, the `n` new deliveries arrive as stream records (the INSERTs the event source
//!   mapping passes), in batches of [`BATCH`];
//! - each second, every delivery-queue message whose delay has ended is received, in batches of
//!   [`BATCH`] (one invocation each), until none is left for that second (a message sent with no
//!   delay is received in the same second);
//! - each minute, after that second's messages, the scheduled sweep runs (one invocation), and
//!   what it re-drives is received in the same second.
//!
//! The destination answers every POST with a 503. [`Outage::OpenCircuit`]: its circuit was
//! opened just before the deliveries arrive (as a window of failures would have), so every probe after a
//! cool-down fails and re-opens it: it stays open throughout. [`Outage::Paused`]: the destination
//! is paused. Both park their deliveries in the destination's backlog
//! ([`inbox_core::outbox::parking`]). Then the destination is back ([`Recovery`]): it answers
//! 200 (the paused one is resumed, `resend::resume`), and the simulation goes on until the backlog
//! is delivered (at most [`RECOVERY_LIMIT_S`]).
//!
//! Counted: messages sent to the delivery queue (scheduled and re-driven), messages received,
//! invocations (stream batches, queue batches, sweeps), DynamoDB write requests (every write the
//! DynamoDB adapter would send: `MemoryStore::write_requests`, which counts the deliveries' and
//! the destination state's writes, plus the sweep's `postpone_due`, which the in-memory store
//! does not count; a failed condition is a request and a unit too), and POSTs. Not counted: reads
//! (`GetItem` of a delivery a message names by reference, the sweep's `Query`s of the open index,
//! the destination cache's `Query`), which the in-memory store does not count.

use inbox_core::clock::{Clock, ManualClock};
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::metrics::RecordingSink;
use inbox_core::outbox::admin;
use inbox_core::outbox::attempt::AttemptResult;
use inbox_core::outbox::breaker::{window, Change, Move};
use inbox_core::outbox::delivery::OutboundDelivery;
use inbox_core::outbox::destination::{Destination, DestinationId, DestinationState};
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::queue::MemoryOutboxQueues;
use inbox_core::outbox::resend;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::transport::{Outgoing, Transport};
use inbox_core::outbox::worker::{DeliverConfig, Deliverer};
use inbox_core::store::memory::MemoryStore;
use inbox_core::store::size::item_size;
use inbox_core::store::{Applied, Inbox as _, NewMessage};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod counts;
mod drive;
mod flaky;
pub use counts::{Counts, OutageCost, Recovery, RATE_WINDOW_S};
use drive::{Queue, Sim};
pub use flaky::{flaky, flaky_with, Flaky, FLAKY_LIMIT_S};

/// The longest recovery simulated, s.
pub const RECOVERY_LIMIT_S: i64 = 2 * 3600;

/// The deployed batch size of both event source mappings (`template.yaml`).
pub const BATCH: usize = 10;
/// The sweep's limit per run (`DELIVERY_SWEEP_MAX_PER_RUN`'s default).
pub const SWEEP_LIMIT: usize = 1000;
const T0: i64 = 1_700_000_000_000;
const DESTINATION: &str = "down";

/// Which outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// Active, its circuit open (every probe fails).
    OpenCircuit,
    /// Paused by an operator.
    Paused,
}

impl Outage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenCircuit => "circuit open",
            Self::Paused => "paused",
        }
    }
}

/// A destination that is down (every POST answered 503) until it is `up` (200), counted; or
/// `flaky`: each event answered 500, 500, then 200 (by its `webhook-id`).
#[derive(Debug, Default)]
pub struct Down {
    posts: AtomicUsize,
    up: std::sync::atomic::AtomicBool,
    delivered: AtomicUsize,
    flaky: std::sync::atomic::AtomicBool,
    /// Per `webhook-id`: the attempts it received.
    seen: std::sync::Mutex<std::collections::BTreeMap<String, usize>>,
}

impl Transport for Down {
    async fn post<'a>(&'a self, request: Outgoing<'a>) -> AttemptResult {
        self.posts.fetch_add(1, Ordering::SeqCst);
        let nth = {
            let id = request
                .headers
                .iter()
                .find(|(name, _)| name == "webhook-id")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let mut seen = self.seen.lock().expect("seen");
            let n = seen.entry(id).or_default();
            *n += 1;
            *n
        };
        let up =
            self.up.load(Ordering::SeqCst) || (self.flaky.load(Ordering::SeqCst) && nth % 3 == 0);
        if up {
            self.delivered.fetch_add(1, Ordering::SeqCst);
        }
        AttemptResult::Answered {
            status: if up { 200 } else { 503 },
            retry_after: None,
            body: Vec::new(),
        }
    }
}

/// A reproducible draw in `[0, 1)` (xorshift), so that the figures do not move between runs.
fn draw(seed: u64) -> impl Fn() -> f64 + Send + Sync + 'static {
    let state = AtomicU64::new(seed.max(1));
    move || {
        let mut x = state.load(Ordering::SeqCst);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.store(x, Ordering::SeqCst);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

type Worker = Deliverer<(
    Arc<MemoryStore>,
    Arc<Down>,
    Arc<MemoryOutboxQueues>,
    Arc<ManualClock>,
)>;

/// A new delivery to the destination (its event stored with a body), and its stream record.
async fn arrive(store: &MemoryStore, i: usize) -> aws_lambda_events::event::dynamodb::EventRecord {
    use aws_lambda_events::event::dynamodb::{EventRecord, StreamRecord};
    let key = MessageKey::new(
        SourceName::parse("stripe").expect("source"),
        EventId::parse(&format!("evt_{i:05}")).expect("event id"),
    );
    store
        .put_if_absent(&NewMessage {
            key: key.clone(),
            event_type: None,
            received_at_ms: T0,
            body: br#"{"id":"evt","type":"invoice.paid"}"#.to_vec(),
            body_digest: None,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        })
        .await
        .expect("store the event");
    let id = DestinationId::parse(DESTINATION).expect("id");
    let d = OutboundDelivery::new(&id, &key, None, T0);
    assert_eq!(
        store.save_delivery(&d, None).await.expect("store"),
        Applied::Done
    );
    let item = store.item(&d.reference().pk(), "OUT").expect("stored");
    let mut change = StreamRecord::default();
    change.new_image = serde_dynamo::Item::from(item);
    let mut record = EventRecord::default();
    record.event_name = "INSERT".into();
    record.event_id = format!("{i}");
    record.event_source = Some("aws:dynamodb".into());
    record.change = change;
    record
}

/// Simulates `hours` of `outage` with `n` deliveries pending to the destination; what it cost.
pub async fn simulate(outage: Outage, n: usize, hours: u32) -> OutageCost {
    simulate_with(outage, n, hours, DeliverConfig::default()).await
}

/// [`simulate`] with another worker configuration.
pub async fn simulate_with(
    outage: Outage,
    n: usize,
    hours: u32,
    config: DeliverConfig,
) -> OutageCost {
    let store = Arc::new(MemoryStore::new());
    let queues = Arc::new(MemoryOutboxQueues::default());
    let clock = Arc::new(ManualClock::at_millis(T0));
    let down = Arc::new(Down::default());
    // As deployed, but no in-process wait for a token: the simulated clock does not move while
    // the worker sleeps (an over-rate delivery is deferred instead).
    let config = DeliverConfig {
        max_wait: Duration::ZERO,
        ..config
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
        "https://down.example/hook",
        vec![Pattern::parse("*").expect("pattern")],
        None,
        T0,
    );
    if outage == Outage::Paused {
        dest.state = DestinationState::Paused;
    }
    admin::add(&*store, &dest, "bench", false)
        .await
        .expect("add the destination");
    if outage == Outage::OpenCircuit {
        let now = clock.now();
        // One failure (its run's start, which the cool-down grows from), then open.
        let fail = Change::Count {
            up: false,
            probe: false,
            bucket: window::bucket_of(config.breaker.window, now.get()),
            roll: true,
            reopen: None,
        };
        store.change_circuit(&id, fail, now).await.expect("count");
        assert!(store
            .move_circuit(&id, Move::Open, now)
            .await
            .expect("open"));
    }
    let mut records = Vec::with_capacity(n);
    for i in 0..n {
        records.push(arrive(&store, i).await);
    }

    let mut cost = OutageCost {
        deliveries: n,
        hours,
        ..OutageCost::default()
    };
    let writes_before = store.write_requests();
    let mut counts = Counts::default();
    let mut hour_began = Counts::default();
    for chunk in records.chunks(BATCH) {
        let mut event = aws_lambda_events::event::dynamodb::Event::default();
        event.records = chunk.to_vec();
        let (_, summary) = worker.handle_stream_batch(event).await;
        counts.stream_batches += 1;
        cost.tally(summary);
    }
    let mut queue = Queue::default();
    queue.take_sent(&queues, T0, &mut counts);
    let mut sim = Sim {
        worker: &worker,
        queues: &queues,
        queue,
        postponed: 0,
    };
    for second in 1..=i64::from(hours) * 3600 {
        let now = T0 + second * 1000;
        clock.set_millis(now);
        sim.second(now, &mut counts, &mut cost).await;
        if second % 3600 == 0 {
            counts.writes = store.write_requests() - writes_before + sim.postponed;
            counts.posts = down.posts.load(Ordering::SeqCst);
            cost.hourly.push(counts.since(&hour_began));
            hour_began = counts;
        }
    }
    cost.total = counts;
    cost.largest_item = store
        .all_deliveries()
        .await
        .expect("deliveries")
        .iter()
        .filter_map(|d| d.to_item().ok())
        .map(|i| item_size(&i))
        .max()
        .unwrap_or(0);
    cost.open_at_end = store
        .worker_state(&id)
        .await
        .expect("state")
        .circuit
        .opened_at
        .is_some();

    // Back: it answers, the paused one is resumed.
    let back = T0 + i64::from(hours) * 3_600_000;
    down.up.store(true, Ordering::SeqCst);
    if outage == Outage::Paused {
        admin::update(&*store, &id, "bench", "resumed", back, |d| {
            d.state = DestinationState::Active;
            Ok("resumed".into())
        })
        .await
        .expect("resume");
        resend::resume(
            &*store,
            Some(&*queues),
            &id,
            "bench",
            back,
            resend::RESUME_DELAY,
        )
        .await
        .expect("release");
    }
    let before = counts;
    let writes_back = store.write_requests();
    let postponed_back = sim.postponed;
    sim.queue.take_sent(&queues, back, &mut counts);
    let mut per_second = Vec::new();
    let mut delivered = 0;
    for second in 1..=RECOVERY_LIMIT_S {
        let now = back + second * 1000;
        clock.set_millis(now);
        sim.second(now, &mut counts, &mut cost).await;
        let so_far = down.delivered.load(Ordering::SeqCst);
        per_second.push(so_far - delivered);
        if delivered == 0 && so_far > 0 {
            cost.recovery.first_after_s = second;
        }
        delivered = so_far;
        if delivered >= n {
            cost.recovery.drained_after_s = Some(second);
            break;
        }
    }
    cost.recovery.delivered = delivered;
    cost.recovery.most_in_window = per_second
        .windows(RATE_WINDOW_S)
        .map(|w| w.iter().sum())
        .max()
        .unwrap_or_else(|| per_second.iter().sum());
    cost.recovery.sent = counts.sent - before.sent;
    cost.recovery.writes = store.write_requests() - writes_back + sim.postponed - postponed_back;
    cost
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hour of `c` after the first costs at most one queue message, one invocation and
    /// `writes` writes per delivery; the first also the parking's one write.
    fn flat(c: &OutageCost, writes: f64) {
        for (i, h) in c.hourly.iter().enumerate() {
            let parking = if i == 0 { 1.0 } else { 0.0 };
            assert!(
                c.per_delivery_hour(h.received, 1) <= 1.0,
                "hour {}: {c:?}",
                i + 1
            );
            assert!(
                c.per_delivery_hour(h.invocations(), 1) <= 1.0,
                "hour {}: {c:?}",
                i + 1
            );
            assert!(
                c.per_delivery_hour(h.writes, 1) <= writes + parking,
                "hour {}: {c:?}",
                i + 1
            );
        }
    }

    /// The backlog came back whole, at the destination's pace (10/s, burst 10).
    fn drained(c: &OutageCost, within_s: i64) {
        let r = c.recovery;
        assert_eq!(r.delivered, c.deliveries, "{c:?}");
        assert!(r.drained_after_s.is_some_and(|s| s <= within_s), "{c:?}");
        assert!(r.most_in_window <= 10 + 10 * RATE_WINDOW_S, "{c:?}");
    }

    /// A paused destination's deliveries are parked once (one write each) and then cost
    /// nothing: no message, no invocation, no write, however long; resumed, they all go out.
    #[tokio::test]
    async fn a_paused_destination_costs_one_write_per_delivery_then_nothing() {
        let c = simulate(Outage::Paused, 20, 3).await;
        assert_eq!(c.total.posts, 0, "{c:?}");
        assert_eq!(c.hourly.len(), 3, "{c:?}");
        assert_eq!(c.hourly[0].writes, 20, "parked: one write each: {c:?}");
        for h in &c.hourly[1..] {
            assert_eq!((h.sent, h.invocations(), h.writes), (0, 0, 0), "{c:?}");
        }
        drained(&c, 60);
    }

    /// An open circuit parks its backlog: a probe per cool-down is all it costs, at most one
    /// message, one invocation and one write per delivery per hour; once the destination
    /// answers, the next probe closes the circuit and the backlog drains at its rate.
    #[tokio::test]
    async fn an_open_circuit_costs_at_most_one_of_each_per_delivery_hour_and_drains_at_the_rate() {
        let c = simulate(Outage::OpenCircuit, 100, 2).await;
        assert!(c.open_at_end, "{c:?}");
        assert!(c.total.posts > 0, "probes: {c:?}");
        assert_eq!(c.outcomes.get("deferred"), None, "{c:?}");
        flat(&c, 1.0);
        // A probe at most every 5 min (the longest cool-down) and the sweep's minute, then
        // 100 at 10/s.
        drained(&c, 300 + 60 + 30);
    }

    /// Down for (nearly) a simulated day (the breaker disables a destination after 24 h): every
    /// hour costs the same, flat, whatever the backlog's age; back, it drains.
    #[tokio::test]
    async fn a_destination_down_for_a_day_costs_the_same_every_hour() {
        let c = simulate(Outage::OpenCircuit, 100, 23).await;
        let later: Vec<usize> = c.hourly[1..].iter().map(|h| h.writes).collect();
        let (least, most) = (later.iter().min(), later.iter().max());
        let hours = c.hourly.len();
        crate::faults::report::record(
            module_path!(),
            "a destination down for a simulated day (its circuit open)",
            format!(
                "{} pending deliveries, the receiver answering 500 for {hours} simulated hours, then 200 \
                 (in-memory store and queues, the deliver worker and sweep as deployed, the breaker's defaults)",
                c.deliveries
            ),
            format!(
                "per delivery per hour: queue messages {:.2}, invocations {:.2}, writes {:.2} (the target: at most 1 of each); \
                 writes per hour after the first between {} and {} (flat); back: {} of {} delivered after {} s, at most {} POSTs in {RATE_WINDOW_S} s",
                c.per_delivery_hour(c.total.received, hours as u32),
                c.per_delivery_hour(c.total.invocations(), hours as u32),
                c.per_delivery_hour(c.total.writes, hours as u32),
                least.copied().unwrap_or(0),
                most.copied().unwrap_or(0),
                c.recovery.delivered,
                c.deliveries,
                c.recovery.drained_after_s.map_or("—".to_owned(), |s| s.to_string()),
                c.recovery.most_in_window,
            ),
        );
        assert!(c.open_at_end, "{c:?}");
        flat(&c, 1.0);
        assert!(
            most.zip(least).is_some_and(|(m, l)| m - l <= 10),
            "flat: {later:?}"
        );
        drained(&c, 300 + 60 + 30);
    }

    /// The issue's flaky receiver (every event 500, 500, 200; schedule 0,2s,2s,2s,2s): every
    /// event delivered on its third attempt, one `webhook-id` each, within the bound measured.
    #[tokio::test]
    async fn the_flaky_receiver_s_events_each_complete_in_three_attempts() {
        let f = flaky(12).await;
        crate::faults::report::record(
            module_path!(),
            "a receiver failing two requests in three (each event 500, 500, 200)",
            format!(
                "{} events, schedule 0,2s,2s,2s,2s, the breaker's defaults (in-memory store and queues, \
                 the deliver worker and sweep as deployed); bound 300 s",
                f.events
            ),
            format!(
                "delivered {}/{} after {} s; POSTs {}, the most per webhook-id {}, webhook-ids {}; queue messages {}, invocations {}",
                f.delivered,
                f.events,
                f.completed_after_s.map_or("—".to_owned(), |s| s.to_string()),
                f.posts,
                f.most_attempts,
                f.webhook_ids,
                f.sent,
                f.invocations,
            ),
        );
        assert_eq!((f.delivered, f.webhook_ids), (12, 12), "{f:?}");
        assert_eq!(f.most_attempts, 3, "{f:?}");
        assert_eq!(f.posts, 36, "{f:?}");
        // Measured 61 s: its circuit opens once (the first two rounds fail: 20 requests, all
        // failed) and the backlog is parked; at the sweep's minute three probes in a row (third
        // attempts) succeed, close it and release the rest, whose failures stay under the rate.
        assert!(f.completed_after_s.is_some_and(|s| s <= 300), "{f:?}");
    }
}
