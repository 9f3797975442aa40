//! How bodies are stored, against the emulator's DynamoDB and S3: compressed in the item, large
//! ones in S3 (the claim check) read back transparently by the processor, replay and the store,
//! and items of the format written before bodies were compressed.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::SystemClock;
use inbox_core::domain::{BodyDigest, EventId, MessageKey, SourceName, Status};
use inbox_core::ingest::Ingestor;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::{DynamoTable, S3Bodies};
use inbox_core::store::schema::{BODY, BODY_ENC, BODY_REF, BODY_SHA256};
use inbox_core::store::MessageStore;
use integration_tests::pipeline::Pipeline;
use integration_tests::{api_event, stripe_event, Reply};
use std::sync::{Arc, Mutex};

/// A new bucket in the emulator and the S3 side of a store over it (inline limit 8 KiB).
async fn bucket(endpoints: &integration_tests::Endpoints) -> (aws_sdk_s3::Client, S3Bodies) {
    integration_tests::body_bucket(endpoints, 8 * 1024).await
}

/// Records the body of every message it handles; fails those whose type says so.
#[derive(Default)]
struct Capture {
    bodies: Mutex<Vec<Vec<u8>>>,
}

impl Handler for Capture {
    fn name(&self) -> &str {
        "capture"
    }

    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            self.bodies.lock().unwrap().push(m.body.clone());
            if m.event_type.as_ref().map(|t| t.as_str()) == Some("test.fails") {
                return HandlerOutcome::Permanent("this one always fails".into());
            }
            HandlerOutcome::Done
        })
    }
}

fn key(id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    )
}

async fn item(p: &Pipeline, id: &str) -> inbox_core::store::Item {
    p.harness
        .client
        .get_item()
        .table_name(&p.harness.table)
        .set_key(Some(inbox_core::store::schema::message_key_attrs(&key(id))))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the item")
}

#[tokio::test]
async fn a_5_mb_body_round_trips_byte_for_byte_through_s3_processing_and_replay() {
    let p = Pipeline::new().await;
    let (s3, bodies) = bucket(&p.harness.endpoints).await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone())
        .with_bodies(Some(bodies.clone()));
    let ingest = Ingestor::new(
        p.harness.sources.clone(),
        store.clone(),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let body = stripe_event("evt_big_5mb", "test.fails", 5 * 1024 * 1024);
    let small = stripe_event("evt_small", "test.ok", 2 * 1024);
    for (id, text) in [("evt_big_5mb", &body), ("evt_small", &small)] {
        let headers = p.harness.sign("stripe", text.as_bytes(), "");
        let event = api_event("POST", "stripe", &headers, Some(text), false);
        let reply = Reply::from(ingest_function::respond(&ingest, &event).await);
        assert_eq!((reply.status, reply.code()), (200, "accepted"), "{id}");
    }

    // The big body is in S3 (acknowledged only after that), the item has its key and no body.
    let big = item(&p, "evt_big_5mb").await;
    let s3_key = big
        .get(BODY_REF)
        .and_then(|v| v.as_s().ok())
        .unwrap()
        .clone();
    let digest = BodyDigest::of(body.as_bytes());
    assert_eq!(s3_key, S3Bodies::key_of(&key("evt_big_5mb"), &digest));
    assert!(!big.contains_key(BODY));
    assert!(
        inbox_core::store::size::item_size(&big) < 1024,
        "the item stays small"
    );
    let object = s3
        .get_object()
        .bucket(bodies.bucket())
        .key(&s3_key)
        .send()
        .await
        .unwrap();
    assert_eq!(
        object.server_side_encryption,
        Some(aws_sdk_s3::types::ServerSideEncryption::Aes256)
    );
    let stored = object.body.collect().await.unwrap().into_bytes();
    assert_eq!(stored.as_ref(), body.as_bytes(), "byte for byte in S3");
    let tags = s3
        .get_object_tagging()
        .bucket(bodies.bucket())
        .key(&s3_key)
        .send()
        .await
        .unwrap();
    assert_eq!(tags.tag_set.len(), 1, "tagged for the lifecycle rule");
    // The small body is inline and compressed.
    let small_item = item(&p, "evt_small").await;
    assert_eq!(
        small_item
            .get(BODY_ENC)
            .and_then(|v| v.as_s().ok())
            .map(String::as_str),
        Some("zstd")
    );

    // A repeat of the big event is a duplicate, compared by its digest; a different body flags it.
    let headers = p.harness.sign("stripe", body.as_bytes(), "");
    let again = Reply::from(
        ingest_function::respond(
            &ingest,
            &api_event("POST", "stripe", &headers, Some(&body), false),
        )
        .await,
    );
    assert_eq!(again.code(), "duplicate");

    // The processor: the stream image names the S3 key, the message is read through the store.
    let capture = Arc::new(Capture::default());
    let registry = Registry::new().on_any("stripe", capture.clone());
    let processor = Processor::new(
        store.clone(),
        SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        registry,
        ProcessorConfig::default(),
    );
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    let seen = capture.bodies.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().any(|b| b == body.as_bytes()),
        "the handler got the 5 MB body"
    );
    assert!(seen.iter().any(|b| b == small.as_bytes()));
    let failed = store.get(&key("evt_big_5mb")).await.unwrap().unwrap();
    assert_eq!(failed.status, Status::Failed);
    assert_eq!(failed.body, body.as_bytes(), "read back through the store");
    // A failed message is kept: its body no longer expires.
    let tags = s3
        .get_object_tagging()
        .bucket(bodies.bucket())
        .key(&s3_key)
        .send()
        .await
        .unwrap();
    assert!(tags.tag_set.is_empty(), "exempted from expiry");

    // Replay: the message goes back to pending and is processed again with the same bytes.
    let retry = SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone());
    let outcome = inbox_core::ops::replay(
        &store,
        &retry,
        &SystemClock,
        &key("evt_big_5mb"),
        "tester",
        false,
    )
    .await
    .unwrap();
    assert_eq!(outcome, inbox_core::ops::ReplayOutcome::Replayed);
    processor.process_key(&key("evt_big_5mb")).await.unwrap();
    let seen = capture.bodies.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[2], body.as_bytes(), "replayed byte for byte");

    // Purging deletes the object.
    let m = store.get(&key("evt_big_5mb")).await.unwrap().unwrap();
    assert_eq!(m.status, Status::Failed);
    store.purge(&key("evt_big_5mb"), m.version).await.unwrap();
    let gone = s3
        .head_object()
        .bucket(bodies.bucket())
        .key(&s3_key)
        .send()
        .await;
    assert!(gone.is_err(), "the body went with its message");
}

