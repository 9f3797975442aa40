//! What the console's Events page costs as the table grows: not a test, it prints figures
//! (`docs/benchmarks.md`, "The console's Events page"). For each size (1,000, 10,000 and
//! 100,000 messages by default) a table made from `template.yaml` on DynamoDB Local is filled
//! with message items as ingest writes them (`message_item`, ~1 KB each, statuses mixed,
//! received over the last 7 days) by `BatchWriteItem`, then the page is read in rounds:
//!
//! - **before** (main's page): `MessageStore::list` of every message (a `Scan` of the table,
//!   consistent), as the page did on every load and every 10 s refresh; its read units are
//!   those of the same scan sent with `ReturnConsumedCapacity`;
//! - **after**: `EventIndex::page`, the first page of 50 and the next one by its cursor, and a
//!   page filtered by source, each with the read units DynamoDB says it consumed.
//!
//! Run with DynamoDB Local (`AWS_ENDPOINT_URL_DYNAMODB`, and `AWS_ENDPOINT_URL` set to
//! anything: nothing else is called): `cargo run --release -p integration-tests --bin
//! events_page` (sizes as arguments: `-- 1000 10000`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use aws_sdk_dynamodb::types::{PutRequest, ReturnConsumedCapacity, WriteRequest};
use aws_sdk_dynamodb::Client;
use inbox_core::domain::{EventId, EventType, MessageKey, SourceName, Status};
use inbox_core::store::attr::s;
use inbox_core::store::dynamo::{message_item, DynamoTable, StoredBody};
use inbox_core::store::events::Direction;
use inbox_core::store::schema::{KIND, KIND_MESSAGE, OPEN_DUE, OPEN_SHARD, STATUS};
use inbox_core::store::{EventIndex as _, EventQuery, ListFilter, MessageStore as _, NewMessage};
use integration_tests::{create_table, endpoints, sdk_config_for, unique};
use std::time::{Duration, Instant};

const SOURCES: [&str; 4] = ["stripe", "github", "mailer", "shopify"];
const DAY_MS: i64 = 86_400_000;

