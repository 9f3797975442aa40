//! The delivery worker on the in-memory store with a scripted transport and a manual clock: what
//! each answer does to the delivery, the circuit and the destination, without the emulator.

use super::*;
use crate::clock::{ManualClock, Millis};
use crate::domain::{EventId, MessageKey, SourceName};
use crate::metrics::RecordingSink;
use crate::outbox::admin;
use crate::outbox::attempt::AttemptResult;
use crate::outbox::breaker::{window, Circuit};
use crate::outbox::delivery::{ParkReason, Parked, PendingDeliveryNotice};
use crate::outbox::destination::did;
use crate::outbox::destination::Destination;
use crate::outbox::pattern::Pattern;
use crate::outbox::queue::{MemoryOutboxQueues, Work};
use crate::outbox::schema::{
    destination_pk, FAILING_SINCE, FAILURES, OPENED_AT, STATE_SK, WINDOW_SLOTS,
};
use crate::outbox::transport::Outgoing;
use crate::outbox::transport::ScriptedTransport;
use crate::store::attr::{n, s};
use crate::store::memory::MemoryStore;
use crate::store::Applied;
use crate::store::{Inbox, Item, NewMessage};

const T0: i64 = 1_700_000_000_000;

type Worker = Deliverer<(
    Arc<MemoryStore>,
    Arc<ScriptedTransport>,
    Arc<MemoryOutboxQueues>,
    Arc<ManualClock>,
)>;

struct World {
    store: Arc<MemoryStore>,
    transport: Arc<ScriptedTransport>,
    queues: Arc<MemoryOutboxQueues>,
    clock: Arc<ManualClock>,
    metrics: Arc<RecordingSink>,
    worker: Worker,
}

fn config() -> DeliverConfig {
    DeliverConfig {
        breaker: BreakerConfig {
            window: Duration::from_secs(60),
            min_requests: 3,
            failure_rate: 50,
            half_open_probes: 1,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(30),
            disable_after: Duration::from_secs(3600),
        },
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    }
}

fn world(transport: ScriptedTransport) -> World {
    world_with(transport, config())
}

fn world_with(transport: ScriptedTransport, config: DeliverConfig) -> World {
    let store = Arc::new(MemoryStore::new());
    let transport = Arc::new(transport);
    let queues = Arc::new(MemoryOutboxQueues::default());
    let clock = Arc::new(ManualClock::at_millis(T0));
    let metrics = Arc::new(RecordingSink::new());
    let worker = Deliverer::new(
        store.clone(),
        transport.clone(),
        queues.clone(),
        clock.clone(),
        config,
        Duration::from_secs(5),
    )
    .with_jitter(|| 0.5)
    .with_deferral_jitter(|| 0.0)
    .with_metrics(metrics.clone());
    World {
        store,
        transport,
        queues,
        clock,
        metrics,
        worker,
    }
}

impl World {
    async fn destination(&self, id: &str, change: impl FnOnce(&mut Destination)) {
        let mut d = Destination::new(
            &did(id),
            "https://x.example/hook",
            vec![Pattern::parse("*").unwrap()],
            None,
            T0,
        );
        change(&mut d);
        admin::add(&*self.store, &d, "ana", false).await.unwrap();
    }

    /// An event in the inbox and its pending delivery to `destination`.
    async fn pending(&self, destination: &str, event: &str) -> DeliveryRef {
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(event).unwrap(),
        );
        self.store
            .put_if_absent(&NewMessage {
                key: key.clone(),
                event_type: None,
                received_at_ms: T0,
                body: br#"{"id":"evt"}"#.to_vec(),
                body_digest: None,
                headers: Vec::new(),
                provider_id: None,
                unidentified: None,
                batch: None,
            })
            .await
            .unwrap();
        let d = OutboundDelivery::new(&did(destination), &key, None, T0);
        assert_eq!(
            self.store.save_delivery(&d, None).await.unwrap(),
            Applied::Done
        );
        d.reference()
    }

    async fn stored(&self, r: &DeliveryRef) -> OutboundDelivery {
        self.store.delivery(r).await.unwrap().unwrap()
    }

    async fn circuit(&self, destination: &str) -> Circuit {
        self.store
            .worker_state(&did(destination))
            .await
            .unwrap()
            .circuit
    }

    /// Sets a destination's circuit as another worker left it.
    fn set_circuit(&self, destination: &str, c: Circuit) {
        let mut item = Item::from([
            ("pk".to_string(), s(destination_pk(destination))),
            ("sk".to_string(), s(STATE_SK)),
            (FAILURES.to_string(), n(i64::from(c.failures))),
        ]);
        for (attr, v) in [(FAILING_SINCE, c.failing_since), (OPENED_AT, c.opened_at)] {
            if let Some(v) = v {
                item.insert(attr.into(), n(v));
            }
        }
        for (b, [at, requests, failures]) in c.window.slots.iter().zip(WINDOW_SLOTS) {
            if let Some(b) = b {
                item.insert(at.into(), n(b.at));
                item.insert(requests.into(), n(i64::from(b.requests)));
                item.insert(failures.into(), n(i64::from(b.failures)));
            }
        }
        self.store.put_item(item);
    }

    /// What was scheduled, by reference (a message that carries its delivery names it).
    fn scheduled(&self) -> Vec<(Work, Duration)> {
        self.scheduled_as_sent()
            .into_iter()
            .map(|(w, d)| match w {
                Work::Attempt(c) => (Work::Delivery(c.reference()), d),
                w => (w, d),
            })
            .collect()
    }

    fn scheduled_as_sent(&self) -> Vec<(Work, Duration)> {
        self.queues.scheduled.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after_and_leaves_the_circuit_alone() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        429,
        Some("120"),
    )]));
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;

    let outcome = w.worker.deliver(&r).await.unwrap();
    assert_eq!(
        outcome,
        DeliveryOutcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(120)
        },
        "Retry-After (120 s) beats the schedule's 5 s"
    );
    let d = w.stored(&r).await;
    assert_eq!(d.status, DeliveryStatus::Retrying);
    assert_eq!(d.next_attempt_at, Some(T0 + 120_000));
    assert_eq!((d.last_status, d.lease_until), (Some(429), None));
    assert_eq!(d.journal.len(), 1);
    assert_eq!(d.journal[0].status, Some(429));
    assert_eq!(d.journal[0].outcome, "retry in 2m");
    assert_eq!(
        w.scheduled(),
        vec![(Work::Delivery(r.clone()), Duration::from_secs(120))],
        "re-driven through the queue with the delay"
    );
    assert_eq!(
        w.circuit("crm").await,
        Circuit::default(),
        "a 429 says the destination is up: nothing counted"
    );

    w.clock.advance_millis(119_999);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::NotDue)
    );
    w.clock.advance_millis(1);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    let sent = w.transport.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].header("webhook-id"), Some(d.webhook_id.as_str()));
    assert_eq!(
        sent[1].header("webhook-id"),
        sent[0].header("webhook-id"),
        "the retry is the same message"
    );
    assert_eq!(sent[1].body, br#"{"id":"evt"}"#);
    assert_eq!(w.metrics.count("DeliveriesDelivered"), 1);
}

