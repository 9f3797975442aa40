//! The processing pipeline against the emulator: a table with its stream, the retry and
//! quarantine queues, a stream reader that plays the event source mapping (same filter as
//! template.yaml: INSERTs of message items), and test handlers whose effect is a DynamoDB counter,
//! so "exactly once" is a number that can be read back. Here: the [`Pipeline`] and its setup; the
//! request counter, the key meter (units by partition-key pattern), the test handlers and the played event sources have their own modules.

mod counter;
mod handlers;
pub mod keys;
mod sources;

pub use counter::RequestCounter;
pub use handlers::{CounterHandler, Hangs};
pub use keys::KeyMeter;

use crate::{sdk_config_for, Harness};
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::Clock;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, Registry};
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::reaper::{Reaper, ReaperSettings};
use inbox_core::store::dynamo::DynamoTable;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The source and type the test handlers are registered for.
pub const SOURCE: &str = "stripe";
pub const TYPE: &str = "test.counter";

/// Table + stream + queues + a processor wired like the deployed one, with test handlers.
pub struct Pipeline {
    pub harness: Harness,
    pub sqs: aws_sdk_sqs::Client,
    pub streams: aws_sdk_dynamodbstreams::Client,
    pub retry_url: String,
    pub quarantine_url: String,
    pub counter: RequestCounter,
    /// The keys the counted client's requests touched (capacity figures).
    pub keys: KeyMeter,
    cursors: Mutex<Vec<sources::Cursor>>,
    stream_arn: Mutex<String>,
}

pub type TestProcessor<C> = Processor<DynamoTable, SqsRetryQueue, SqsQuarantine, C>;
pub type TestReaper<C> = Reaper<DynamoTable, SqsRetryQueue, SqsQuarantine, C>;

impl Pipeline {
    pub async fn new() -> Self {
        Self::on_harness(Harness::new().await).await
    }

    /// A pipeline on a new table in the emulators at `endpoints` (a fault test's own emulators).
    pub async fn on(endpoints: &crate::Endpoints) -> Self {
        let harness = Harness::on(endpoints, inbox_core::config::DEFAULT_MAX_BODY_BYTES).await;
        Self::on_harness(harness).await
    }

