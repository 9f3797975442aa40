//! Ingest hot-path benchmark (criterion), without I/O.
//!
//! `cargo bench -p ingest-function --bench ingest` measures, for a 2 KB and a 64 KB Stripe event:
//!
//! - `ingest/full_new_event/<size>`: [`ingest_function::respond`], the real handler (body
//!   decoding, signature verification, id/type parsing, body hash, message building, the
//!   in-memory conditional put, the response JSON), on a real-shaped API Gateway HTTP API
//!   (payload 2.0) event. Every iteration gets a NEW event (distinct event id, signed in criterion's
//!   untimed setup), so this is the accepted path, not the duplicate path;
//! - `ingest/raw_hmac_sha256/<size>`: HMAC-SHA256 (hmac 0.13 + sha2 0.11) of the same body, the
//!   floor any verifying ingestor pays.
//!
//! The handler runs on a current-thread tokio runtime through criterion's `async_tokio` support
//! (one `block_on` per sample, so the executor costs nothing measurable). Criterion writes its
//! estimates to `target/criterion/ingest/<bench>/<size>/new/estimates.json`;
//! `cargo run -p bench-tools --bin figures` prints the ratios against their target from there.
//!
//! Nothing asserts on a time. The asserts check that the bench measures what it claims: a new
//! event is accepted and a repeat is a duplicate (at setup), and every store saw each of its events
//! stored with exactly one write request (when it is dropped, outside the timed section). Under
//! `cargo test --benches` each benchmark runs once as a smoke test.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderValue;
use inbox_core::clock::ManualClock;
use inbox_core::config::{DEFAULT_MAX_BODY_BYTES, DEFAULT_RETENTION_DAYS};
use inbox_core::ingest::Ingestor;
use inbox_core::signature::Unsigned;
use inbox_core::sources::{parse_secrets, Sources};
use inbox_core::store::memory::MemoryInbox;
use serde_json::{json, Value};
use sha2::Sha256;
use std::cell::Cell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

/// The pinned clock, and the timestamp every event is signed at.
const NOW: i64 = 1_795_000_000;
/// The local Stripe secret (`local/secrets.json`).
const SECRET: &str = "whsec_local_stripe_secret";
const SOURCES: &str = r#"{"stripe":{"scheme":"stripe"}}"#;
const SECRETS: &str = r#"{"stripe":["whsec_local_stripe_secret"]}"#;
/// Event sizes (exact body lengths in bytes).
const SIZES: [(&str, usize); 2] = [("2KB", 2 * 1024), ("64KB", 64 * 1024)];
/// New events per fresh in-memory store: bounds the memory the store retains (64 x 64 KB).
const CHUNK: usize = 64;
/// Width of the numeric part of generated event ids (fixed, so every body has the same length).
const ID_DIGITS: usize = 24;

type Service = Ingestor<MemoryInbox, ManualClock>;
type HmacSha256 = Hmac<Sha256>;

/// A realistic Stripe `checkout.session.completed` event of exactly `size` bytes (padded in
/// `data.object.metadata`, as in `integration_tests::stripe_event`), whose id is `evt_` + [`ID_DIGITS`] zeros.
fn stripe_body(size: usize) -> String {
    let mut event = json!({
        "id": format!("evt_{}", "0".repeat(ID_DIGITS)),
        "object": "event",
        "api_version": "2024-06-20",
        "created": NOW,
        "data": {"object": {
            "id": "cs_test_a1b2c3", "object": "checkout.session", "amount_total": 2000, "currency": "usd",
            "customer": "cus_123", "mode": "payment", "payment_intent": "pi_123", "payment_status": "paid",
            "metadata": {"tenant": "acme", "padding": ""}
        }},
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": "checkout.session.completed"
    });
    let base = event.to_string().len();
    assert!(
        size >= base,
        "a {size}-byte event is smaller than its skeleton ({base} bytes)"
    );
    event["data"]["object"]["metadata"]["padding"] = json!("x".repeat(size - base));
    let body = event.to_string();
    assert_eq!(body.len(), size);
    body
}