#[tokio::test]
async fn a_retry_after_beyond_the_queue_s_limit_is_left_to_the_sweep() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        429,
        Some("3600"),
    )]));
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(3600)
        }
    );
    assert!(w.scheduled().is_empty(), "over 15 min: not queued");
    assert_eq!(w.stored(&r).await.due_at(), Some(T0 + 3_600_000));
}

#[tokio::test]
async fn a_410_fails_the_delivery_and_disables_the_destination() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        410, None,
    )]));
    w.destination("crm", |_| {}).await;
    let first = w.pending("crm", "evt_1").await;
    let second = w.pending("crm", "evt_2").await;

    assert_eq!(
        w.worker.deliver(&first).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 1 }
    );
    let dest = admin::get(&*w.store, &did("crm")).await.unwrap().unwrap();
    assert_eq!(dest.state, DestinationState::Disabled);
    assert_eq!(
        dest.reason.as_deref(),
        Some("the destination answered 410 Gone")
    );
    let journal = admin::journal(&*w.store, &did("crm")).await.unwrap();
    assert!(
        journal
            .iter()
            .any(|e| e.actor == "deliver" && e.action == "disabled"),
        "{journal:?}"
    );
    assert_eq!(w.metrics.count("DestinationDisabled"), 1);
    let notices = w.queues.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].destination, "crm");

    // The cache was dropped: the next delivery fails at once, without a request.
    assert_eq!(
        w.worker.deliver(&second).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 0 }
    );
    assert_eq!(w.transport.sent().len(), 1);
    let d = w.stored(&second).await;
    assert!(d
        .last_error
        .unwrap()
        .contains("disabled: the destination answered 410 Gone"));
    assert_eq!(w.circuit("crm").await, Circuit::default(), "410 is neutral");
}

#[tokio::test]
async fn concurrent_failures_open_the_circuit_once() {
    // Four workers fail at once on a circuit whose window holds one failure (at least 3
    // requests, 50 %): each counts its failure; three of them see the rate reached, one opens it.
    let transport =
        ScriptedTransport::answering((0..4).map(|_| ScriptedTransport::status(500, None))).gated(4);
    let w = world(transport);
    w.destination("crm", |_| {}).await;
    w.set_circuit("crm", {
        let mut c = Circuit {
            failures: 1,
            failing_since: Some(T0 - 1_000),
            ..Circuit::default()
        };
        c.window
            .count(window::bucket_of(config().breaker.window, T0), true);
        c
    });
    let mut refs = Vec::new();
    for i in 0..4 {
        refs.push(w.pending("crm", &format!("evt_{i}")).await);
    }
    let outcomes = futures_util::future::join_all(refs.iter().map(|r| w.worker.deliver(r))).await;
    for o in outcomes {
        assert!(
            matches!(o.unwrap(), DeliveryOutcome::Retrying { attempt: 1, .. }),
            "every failure is retried"
        );
    }
    assert_eq!(w.store.circuit_openings(), 1, "opened once, not per worker");
    let c = w.circuit("crm").await;
    assert_eq!(
        (c.failures, c.failing_since, c.opened_at),
        (5, Some(T0 - 1_000), Some(T0))
    );

    // Open: the next delivery is parked in the backlog without an attempt or a message.
    let scheduled = w.scheduled().len();
    let r = w.pending("crm", "evt_late").await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Parked {
            why: "circuit open"
        }
    );
    assert_eq!(w.stored(&r).await.attempts, 0);
    assert_eq!(w.scheduled().len(), scheduled);
    assert_eq!(w.transport.sent().len(), 4);
}

#[tokio::test]
async fn a_half_open_circuit_lets_one_probe_through_and_closes_on_its_success() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |_| {}).await;
    w.set_circuit(
        "crm",
        Circuit {
            failures: 3,
            failing_since: Some(T0 - 60_000),
            opened_at: Some(T0 - 30_000),
            ..Circuit::default()
        },
    );
    // Another worker holds the probe's lease.
    assert!(w
        .store
        .claim_probe(
            &did("crm"),
            Millis::new(T0 - 30_000),
            Millis::new(T0 + 5_000),
            Millis::new(T0),
        )
        .await
        .unwrap());
    let r = w.pending("crm", "evt_1").await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Parked {
            why: "circuit open"
        },
        "parked while the other probe runs"
    );
    // Its lease lapses without a result: this worker probes, and the success closes the circuit.
    w.clock.set_millis(T0 + 5_000);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    assert_eq!(w.circuit("crm").await, Circuit::default());
}