/// The `i`th message: its source, type and status by `i`, received within the last 7 days.
fn item(
    i: usize,
    now: i64,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    let source = SOURCES[i % SOURCES.len()];
    let id = format!("evt_{i:07}_{}", uuid::Uuid::new_v4().simple());
    let body = format!(
        r#"{{"id":"{id}","object":"event","type":"invoice.paid","data":{{"object":{{"amount":{},"customer":"cus_{:06}","lines":[{}]}}}}}}"#,
        i * 7 % 100_000,
        i % 5_000,
        (0..8)
            .map(|l| format!(r#"{{"n":{l},"sku":"sku_{:04}"}}"#, (i + l) % 9_999))
            .collect::<Vec<_>>()
            .join(",")
    );
    let msg = NewMessage {
        key: MessageKey::new(
            SourceName::parse(source).unwrap(),
            EventId::parse(&id).unwrap(),
        ),
        event_type: Some(EventType::parse("invoice.paid").unwrap()),
        received_at_ms: now - (i as i64 * 7_919 * 1_000) % (7 * DAY_MS),
        body: body.clone().into_bytes(),
        body_digest: None,
        headers: vec![("content-type".into(), "application/json".into())],
        provider_id: None,
        unidentified: None,
        batch: None,
    };
    let mut item = message_item(&msg, "bench", StoredBody::inline(body.as_bytes()));
    let status = match i % 20 {
        0 => Status::Failed,
        1 => Status::Ignored,
        _ => Status::Processed,
    };
    item.insert(STATUS.into(), s(status.as_str()));
    item.remove(OPEN_SHARD);
    item.remove(OPEN_DUE);
    item
}

/// Writes `n` messages, 25 to a `BatchWriteItem`, 8 batches at once.
async fn fill(client: &Client, table: &str, n: usize, now: i64) {
    let mut tasks = tokio::task::JoinSet::new();
    for chunk_start in (0..n).step_by(25) {
        while tasks.len() >= 8 {
            tasks.join_next().await.unwrap().unwrap();
        }
        let (client, table) = (client.clone(), table.to_owned());
        tasks.spawn(async move {
            let mut requests: Vec<WriteRequest> = (chunk_start..(chunk_start + 25).min(n))
                .map(|i| {
                    WriteRequest::builder()
                        .put_request(
                            PutRequest::builder()
                                .set_item(Some(item(i, now)))
                                .build()
                                .unwrap(),
                        )
                        .build()
                })
                .collect();
            while !requests.is_empty() {
                let out = client
                    .batch_write_item()
                    .request_items(&table, requests)
                    .send()
                    .await
                    .expect("batch write");
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&table))
                    .unwrap_or_default();
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
}

/// The read units of main's page: the scan `MessageStore::list` sends, with its consumed capacity.
async fn scan_units(client: &Client, table: &str) -> f64 {
    let (mut units, mut start) = (0.0, None);
    loop {
        let out = client
            .scan()
            .table_name(table)
            .filter_expression("#kind = :kind")
            .expression_attribute_names("#kind", KIND)
            .expression_attribute_values(":kind", s(KIND_MESSAGE))
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .expect("scan");
        units += out
            .consumed_capacity()
            .and_then(|c| c.capacity_units())
            .unwrap_or(0.0);
        start = out.last_evaluated_key;
        if start.is_none() {
            return units;
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a size"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 10_000, 100_000]
    } else {
        sizes
    };
    let sdk = sdk_config_for(&endpoints()).await;
    let client = Client::new(&sdk);
    let now = inbox_core::clock::Clock::now_millis(&inbox_core::clock::SystemClock);
    println!("| messages | before: load (median) | before: read units | after: first page | after: read units | after: next page | read units | after: source filter | read units | requests a page |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for n in sizes {
        let table = unique("events-page");
        create_table(&client, &table).await;
        let started = Instant::now();
        fill(&client, &table, n, now).await;
        eprintln!(
            "{n} messages written in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        let store = DynamoTable::new(client.clone(), table.clone());
        // Before: main's page read every message (rounds: fewer at 100k, each takes minutes).
        let rounds = if n >= 100_000 { 3 } else { 5 };
        let mut before = Vec::new();
        for _ in 0..rounds {
            let t = Instant::now();
            let all = store
                .list(&ListFilter::default(), usize::MAX)
                .await
                .expect("list");
            before.push(t.elapsed());
            assert_eq!(all.len(), n);
        }
        let before_units = scan_units(&client, &table).await;
        // After: the first page, the next one, a source's first page.
        let first_q = EventQuery {
            rows: 50,
            ..EventQuery::default()
        };
        let (mut first, mut next, mut filtered) = (Vec::new(), Vec::new(), Vec::new());
        let (mut first_units, mut next_units, mut filtered_units, mut requests) =
            (0.0, 0.0, 0.0, 0);
        for _ in 0..9 {
            let t = Instant::now();
            let page = store.page(&first_q).await.expect("page");
            first.push(t.elapsed());
            assert_eq!(page.messages.len(), 50);
            first_units = page.read_units;
            requests = page.requests;
            let q = EventQuery {
                from: Some((Direction::Older, page.older.clone().expect("an older page"))),
                ..first_q.clone()
            };
            let t = Instant::now();
            let page2 = store.page(&q).await.expect("next page");
            next.push(t.elapsed());
            assert_eq!(page2.messages.len(), 50);
            assert!(page2.messages[0].received_at <= page.messages[49].received_at);
            next_units = page2.read_units;
            let q = EventQuery {
                source: Some("github".into()),
                ..first_q.clone()
            };
            let t = Instant::now();
            let page3 = store.page(&q).await.expect("filtered page");
            filtered.push(t.elapsed());
            assert!(page3.messages.iter().all(|m| m.source.as_str() == "github"));
            filtered_units = page3.read_units;
        }
        println!(
            "| {n} | {} ms | {before_units:.1} | {} ms | {first_units:.1} | {} ms | {next_units:.1} | {} ms | {filtered_units:.1} | {requests} |",
            ms(median(before)),
            ms(median(first)),
            ms(median(next)),
            ms(median(filtered)),
        );
        client
            .delete_table()
            .table_name(&table)
            .send()
            .await
            .expect("delete the table");
    }
}
