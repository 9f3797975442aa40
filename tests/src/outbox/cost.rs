//! What a happy-path delivery costs in DynamoDB, measured on the real SDK client against the
//! emulator: requests by operation (the pipeline's [`RequestCounter`]) and write units by
//! DynamoDB's item-size rules (`inbox_core::store::size`), from every write request the worker
//! sent ([`WriteLog`], an interceptor that sees each request's input) and the items as stored
//! before and after.
//!
//! Units: a put on the larger of the item it replaces and the item it writes; an update on the
//! larger of the item before and after (the item after an update is the one stored at the end
//! when it is the item's last write, else taken as unchanged in size); 1 unit per started KB.
//!
//! Two origins, as the deliver function meets them: a batch of stream records (each a new
//! delivery's image) and a batch of delivery-queue messages (each carrying the delivery as
//! stored, as a deferral or a retry sends it). Both with the destination already cached (its
//! `Query` is one per cache period, not per delivery) and counted after one warm-up delivery.

use super::OutboxRig;
use aws_lambda_events::event::dynamodb::{Event as StreamEvent, EventRecord, StreamRecord};
use aws_lambda_events::event::sqs::{SqsEvent, SqsMessage};
use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemInput;
use aws_sdk_dynamodb::operation::put_item::PutItemInput;
use aws_sdk_dynamodb::operation::update_item::UpdateItemInput;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use inbox_core::outbox::queue::Work;
use inbox_core::outbox::transport::Transport;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer, DeliveryOutcome};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::size::{item_size, write_units};
use inbox_core::store::Item;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One write request: its item's key and, for a put, the item's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub key: (String, String),
    pub put_bytes: Option<usize>,
}

/// Every single-item write request a client sends, in order.
#[derive(Debug, Default, Clone)]
pub struct WriteLog(Arc<Mutex<Vec<Write>>>);

impl WriteLog {
    pub fn take(&self) -> Vec<Write> {
        self.0
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

fn text(map: Option<&std::collections::HashMap<String, AttributeValue>>, k: &str) -> String {
    map.and_then(|m| m.get(k))
        .and_then(|v| v.as_s().ok())
        .cloned()
        .unwrap_or_default()
}

impl Intercept for WriteLog {
    fn name(&self) -> &'static str {
        "WriteLog"
    }

    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input();
        let write = if let Some(put) = input.downcast_ref::<PutItemInput>() {
            put.item().map(|item| Write {
                key: (text(Some(item), "pk"), text(Some(item), "sk")),
                put_bytes: Some(item_size(item)),
            })
        } else if let Some(u) = input.downcast_ref::<UpdateItemInput>() {
            Some(Write {
                key: (text(u.key(), "pk"), text(u.key(), "sk")),
                put_bytes: None,
            })
        } else {
            input.downcast_ref::<DeleteItemInput>().map(|d| Write {
                key: (text(d.key(), "pk"), text(d.key(), "sk")),
                put_bytes: None,
            })
        };
        if let (Some(w), Ok(mut log)) = (write, self.0.lock()) {
            log.push(w);
        }
        Ok(())
    }
}

/// The write units of `writes`, from the items' sizes before (`before`) and after (`after`).
pub fn units_of(
    writes: &[Write],
    before: &BTreeMap<(String, String), usize>,
    after: &BTreeMap<(String, String), usize>,
) -> u64 {
    let mut size: BTreeMap<(String, String), usize> = before.clone();
    let mut units = 0;
    for (i, w) in writes.iter().enumerate() {
        let old = size.get(&w.key).copied().unwrap_or(0);
        let last = !writes[i + 1..].iter().any(|x| x.key == w.key);
        let new = match w.put_bytes {
            Some(bytes) => bytes,
            None if last => after.get(&w.key).copied().unwrap_or(0),
            None => old,
        };
        units += write_units(old.max(new));
        size.insert(w.key.clone(), new);
    }
    units
}

/// Where the deliveries came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Stream,
    Queue,
}

/// What `deliveries` happy-path deliveries cost.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryCost {
    pub deliveries: usize,
    pub requests: BTreeMap<String, usize>,
    pub write_units: u64,
}

impl DeliveryCost {
    pub fn requests_per_delivery(&self) -> f64 {
        self.requests.values().sum::<usize>() as f64 / self.deliveries as f64
    }

    pub fn units_per_delivery(&self) -> f64 {
        self.write_units as f64 / self.deliveries as f64
    }
}

/// A worker whose DynamoDB client counts its requests (in the rig's counter) and logs its writes.
pub async fn measured_deliverer<T: Transport>(
    rig: &OutboxRig,
    transport: T,
    config: DeliverConfig,
    log: &WriteLog,
) -> Deliverer<(
    DynamoTable,
    T,
    inbox_core::outbox::queue::SqsOutboxQueues,
    inbox_core::clock::SystemClock,
)> {
    let sdk = crate::sdk_config_for(&rig.pipeline.harness.endpoints).await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&sdk)
        .interceptor(rig.pipeline.counter.clone())
        .interceptor(log.clone())
        .build();
    let store = DynamoTable::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        rig.pipeline.harness.table.clone(),
    );
    Deliverer::new(
        store,
        transport,
        rig.queues(),
        inbox_core::clock::SystemClock,
        config,
        Duration::from_secs(300),
    )
    .with_metrics(Arc::new(inbox_core::metrics::RecordingSink::default()))
}