#[tokio::test]
async fn a_destination_failing_for_too_long_is_disabled_by_the_breaker() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        503, None,
    )]));
    w.destination("crm", |_| {}).await;
    // Open since long enough to probe; failing since more than `disable_after` (1 h).
    w.set_circuit(
        "crm",
        Circuit {
            failures: 9,
            failing_since: Some(T0 - 3_600_000),
            opened_at: Some(T0 - 60_000),
            ..Circuit::default()
        },
    );
    let r = w.pending("crm", "evt_1").await;
    assert!(matches!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Retrying { .. }
    ));
    let dest = admin::get(&*w.store, &did("crm")).await.unwrap().unwrap();
    assert_eq!(dest.state, DestinationState::Disabled);
    assert_eq!(
        dest.reason.as_deref(),
        Some("failing for 3600 s without a success (circuit breaker)")
    );
    let c = w.circuit("crm").await;
    assert_eq!(
        (c.failures, c.opened_at),
        (10, Some(T0)),
        "the probe re-opened it"
    );
}

#[tokio::test]
async fn a_lapsed_lease_is_attempted_again_with_the_same_webhook_id() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;
    // A worker claimed it and stopped (before or after its POST).
    let mut claimed = w.stored(&r).await;
    claimed.status = DeliveryStatus::Delivering;
    claimed.attempts = 1;
    claimed.lease_until = Some(T0 + 40_000);
    assert_eq!(
        w.store.save_delivery(&claimed, Some(0)).await.unwrap(),
        Applied::Done
    );

    w.clock.set_millis(T0 + 39_999);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Leased)
    );
    assert!(w.transport.sent().is_empty());

    w.clock.set_millis(T0 + 40_000);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    let d = w.stored(&r).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 2));
    assert_eq!(d.journal.len(), 2);
    assert_eq!(
        (
            d.journal[0].at,
            d.journal[0].attempt,
            d.journal[0].outcome.as_str()
        ),
        (T0 + 40_000, 1, "lease lapsed")
    );
    assert_eq!((d.journal[1].attempt, d.journal[1].status), (2, Some(200)));
    assert_eq!(
        w.transport.sent()[0].header("webhook-id"),
        Some(claimed.webhook_id.as_str())
    );
    assert_eq!(d.delivered_at, Some(T0 + 40_000));
    assert_eq!(d.expires_at, Some((T0 + 40_000) / 1000 + 30 * 86_400));
}

#[tokio::test]
async fn a_paused_destination_parks_its_deliveries_until_resumed() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |d| d.state = DestinationState::Paused)
        .await;
    let r = w.pending("crm", "evt_1").await;
    let parked = DeliveryOutcome::Parked {
        why: "destination paused",
    };
    assert_eq!(w.worker.deliver(&r).await.unwrap(), parked);
    let d = w.stored(&r).await;
    assert_eq!(
        (d.status, d.attempts, d.next_attempt_at),
        (DeliveryStatus::Pending, 0, None),
        "parked: no attempt, its schedule untouched"
    );
    assert_eq!(
        d.parked,
        Some(Parked {
            reason: ParkReason::Paused,
            since: T0
        })
    );
    assert_eq!(d.notes.len(), 1);
    assert_eq!(d.notes[0].note, "parked: destination paused");
    assert!(w.scheduled().is_empty(), "no queue message while paused");
    let item = w.store.item(&r.pk(), "OUT").unwrap();
    assert_eq!(
        crate::store::attr::get_s(&item, "open_shard"),
        Some("PARKED#crm"),
        "in the destination's backlog, out of the swept shards"
    );

    // A day later nothing looked at it: the sweep does not read the backlog of a paused one.
    let day = T0 + 86_400_000;
    w.clock.set_millis(day);
    let report = w.worker.sweep(1000).await.unwrap();
    assert_eq!((report.due, report.parked.seen), (0, 0), "{report:?}");
    // A stale message for it changes nothing (no write).
    let version = w.stored(&r).await.version;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Parked)
    );
    assert_eq!(w.stored(&r).await.version, version);
    // Another destination's open delivery is none of the resume's business.
    w.destination("api", |_| {}).await;
    let other = w.pending("api", "evt_1").await;

    let resumed_at = day + 10_000;
    admin::update(&*w.store, &did("crm"), "ana", "resumed", resumed_at, |d| {
        d.state = DestinationState::Active;
        Ok("resumed".into())
    })
    .await
    .unwrap();
    let after = Duration::from_secs(6);
    let redriven = crate::outbox::resend::resume(
        &*w.store,
        Some(&*w.queues),
        &did("crm"),
        "ana",
        resumed_at,
        after,
    )
    .await
    .unwrap();
    assert_eq!(redriven, 1);
    let d = w.stored(&r).await;
    assert_eq!(w.scheduled(), vec![(Work::Delivery(r.clone()), after)]);
    assert_eq!(
        (d.next_attempt_at, d.parked),
        (Some(resumed_at + 6_000), None)
    );
    assert_eq!(
        d.notes.last().unwrap().note,
        "released: destination resumed by ana"
    );
    assert_eq!(w.stored(&other).await.next_attempt_at, None);

    w.clock.set_millis(resumed_at + 6_000);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered,
        "the cache's copy (5 s) is older than the re-drive's delay"
    );
    assert!(w.transport.sent().len() == 1);
    let again = crate::outbox::resend::resume(
        &*w.store,
        Some(&*w.queues),
        &did("crm"),
        "ana",
        resumed_at + 7_000,
        after,
    )
    .await
    .unwrap();
    assert_eq!(again, 0, "nothing parked any more");
}

