//! Bodies kept in S3 (above the 8 KiB inline limit) under faults: a message whose processing
//! never reported is re-driven by the reaper like a small one, and the body of one it fails is
//! kept; a delivery whose body is gone ends failed with the reason instead of looping; a delivery
//! whose last attempt never reported is failed at the attempt limit, not sent again; a resend or a
//! replay renews the body (or says it is gone); the deliveries of one event in a batch read its
//! body once. Against the shared emulators, with a table, queues and a bucket of their own.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::config::Env;
use inbox_core::domain::{BodyDigest, EventType, Status};
use inbox_core::outbox::delivery::{DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::queue::Work;
use inbox_core::outbox::resend::{self, RetryOutcome};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer, DeliveryOutcome};
use inbox_core::reaper::ReaperConfig;
use inbox_core::store::dynamo::{DynamoTable, S3Bodies};
use inbox_core::store::{Inbox as _, MessageStore as _, NewMessage, StoreError};
use integration_tests::faults::report::record;
use integration_tests::outbox::{dest_id, key, local_transport, reference, OutboxRig};
use integration_tests::pipeline::{Pipeline, RequestCounter};
use integration_tests::receiver::Receiver;
use integration_tests::{counted_body_bucket, sdk_config_for};
use std::sync::Arc;
use std::time::Duration;

/// A store over `p`'s table with bodies above 8 KiB in a new bucket; its S3 client counts requests.
async fn with_bucket(p: &Pipeline) -> (DynamoTable, aws_sdk_s3::Client, S3Bodies, RequestCounter) {
    let (s3, bodies, counter) = counted_body_bucket(&p.harness.endpoints, 8 * 1024).await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone())
        .with_bodies(Some(bodies.clone()));
    (store, s3, bodies, counter)
}

