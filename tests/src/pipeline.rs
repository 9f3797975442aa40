//! The processing pipeline against the emulator: a table with its stream, the retry and
//! quarantine queues, a stream reader that plays the event source mapping (same filter as
//! template.yaml: INSERTs of message items), and test handlers whose effect is a DynamoDB counter,
//! so "exactly once" is a number that can be read back.

use crate::{sdk_config, Harness};
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord, StreamRecord};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use inbox_core::clock::Clock;
use inbox_core::message::StoredMessage;
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::DynamoInbox;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Counts the requests a client sends, by operation (every attempt, retries included).
#[derive(Debug, Default, Clone)]
pub struct RequestCounter(Arc<Mutex<BTreeMap<String, usize>>>);

impl RequestCounter {
    pub fn counts(&self) -> BTreeMap<String, usize> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }

    pub fn reset(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }

    /// Requests that write (PutItem, UpdateItem, DeleteItem, TransactWriteItems, BatchWriteItem).
    pub fn writes(&self) -> usize {
        self.counts()
            .iter()
            .filter(|(op, _)| {
                matches!(
                    op.as_str(),
                    "PutItem"
                        | "UpdateItem"
                        | "DeleteItem"
                        | "TransactWriteItems"
                        | "BatchWriteItem"
                )
            })
            .map(|(_, n)| n)
            .sum()
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let (Some(meta), Ok(mut counts)) = (cfg.load::<Metadata>(), self.0.lock()) {
            *counts.entry(meta.name().to_string()).or_default() += 1;
        }
        Ok(())
    }
}

/// A handler whose effect is `ADD n 1` on a counter item `EFFECT#{event id}` in the same table,
/// committed with the message's transition. The body may ask it to fail: `"fail_times": k` fails
/// the first k calls transiently (until `fix()`), `"permanent": true` fails permanently.
#[derive(Debug)]
pub struct CounterHandler {
    table: String,
    calls: Mutex<HashMap<String, u32>>,
    fixed: AtomicBool,
    claim: bool,
}

impl CounterHandler {
    pub fn new(table: &str, claim: bool) -> Arc<Self> {
        Arc::new(Self {
            table: table.to_owned(),
            calls: Mutex::default(),
            fixed: AtomicBool::new(false),
            claim,
        })
    }

    /// From now on, never fail ("the bug is fixed").
    pub fn fix(&self) {
        self.fixed.store(true, Ordering::SeqCst);
    }

    /// How often the handler ran for an event.
    pub fn calls(&self, event_id: &str) -> u32 {
        self.calls
            .lock()
            .map(|c| c.get(event_id).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    fn effect(&self, m: &StoredMessage) -> inbox_core::store::Effect {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(format!("EFFECT#{}", m.event_id)))
            .key("sk", AttributeValue::S("COUNTER".into()))
            .update_expression("ADD #n :one")
            .expression_attribute_names("#n", "n")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .build()
            .expect("a complete update");
        inbox_core::store::Effect::Raw(Box::new(
            TransactWriteItem::builder().update(update).build(),
        ))
    }
}

impl Handler for CounterHandler {
    fn name(&self) -> &str {
        "counter"
    }

    fn needs_claim(&self) -> bool {
        self.claim
    }

    fn handle<'a>(&'a self, m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async move {
            let call = {
                let mut calls = self.calls.lock().expect("lock");
                let c = calls.entry(m.event_id.to_string()).or_default();
                *c += 1;
                *c
            };
            let body = m.json().unwrap_or_default();
            let fixed = self.fixed.load(Ordering::SeqCst);
            if !fixed && body["permanent"].as_bool() == Some(true) {
                return HandlerOutcome::Permanent("the payload says it can never work".into());
            }
            let fail_times = body["fail_times"].as_u64().unwrap_or(0) as u32;
            if !fixed && call <= fail_times {
                return HandlerOutcome::Retry(format!("simulated upstream timeout on call {call}"));
            }
            HandlerOutcome::commit(vec![self.effect(m)])
        })
    }
}

/// Never finishes: stands for an invocation that crashes after claiming.
pub struct Hangs;

impl Handler for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn needs_claim(&self) -> bool {
        true
    }
    fn handle<'a>(&'a self, _m: &'a StoredMessage) -> HandlerFuture<'a> {
        Box::pin(std::future::pending())
    }
}

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
    iterators: Mutex<Vec<String>>,
}

pub type TestProcessor<C> = Processor<DynamoInbox, SqsRetryQueue, SqsQuarantine, C>;