#[tokio::test]
async fn a_removed_destination_s_backlog_is_released_past_the_workers_copy() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |d| d.state = DestinationState::Paused)
        .await;
    let r = w.pending("crm", "evt_1").await;
    assert!(matches!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Parked { .. }
    ));
    let backlog = crate::outbox::parking::backlog(&*w.store, &did("crm"), 10)
        .await
        .unwrap();
    assert_eq!(
        (backlog.parked, backlog.more, backlog.oldest),
        (1, false, Some(T0))
    );
    assert_eq!(backlog.to_string(), "1 parked");
    // (`admin::remove` is a DynamoDB transaction the in-memory store does not run; a removed
    // destination's delivery failing as removed: `a_copy_older_than_the_delivery_…`.)
    let released =
        crate::outbox::parking::release_removed(&*w.store, Some(&*w.queues), &did("crm"), T0)
            .await
            .unwrap();
    assert_eq!(released, 1);
    let d = w.stored(&r).await;
    assert_eq!((d.parked, d.next_attempt_at), (None, Some(T0 + 10_000)));
    assert_eq!(
        w.scheduled(),
        vec![(Work::Delivery(r.clone()), Duration::from_secs(10))],
        "due once no worker's copy (5 s) still knows the destination"
    );
    let none = crate::outbox::parking::backlog(&*w.store, &did("crm"), 10)
        .await
        .unwrap();
    assert_eq!((none.parked, none.oldest), (0, None));
}

#[tokio::test]
async fn over_the_rate_a_delivery_is_deferred_without_an_attempt() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |d| {
        d.rate_per_sec = 2.0;
        d.burst = 1;
    })
    .await;
    let first = w.pending("crm", "evt_1").await;
    let second = w.pending("crm", "evt_2").await;
    assert_eq!(
        w.worker.deliver(&first).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    let outcome = w.worker.deliver(&second).await.unwrap();
    let DeliveryOutcome::Deferred { until, why } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(why, "rate limit");
    assert!(
        (T0 + 1..=T0 + 501).contains(&until),
        "the next token, 500 ms away: {}",
        until - T0
    );
    assert_eq!(w.stored(&second).await.attempts, 0);
    assert_eq!(w.transport.sent().len(), 1);

    w.clock.set_millis(until);
    assert_eq!(
        w.worker.deliver(&second).await.unwrap(),
        DeliveryOutcome::Delivered
    );
}

#[tokio::test]
async fn what_cannot_be_sent_fails_without_a_request() {
    let w = world(ScriptedTransport::new());
    let r = w.pending("gone", "evt_1").await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 0 }
    );
    assert_eq!(
        w.stored(&r).await.last_error.as_deref(),
        Some("the destination was removed")
    );
    let missing = DeliveryRef {
        destination: did("crm"),
        ..r.clone()
    };
    assert_eq!(
        w.worker.deliver(&missing).await.unwrap(),
        DeliveryOutcome::Missing
    );
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Terminal)
    );
    assert!(w.transport.sent().is_empty());
    assert_eq!(w.queues.notices.lock().unwrap().len(), 1);
    assert_eq!(w.metrics.count("DeliveriesFailed"), 1);
}

#[tokio::test]
async fn a_copy_older_than_the_delivery_is_read_again_before_it_fails_the_delivery() {
    let w = world(ScriptedTransport::new());
    w.destination("other", |_| {}).await;
    w.destination("paused", |d| d.state = DestinationState::Paused)
        .await;
    w.destination("resumed", |d| d.state = DestinationState::Disabled)
        .await;
    // The worker's copy is read now (a delivery to a paused destination, parked).
    let warm = w.pending("paused", "evt_0").await;
    assert!(matches!(
        w.worker.deliver(&warm).await.unwrap(),
        DeliveryOutcome::Parked { .. }
    ));
    // Within the copy's 5 s, a destination is added and another resumed; a process instance
    // with a newer copy fans an event out to both.
    w.destination("added", |_| {}).await;
    admin::update(&*w.store, &did("resumed"), "ana", "resumed", T0, |d| {
        d.state = DestinationState::Active;
        Ok("resumed".into())
    })
    .await
    .unwrap();
    w.clock.advance_millis(1_000);
    for dest in ["added", "resumed"] {
        let r = w.pending(dest, "evt_1").await;
        assert_eq!(
            w.worker.deliver(&r).await.unwrap(),
            DeliveryOutcome::Delivered,
            "{dest}: read again, not failed on the old copy"
        );
    }
    assert_eq!(w.transport.sent().len(), 2);
    assert!(w.queues.notices.lock().unwrap().is_empty());

    // Unknown and disabled for real: the read again confirms it, and the delivery fails.
    admin::update(&*w.store, &did("resumed"), "ana", "disabled", T0, |d| {
        d.state = DestinationState::Disabled;
        Ok("disabled".into())
    })
    .await
    .unwrap();
    for (dest, why) in [
        ("ghost", "the destination was removed"),
        ("resumed", "the destination is disabled: no reason given"),
    ] {
        let r = w.pending(dest, "evt_2").await;
        assert_eq!(
            w.worker.deliver(&r).await.unwrap(),
            DeliveryOutcome::Failed { attempts: 0 }
        );
        assert_eq!(w.stored(&r).await.last_error.as_deref(), Some(why));
    }
    assert_eq!(w.transport.sent().len(), 2, "nothing sent to either");
}