    async fn on_harness(harness: Harness) -> Self {
        let sdk = sdk_config_for(&harness.endpoints).await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let suffix = &harness.table["inbox-test-".len()..];
        let quarantine_url = sqs
            .create_queue()
            .queue_name(format!("quarantine-{suffix}"))
            .send()
            .await
            .expect("create quarantine queue")
            .queue_url
            .expect("queue url");
        let quarantine_arn = sqs
            .get_queue_attributes()
            .queue_url(&quarantine_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("queue attributes")
            .attributes
            .and_then(|a| {
                a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn)
                    .cloned()
            })
            .expect("queue arn");
        let redrive =
            serde_json::json!({"deadLetterTargetArn": quarantine_arn, "maxReceiveCount": "5"})
                .to_string();
        let retry_url = sqs
            .create_queue()
            .queue_name(format!("retry-{suffix}"))
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
                redrive,
            )
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
                "30",
            )
            .send()
            .await
            .expect("create retry queue")
            .queue_url
            .expect("queue url");
        let streams = aws_sdk_dynamodbstreams::Client::new(&sdk);
        let pipeline = Self {
            harness,
            sqs,
            streams,
            retry_url,
            quarantine_url,
            counter: RequestCounter::default(),
            keys: KeyMeter::default(),
            cursors: Mutex::new(Vec::new()),
            stream_arn: Mutex::new(String::new()),
        };
        pipeline.open_stream().await;
        pipeline
    }

    /// A DynamoDB client that counts its requests in `self.counter`.
    pub async fn counted_dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let sdk = sdk_config_for(&self.harness.endpoints).await;
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(self.counter.clone())
            .interceptor(self.keys.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    /// A processor like the deployed one (counted client, real queues) with `registry`, `clock` and
    /// jitter pinned to 0 (retries are due at once, so tests need not wait).
    pub async fn processor<C: Clock>(&self, registry: Registry, clock: C) -> TestProcessor<C> {
        let store = DynamoTable::new(self.counted_dynamodb().await, self.harness.table.clone());
        self.processor_on(store, registry, clock)
    }

    /// The same processor on `store` (the test's own client or settings).
    pub fn processor_on<C: Clock>(
        &self,
        store: DynamoTable,
        registry: Registry,
        clock: C,
    ) -> TestProcessor<C> {
        let retry = SqsRetryQueue::new(self.sqs.clone(), self.retry_url.clone());
        let quarantine = SqsQuarantine::new(self.sqs.clone(), self.quarantine_url.clone());
        // The deployed concurrency (10 records of a batch at once).
        let config = ProcessorConfig {
            lease: Duration::from_secs(60),
            ..ProcessorConfig::default()
        };
        Processor::new(store, retry, quarantine, clock, registry, config).with_jitter(|| 0.0)
    }

    /// A reaper like the deployed one (the processor's default policy and lease, real queues) with
    /// `clock`, jitter pinned to 0 (a re-drive is due at once).
    pub async fn reaper<C: Clock>(&self, clock: C, max_per_run: usize) -> TestReaper<C> {
        let store = DynamoTable::new(self.harness.client.clone(), self.harness.table.clone());
        let retry = SqsRetryQueue::new(self.sqs.clone(), self.retry_url.clone());
        let quarantine = SqsQuarantine::new(self.sqs.clone(), self.quarantine_url.clone());
        let defaults = ProcessorConfig::default();
        let settings = ReaperSettings {
            max_per_run,
            policy: defaults.policy,
            lease: Duration::from_secs(60),
        };
        Reaper::new(store, retry, quarantine, clock, settings).with_jitter(|| 0.0)
    }

    /// The test registry: the counter handler for `stripe`/`test.counter`.
    pub fn registry(handler: Arc<dyn Handler>) -> Registry {
        Registry::new().on(SOURCE, TYPE, handler)
    }

    /// Ingests a Stripe-signed test event through the real ingest handler.
    pub async fn ingest(
        &self,
        event_id: &str,
        event_type: &str,
        extra: serde_json::Value,
    ) -> crate::Reply {
        let mut body = serde_json::json!({"id": event_id, "object": "event", "type": event_type, "data": {"object": {}}});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let body = body.to_string();
        let headers = self.harness.sign("stripe", body.as_bytes(), "");
        self.harness
            .send(&crate::api_event(
                "POST",
                "stripe",
                &headers,
                Some(&body),
                false,
            ))
            .await
    }

    /// The counter item's value for an event (how often its effect was applied).
    pub async fn effect_count(&self, event_id: &str) -> i64 {
        let out = self
            .harness
            .client
            .get_item()
            .table_name(&self.harness.table)
            .key("pk", AttributeValue::S(format!("EFFECT#{event_id}")))
            .key("sk", AttributeValue::S("COUNTER".into()))
            .consistent_read(true)
            .send()
            .await
            .expect("get counter");
        out.item
            .and_then(|i| {
                i.get("n")
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0)
    }

    /// The stored message of another source.
    pub async fn message_of(&self, source: &str, event_id: &str) -> StoredMessage {
        let key = inbox_core::domain::MessageKey::new(
            inbox_core::domain::SourceName::parse(source).expect("source"),
            inbox_core::domain::EventId::parse(event_id).expect("id"),
        );
        inbox_core::store::MessageStore::get(
            &DynamoTable::new(self.harness.client.clone(), self.harness.table.clone()),
            &key,
        )
        .await
        .expect("get")
        .expect("the message exists")
    }

    /// The stored message.
    pub async fn message(&self, event_id: &str) -> StoredMessage {
        let key = inbox_core::domain::MessageKey::new(
            inbox_core::domain::SourceName::parse(SOURCE).expect("source"),
            inbox_core::domain::EventId::parse(event_id).expect("id"),
        );
        inbox_core::store::MessageStore::get(
            &DynamoTable::new(self.harness.client.clone(), self.harness.table.clone()),
            &key,
        )
        .await
        .expect("get")
        .expect("the message exists")
    }
}