impl Pipeline {
    pub async fn new() -> Self {
        let harness = Harness::new().await;
        let sdk = sdk_config().await;
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
            iterators: Mutex::new(Vec::new()),
        };
        pipeline.open_stream().await;
        pipeline
    }

    /// A DynamoDB client that counts its requests in `self.counter`.
    pub async fn counted_dynamodb(&self) -> aws_sdk_dynamodb::Client {
        let sdk = sdk_config().await;
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
            .interceptor(self.counter.clone())
            .build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    /// A processor like the deployed one (counted client, real queues) with `registry`, `clock` and
    /// jitter pinned to 0 (retries are due at once, so tests need not wait).
    pub async fn processor<C: Clock>(&self, registry: Registry, clock: C) -> TestProcessor<C> {
        let store = DynamoInbox::new(self.counted_dynamodb().await, self.harness.table.clone());
        let retry = SqsRetryQueue::new(self.sqs.clone(), self.retry_url.clone());
        let quarantine = SqsQuarantine::new(self.sqs.clone(), self.quarantine_url.clone());
        // One record at a time: moto rolls a failed TransactWriteItems back by restoring a copy of
        // the whole table taken when the transaction started, which erases writes that other
        // requests committed to that table meanwhile. DynamoDB transactions are serializable;
        // moto's are not, so tests must not run conflicting transactions on one table at once.
        let config = ProcessorConfig {
            lease: Duration::from_secs(60),
            concurrency: 1,
            ..ProcessorConfig::default()
        };
        Processor::new(store, retry, quarantine, clock, registry, config).with_jitter(|| 0.0)
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

    async fn open_stream(&self) {
        let table = self
            .harness
            .client
            .describe_table()
            .table_name(&self.harness.table)
            .send()
            .await
            .expect("describe table");
        let arn = table
            .table
            .and_then(|t| t.latest_stream_arn)
            .expect("the table has a stream");
        let stream = self
            .streams
            .describe_stream()
            .stream_arn(&arn)
            .send()
            .await
            .expect("describe stream");
        let shards = stream
            .stream_description
            .map(|d| d.shards.unwrap_or_default())
            .unwrap_or_default();
        let mut iterators = Vec::new();
        for shard in shards {
            let it = self
                .streams
                .get_shard_iterator()
                .stream_arn(&arn)
                .shard_id(shard.shard_id.unwrap_or_default())
                .shard_iterator_type(ShardIteratorType::TrimHorizon)
                .send()
                .await
                .expect("shard iterator");
            iterators.extend(it.shard_iterator);
        }
        *self.iterators.lock().expect("lock") = iterators;
    }

    /// Every stream record written since the last read, as Lambda would deliver it, filtered like
    /// the event source mapping (`eventName` INSERT, `dynamodb.Keys.sk.S` = `MSG`).
    pub async fn read_stream(&self) -> StreamEvent {
        let iterators = std::mem::take(&mut *self.iterators.lock().expect("lock"));
        let mut next = Vec::new();
        let mut records = Vec::new();
        for it in iterators {
            let out = self
                .streams
                .get_records()
                .shard_iterator(it)
                .send()
                .await
                .expect("get records");
            for r in out.records.unwrap_or_default() {
                let name = r
                    .event_name
                    .as_ref()
                    .map(|n| n.as_str().to_owned())
                    .unwrap_or_default();
                let Some(change) = r.dynamodb else { continue };
                let keys = serde_dynamo::Item::from(change.keys.clone().unwrap_or_default());
                let sk_is_message = matches!(keys.get("sk"), Some(serde_dynamo::AttributeValue::S(s)) if s == "MSG");
                if name != "INSERT" || !sk_is_message {
                    continue;
                }
                let mut stream_record = StreamRecord::default();
                stream_record.keys = keys;
                stream_record.new_image =
                    serde_dynamo::Item::from(change.new_image.unwrap_or_default());
                stream_record.sequence_number = change.sequence_number;
                let mut record = EventRecord::default();
                record.event_name = name;
                record.event_id = r.event_id.unwrap_or_default();
                record.event_source = Some("aws:dynamodb".into());
                record.change = stream_record;
                records.push(record);
            }
            next.extend(out.next_shard_iterator);
        }
        *self.iterators.lock().expect("lock") = next;
        let mut event = StreamEvent::default();
        event.records = records;
        event
    }

    /// Receives what is visible on a queue now (long-poll 1 s), as a Lambda SQS event.
    pub async fn receive(&self, url: &str) -> SqsEvent {
        let out = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        let mut event = SqsEvent::default();
        event.records = out
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let mut msg = SqsMessage::default();
                msg.message_id = m.message_id;
                msg.receipt_handle = m.receipt_handle;
                msg.body = m.body;
                msg.event_source = Some("aws:sqs".into());
                msg
            })
            .collect();
        event
    }

    /// Deletes the messages of `event` that are not in `failed` (what the SQS event source does).
    pub async fn delete_handled(&self, url: &str, event: &SqsEvent, failed: &[String]) {
        for m in &event.records {
            if failed.iter().any(|f| Some(f) == m.message_id.as_ref()) {
                continue;
            }
            if let Some(handle) = &m.receipt_handle {
                self.sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(handle)
                    .send()
                    .await
                    .expect("delete");
            }
        }
    }

    /// Plays the retry queue's event source once: receive, process, delete the handled ones.
    /// Returns how many records were delivered.
    pub async fn drain_retry_once<C: Clock>(&self, p: &TestProcessor<C>) -> usize {
        let event = self.receive(&self.retry_url).await;
        let n = event.records.len();
        if n > 0 {
            let (response, _) = p.handle_sqs_batch(event.clone()).await;
            let failed: Vec<String> = response
                .batch_item_failures
                .iter()
                .map(|f| f.item_identifier.clone())
                .collect();
            self.delete_handled(&self.retry_url, &event, &failed).await;
        }
        n
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
            &DynamoInbox::new(self.harness.client.clone(), self.harness.table.clone()),
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
            &DynamoInbox::new(self.harness.client.clone(), self.harness.table.clone()),
            &key,
        )
        .await
        .expect("get")
        .expect("the message exists")
    }
}
