//! The outbox end to end against the emulator and local receivers: fan-out in the terminal
//! transaction, signed deliveries verified by the `standardwebhooks` library, retries by the
//! schedule and `Retry-After` (injectable clock), 410, timeouts, replays, a crash after the POST,
//! and more destinations than fit a transaction. Rate limiting, the SSRF guard and a poison
//! destination are in `outbox_faults`.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::outbox::attempt::AttemptResult;
use inbox_core::outbox::delivery::DeliveryStatus;
use inbox_core::outbox::destination::DestinationState;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::transport::{Outgoing, Transport};
use inbox_core::outbox::worker::{DeliverConfig, DeliveryOutcome, Skip};
use integration_tests::outbox::{dest_id, key, local_transport, reference, OutboxRig};
use integration_tests::pipeline::{CounterHandler, Pipeline, TYPE};
use integration_tests::receiver::{Answer, Receiver};
use integration_tests::run_python;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const T0: i64 = 1_800_000_000_000;

/// Verifies a delivery with `standardwebhooks.webhooks.Webhook.verify` for each secret.
const VERIFY: &str = r#"
import json, sys
from standardwebhooks.webhooks import Webhook
req = json.load(sys.stdin)
out = []
for secret in req["secrets"]:
    try:
        Webhook(secret).verify(req["body"].encode("utf-8"), req["headers"])
        out.append("ok")
    except Exception as e:
        out.append(type(e).__name__ + ": " + str(e))
print(json.dumps(out))
"#;

/// Verifies `hit` with the `standardwebhooks` library, once per secret: `ok` or the error.
pub(crate) fn verify_with_library(
    hit: &integration_tests::receiver::Hit,
    secrets: &[&str],
) -> Vec<String> {
    let headers: serde_json::Map<String, Value> =
        ["webhook-id", "webhook-timestamp", "webhook-signature"]
            .iter()
            .map(|h| (h.to_string(), json!(hit.header(h))))
            .collect();
    let out = run_python(
        VERIFY,
        &json!({"secrets": secrets, "body": String::from_utf8_lossy(&hit.body), "headers": headers}),
    );
    serde_json::from_value(out).expect("a list")
}

fn config() -> DeliverConfig {
    DeliverConfig {
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    }
}

#[tokio::test]
async fn one_signed_delivery_per_matching_active_destination_verified_by_the_library() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    let other = Receiver::always(200);
    let d = rig
        .destination("crm", &crm.url, &["stripe:test.*"], |_| {})
        .await;
    rig.destination("mailer-only", &other.url, &["mailer:*"], |_| {})
        .await;
    rig.destination("paused", &other.url, &["*"], |d| {
        d.state = DestinationState::Paused
    })
    .await;
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    rig.ingest_and_process(&processor, "evt_fan", TYPE).await;
    let delivery = rig
        .delivery("crm", "evt_fan")
        .await
        .expect("written with the transition");
    assert_eq!(
        (delivery.status, delivery.attempts),
        (DeliveryStatus::Pending, 0)
    );
    assert!(
        rig.delivery("mailer-only", "evt_fan").await.is_none(),
        "not matching"
    );
    assert!(rig.delivery("paused", "evt_fan").await.is_none(), "paused");
    // The stream carries the new delivery item (INSERT, sk OUT): deliver it as Lambda would.
    let batch = rig
        .pipeline
        .read_stream_where(|sk| sk == "OUT" || sk == "FAN")
        .await;
    assert_eq!(batch.records.len(), 1, "one INSERT of a delivery item");
    let worker = rig.deliverer(SystemClock, config()).await;
    rig.pipeline.counter.reset();
    let (response, summary) = worker.handle_stream_batch(batch).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes.get("delivered"), Some(&1), "{summary:?}");
    let requests: usize = rig.pipeline.counter.counts().values().sum();
    eprintln!(
        "DynamoDB requests for one delivery: {:?}",
        rig.pipeline.counter.counts()
    );
    assert!(requests <= 6, "{:?}", rig.pipeline.counter.counts());
    assert_eq!((crm.count(), other.count()), (1, 0));
    let hit = &crm.hits()[0];
    let message = rig.pipeline.message("evt_fan").await;
    assert_eq!(hit.body, message.body, "the event's original payload bytes");
    assert_eq!(hit.header("webhook-id"), delivery.webhook_id);
    assert_eq!(
        (
            hit.header("webhook-source"),
            hit.header("webhook-event-type")
        ),
        ("stripe", TYPE)
    );
    let secret = d.secrets[0].secret.expose();
    assert_eq!(verify_with_library(hit, &[secret]), vec!["ok"]);
    assert_ne!(
        verify_with_library(hit, &["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]),
        vec!["ok"]
    );
    let done = rig.delivery("crm", "evt_fan").await.unwrap();
    assert_eq!(
        (done.status, done.attempts, done.journal.len()),
        (DeliveryStatus::Delivered, 1, 1)
    );
    assert_eq!(done.journal[0].status, Some(200));
    assert!(done.expires_at.is_some() && done.delivered_at.is_some());
}

#[tokio::test]
async fn during_a_rotation_every_active_secret_signs() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    let d = rig.destination("crm", &crm.url, &["*"], |_| {}).await;
    let old = d.secrets[0].secret.expose().to_owned();
    let new = inbox_core::outbox::destination::SecretText::generate();
    let store = rig.store();
    let now = SystemClock.now_millis();
    let new2 = new.clone();
    inbox_core::outbox::admin::update(
        &store,
        &dest_id("crm"),
        "test",
        "secret-rotated",
        now,
        move |d| {
            d.rotate(new2, Duration::from_secs(3600), now);
            Ok(String::new())
        },
    )
    .await
    .unwrap();
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    rig.ingest_and_process(&processor, "evt_rot", TYPE).await;
    rig.deliverer(SystemClock, config())
        .await
        .deliver(&reference("crm", "evt_rot"))
        .await
        .unwrap();
    let hit = &crm.hits()[0];
    assert_eq!(hit.header("webhook-signature").split(' ').count(), 2);
    assert_eq!(
        verify_with_library(hit, &[&old, new.expose()]),
        vec!["ok", "ok"],
        "the receiver may hold either"
    );
}