/// Stores a `stripe` event of about `size` bytes as the ingest path would (in S3 above 8 KiB),
/// pending; returns its body.
async fn put(store: &DynamoTable, id: &str, size: usize, now: i64) -> Vec<u8> {
    let pad = "x".repeat(size.saturating_sub(60));
    let body = format!(r#"{{"id":"{id}","type":"test.outbox","pad":"{pad}"}}"#).into_bytes();
    let message = NewMessage {
        key: key(id),
        event_type: Some(EventType::parse("test.outbox").unwrap()),
        received_at_ms: now,
        body_digest: Some(BodyDigest::of(&body)),
        body: body.clone(),
        headers: Vec::new(),
        provider_id: None,
        unidentified: None,
        batch: None,
    };
    store.put_if_absent(&message).await.unwrap();
    body
}

/// The S3 key of `id`'s body.
fn s3_key(id: &str, body: &[u8]) -> String {
    S3Bodies::key_of(&key(id), &BodyDigest::of(body))
}

async fn tags(s3: &aws_sdk_s3::Client, bodies: &S3Bodies, k: &str) -> usize {
    let out = s3
        .get_object_tagging()
        .bucket(bodies.bucket())
        .key(k)
        .send()
        .await
        .unwrap();
    out.tag_set.len()
}

async fn untag(s3: &aws_sdk_s3::Client, bodies: &S3Bodies, k: &str) {
    s3.delete_object_tagging()
        .bucket(bodies.bucket())
        .key(k)
        .send()
        .await
        .unwrap();
}

async fn delete(s3: &aws_sdk_s3::Client, bodies: &S3Bodies, k: &str) {
    s3.delete_object()
        .bucket(bodies.bucket())
        .key(k)
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn the_reaper_redrives_a_message_kept_in_s3_and_keeps_the_body_of_one_it_fails() {
    let p = Pipeline::new().await;
    let (store, s3, bodies, _) = with_bucket(&p).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let now = clock.now_millis();
    // Both were stored and their processing crashed: no outcome was ever reported.
    let large = put(&store, "evt_large", 300 * 1024, now).await;
    put(&store, "evt_small", 1024, now).await;
    let large_key = s3_key("evt_large", &large);
    assert_eq!(tags(&s3, &bodies, &large_key).await, 1);
    let env = |bucket: Option<&str>| {
        let mut pairs = vec![
            ("TABLE_NAME", p.harness.table.clone()),
            ("RETRY_QUEUE_URL", p.retry_url.clone()),
            ("QUARANTINE_QUEUE_URL", p.quarantine_url.clone()),
        ];
        pairs.extend(bucket.map(|b| ("BODY_BUCKET", b.to_owned())));
        ReaperConfig::read(&Env::from_pairs(pairs)).unwrap()
    };
    let sdk = sdk_config_for(&p.harness.endpoints).await;
    // A reaper without a bucket at all decides on both: it reads no body.
    let bucketless = reaper_function::compose(env(None), &sdk, clock.clone()).with_jitter(|| 0.0);
    clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 1_000);
    let first = bucketless.run().await.unwrap();
    let after_first = store.get_head(&key("evt_large")).await.unwrap().unwrap();
    // The deployed one (BODY_BUCKET set) until each message's last attempt is counted.
    let reaper = reaper_function::compose(env(Some(bodies.bucket())), &sdk, clock.clone())
        .with_jitter(|| 0.0);
    let mut runs = 1;
    loop {
        let m = store.get_head(&key("evt_large")).await.unwrap().unwrap();
        if m.status == Status::Failed || runs > 20 {
            break;
        }
        clock.advance_millis(inbox_core::store::schema::PENDING_GRACE_MS + 1_000);
        let report = reaper.run().await.unwrap();
        assert_eq!(report.errors, 0, "{report:?}");
        runs += 1;
    }
    let failed = store.get_head(&key("evt_large")).await.unwrap().unwrap();
    let small = store.get_head(&key("evt_small")).await.unwrap().unwrap();
    let kept = tags(&s3, &bodies, &large_key).await == 0;
    record(
        "8-bodies",
        "a message whose body is in S3 (300 KiB) left without an outcome, beside a small one",
        format!(
            "both past their pending deadline (their processing crashed); the reaper as the \
             function composes it, once without BODY_BUCKET, then with it for {} more runs until \
             the last attempt",
            runs - 1
        ),
        format!(
            "first run: re-driven {}/2, errors {}, the large one at {} attempt(s) (before: 1 \
             re-driven, 1 error, the large one at 0); end: large `{}` after {} attempts, small \
             `{}`; the failed body's expiry tag removed: {kept}",
            first.redriven,
            first.errors,
            after_first.attempts,
            failed.status,
            failed.attempts,
            small.status
        ),
    );
    assert_eq!((first.redriven, first.errors), (2, 0), "{first:?}");
    assert_eq!(
        (after_first.status, after_first.attempts),
        (Status::Retrying, 1)
    );
    assert_eq!(
        (failed.status, small.status),
        (Status::Failed, Status::Failed)
    );
    assert!(failed.notice_pending.is_none(), "its notice was sent");
    assert!(kept, "a failed message's body no longer expires");
    // The body is there, byte for byte, for a replay.
    let read = store.get(&key("evt_large")).await.unwrap().unwrap();
    assert_eq!(read.body, large);
}

/// The outbox rig with a bucket, `n` destinations at `receiver`, and a worker like the deployed
/// one over the store with bodies.
struct Rig {
    rig: OutboxRig,
    store: DynamoTable,
    s3: aws_sdk_s3::Client,
    bodies: S3Bodies,
    gets: RequestCounter,
}

impl Rig {
    async fn new(receiver: &Receiver, n: usize) -> Self {
        let rig = OutboxRig::new().await;
        let (store, s3, bodies, gets) = with_bucket(&rig.pipeline).await;
        for i in 0..n {
            rig.destination(&format!("dest-{i}"), &receiver.url, &["*"], |_| {})
                .await;
        }
        Self {
            rig,
            store,
            s3,
            bodies,
            gets,
        }
    }

    fn deliverer(
        &self,
        clock: Arc<ManualClock>,
    ) -> Deliverer<(
        DynamoTable,
        deliver_function::http::HttpTransport,
        inbox_core::outbox::queue::SqsOutboxQueues,
        Arc<ManualClock>,
    )> {
        Deliverer::new(
            self.store.clone(),
            local_transport(),
            self.rig.queues(),
            clock,
            DeliverConfig::default(),
            Duration::ZERO,
        )
        .with_jitter(|| 0.5)
    }

    async fn pending(&self, destination: &str, id: &str, now: i64) -> OutboundDelivery {
        let d = OutboundDelivery::new(&dest_id(destination), &key(id), None, now);
        self.store.save_delivery(&d, None).await.unwrap();
        d
    }
}

#[tokio::test]
async fn a_delivery_whose_body_is_gone_or_whose_last_attempt_never_reported_ends_failed() {
    let receiver = Receiver::always(200);
    let r = Rig::new(&receiver, 2).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let now = clock.now_millis();
    let deliverer = r.deliverer(clock.clone());
    // The body expired from S3 (or was deleted) while its message and delivery remain.
    let body = put(&r.store, "evt_expired", 20 * 1024, now).await;
    r.pending("dest-0", "evt_expired", now).await;
    delete(&r.s3, &r.bodies, &s3_key("evt_expired", &body)).await;
    let gone = deliverer.deliver(&reference("dest-0", "evt_expired")).await;
    let gone_after = r.rig.delivery("dest-0", "evt_expired").await.unwrap();
    // A delivery whose worker stopped after claiming its last attempt (its lease lapsed).
    put(&r.store, "evt_lapsed", 1024, now).await;
    let mut lapsed = r.pending("dest-1", "evt_lapsed", now).await;
    let max = inbox_core::outbox::schedule::RetrySchedule::default().max_attempts();
    lapsed.status = DeliveryStatus::Delivering;
    lapsed.attempts = max;
    lapsed.lease_until = Some(now - 1);
    r.store.save_delivery(&lapsed, Some(0)).await.unwrap();
    let limit = deliverer.deliver(&reference("dest-1", "evt_lapsed")).await;
    let limit_after = r.rig.delivery("dest-1", "evt_lapsed").await.unwrap();
    let notices = r.rig.notices().await;
    record(
        "8-bodies",
        "a delivery whose body is gone from S3; a delivery whose last attempt never reported",
        "1 delivery of a 20 KiB event whose S3 object was deleted; 1 delivery `delivering` at \
         the schedule's last attempt with its lease lapsed"
            .to_owned(),
        format!(
            "body gone: {} (`{}`, \"{}\"; before: an infrastructure error, claimed again every \
             minute); last attempt lapsed: {} (`{}`, {} attempts; before: sent again as attempt {}); \
             requests sent {}, failure notices {}",
            match &gone {
                Ok(o) => o.as_str().to_owned(),
                Err(e) => format!("error {e}"),
            },
            gone_after.status.as_str(),
            gone_after.last_error.clone().unwrap_or_default(),
            match &limit {
                Ok(o) => o.as_str().to_owned(),
                Err(e) => format!("error {e}"),
            },
            limit_after.status.as_str(),
            limit_after.attempts,
            max + 1,
            receiver.count(),
            notices.len()
        ),
    );
    assert!(
        matches!(gone, Ok(DeliveryOutcome::Failed { attempts: 1 })),
        "{gone:?}"
    );
    assert_eq!(gone_after.status, DeliveryStatus::Failed);
    let why = gone_after.last_error.unwrap_or_default();
    assert!(
        why.contains("cannot be read") && why.contains("gone"),
        "{why}"
    );
    assert!(
        matches!(limit, Ok(DeliveryOutcome::Failed { .. })),
        "{limit:?}"
    );
    assert_eq!(
        (limit_after.status, limit_after.attempts),
        (DeliveryStatus::Failed, max)
    );
    assert!(
        limit_after
            .last_error
            .unwrap_or_default()
            .contains("attempt limit"),
        "the reason is kept"
    );
    assert_eq!(receiver.count(), 0, "nothing was sent");
    assert_eq!(notices.len(), 2, "each failure announced");
}

#[tokio::test]
async fn a_resend_or_a_replay_renews_the_body_and_says_when_it_is_gone() {
    let receiver = Receiver::always(200);
    let r = Rig::new(&receiver, 1).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let now = clock.now_millis();
    let body = put(&r.store, "evt_resent", 20 * 1024, now).await;
    let k = s3_key("evt_resent", &body);
    let mut d = r.pending("dest-0", "evt_resent", now).await;
    d.status = DeliveryStatus::Failed;
    r.store.save_delivery(&d, Some(0)).await.unwrap();
    // The body's tag removed (as for a failed message): a renewal tags it again, dated now.
    untag(&r.s3, &r.bodies, &k).await;
    let queues = r.rig.queues();
    let retried = resend::retry(
        &r.store,
        Some(&queues),
        &reference("dest-0", "evt_resent"),
        "tester",
        false,
        now,
    )
    .await
    .unwrap();
    let after_retry = tags(&r.s3, &r.bodies, &k).await;
    untag(&r.s3, &r.bodies, &k).await;
    let retry_queue = inbox_core::queue::sqs::SqsRetryQueue::new(
        r.rig.pipeline.sqs.clone(),
        r.rig.pipeline.retry_url.clone(),
    );
    let replayed = inbox_core::ops::replay(
        &r.store,
        &retry_queue,
        &clock,
        &key("evt_resent"),
        "tester",
        true,
    )
    .await
    .unwrap();
    let after_replay = tags(&r.s3, &r.bodies, &k).await;
    let read = r.store.get(&key("evt_resent")).await.unwrap().unwrap();
    // Gone: nothing is resent, and the operator is told.
    delete(&r.s3, &r.bodies, &k).await;
    let before = r.rig.delivery("dest-0", "evt_resent").await.unwrap();
    let gone = resend::retry(
        &r.store,
        Some(&queues),
        &reference("dest-0", "evt_resent"),
        "tester",
        true,
        now,
    )
    .await
    .unwrap();
    let untouched = r.rig.delivery("dest-0", "evt_resent").await.unwrap();
    let replay_gone = inbox_core::ops::replay(
        &r.store,
        &retry_queue,
        &clock,
        &key("evt_resent"),
        "tester",
        true,
    )
    .await;
    let event_replay = resend::replay(
        &r.store,
        Some(&queues),
        &key("evt_resent"),
        None,
        "tester",
        now,
    )
    .await
    .unwrap();
    record(
        "8-bodies",
        "a resend or a replay late in a body's life, and after it is gone",
        "a 20 KiB event in S3, its body's expiry tag removed, then `deliveries retry` and \
         `replay`; then its S3 object deleted and both again"
            .to_owned(),
        format!(
            "retry `{retried:?}` → tags {after_retry}; replay `{replayed:?}` → tags \
             {after_replay} (before: 0, its age unchanged); gone: retry `{gone:?}`, delivery \
             unchanged {}, replay {}, event replay {:?}",
            before == untouched,
            match &replay_gone {
                Ok(o) => format!("{o:?}"),
                Err(e) => format!("refused: {}", inbox_core::error::one_line(e)),
            },
            event_replay.iter().map(|(_, o)| *o).collect::<Vec<_>>()
        ),
    );
    assert_eq!(retried, RetryOutcome::Retried);
    assert_eq!(after_retry, 1, "renewed and tagged for expiry again");
    assert_eq!(replayed, inbox_core::ops::ReplayOutcome::Replayed);
    assert_eq!(after_replay, 1);
    assert_eq!(read.body, body, "the renewed body is the same bytes");
    assert_eq!(gone, RetryOutcome::BodyGone);
    assert_eq!(before, untouched, "nothing changed");
    assert!(
        matches!(
            replay_gone,
            Err(inbox_core::process::InfraError::Store(
                StoreError::Unreadable(_)
            ))
        ),
        "{replay_gone:?}"
    );
    assert_eq!(
        event_replay,
        vec![(dest_id("dest-0"), RetryOutcome::BodyGone)]
    );
}

#[tokio::test]
async fn the_deliveries_of_one_event_in_a_batch_read_its_body_once() {
    let receiver = Receiver::always(200);
    let r = Rig::new(&receiver, 10).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let now = clock.now_millis();
    let body = put(&r.store, "evt_fanned", 1024 * 1024, now).await;
    let mut batch = aws_lambda_events::event::sqs::SqsEvent::default();
    for i in 0..10 {
        let dest = format!("dest-{i}");
        r.pending(&dest, "evt_fanned", now).await;
        let mut m = aws_lambda_events::event::sqs::SqsMessage::default();
        m.message_id = Some(format!("m{i}"));
        m.body =
            Some(serde_json::to_string(&Work::Delivery(reference(&dest, "evt_fanned"))).unwrap());
        batch.records.push(m);
    }
    let deliverer = r.deliverer(clock.clone());
    r.gets.reset();
    let (response, summary) = deliverer.handle_sqs_batch(batch).await;
    let reads = r.gets.counts().get("GetObject").copied().unwrap_or(0);
    let hits = receiver.hits();
    record(
        "8-bodies",
        "one 1 MiB event (in S3) fanned out to 10 destinations in one batch",
        "10 deliveries of the event in one delivery-queue batch, sent 10 at once".to_owned(),
        format!(
            "delivered {}; S3 GetObject {reads} (before: 10, each delivery reading and copying \
             the body); received {} byte-for-byte {}",
            summary.outcomes.get("delivered").copied().unwrap_or(0),
            hits.len(),
            hits.iter().all(|h| h.body == body)
        ),
    );
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    assert_eq!(summary.outcomes.get("delivered"), Some(&10), "{summary:?}");
    assert_eq!(reads, 1, "one read for the batch");
    assert_eq!(hits.len(), 10);
    assert!(
        hits.iter().all(|h| h.body == body),
        "the same bytes to each"
    );
}