#[tokio::test]
async fn a_failure_notice_the_queue_refused_is_sent_once_the_sweep_finds_it() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        410, None,
    )]));
    w.destination("crm", |_| {}).await;
    let answered = w.pending("crm", "evt_1").await;
    let unsent = w.pending("crm", "evt_2").await;
    w.queues
        .refuse_notices
        .store(2, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        w.worker.deliver(&answered).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 1 }
    );
    assert_eq!(
        w.worker.deliver(&unsent).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 0 },
        "disabled by the 410"
    );
    assert!(w.queues.notices.lock().unwrap().is_empty());
    let pending = Some(PendingDeliveryNotice {
        failed_at: T0,
        deadline: T0 + 30_000,
    });
    for r in [&answered, &unsent] {
        let d = w.stored(r).await;
        assert_eq!(
            (d.status, d.notice_pending),
            (DeliveryStatus::Failed, pending)
        );
        assert_eq!(d.due_at(), Some(T0 + 30_000), "in the open index");
    }
    assert_eq!(
        w.worker.deliver(&answered).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Terminal),
        "its sender still has it"
    );
    assert!(w.worker.due_work(100).await.unwrap().0.is_empty());

    // The deadline passes: the sweep finds both, the workers it re-drives them to send them.
    w.clock.set_millis(T0 + 30_000);
    let (due, _) = w.worker.due_work(100).await.unwrap();
    assert_eq!(due.len(), 2, "{due:?}");
    for work in &due {
        assert_eq!(
            w.worker.work(work).await.unwrap(),
            DeliveryOutcome::NoticeSent
        );
        assert_eq!(
            w.worker.work(work).await.unwrap(),
            DeliveryOutcome::Skipped(Skip::Terminal),
            "once"
        );
    }
    let notices = w.queues.notices.lock().unwrap().clone();
    assert_eq!(notices.len(), 2);
    assert!(notices.iter().all(|n| n.failed_at == T0), "{notices:?}");
    assert_eq!(w.metrics.count("DeliveriesFailed"), 2);
    for r in [&answered, &unsent] {
        let d = w.stored(r).await;
        assert_eq!((d.notice_pending, d.due_at()), (None, None));
        assert_eq!(d.notes.last().unwrap().note, "failure notice sent");
    }
    assert!(w.worker.due_work(100).await.unwrap().0.is_empty());
}

#[tokio::test]
async fn a_circuit_write_error_after_the_failure_does_not_hold_its_notice_back() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        500, None,
    )]));
    w.destination("crm", |d| {
        d.schedule = crate::outbox::schedule::RetrySchedule::parse("0").unwrap()
    })
    .await;
    let r = w.pending("crm", "evt_1").await;
    w.store.set_circuit_down(true);
    assert!(
        w.worker.deliver(&r).await.is_err(),
        "the circuit's write failed: the record is delivered again"
    );
    let d = w.stored(&r).await;
    assert_eq!((d.status, d.notice_pending), (DeliveryStatus::Failed, None));
    assert_eq!(w.queues.notices.lock().unwrap().len(), 1);
    w.store.set_circuit_down(false);
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Terminal)
    );
    assert_eq!(w.queues.notices.lock().unwrap().len(), 1, "one notice");
}

/// A delivery to `crm` created at `created` (due then), in outbox shard `shard`, the `n`th such.
async fn due_in(w: &World, shard: &str, n: usize, created: i64) -> Vec<DeliveryRef> {
    let mut refs = Vec::new();
    for i in 0.. {
        if refs.len() == n {
            break;
        }
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(&format!("evt_{shard}_{i}")).unwrap(),
        );
        let d = OutboundDelivery::new(&did("crm"), &key, None, created);
        if crate::outbox::schema::outbox_shard(&d.reference().pk()) == shard {
            w.store.save_delivery(&d, None).await.unwrap();
            refs.push(d.reference());
        }
    }
    refs
}

#[tokio::test]
async fn the_sweep_gives_every_shard_its_share_and_its_gauge_sees_the_oldest_of_all() {
    let w = world(ScriptedTransport::new());
    // A thousand due deliveries in the first shard (an open circuit's), one older in each other.
    due_in(&w, "OUTBOX#0", 1_000, T0 - 1_000).await;
    let shards = usize::from(crate::outbox::schema::OUTBOX_SHARDS);
    for shard in 1..shards {
        due_in(&w, &format!("OUTBOX#{shard}"), 1, T0 - 600_000).await;
    }
    let shard_of = |work: &Work| match work {
        Work::Delivery(r) => crate::outbox::schema::outbox_shard(&r.pk()),
        Work::Attempt(_) | Work::Fanout { .. } => unreachable!(),
    };
    let (work, oldest) = w.worker.due_work(100).await.unwrap();
    let mut by: HashMap<String, usize> = HashMap::new();
    for item in &work {
        *by.entry(shard_of(item)).or_default() += 1;
    }
    assert_eq!(by.len(), shards, "every shard served: {by:?}");
    assert_eq!(
        by["OUTBOX#0"],
        100 - (shards - 1),
        "the first shard gets what the others leave"
    );
    assert_eq!(oldest, 600, "the oldest is in a later shard");
    // A limit smaller than the shards: the gauge still looks at every shard.
    let (few, oldest) = w.worker.due_work(4).await.unwrap();
    assert_eq!((few.len(), oldest), (4, 600));
    let report = w.worker.sweep(100).await.unwrap();
    assert_eq!((report.due, report.oldest_due_secs), (100, 600));
    // Re-driven, they are not due again until the re-drive's interval has passed; then the
    // gauge counts their wait from when they first became due, not from the re-drive.
    let interval = i64::try_from(crate::outbox::sweep::REDRIVE_AFTER.as_millis()).unwrap();
    w.clock.advance_millis(interval);
    let (_, oldest) = w.worker.due_work(100).await.unwrap();
    assert_eq!(oldest, 600 + interval / 1000);
}