#[tokio::test]
async fn five_hundred_twice_then_200_is_three_attempts_one_delivery_one_webhook_id() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::start(|n, _| Answer::status(if n <= 2 { 500 } else { 200 }));
    rig.destination("crm", &crm.url, &["*"], |_| {}).await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            clock.clone(),
        )
        .await;
    rig.ingest_and_process(&processor, "evt_flaky", TYPE).await;
    let worker = rig.deliverer(clock.clone(), config()).await;
    assert!(matches!(
        worker.deliver_due(100).await.unwrap()[..],
        [DeliveryOutcome::Retrying { attempt: 1, .. }]
    ));
    // Due again 5 s later (jitter pinned to the middle): not a millisecond before.
    clock.advance_millis(4_999);
    assert!(worker.deliver_due(100).await.unwrap().is_empty());
    clock.advance_millis(1);
    assert!(matches!(
        worker.deliver_due(100).await.unwrap()[..],
        [DeliveryOutcome::Retrying { attempt: 2, .. }]
    ));
    clock.advance_millis(300_000);
    assert_eq!(
        worker.deliver_due(100).await.unwrap(),
        vec![DeliveryOutcome::Delivered]
    );
    let hits = crm.hits();
    assert_eq!(hits.len(), 3);
    assert!(
        hits.iter()
            .all(|h| h.header("webhook-id") == hits[0].header("webhook-id")),
        "one webhook-id"
    );
    let d = rig.delivery("crm", "evt_flaky").await.unwrap();
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 3));
    let statuses: Vec<_> = d.journal.iter().map(|a| a.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(500), Some(200)]);
    assert_eq!(d.journal[0].outcome, "retry in 5s");
    assert!(
        d.journal[0].body.contains("ok"),
        "the response body's start is journaled"
    );
    assert!(
        worker.deliver_due(100).await.unwrap().is_empty(),
        "nothing left to do"
    );
}