#[tokio::test]
async fn items_of_the_old_format_are_read_processed_and_compared_as_before() {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    // An item as the ingest function wrote it before bodies were compressed: the raw body, its
    // SHA-256, no `body_enc` (taken from a new item, with those attributes replaced).
    let body = stripe_event("evt_old", "test.ok", 3 * 1024);
    let headers = p.harness.sign("stripe", body.as_bytes(), "");
    let reply = p
        .harness
        .send(&api_event("POST", "stripe", &headers, Some(&body), false))
        .await;
    assert_eq!(reply.code(), "accepted");
    let mut old = item(&p, "evt_old").await;
    assert!(old.contains_key(BODY_ENC), "written compressed today");
    old.remove(BODY_ENC);
    old.insert(
        BODY.into(),
        AttributeValue::B(Blob::new(body.clone().into_bytes())),
    );
    old.insert(
        BODY_SHA256.into(),
        AttributeValue::S(BodyDigest::of(body.as_bytes()).to_hex()),
    );
    p.harness
        .client
        .put_item()
        .table_name(&p.harness.table)
        .set_item(Some(old))
        .send()
        .await
        .unwrap();

    let m = store.get(&key("evt_old")).await.unwrap().unwrap();
    assert_eq!(m.body, body.as_bytes());
    assert_eq!(m.body_sha256, BodyDigest::of(body.as_bytes()).to_hex());
    // The stream: the new image of the rewritten item is the old format.
    let capture = Arc::new(Capture::default());
    let processor = Processor::new(
        store.clone(),
        SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        Registry::new().on_any("stripe", capture.clone()),
        ProcessorConfig::default(),
    );
    processor.handle_stream_batch(p.read_stream().await).await;
    assert!(capture
        .bodies
        .lock()
        .unwrap()
        .iter()
        .all(|b| b == body.as_bytes()));
    assert_eq!(
        store.get(&key("evt_old")).await.unwrap().unwrap().status,
        Status::Processed
    );
    // A repeat with the same body is a plain duplicate; with another body it is flagged.
    let again = p
        .harness
        .send(&api_event("POST", "stripe", &headers, Some(&body), false))
        .await;
    assert_eq!(again.code(), "duplicate");
    let other = body.replace("padding", "paddinG");
    let headers = p.harness.sign("stripe", other.as_bytes(), "");
    let reply = p
        .harness
        .send(&api_event("POST", "stripe", &headers, Some(&other), false))
        .await;
    assert_eq!(reply.code(), "duplicate");
    let journal = store.deliveries(&key("evt_old")).await.unwrap();
    let flags: Vec<bool> = journal.iter().map(|d| d.body_differs).collect();
    assert_eq!(flags.iter().filter(|d| **d).count(), 1, "{flags:?}");
    assert_eq!(flags.len(), 2);
}