async fn sizes(rig: &OutboxRig) -> BTreeMap<(String, String), usize> {
    crate::scan_all(&rig.pipeline.harness.client, &rig.pipeline.harness.table)
        .await
        .into_iter()
        .map(|i: Item| {
            let key = (text(Some(&i), "pk"), text(Some(&i), "sk"));
            (key, item_size(&i))
        })
        .collect()
}

/// The stream record of a new delivery: its item as stored, as the event source mapping passes
/// an INSERT (`NEW_IMAGE`).
async fn insert_record(rig: &OutboxRig, destination: &str, id: &str) -> EventRecord {
    let r = super::reference(destination, id);
    let item = rig
        .pipeline
        .harness
        .client
        .get_item()
        .table_name(&rig.pipeline.harness.table)
        .key("pk", AttributeValue::S(r.pk()))
        .key("sk", AttributeValue::S("OUT".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("read the delivery")
        .item
        .expect("stored");
    let mut change = StreamRecord::default();
    change.new_image = serde_dynamo::Item::from(item);
    let mut record = EventRecord::default();
    record.event_name = "INSERT".into();
    record.event_id = id.to_owned();
    record.event_source = Some("aws:dynamodb".into());
    record.change = change;
    record
}

/// Delivers `n` new deliveries to `destination` (its receiver answering 200) from `origin`, in
/// batches of `batch` (the event source mappings' batch size), after one warm-up delivery from the same origin; what they cost. Every one must be
/// delivered.
pub async fn happy_path<T: Transport>(
    rig: &OutboxRig,
    worker: &Deliverer<(
        DynamoTable,
        T,
        inbox_core::outbox::queue::SqsOutboxQueues,
        inbox_core::clock::SystemClock,
    )>,
    log: &WriteLog,
    destination: &str,
    origin: Origin,
    n: usize,
    batch: usize,
) -> DeliveryCost {
    let counter = &rig.pipeline.counter;
    let prefix = format!("evt_{}", uuid::Uuid::new_v4().simple());
    for (round, count) in [(0, 1), (1, n)] {
        let batch = batch.max(1);
        let ids = rig
            .pending_deliveries(destination, &format!("{prefix}_{round}"), count)
            .await;
        let before = sizes(rig).await;
        counter.reset();
        log.take();
        // The records' images and the messages' copies, read before counting.
        let mut images = Vec::new();
        let mut messages = Vec::new();
        for id in &ids {
            match origin {
                Origin::Stream => images.push(insert_record(rig, destination, id).await),
                Origin::Queue => {
                    let d = rig.delivery(destination, id).await.expect("stored");
                    let mut m = SqsMessage::default();
                    m.message_id = Some(id.clone());
                    m.body = Some(serde_json::to_string(&Work::carrying(&d)).expect("json"));
                    messages.push(m);
                }
            }
        }
        counter.reset();
        log.take();
        let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
        let summaries = match origin {
            Origin::Stream => {
                let mut all = Vec::new();
                for chunk in images.chunks(batch) {
                    let mut event = StreamEvent::default();
                    event.records = chunk.to_vec();
                    all.push(worker.handle_stream_batch(event).await.1);
                }
                all
            }
            Origin::Queue => {
                let mut all = Vec::new();
                for chunk in messages.chunks(batch) {
                    let mut event = SqsEvent::default();
                    event.records = chunk.to_vec();
                    all.push(worker.handle_sqs_batch(event).await.1);
                }
                all
            }
        };
        for s in summaries {
            for (k, v) in s.outcomes {
                *outcomes.entry(k).or_default() += v;
            }
        }
        let requests = counter.counts();
        let writes = log.take();
        if outcomes.get(DeliveryOutcome::Delivered.as_str()) != Some(&count) {
            let mut why = Vec::new();
            for id in &ids {
                if let Some(d) = rig.delivery(destination, id).await {
                    if d.delivered_at.is_none() {
                        why.push(format!(
                            "{id}: {:?} {:?} {:?}",
                            d.status, d.last_status, d.last_error
                        ));
                    }
                }
            }
            panic!("{origin:?} round {round}: {outcomes:?}; not delivered: {why:#?}");
        }
        if round == 1 {
            let after = sizes(rig).await;
            return DeliveryCost {
                deliveries: count,
                requests,
                write_units: units_of(&writes, &before, &after),
            };
        }
    }
    unreachable!("the second round returns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_item_size_rules() {
        let k = |s: &str| (s.to_owned(), "OUT".to_owned());
        let before = BTreeMap::from([(k("a"), 700), (k("state"), 60)]);
        let after = BTreeMap::from([(k("a"), 1_100), (k("state"), 60)]);
        let writes = [
            Write {
                key: k("state"),
                put_bytes: None,
            },
            Write {
                key: k("a"),
                put_bytes: Some(800),
            },
            Write {
                key: k("a"),
                put_bytes: None,
            },
        ];
        // state 1 + claim max(700, 800) 1 + update max(800, 1100) 2
        assert_eq!(units_of(&writes, &before, &after), 4);
    }
}