#[tokio::test]
async fn a_429_with_retry_after_7_is_not_retried_before_7_seconds() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::start(|n, _| {
        if n == 1 {
            Answer::status(429).with_header("Retry-After", "7")
        } else {
            Answer::status(200)
        }
    });
    rig.destination("crm", &crm.url, &["*"], |_| {}).await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            clock.clone(),
        )
        .await;
    rig.ingest_and_process(&processor, "evt_slow", TYPE).await;
    let worker = rig.deliverer(clock.clone(), config()).await;
    let first = worker.deliver_due(10).await.unwrap();
    assert_eq!(
        first,
        vec![DeliveryOutcome::Retrying {
            attempt: 1,
            delay: Duration::from_secs(7)
        }]
    );
    for step in [1_000, 5_000, 999] {
        clock.advance_millis(step);
        assert!(worker.deliver_due(10).await.unwrap().is_empty());
        assert_eq!(
            worker.deliver(&reference("crm", "evt_slow")).await.unwrap(),
            DeliveryOutcome::Skipped(Skip::NotDue)
        );
    }
    assert_eq!(crm.count(), 1, "no attempt before 7 s");
    clock.advance_millis(1);
    assert_eq!(
        worker.deliver_due(10).await.unwrap(),
        vec![DeliveryOutcome::Delivered]
    );
    assert_eq!(crm.count(), 2);
}

#[tokio::test]
async fn a_410_disables_the_destination_and_fails_the_delivery_with_a_notice() {
    let rig = OutboxRig::new().await;
    let gone = Receiver::always(410);
    rig.destination("gone", &gone.url, &["*"], |_| {}).await;
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    rig.ingest_and_process(&processor, "evt_a", TYPE).await;
    rig.ingest_and_process(&processor, "evt_b", TYPE).await;
    let worker = rig.deliverer(SystemClock, config()).await;
    assert!(matches!(
        worker.deliver(&reference("gone", "evt_a")).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 1 }
    ));
    let d = inbox_core::outbox::admin::get(&rig.store(), &dest_id("gone"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.state, DestinationState::Disabled);
    assert!(d.reason.unwrap().contains("410"));
    let journal = inbox_core::outbox::admin::journal(&rig.store(), &dest_id("gone"))
        .await
        .unwrap();
    assert_eq!(
        journal
            .last()
            .map(|e| (e.actor.as_str(), e.action.as_str())),
        Some(("deliver", "disabled"))
    );
    // The next delivery to it fails without being sent.
    assert!(matches!(
        worker.deliver(&reference("gone", "evt_b")).await.unwrap(),
        DeliveryOutcome::Failed { attempts: 0 }
    ));
    assert_eq!(gone.count(), 1);
    let notices = rig.notices().await;
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices.iter().all(|n| n["destination"] == "gone"));
}

#[tokio::test]
async fn a_receiver_slower_than_the_timeout_is_retried() {
    let rig = OutboxRig::new().await;
    let slow = Receiver::start(|n, _| {
        Answer::status(200).after(if n == 1 {
            Duration::from_millis(1_500)
        } else {
            Duration::ZERO
        })
    });
    rig.destination("slow", &slow.url, &["*"], |d| d.timeout_ms = 300)
        .await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            clock.clone(),
        )
        .await;
    rig.ingest_and_process(&processor, "evt_t", TYPE).await;
    let worker = rig.deliverer(clock.clone(), config()).await;
    assert!(matches!(
        worker.deliver_due(10).await.unwrap()[..],
        [DeliveryOutcome::Retrying { attempt: 1, .. }]
    ));
    let d = rig.delivery("slow", "evt_t").await.unwrap();
    assert_eq!(d.journal[0].error.as_deref(), Some("timed out"));
    clock.advance_millis(5_000);
    assert_eq!(
        worker.deliver_due(10).await.unwrap(),
        vec![DeliveryOutcome::Delivered]
    );
    assert_eq!(slow.count(), 2);
}

#[tokio::test]
async fn replaying_a_processed_message_adds_no_delivery() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination("crm", &crm.url, &["*"], |_| {}).await;
    let handler = CounterHandler::new(&rig.pipeline.harness.table, false);
    let processor = rig
        .processor(Pipeline::registry(handler), SystemClock)
        .await;
    rig.ingest_and_process(&processor, "evt_r", TYPE).await;
    let worker = rig.deliverer(SystemClock, config()).await;
    assert_eq!(
        worker.deliver_due(10).await.unwrap(),
        vec![DeliveryOutcome::Delivered]
    );
    let before = rig.delivery("crm", "evt_r").await.unwrap();
    // An operator replays the message: it is processed again (a second effect: the counter
    // handler is not idempotent on purpose), and the outbox writes nothing new.
    let store = rig.store();
    let retry = inbox_core::queue::sqs::SqsRetryQueue::new(
        rig.pipeline.sqs.clone(),
        rig.pipeline.retry_url.clone(),
    );
    let outcome = inbox_core::ops::replay(&store, &retry, &SystemClock, &key("evt_r"), "ana", true)
        .await
        .unwrap();
    assert_eq!(outcome, inbox_core::ops::ReplayOutcome::Replayed);
    assert_eq!(rig.pipeline.drain_retry_once(&processor).await, 1);
    assert_eq!(
        rig.pipeline.message("evt_r").await.status,
        inbox_core::domain::Status::Processed
    );
    let after = rig.delivery("crm", "evt_r").await.unwrap();
    assert_eq!(
        after, before,
        "the delivery is untouched: not re-created, not re-sent"
    );
    let outbox_items = rig.pipeline.harness.items_of_kind("outbound").await;
    assert_eq!(outbox_items.len(), 1);
    assert!(worker.deliver_due(10).await.unwrap().is_empty());
    assert_eq!(crm.count(), 1);
}

