//! The outbox against the emulator: the [`Pipeline`] (table, stream, queues, processor) plus the
//! delivery queues, destinations added through the core's admin API, a processor with the fan-out
//! hook, and delivery workers with the real HTTP client (loopback allowed, as `make dev` runs it)
//! and a request-counting DynamoDB client.

pub mod cost;
pub mod outage;

use crate::pipeline::{Pipeline, TestProcessor};
use deliver_function::http::HttpTransport;
use deliver_function::ssrf::AddressPolicy;
use inbox_core::clock::Clock;
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::outbox::admin;
use inbox_core::outbox::cache::DestinationCache;
use inbox_core::outbox::delivery::{DeliveryRef, OutboundDelivery};
use inbox_core::outbox::destination::{Destination, DestinationId, SecretText};
use inbox_core::outbox::fanout::Outbox;
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::queue::SqsOutboxQueues;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::transport::Transport;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer};
use inbox_core::process::registry::Registry;
use inbox_core::store::dynamo::DynamoTable;
use std::sync::Arc;
use std::time::Duration;

/// A delivery worker of the tests.
pub type TestDeliverer<T, C> = Deliverer<(DynamoTable, T, SqsOutboxQueues, C)>;

/// The pipeline plus the outbox's queues.
pub struct OutboxRig {
    pub pipeline: Pipeline,
    pub delivery_url: String,
    pub delivery_quarantine_url: String,
}

impl OutboxRig {
    pub async fn new() -> Self {
        let pipeline = Pipeline::new().await;
        let suffix = pipeline.harness.table["inbox-test-".len()..].to_owned();
        let create = |name: String| {
            let sqs = pipeline.sqs.clone();
            async move {
                sqs.create_queue()
                    .queue_name(name)
                    .send()
                    .await
                    .expect("create queue")
                    .queue_url
                    .expect("queue url")
            }
        };
        let delivery_url = create(format!("delivery-{suffix}")).await;
        let delivery_quarantine_url = create(format!("delivery-quarantine-{suffix}")).await;
        Self {
            pipeline,
            delivery_url,
            delivery_quarantine_url,
        }
    }

    pub fn store(&self) -> DynamoTable {
        DynamoTable::new(
            self.pipeline.harness.client.clone(),
            self.pipeline.harness.table.clone(),
        )
    }

    /// Adds a destination for `patterns` at `url` (http:// allowed: local), changed by `tweak`
    /// first; returns it with its secret.
    pub async fn destination(
        &self,
        id: &str,
        url: &str,
        patterns: &[&str],
        tweak: impl FnOnce(&mut Destination),
    ) -> Destination {
        let patterns = patterns
            .iter()
            .map(|p| Pattern::parse(p).expect("pattern"))
            .collect();
        let mut d = Destination::new(
            &dest_id(id),
            url,
            patterns,
            Some(SecretText::generate()),
            inbox_core::clock::SystemClock.now_millis(),
        );
        tweak(&mut d);
        admin::add(&self.store(), &d, "test", true)
            .await
            .expect("add destination");
        d
    }

    /// A processor like the deployed one, with the fan-out hook (destinations never cached).
    pub async fn processor<C: Clock>(&self, registry: Registry, clock: C) -> TestProcessor<C> {
        let outbox = Outbox::new(DestinationCache::new(self.store(), Duration::ZERO));
        self.pipeline
            .processor(registry, clock)
            .await
            .with_fanout(Arc::new(outbox))
    }

    /// The delivery queues on SQS.
    pub fn queues(&self) -> SqsOutboxQueues {
        SqsOutboxQueues::new(
            self.pipeline.sqs.clone(),
            self.delivery_url.clone(),
            self.delivery_quarantine_url.clone(),
        )
    }

    /// A worker with `transport` and the request-counting client (destinations never cached,
    /// jitter pinned to the middle: the schedule's delays exactly).
    pub async fn deliverer_with<T: Transport, C: Clock>(
        &self,
        transport: T,
        clock: C,
        config: DeliverConfig,
    ) -> TestDeliverer<T, C> {
        let store = DynamoTable::new(
            self.pipeline.counted_dynamodb().await,
            self.pipeline.harness.table.clone(),
        );
        Deliverer::new(
            store,
            transport,
            self.queues(),
            clock,
            config,
            Duration::ZERO,
        )
        .with_jitter(|| 0.5)
    }

