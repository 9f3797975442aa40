//! Peak memory of a deliver worker sending ONE large event (6 MiB, kept in S3) to 10 destinations
//! in one batch, as the deliver function does (256 MB, `DELIVERY_CONCURRENCY` 10): not a test,
//! it prints figures. The event and its 10 deliveries are set up by this process, which also runs
//! a receiver that reads and discards every request; the worker runs in a child process (this
//! binary again, `--deliver`), so its peak resident set (`VmHWM`) is the worker's alone, against
//! its resident set before the batch (`VmRSS`: the runtime, the clients).
//!
//! Run with the emulators (`AWS_ENDPOINT_URL` at moto, `AWS_ENDPOINT_URL_DYNAMODB` and
//! `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` at DynamoDB Local):
//! `cargo run -p integration-tests --bin body_rss` (add `--release` for the deployed build;
//! `BODY_RSS_MIB` sets the event's size, 6 by default).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{BodyDigest, EventType};
use inbox_core::outbox::delivery::OutboundDelivery;
use inbox_core::outbox::queue::{SqsOutboxQueues, Work};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::worker::{DeliverConfig, Deliverer};
use inbox_core::store::dynamo::body::BodyConfig;
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use inbox_core::store::{Inbox as _, NewMessage};
use integration_tests::outbox::{dest_id, key, local_transport, reference, OutboxRig};
use integration_tests::{body_bucket, endpoints, sdk_config_for};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const DESTINATIONS: usize = 10;
const EVENT: &str = "evt_rss_large";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--deliver") {
        return deliver(&args[2..]).await;
    }
    let mib: usize = std::env::var("BODY_RSS_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let rig = OutboxRig::new().await;
    let (_, bodies) = body_bucket(&rig.pipeline.harness.endpoints, 8 * 1024).await;
    let store = DynamoTable::new(
        rig.pipeline.harness.client.clone(),
        rig.pipeline.harness.table.clone(),
    )
    .with_bodies(Some(bodies.clone()));
    let (url, received) = discarding_receiver().await;
    for i in 0..DESTINATIONS {
        rig.destination(&format!("rss-{i}"), &url, &["*"], |d| {
            d.rate_per_sec = 1_000.0;
            d.burst = 1_000;
        })
        .await;
    }
    let now = SystemClock.now_millis();
    let pad = "x".repeat(mib * 1024 * 1024 - 64);
    let body = format!(r#"{{"id":"{EVENT}","type":"test.outbox","pad":"{pad}"}}"#).into_bytes();
    drop(pad);
    let size = body.len();
    store
        .put_if_absent(&NewMessage {
            key: key(EVENT),
            event_type: Some(EventType::parse("test.outbox").unwrap()),
            received_at_ms: now,
            body_digest: Some(BodyDigest::of(&body)),
            body,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        })
        .await
        .unwrap();
    for i in 0..DESTINATIONS {
        let d = OutboundDelivery::new(&dest_id(&format!("rss-{i}")), &key(EVENT), None, now);
        store.save_delivery(&d, None).await.unwrap();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--deliver",
            &rig.pipeline.harness.table,
            bodies.bucket(),
            &rig.delivery_url,
            &rig.delivery_quarantine_url,
        ])
        .output()
        .expect("run the worker");
    assert!(
        out.status.success(),
        "the worker failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The worker's last line (its metrics, EMF lines, come before it on stdout).
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty());
    let figures: serde_json::Value =
        serde_json::from_str(last.unwrap_or_default()).expect("the worker's figures");
    let received = received.load(Ordering::SeqCst);
    let line = serde_json::json!({
        "event_bytes": size,
        "destinations": DESTINATIONS,
        "received_bytes": received,
        "worker": figures,
    });
    println!("{line}");
    assert_eq!(
        received,
        size * DESTINATIONS,
        "every destination got the event"
    );
}

/// The worker: one delivery-queue batch of the event's deliveries, sent 10 at once.
async fn deliver(args: &[String]) {
    let [table, bucket, delivery_url, quarantine_url] = args else {
        panic!("--deliver TABLE BUCKET DELIVERY_QUEUE_URL QUARANTINE_QUEUE_URL");
    };
    let sdk = sdk_config_for(&endpoints()).await;
    let bodies = BodyConfig {
        bucket: Some(bucket.clone()),
        inline_max: 8 * 1024,
    }
    .s3(&sdk);
    let store = DynamoTable::new(fail_fast_client(&sdk), table.clone()).with_bodies(bodies);
    let queues = SqsOutboxQueues::new(
        aws_sdk_sqs::Client::new(&sdk),
        delivery_url.clone(),
        quarantine_url.clone(),
    );
    let deliverer = Deliverer::new(
        store,
        local_transport(),
        queues,
        SystemClock,
        DeliverConfig::default(),
        Duration::from_secs(5),
    );
    let mut batch = aws_lambda_events::event::sqs::SqsEvent::default();
    for i in 0..DESTINATIONS {
        let mut m = aws_lambda_events::event::sqs::SqsMessage::default();
        m.message_id = Some(format!("m{i}"));
        let work = Work::Delivery(reference(&format!("rss-{i}"), EVENT));
        m.body = Some(serde_json::to_string(&work).unwrap());
        batch.records.push(m);
    }
    let before = status_kib("VmRSS");
    let (response, summary) = deliverer.handle_sqs_batch(batch).await;
    let peak = status_kib("VmHWM");
    assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    println!(
        "{}",
        serde_json::json!({
            "delivered": summary.outcomes.get("delivered"),
            "rss_before_mib": mib(before),
            "peak_rss_mib": mib(peak),
            "peak_above_before_mib": mib(peak.saturating_sub(before)),
        })
    );
}

fn mib(kib: usize) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

/// A line of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

/// An HTTP/1.1 receiver on loopback that answers 200 to every POST after reading its body into a
/// small buffer (nothing kept); the bytes of bodies received, counted.
async fn discarding_receiver() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let received = Arc::new(AtomicUsize::new(0));
    let counted = received.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut head = Vec::new();
                loop {
                    // The request head, up to the blank line.
                    let end = loop {
                        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    };
                    let text = String::from_utf8_lossy(&head[..end]).to_ascii_lowercase();
                    let length: usize = text
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    // Body bytes read with the head; any past this body begin the next request.
                    let mut rest = head.split_off(end);
                    head.clear();
                    if rest.len() > length {
                        head = rest.split_off(length);
                    }
                    let mut left = length - rest.len();
                    while left > 0 {
                        match socket.read(&mut buf[..left.min(64 * 1024)]).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => left -= n,
                        }
                    }
                    counted.fetch_add(length, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                    if socket.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, received)
}