#[tokio::test]
async fn the_sweep_re_drives_a_due_item_once_per_interval_however_far_behind_the_workers_are() {
    use crate::outbox::sweep::REDRIVE_AFTER;
    let w = world(ScriptedTransport::new());
    let refs = due_in(&w, "OUTBOX#3", 3, T0 - 1_000).await;
    let redriven = |w: &World| w.queues.redriven.lock().unwrap().len();
    let first = w.worker.sweep(100).await.unwrap();
    assert_eq!((first.due, first.redriven, first.taken), (3, 3, 0));
    // Nobody took the messages yet (a backlog): the next sweeps send no copies.
    w.clock.advance_millis(60_000);
    let again = w.worker.sweep(100).await.unwrap();
    assert_eq!((again.due, again.redriven), (0, 0));
    assert_eq!(redriven(&w), 3);
    // Still not done after the interval: a lost message is re-driven again.
    w.clock
        .advance_millis(i64::try_from(REDRIVE_AFTER.as_millis()).unwrap() - 60_000);
    let later = w.worker.sweep(100).await.unwrap();
    assert_eq!((later.due, later.redriven), (3, 3));
    assert_eq!(redriven(&w), 6);
    // An item written since the sweep read it (a worker recorded it) is not taken.
    w.clock
        .advance_millis(i64::try_from(REDRIVE_AFTER.as_millis()).unwrap());
    let due_now = w
        .store
        .due_work_items("OUTBOX#3", Millis::new(w.clock.now_millis()), 10)
        .await
        .unwrap();
    assert_eq!(due_now.len(), 3);
    let mut d = w.store.delivery(&refs[0]).await.unwrap().unwrap();
    let version = d.version;
    d.next_attempt_at = Some(w.clock.now_millis() + 1_000);
    w.store.save_delivery(&d, Some(version)).await.unwrap();
    let stale = due_now.iter().find(|i| i.pk == refs[0].pk()).unwrap();
    let until = Millis::new(w.clock.now_millis() + 1);
    assert!(!w
        .store
        .postpone_due("OUTBOX#3", stale, until)
        .await
        .unwrap());
    assert!(!w
        .store
        .postpone_due("OUTBOX#4", &due_now[1], until)
        .await
        .unwrap());
}

/// What the world's queues were asked to re-drive since the last call.
fn redriven(w: &World) -> Vec<Work> {
    std::mem::take(&mut *w.queues.redriven.lock().unwrap())
}

#[tokio::test]
async fn an_open_circuit_parks_its_backlog_probes_it_once_per_cool_down_and_releases_it_at_the_rate(
) {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        503, None,
    )]));
    w.destination("crm", |d| {
        d.rate_per_sec = 2.0;
        d.burst = 1;
    })
    .await;
    w.set_circuit(
        "crm",
        Circuit {
            failures: 3,
            failing_since: Some(T0),
            opened_at: Some(T0),
            ..Circuit::default()
        },
    );
    // Five deliveries, the oldest first (created a second apart).
    let mut refs = Vec::new();
    for i in 0..5i64 {
        let r = w.pending("crm", &format!("evt_{i}")).await;
        let mut d = w.stored(&r).await;
        d.created_at = T0 - 5_000 + i * 1_000;
        let v = d.version;
        assert_eq!(
            w.store.save_delivery(&d, Some(v)).await.unwrap(),
            Applied::Done
        );
        refs.push(r);
    }
    for r in &refs {
        assert_eq!(
            w.worker.deliver(r).await.unwrap(),
            DeliveryOutcome::Parked {
                why: "circuit open"
            }
        );
        let d = w.stored(r).await;
        assert_eq!((d.attempts, d.status), (0, DeliveryStatus::Pending));
        assert_eq!(d.parked.map(|p| p.reason), Some(ParkReason::Circuit));
    }
    assert!(w.scheduled().is_empty(), "parked: no queue message");
    assert!(w.transport.sent().is_empty());

    // Cooling down: the sweep sees the backlog and does nothing.
    w.clock.set_millis(T0 + 10_000);
    let report = w.worker.sweep(1000).await.unwrap();
    assert_eq!(
        (report.due, report.parked.seen, report.parked.probes),
        (0, 5, 0),
        "{report:?}"
    );
    assert!(redriven(&w).is_empty());

    // Cooled down: one probe, the oldest; it fails, re-opens the circuit and is parked again in
    // the write that records it (no message for its retry).
    w.clock.set_millis(T0 + 30_000);
    let report = w.worker.sweep(1000).await.unwrap();
    assert_eq!(report.parked.probes, 1, "{report:?}");
    assert_eq!(redriven(&w), vec![Work::Delivery(refs[0].clone())]);
    assert!(matches!(
        w.worker.deliver(&refs[0]).await.unwrap(),
        DeliveryOutcome::Retrying { attempt: 1, .. }
    ));
    let probe = w.stored(&refs[0]).await;
    assert_eq!(probe.parked.map(|p| p.reason), Some(ParkReason::Circuit));
    let retry_at = probe.next_attempt_at.unwrap();
    assert!(
        retry_at > T0 + 30_000,
        "its schedule kept: {}",
        retry_at - T0
    );
    assert!(w.scheduled().is_empty(), "no message for a parked retry");
    assert_eq!(w.circuit("crm").await.opened_at, Some(T0 + 30_000));
    // A message that arrives anyway (a copy sent before) finds it parked: no write.
    assert_eq!(
        w.worker.deliver(&refs[1]).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Parked)
    );

    // The next cool-down: the next probe is the oldest whose retry is due; it succeeds, the
    // circuit closes and the worker releases the backlog at once, oldest first, at 2/s (the
    // failed probe too: its attempt count kept, not the wait its failure during the outage
    // asked for).
    w.clock.set_millis(T0 + 60_000);
    let report = w.worker.sweep(1000).await.unwrap();
    assert_eq!(report.parked.probes, 1, "{report:?}");
    let probe = if retry_at <= T0 + 60_000 { 0 } else { 1 };
    assert_eq!(redriven(&w), vec![Work::Delivery(refs[probe].clone())]);
    assert_eq!(
        w.worker.deliver(&refs[probe]).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    assert_eq!(w.circuit("crm").await, Circuit::default());
    let mut released: Vec<(Work, Duration)> = w.scheduled();
    released.sort_by_key(|(_, delay)| *delay);
    let rest: Vec<&DeliveryRef> = refs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != probe)
        .map(|(_, r)| r)
        .collect();
    assert_eq!(
        released.iter().map(|(w, _)| w.clone()).collect::<Vec<_>>(),
        rest.iter()
            .map(|r| Work::Delivery((*r).clone()))
            .collect::<Vec<_>>(),
        "oldest first"
    );
    for (i, r) in rest.iter().enumerate() {
        let d = w.stored(r).await;
        assert_eq!(d.parked, None);
        assert_eq!(
            d.next_attempt_at,
            Some(T0 + 60_000 + 500 * i as i64),
            "at the rate"
        );
        assert_eq!(released[i].1, Duration::from_millis(500 * i as u64));
        let probed = usize::from(probe == 1 && i == 0);
        assert_eq!(d.attempts as usize, probed, "the attempts it made, no more");
    }
    assert_eq!(rest.len(), 4, "every other delivery released");
    // The sweep after it finds nothing parked.
    w.clock.set_millis(T0 + 120_000);
    assert_eq!(w.worker.sweep(1000).await.unwrap().parked.seen, 0);
}