/// POSTs through the real client, then never returns: an invocation that dies after the request
/// left and before the result was recorded.
struct DiesAfterPost(deliver_function::http::HttpTransport);

impl Transport for DiesAfterPost {
    async fn post<'a>(&'a self, request: Outgoing<'a>) -> AttemptResult {
        let _ = self.0.post(request).await;
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_crash_after_the_post_sends_the_same_webhook_id_again() {
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination("crm", &crm.url, &["*"], |d| d.timeout_ms = 2_000)
        .await;
    let clock = Arc::new(ManualClock::at_millis(T0));
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            clock.clone(),
        )
        .await;
    rig.ingest_and_process(&processor, "evt_crash", TYPE).await;
    let dying = rig
        .deliverer_with(DiesAfterPost(local_transport()), clock.clone(), config())
        .await;
    let died = tokio::time::timeout(
        Duration::from_secs(3),
        dying.deliver(&reference("crm", "evt_crash")),
    )
    .await;
    assert!(died.is_err(), "the invocation never recorded its result");
    assert_eq!(crm.count(), 1, "but the request was received");
    let leased = rig.delivery("crm", "evt_crash").await.unwrap();
    assert_eq!(leased.status, DeliveryStatus::Delivering);
    let worker = rig.deliverer(clock.clone(), config()).await;
    assert!(
        worker.deliver_due(10).await.unwrap().is_empty(),
        "leased: nobody else sends it meanwhile"
    );
    // The lease (timeout 2 s + 30 s margin) lapses; the sweep's next pass sends it again.
    clock.advance_millis(32_000);
    assert_eq!(
        worker.deliver_due(10).await.unwrap(),
        vec![DeliveryOutcome::Delivered]
    );
    let hits = crm.hits();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[0].header("webhook-id"),
        hits[1].header("webhook-id"),
        "the same id, never a new one"
    );
    let d = rig.delivery("crm", "evt_crash").await.unwrap();
    assert_eq!((d.status, d.attempts), (DeliveryStatus::Delivered, 2));
    assert_eq!(
        d.journal[0].outcome, "lease lapsed",
        "the lost attempt is journaled"
    );
}

#[tokio::test]
async fn the_sweep_finds_a_delivery_filed_under_the_former_sixteen_shards() {
    use inbox_core::outbox::schema::{delivery_pk, outbox_shard, DELIVERY_SK};
    use inbox_core::store::attr::s;
    let rig = OutboxRig::new().await;
    let crm = Receiver::always(200);
    rig.destination("crm", &crm.url, &["*"], |_| {}).await;
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    // An event whose delivery's shard among 64 is not the one it had among 16.
    let (id, former) = (0..1000)
        .map(|i| {
            let id = format!("evt_former_{i}");
            let shard = outbox_shard(&delivery_pk("crm", &key(&id)));
            let n: u8 = shard["OUTBOX#".len()..].parse().unwrap();
            (id, shard, format!("OUTBOX#{}", n % 16))
        })
        .find(|(_, now, former)| now != former)
        .map(|(id, _, former)| (id, former))
        .unwrap();
    rig.ingest_and_process(&processor, &id, TYPE).await;
    rig.pipeline
        .harness
        .client
        .update_item()
        .table_name(&rig.pipeline.harness.table)
        .key("pk", s(delivery_pk("crm", &key(&id))))
        .key("sk", s(DELIVERY_SK))
        .update_expression("SET open_shard = :former")
        .expression_attribute_values(":former", s(&former))
        .send()
        .await
        .unwrap();
    let worker = rig.deliverer(SystemClock, config()).await;
    assert_eq!(
        worker.deliver_due(10).await.unwrap(),
        vec![DeliveryOutcome::Delivered],
        "found in {former}, one of the 64 the sweep reads"
    );
    assert_eq!(crm.count(), 1);
    let d = rig.delivery("crm", &id).await.unwrap();
    assert_eq!(d.status, DeliveryStatus::Delivered);
}