    /// A worker with the real HTTP client, loopback allowed (as `make dev` runs it).
    pub async fn deliverer<C: Clock>(
        &self,
        clock: C,
        config: DeliverConfig,
    ) -> TestDeliverer<HttpTransport, C> {
        self.deliverer_with(local_transport(), clock, config).await
    }

    /// Ingests an event of the test source (`stripe`) and processes it through the stream.
    pub async fn ingest_and_process<C: Clock>(
        &self,
        processor: &TestProcessor<C>,
        event_id: &str,
        event_type: &str,
    ) {
        let reply = self
            .pipeline
            .ingest(event_id, event_type, serde_json::json!({}))
            .await;
        assert_eq!(reply.code(), "accepted", "{:?}", reply.json);
        let (response, _) = processor
            .handle_stream_batch(self.pipeline.read_stream().await)
            .await;
        assert!(response.batch_item_failures.is_empty());
    }

    /// Stores `n` events and a pending delivery of each to `destination` directly (the fan-out is
    /// tested on its own; through the emulator's transactions many events take long). Their ids.
    pub async fn pending_deliveries(
        &self,
        destination: &str,
        prefix: &str,
        n: usize,
    ) -> Vec<String> {
        use inbox_core::store::Inbox as _;
        let store = self.store();
        let now = inbox_core::clock::SystemClock.now_millis();
        let mut ids = Vec::new();
        for i in 0..n {
            let id = format!("{prefix}_{i:03}");
            let body = format!(r#"{{"id":"{id}","type":"test.outbox"}}"#).into_bytes();
            let message = inbox_core::store::NewMessage {
                key: key(&id),
                event_type: Some(
                    inbox_core::domain::EventType::parse("test.outbox").expect("type"),
                ),
                received_at_ms: now,
                body_digest: Some(inbox_core::domain::BodyDigest::of(&body)),
                body,
                headers: Vec::new(),
                provider_id: None,
                unidentified: None,
                batch: None,
            };
            store
                .put_if_absent(&message)
                .await
                .expect("store the event");
            let d = OutboundDelivery::new(&dest_id(destination), &key(&id), None, now);
            store
                .save_delivery(&d, None)
                .await
                .expect("store the delivery");
            ids.push(id);
        }
        ids
    }

    /// The delivery of a `stripe` event to a destination, if any.
    pub async fn delivery(&self, destination: &str, event_id: &str) -> Option<OutboundDelivery> {
        self.store()
            .delivery(&reference(destination, event_id))
            .await
            .expect("read delivery")
    }

    /// Every notice on the delivery quarantine queue (received, not deleted).
    pub async fn notices(&self) -> Vec<serde_json::Value> {
        let out = self
            .pipeline
            .sqs
            .receive_message()
            .queue_url(&self.delivery_quarantine_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        out.messages
            .unwrap_or_default()
            .into_iter()
            .filter_map(|m| m.body.and_then(|b| serde_json::from_str(&b).ok()))
            .collect()
    }
}

/// The HTTP client with loopback allowed.
pub fn local_transport() -> HttpTransport {
    HttpTransport::new(AddressPolicy {
        allow_loopback: true,
    })
    .expect("an HTTP client")
}

/// The delivery of `stripe`/`event_id` to `destination`.
pub fn reference(destination: &str, event_id: &str) -> DeliveryRef {
    DeliveryRef {
        destination: dest_id(destination),
        source: SourceName::parse("stripe").expect("source"),
        event_id: EventId::parse(event_id).expect("event id"),
    }
}

/// The key of a `stripe` event.
/// A destination id the tests name.
pub fn dest_id(id: &str) -> DestinationId {
    DestinationId::parse(id).expect("a valid destination id")
}

pub fn key(event_id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").expect("source"),
        EventId::parse(event_id).expect("event id"),
    )
}