#[tokio::test]
async fn a_stale_read_is_skipped_as_a_conflict() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;
    let stale = w.stored(&r).await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    // The stream's old image of the same delivery arrives after it was delivered.
    let mut again = stale.clone();
    again.status = DeliveryStatus::Retrying;
    assert_eq!(
        w.worker.deliver_item(again).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Conflict)
    );
    assert_eq!(w.transport.sent().len(), 1, "never sent twice");
    assert_eq!(
        DeliveryOutcome::Skipped(Skip::Conflict).as_str(),
        "skipped_conflict"
    );
}

#[test]
fn skips_keep_their_names() {
    let names: Vec<_> = [
        Skip::Terminal,
        Skip::Leased,
        Skip::NotDue,
        Skip::Closed,
        Skip::Conflict,
        Skip::Parked,
    ]
    .into_iter()
    .map(|s| DeliveryOutcome::Skipped(s).as_str())
    .collect();
    assert_eq!(
        names,
        [
            "skipped_terminal",
            "skipped_leased",
            "skipped_not_due",
            "skipped_closed",
            "skipped_conflict",
            "skipped_parked"
        ]
    );
}

#[tokio::test]
async fn a_response_of_invalid_utf8_is_journaled_within_its_byte_bound() {
    use crate::outbox::delivery::BODY_HEAD_BYTES;
    let w = world(ScriptedTransport::answering([AttemptResult::Answered {
        status: 500,
        retry_after: None,
        body: vec![0xFF; BODY_HEAD_BYTES],
    }]));
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;
    assert!(matches!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Retrying { attempt: 1, .. }
    ));
    let head = &w.stored(&r).await.journal[0].body;
    assert!(
        head.len() <= BODY_HEAD_BYTES,
        "4 KiB of 0xFF journaled as {} bytes",
        head.len()
    );
    assert!(head.chars().all(|c| c == '\u{FFFD}') && !head.is_empty());
}

#[tokio::test]
async fn a_wait_for_an_in_flight_slot_ends_before_the_invocation_s_deadline() {
    // One slot; the first POST hangs until a second request reaches the transport.
    let w = world(ScriptedTransport::new().gated(2));
    w.destination("slow", |d| d.max_in_flight = 1).await;
    let first = w.pending("slow", "evt_1").await;
    let second = w.pending("slow", "evt_2").await;
    // Time for one POST's whole timeout and its recording, and 50 ms more.
    let deadline = T0 + 10_000 + ms(config().finish_margin) + 50;
    let run = until_deadline(deadline, async {
        tokio::join!(w.worker.deliver(&first), async {
            let outcome = w.worker.deliver(&second).await;
            // Releases the first POST (the slow destination answers at last).
            w.transport
                .post(Outgoing {
                    url: "https://x.example/other",
                    headers: &[],
                    body: &crate::outbox::transport::Bytes::new(),
                    timeout: Duration::from_secs(1),
                })
                .await;
            outcome
        })
    });
    let (a, b) = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the second delivery waited for the slot past the deadline");
    assert_eq!(a.unwrap(), DeliveryOutcome::Delivered);
    assert_eq!(
        b.unwrap(),
        DeliveryOutcome::Deferred {
            until: T0 + 1_000,
            why: OUT_OF_TIME
        }
    );
    let d = w.stored(&second).await;
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Pending, 0));
    assert!(w
        .scheduled()
        .contains(&(Work::Delivery(second.clone()), Duration::from_secs(1))));
}

#[tokio::test]
async fn a_post_that_would_outlast_the_invocation_is_deferred_unsent() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |d| d.timeout_ms = 20_000).await;
    let r = w.pending("crm", "evt_1").await;
    // 20 s of timeout and the margin do not fit in the 15 s left.
    let outcome = until_deadline(T0 + 15_000, w.worker.deliver(&r)).await;
    assert_eq!(
        outcome.unwrap(),
        DeliveryOutcome::Deferred {
            until: T0 + 1_000,
            why: OUT_OF_TIME
        }
    );
    assert!(w.transport.sent().is_empty(), "not sent");
    assert_eq!(w.stored(&r).await.attempts, 0, "no attempt counted");
    // With the time, it is sent.
    w.clock.set_millis(T0 + 1_000);
    let outcome = until_deadline(T0 + 60_000, w.worker.deliver(&r)).await;
    assert_eq!(outcome.unwrap(), DeliveryOutcome::Delivered);
}

#[tokio::test]
async fn a_429_holds_the_whole_destination_not_only_its_delivery() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        429,
        Some("7"),
    )]));
    w.destination("crm", |d| {
        d.rate_per_sec = 10.0;
        d.burst = 10;
    })
    .await;
    let refused = w.pending("crm", "evt_1").await;
    let other = w.pending("crm", "evt_2").await;
    assert!(matches!(
        w.worker.deliver(&refused).await.unwrap(),
        DeliveryOutcome::Retrying { .. }
    ));
    // Another delivery a second later: the bucket had 9 tokens left, but the receiver asked for 7 s.
    w.clock.set_millis(T0 + 1_000);
    let outcome = w.worker.deliver(&other).await.unwrap();
    let DeliveryOutcome::Deferred { until, why } = outcome else {
        panic!("sent during the receiver's Retry-After: {outcome:?}");
    };
    assert_eq!((why, until), ("rate limit", T0 + 7_000));
    assert_eq!(w.transport.sent().len(), 1);
    w.clock.set_millis(T0 + 7_000);
    assert_eq!(
        w.worker.deliver(&other).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    // A worker that never saw the 429 (its own process) reads the hold from the store.
    let fresh = Deliverer::new(
        w.store.clone(),
        w.transport.clone(),
        w.queues.clone(),
        w.clock.clone(),
        config(),
        Duration::from_secs(5),
    );
    let third = w.pending("crm", "evt_3").await;
    assert!(
        matches!(
            fresh.deliver(&third).await.unwrap(),
            DeliveryOutcome::Deferred {
                why: "rate limit",
                ..
            }
        ),
        "the burst is spent: the next token at the steady rate"
    );
}