#[tokio::test]
async fn more_destinations_than_fit_one_transaction_are_fanned_out_by_the_deliver_function() {
    let rig = OutboxRig::new().await;
    let n = inbox_core::store::MAX_EFFECTS; // 99 + the handler's one effect: one too many
    for i in 0..n {
        rig.destination(
            &format!("d{i:03}"),
            "https://dest.invalid/h",
            &["*"],
            |_| {},
        )
        .await;
    }
    let processor = rig
        .processor(
            Pipeline::registry(CounterHandler::new(&rig.pipeline.harness.table, false)),
            SystemClock,
        )
        .await;
    rig.ingest_and_process(&processor, "evt_many", TYPE).await;
    assert!(
        rig.delivery("d000", "evt_many").await.is_none(),
        "not inline"
    );
    let batch = rig
        .pipeline
        .read_stream_where(|sk| sk == "OUT" || sk == "FAN")
        .await;
    assert_eq!(batch.records.len(), 1, "one fan-out item");
    let worker = rig.deliverer(SystemClock, config()).await;
    let (_, summary) = worker.handle_stream_batch(batch).await;
    assert_eq!(summary.outcomes.get("expanded"), Some(&1), "{summary:?}");
    assert_eq!(
        rig.pipeline.harness.items_of_kind("outbound").await.len(),
        n
    );
    let f = rig.store().fanout(&key("evt_many")).await.unwrap().unwrap();
    assert!(f.expanded_at.is_some());
    // Expanding again (a retried record) adds nothing.
    assert_eq!(
        worker.expand(&key("evt_many")).await.unwrap(),
        DeliveryOutcome::Skipped(Skip::Terminal)
    );
    let again = rig.pipeline.read_stream_where(|sk| sk == "OUT").await;
    assert_eq!(
        again.records.len(),
        n,
        "each delivery item is one INSERT for the deliver function"
    );
}

/// The happy path's budget, counted on the real SDK client against the emulator: a delivery
/// answered 200 at its first attempt costs at most 3 DynamoDB requests and 3 write units, from
/// the stream and from the delivery queue, in the deployed batches of 10 (a regression in either
/// count fails here, not only in the bench's figures).
#[tokio::test]
async fn a_happy_path_delivery_costs_at_most_three_requests_and_three_write_units() {
    use integration_tests::outbox::cost::{self, Origin, WriteLog};
    let rig = OutboxRig::new().await;
    let receiver = Receiver::always(200);
    rig.destination("cheap", &receiver.url, &["*"], |d| {
        d.rate_per_sec = 1_000.0;
        d.burst = 100;
    })
    .await;
    let log = WriteLog::default();
    let worker = cost::measured_deliverer(&rig, local_transport(), config(), &log).await;
    for origin in [Origin::Stream, Origin::Queue] {
        let c = cost::happy_path(&rig, &worker, &log, "cheap", origin, 30, 10).await;
        assert!(
            c.requests_per_delivery() <= 3.0,
            "{origin:?}: {:.2} requests per delivery: {:?}",
            c.requests_per_delivery(),
            c.requests
        );
        assert!(
            c.units_per_delivery() <= 3.0,
            "{origin:?}: {:.2} write units per delivery",
            c.units_per_delivery()
        );
        // What the budget is made of: no read of the delivery, one body read per batch, a claim
        // and a record each, the token bucket written fewer times than there are deliveries (leases).
        assert_eq!(
            c.requests.get("GetItem"),
            None,
            "{origin:?}: {:?}",
            c.requests
        );
        assert_eq!(c.requests.get("BatchGetItem"), Some(&3), "{origin:?}");
        assert_eq!(c.requests.get("PutItem"), Some(&60), "{origin:?}");
        assert!(
            c.requests.get("UpdateItem").is_some_and(|&n| n < 30),
            "{origin:?}: {:?}",
            c.requests
        );
    }
    assert_eq!(receiver.count(), 2 * 31, "each sent once");
}