/// A real-shaped API Gateway HTTP API (payload 2.0) event for `POST /webhooks/stripe`, without a
/// body or signature (the shape of `integration_tests::api_event`).
fn api_event_template() -> ApiGatewayV2httpRequest {
    let path = "/webhooks/stripe";
    let event = json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json; charset=utf-8",
            "host": "abc123.execute-api.us-east-1.amazonaws.com",
            "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "accept": "*/*; q=0.5, application/xml",
            "cache-control": "no-cache",
            "content-length": "0",
            "x-amzn-trace-id": "Root=1-67891233-abcdef012345678912345678",
            "x-forwarded-for": "54.187.174.169",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https"
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": "POST", "path": path, "protocol": "HTTP/1.1", "sourceIp": "54.187.174.169", "userAgent": "Stripe/1.0"},
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "POST /webhooks/{source}",
            "stage": "$default",
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": NOW * 1000
        },
        "pathParameters": {"source": "stripe"},
        "isBase64Encoded": false
    });
    serde_json::from_value(event).expect("a valid API Gateway v2 event")
}

/// An in-memory store and the service over it, shared by at most [`CHUNK`] new events. When the
/// last of them is dropped (outside the timed section) it checks that every event handed out was
/// stored, with exactly one write request each.
struct Store {
    service: Service,
    events: Cell<usize>,
}

impl Drop for Store {
    fn drop(&mut self) {
        let (events, store) = (self.events.get(), self.service.store());
        assert_eq!(store.message_count(), events, "every new event stored");
        assert_eq!(store.write_requests(), events, "one write per new event");
    }
}

/// One event size: the configured sources, a body template and an event template.
struct Fixture {
    label: &'static str,
    size: usize,
    sources: Sources,
    body: String,
    /// Byte offset of the id's digits in `body`.
    id_at: usize,
    template: ApiGatewayV2httpRequest,
    next_id: Cell<u64>,
}

impl Fixture {
    fn new(label: &'static str, size: usize) -> Self {
        let secrets = parse_secrets(SECRETS, "WEBHOOK_SECRETS").expect("bench secrets");
        let sources = Sources::from_json(SOURCES, &secrets).expect("bench sources");
        let body = stripe_body(size);
        let id_at = body.find("\"evt_").expect("the id is in the body") + "\"evt_".len();
        Self {
            label,
            size,
            sources,
            body,
            id_at,
            template: api_event_template(),
            next_id: Cell::new(1),
        }
    }

    /// A fresh service over an empty in-memory store.
    fn service(&self) -> Service {
        Ingestor::new(
            self.sources.clone(),
            MemoryInbox::new(),
            ManualClock::at_secs(NOW),
            DEFAULT_MAX_BODY_BYTES,
            DEFAULT_RETENTION_DAYS,
        )
    }

    /// The body of event number `n` (same length for every `n`).
    fn body_of(&self, n: u64) -> String {
        let mut body = self.body.clone();
        let digits = format!("{n:0width$}", width = ID_DIGITS);
        body.replace_range(self.id_at..self.id_at + ID_DIGITS, &digits);
        body
    }

    /// A new, signed API Gateway event with a never-used event id.
    fn new_event(&self) -> ApiGatewayV2httpRequest {
        let n = self.next_id.get();
        self.next_id.set(n + 1);
        let body = self.body_of(n);
        let scheme = &self
            .sources
            .get("stripe")
            .expect("stripe is configured")
            .scheme;
        let mut event = self.template.clone();
        let signed = scheme
            .sign(&Unsigned::new(body.as_bytes(), NOW, ""))
            .expect("stripe signs");
        for (name, value) in signed.headers {
            event.headers.insert(name, value);
        }
        let length = HeaderValue::from(body.len());
        event.headers.insert(http::header::CONTENT_LENGTH, length);
        event.body = Some(body);
        event
    }

    /// Criterion's untimed setup: a new event, on the current store until it has [`CHUNK`]
    /// events, then on a fresh one.
    fn next_input(&self, current: &mut Option<Rc<Store>>) -> (Rc<Store>, ApiGatewayV2httpRequest) {
        let store = match current {
            Some(s) if s.events.get() < CHUNK => Rc::clone(s),
            _ => Rc::clone(current.insert(Rc::new(Store {
                service: self.service(),
                events: Cell::new(0),
            }))),
        };
        store.events.set(store.events.get() + 1);
        (store, self.new_event())
    }

    /// The benchmark measures what it claims: a new event is accepted, a repeat is a duplicate.
    async fn check(&self) {
        let service = self.service();
        let event = self.new_event();
        let first = ingest_function::respond(&service, &event).await;
        assert_eq!(status_of(&first), (200, "accepted".into()), "new event");
        let again = ingest_function::respond(&service, &event).await;
        assert_eq!(status_of(&again), (200, "duplicate".into()), "repeat");
        assert_eq!(service.store().message_count(), 1);
    }
}

/// HMAC-SHA256 of `body`, keyed from scratch: the baseline.
fn raw_hmac(key: &[u8], body: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(body);
    mac.finalize().into_bytes().into()
}

fn status_of(resp: &ApiGatewayV2httpResponse) -> (i64, String) {
    let text = match &resp.body {
        Some(aws_lambda_events::encodings::Body::Text(t)) => t.as_str(),
        _ => "",
    };
    let json: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let status = json["status"].as_str().or(json["error"].as_str());
    (resp.status_code, status.unwrap_or_default().to_owned())
}

/// glibc hands freed memory at the top of the heap back to the OS once more than 128 KiB is free
/// there; with 64 KB bodies allocated and freed per event, whether that happens varied from run to
/// run and turned into page faults (measured: 36 k vs 260 k faults per run, 122 vs 148 µs per
/// 64 KB event). A warm Lambda's heap sits at its steady size, so trimming is turned off here
/// (what `GLIBC_TUNABLES=glibc.malloc.trim_threshold=…` does, set from inside the process).
fn keep_heap_untrimmed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes a malloc tuning parameter; no memory is touched.
        let set = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) };
        assert_eq!(set, 1, "mallopt(M_TRIM_THRESHOLD) failed");
    }
}

fn bench_ingest(c: &mut Criterion) {
    keep_heap_untrimmed();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime");
    let mut group = c.benchmark_group("ingest");
    for (label, size) in SIZES {
        let fx = Fixture::new(label, size);
        runtime.block_on(fx.check());
        group.throughput(Throughput::Bytes(fx.size as u64));

        let mut current = None;
        group.bench_function(BenchmarkId::new("full_new_event", fx.label), |b| {
            b.to_async(&runtime).iter_batched(
                || fx.next_input(&mut current),
                // The store and the event go out with the response: criterion drops the outputs
                // after the timed section.
                |(store, event)| async move {
                    let response = ingest_function::respond(&store.service, &event).await;
                    (response, event, store)
                },
                BatchSize::SmallInput,
            );
        });
        drop(current);

        let body = fx.body_of(0);
        group.bench_function(BenchmarkId::new("raw_hmac_sha256", fx.label), |b| {
            b.iter(|| raw_hmac(SECRET.as_bytes(), black_box(body.as_bytes())));
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_ingest
}
criterion_main!(benches);
