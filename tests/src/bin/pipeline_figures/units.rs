//! Write units per webhook, by DynamoDB's published item-size rules (`inbox_core::store::size`),
//! from the items as the emulator stored them: one email event of a given size (realistic JSON,
//! `integration_tests::mailer_event`) through the real ingest handler, then the stream and the
//! processor with the wallet handler (one debit), counting every request (an interceptor on the
//! DynamoDB and S3 clients) and sizing every item before and after each step.
//!
//! Rules applied: a put costs 1 unit per started KB of the item; an update, on the larger of the
//! item before and after; an item written in `TransactWriteItems`, twice that. The open index
//! (a GSI, `INCLUDE` projection) costs 1 unit per index entry written or removed (its entries are
//! well under 1 KB), counted apart from the table's own writes, as the targets count only those.

use inbox_core::clock::SystemClock;
use inbox_core::ingest::Ingestor;
use inbox_core::process::{Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::store::dynamo::body::DEFAULT_INLINE_MAX_BYTES;
use inbox_core::store::dynamo::{DynamoTable, S3Bodies};
use inbox_core::store::size::{item_size, transactional_write_units, write_units};
use inbox_core::store::Item;
use integration_tests::pipeline::keys::{self, KeyUnits};
use integration_tests::pipeline::Pipeline;
use serde::Serialize;
use std::collections::BTreeMap;
use wallet_ledger::{Currency, Wallet, WalletSources};

/// What one webhook of one size cost.
#[derive(Debug, Clone, Serialize)]
pub struct Units {
    pub body_bytes: usize,
    /// The message item as the ingest function wrote it.
    pub message_item_bytes: usize,
    /// Whether the body went to S3.
    pub body_in_s3: bool,
    pub ingest_wru: u64,
    pub ingest_index_wru: u64,
    /// The events index's entry (`events-index`, the console's Events page): written once, at
    /// ingest; a transition changes none of its key or projected attributes, so it writes none.
    pub ingest_events_index_wru: u64,
    pub process_wru: u64,
    pub process_index_wru: u64,
    /// Strongly consistent reads (each of an item under 4 KB: one unit).
    pub process_rru: u64,
    pub s3_puts: usize,
    pub s3_gets: usize,
    /// Requests by operation, ingest and processing.
    pub requests: BTreeMap<String, usize>,
    /// Items the processing transaction wrote: sort-key prefix → (bytes before, after, units).
    pub transaction: Vec<(String, usize, usize, u64)>,
    /// Read and write units by partition-key pattern, ingest and processing.
    pub keys: KeyUnits,
    /// The JSON log lines the ingest handler wrote at `INFO` (the functions' own subscriber).
    pub ingest_log: Vec<String>,
    /// The processor's, for a stream batch of this one record.
    pub process_log: Vec<String>,
}

impl Units {
    pub fn end_to_end_wru(&self) -> u64 {
        self.ingest_wru + self.process_wru
    }
}

async fn snapshot(p: &Pipeline) -> keys::Snapshot {
    keys::snapshot(&p.harness.client, &p.harness.table).await
}

/// The open index's entry of an item (its keys, the table's keys and the projected attributes),
/// if it is in the index.
fn index_entry(item: &Item) -> Option<usize> {
    item.get("open_due")?;
    let projected = [
        "pk",
        "sk",
        "open_shard",
        "open_due",
        "status",
        "source",
        "event_id",
        "event_type",
        "attempts",
        "lease_until",
        "next_attempt_at",
    ];
    let entry: Item = item
        .iter()
        .filter(|(k, _)| projected.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(item_size(&entry))
}

/// The size of `item`'s entry in the events index (`template.yaml`: keys `list_shard`, `list_at`;
/// `source`, `event_id`, `event_type`, `provider_id` projected), if it has one.
fn events_index_entry(item: &Item) -> Option<usize> {
    item.get("list_at")?;
    let projected = [
        "pk",
        "sk",
        "list_shard",
        "list_at",
        "source",
        "event_id",
        "event_type",
        "provider_id",
    ];
    let entry: Item = item
        .iter()
        .filter(|(k, _)| projected.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(item_size(&entry))
}

/// The wallet of `acme` (0.05 an email, its floor far below: every debit goes through), put
/// as an item.
pub async fn put_wallet(p: &Pipeline) {
    let usd = Currency::parse("usd").expect("a currency");
    let tenant = wallet_ledger::TenantId::parse("acme").expect("tenant");
    let wallet = Wallet::new(tenant, usd.amount(5), usd.amount(-1_000_000), None, 0).to_item();
    p.harness
        .client
        .put_item()
        .table_name(&p.harness.table)
        .set_item(Some(wallet))
        .send()
        .await
        .expect("wallet");
}

/// The ingest handler over `store`, with the local sources and the default body limit.
pub fn ingestor(store: &DynamoTable) -> Ingestor<DynamoTable, SystemClock> {
    Ingestor::new(
        integration_tests::local_sources(),
        store.clone(),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    )
}

/// One signed `mailer` webhook with event id `id` through the real ingest handler: accepted.
/// Ingests `body` as a signed mailer webhook; the JSON log lines the ingest wrote at `INFO`.
pub async fn send(
    ingest: &Ingestor<DynamoTable, SystemClock>,
    p: &Pipeline,
    body: &str,
    id: &str,
) -> Vec<String> {
    let headers = p.harness.sign("mailer", body.as_bytes(), id);
    let (reply, log) = inbox_core::logging::json_lines_of(ingest_function::respond(
        ingest,
        &integration_tests::api_event("POST", "mailer", &headers, Some(body), false),
    ))
    .await;
    let reply = integration_tests::Reply::from(reply);
    assert_eq!(reply.code(), "accepted");
    log
}

/// One webhook of `size` bytes, end to end.
pub async fn measure(size: usize) -> Units {
    let p = Pipeline::new().await;
    let sdk = integration_tests::sdk_config_for(&p.harness.endpoints).await;
    let s3_conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(true)
        .interceptor(p.counter.clone())
        .build();
    let s3 = aws_sdk_s3::Client::from_conf(s3_conf);
    let bucket = format!("bodies-{}", uuid::Uuid::new_v4().simple());
    s3.create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .expect("bucket");
    let bodies = S3Bodies::new(s3, bucket, DEFAULT_INLINE_MAX_BYTES);
    let store = DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone())
        .with_bodies(Some(bodies));
    put_wallet(&p).await;
    let ingest = ingestor(&store);
    let body = integration_tests::mailer_event("m-units", "acme", size);
    let start = snapshot(&p).await;
    p.counter.reset();
    p.keys.reset();
    let ingest_log = send(&ingest, &p, &body, "msg_units").await;
    let ingest_requests = p.counter.counts();
    assert_eq!(
        ingest_requests.get("PutItem"),
        Some(&1),
        "{ingest_requests:?}"
    );
    let before = snapshot(&p).await;
    let mut by_key = p.keys.attribute(&start, &before);
    let message = before
        .values()
        .find(|i| {
            i.get("kind")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some("message")
        })
        .expect("the message item")
        .clone();
    let message_item_bytes = item_size(&message);

    p.counter.reset();
    p.keys.reset();
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = Processor::new(
        store,
        SqsRetryQueue::new(p.sqs.clone(), p.retry_url.clone()),
        SqsQuarantine::new(p.sqs.clone(), p.quarantine_url.clone()),
        SystemClock,
        registry,
        ProcessorConfig::default(),
    );
    let records = p.read_stream().await;
    let ((_, summary), process_log) =
        inbox_core::logging::json_lines_of(processor.handle_stream_batch(records)).await;
    assert_eq!(summary.outcomes.get("processed"), Some(&1), "{summary:?}");
    let process_requests = p.counter.counts();
    assert_eq!(
        process_requests.get("TransactWriteItems"),
        Some(&1),
        "one transaction and no other write: {process_requests:?}"
    );
    let after = snapshot(&p).await;
    keys::merge(&mut by_key, p.keys.attribute(&before, &after));

    let mut transaction = Vec::new();
    let mut process_wru = 0;
    let mut process_index_wru = 0;
    let keys: std::collections::BTreeSet<_> = before.keys().chain(after.keys()).collect();
    for k in keys {
        let (b, a) = (before.get(k), after.get(k));
        if b == a {
            continue;
        }
        let (bs, as_) = (b.map_or(0, item_size), a.map_or(0, item_size));
        let units = transactional_write_units(bs.max(as_));
        process_wru += units;
        let prefix = k.1.split('#').next().unwrap_or_default().to_owned();
        transaction.push((prefix, bs, as_, units));
        if b.and_then(index_entry).is_some() || a.and_then(index_entry).is_some() {
            process_index_wru += 1;
        }
    }
    let mut requests = ingest_requests.clone();
    for (op, n) in &process_requests {
        *requests.entry(format!("{op} (process)")).or_default() += n;
    }
    Units {
        body_bytes: body.len(),
        message_item_bytes,
        body_in_s3: message.contains_key("body_ref"),
        ingest_wru: write_units(message_item_bytes),
        ingest_index_wru: index_entry(&message).map_or(0, write_units),
        ingest_events_index_wru: events_index_entry(&message).map_or(0, write_units),
        process_wru,
        process_index_wru,
        process_rru: process_requests.get("GetItem").copied().unwrap_or(0) as u64,
        s3_puts: ingest_requests.get("PutObject").copied().unwrap_or(0),
        s3_gets: process_requests.get("GetObject").copied().unwrap_or(0),
        requests,
        transaction,
        keys: by_key,
        ingest_log,
        process_log,
    }
}