#[tokio::test]
async fn a_retry_s_message_carries_the_stored_delivery_and_a_stale_copy_is_read_again() {
    let w = world(ScriptedTransport::answering([ScriptedTransport::status(
        503, None,
    )]));
    w.destination("crm", |_| {}).await;
    let r = w.pending("crm", "evt_1").await;
    assert!(matches!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Retrying { .. }
    ));
    let stored = w.stored(&r).await;
    let [(Work::Attempt(carried), _)] = &w.scheduled_as_sent()[..] else {
        panic!("{:?}", w.scheduled_as_sent());
    };
    assert_eq!(
        **carried, stored,
        "the copy is the item as stored, version included"
    );
    // Another worker delivers it first (the sweep found it): the carried copy is stale.
    w.clock.set_millis(stored.next_attempt_at.unwrap());
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    assert_eq!(
        w.worker
            .work(&Work::Attempt(carried.clone()))
            .await
            .unwrap(),
        DeliveryOutcome::Skipped(Skip::Terminal),
        "its conflict reads the delivery again"
    );
    assert_eq!(w.transport.sent().len(), 2, "never sent again");
    // A current copy is delivered as carried.
    let other = w.pending("crm", "evt_2").await;
    let copy = w.stored(&other).await;
    assert_eq!(
        w.worker.work(&Work::carrying(&copy)).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    // An old message, by reference, is still read.
    let third = w.pending("crm", "evt_3").await;
    let old: Work =
        serde_json::from_str(&serde_json::to_string(&Work::Delivery(third.clone())).unwrap())
            .unwrap();
    assert_eq!(
        w.worker.work(&old).await.unwrap(),
        DeliveryOutcome::Delivered
    );
}

#[tokio::test]
async fn leased_tokens_keep_the_shared_burst_across_workers() {
    let w = world(ScriptedTransport::new());
    w.destination("crm", |d| {
        d.rate_per_sec = 100.0;
        d.burst = 10;
    })
    .await;
    let mut outcomes = Vec::new();
    for i in 0..11 {
        let r = w.pending("crm", &format!("evt_{i}")).await;
        outcomes.push(w.worker.deliver(&r).await.unwrap());
    }
    let delivered = outcomes
        .iter()
        .filter(|o| **o == DeliveryOutcome::Delivered)
        .count();
    assert_eq!(delivered, 10, "the burst, taken in leases: {outcomes:?}");
    assert!(matches!(
        outcomes[10],
        DeliveryOutcome::Deferred {
            why: "rate limit",
            ..
        }
    ));
    // A second worker on the same bucket finds it spent at the same instant.
    let other = Deliverer::new(
        w.store.clone(),
        w.transport.clone(),
        w.queues.clone(),
        w.clock.clone(),
        config(),
        Duration::from_secs(60),
    );
    let r = w.pending("crm", "evt_other").await;
    assert!(matches!(
        other.deliver(&r).await.unwrap(),
        DeliveryOutcome::Deferred {
            why: "rate limit",
            ..
        }
    ));
    // After the lease ends its unspent tokens are gone: the bucket's rate, not more.
    w.clock.set_millis(T0 + 1_000);
    let r = w.pending("crm", "evt_later").await;
    assert_eq!(
        w.worker.deliver(&r).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    assert_eq!(w.transport.sent().len(), 11);
}

#[tokio::test]
async fn a_half_open_circuit_closes_after_its_probes_succeed_one_after_another() {
    let mut cfg = config();
    cfg.breaker.half_open_probes = 3;
    let w = world_with(ScriptedTransport::new(), cfg);
    w.destination("crm", |_| {}).await;
    w.set_circuit(
        "crm",
        Circuit {
            failures: 3,
            failing_since: Some(T0 - 60_000),
            opened_at: Some(T0 - 30_000),
            ..Circuit::default()
        },
    );
    let mut refs = Vec::new();
    for i in 0..4 {
        refs.push(w.pending("crm", &format!("evt_{i}")).await);
    }
    // Cooling down: the last one is parked.
    w.clock.set_millis(T0 - 1_000);
    assert_eq!(
        w.worker.deliver(&refs[3]).await.unwrap(),
        DeliveryOutcome::Parked {
            why: "circuit open"
        }
    );
    // Cooled down: the first probe succeeds; the circuit stays half-open (1 of 3) and the
    // backlog's oldest is released at once as the next probe.
    w.clock.set_millis(T0);
    assert_eq!(
        w.worker.deliver(&refs[0]).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    let c = w.circuit("crm").await;
    assert_eq!(
        (c.opened_at, c.probes_up, c.probe_until),
        (Some(T0 - 30_000), 1, None)
    );
    let released: Vec<Work> = w.scheduled().into_iter().map(|(work, _)| work).collect();
    assert_eq!(released, vec![Work::Delivery(refs[3].clone())]);
    assert!(w.stored(&refs[3]).await.parked.is_none());
    // The next two succeed: closed, the window and the probes forgotten.
    for r in [&refs[3], &refs[1]] {
        assert_eq!(
            w.worker.deliver(r).await.unwrap(),
            DeliveryOutcome::Delivered
        );
    }
    assert_eq!(w.circuit("crm").await, Circuit::default());
    assert_eq!(
        w.worker.deliver(&refs[2]).await.unwrap(),
        DeliveryOutcome::Delivered
    );
    assert_eq!(w.transport.sent().len(), 4);
}
