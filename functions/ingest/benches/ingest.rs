//! Ingest hot-path benchmarks, without I/O.
//!
//! `cargo bench -p ingest --bench ingest` measures, for a 2 KB and a 64 KB Stripe event:
//!
//! - `ingest/<size>/full_new_event`: [`ingest_function::respond`] (the real handler: body decoding,
//!   signature verification, id/type parsing, body hash, message building, the in-memory
//!   conditional put, the response JSON) on a real-shaped API Gateway HTTP API (payload 2.0)
//!   event. Every timed call gets a NEW event (distinct event id, signed outside the timed
//!   section), so this is the accepted path, not the duplicate path;
//! - `ingest/<size>/full_duplicate`: the same handler on a delivery that is already stored;
//! - `ingest/<size>/raw_hmac_sha256`: HMAC-SHA256 (hmac 0.13 + sha2 0.11) of the same body, the
//!   floor any verifying ingestor pays;
//! - `parts/<size>/*`: the pieces of the hot path measured alone, to see where time goes.
//!
//! After criterion, a summary measured in the same run with `std::time::Instant` prints ns/op of
//! the full handler, of the raw HMAC and of each part, the ratio full / raw HMAC against its
//! target (<= 2x), and the write requests per new event counted by the in-memory store.
//! `cargo bench -p ingest --bench ingest -- summary` prints only the summary (the filter matches
//! no criterion benchmark); any other filter runs the matching criterion benchmarks only. Under
//! `cargo test --benches` every benchmark runs once as a smoke test and the summary is skipped:
//! nothing here asserts on timings (the asserts check that a new event is accepted with one write).
//!
//! The binary re-runs itself with glibc's heap trimming off (see [`GLIBC_TUNABLES`]), so that the
//! 64 KB figures measure the handler, not page faults that come and go from run to run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use criterion::{criterion_group, Criterion, Throughput};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderValue;
use inbox_core::clock::ManualClock;
use inbox_core::config::{DEFAULT_MAX_BODY_BYTES, DEFAULT_RETENTION_DAYS};
use inbox_core::domain::{BodyDigest, EventId, EventType, MessageKey, SourceName};
use inbox_core::ingest::Ingestor;
use inbox_core::signature::{Request, Unsigned};
use inbox_core::sources::{parse_secrets, Sources};
use inbox_core::store::dynamo::message_item;
use inbox_core::store::memory::MemoryInbox;
use inbox_core::store::NewMessage;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use sha2::Sha256;
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::process::{Command, ExitCode};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

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

/// Polls a future that never waits (the in-memory store answers at once) to completion, without
/// a runtime, so that no executor overhead is measured.
fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the in-memory store never waits; nothing should be pending"),
    }
}

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
        let fixture = Self {
            label,
            size,
            sources,
            body,
            id_at,
            template: api_event_template(),
            next_id: Cell::new(1),
        };
        fixture.check();
        fixture
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

    fn new_events(&self, count: usize) -> Vec<ApiGatewayV2httpRequest> {
        (0..count).map(|_| self.new_event()).collect()
    }

    /// The benchmark measures what it claims: a new event is accepted with one write, a repeat is
    /// a duplicate. (Correctness checks, not timing assertions.)
    fn check(&self) {
        let service = self.service();
        let event = self.new_event();
        let first = block_on(ingest_function::respond(&service, &event));
        assert_eq!(status_of(&first), (200, "accepted".into()), "new event");
        let again = block_on(ingest_function::respond(&service, &event));
        assert_eq!(status_of(&again), (200, "duplicate".into()), "repeat");
        assert_eq!(service.store().message_count(), 1);
    }

    fn raw_hmac(&self, body: &[u8]) -> [u8; 32] {
        raw_hmac(SECRET.as_bytes(), body)
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

fn event_body(event: &ApiGatewayV2httpRequest) -> &[u8] {
    event.body.as_deref().unwrap_or_default().as_bytes()
}

/// Runs the handler on `count` new events against a fresh store; returns the time of the handler
/// calls only (signing, event building and dropping happen outside), and checks that each event
/// was accepted with exactly one write request.
fn time_new_events(fx: &Fixture, count: usize) -> Duration {
    let service = fx.service();
    let events = fx.new_events(count);
    let mut responses = Vec::with_capacity(count);
    let start = Instant::now();
    for event in &events {
        responses.push(block_on(ingest_function::respond(
            &service,
            black_box(event),
        )));
    }
    let elapsed = start.elapsed();
    assert_eq!(
        service.store().message_count(),
        count,
        "all new events stored"
    );
    assert_eq!(
        service.store().write_requests(),
        count,
        "one write per event"
    );
    drop(black_box(responses));
    elapsed
}

/// Runs the handler `count` times on a delivery that is already stored.
fn time_duplicates(fx: &Fixture, count: usize) -> Duration {
    let service = fx.service();
    let event = fx.new_event();
    block_on(ingest_function::respond(&service, &event));
    let mut responses = Vec::with_capacity(count);
    let start = Instant::now();
    for _ in 0..count {
        responses.push(block_on(ingest_function::respond(
            &service,
            black_box(&event),
        )));
    }
    let elapsed = start.elapsed();
    assert_eq!(service.store().journal().len(), count, "all journaled");
    drop(black_box(responses));
    elapsed
}

/// Splits `iters` into chunks of at most [`CHUNK`] and sums the timed parts.
fn chunked(iters: u64, mut run: impl FnMut(usize) -> Duration) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK as u64);
        total += run(n as usize);
        left -= n;
    }
    total
}

// --- the parts of the hot path, measured alone ------------------------------------------------

/// A replica of `inbox_core::identity::JsonObject::parse` + two top-level lookups (the code is private):
/// validate the whole body as JSON, then parse it again into a map of raw values.
fn json_id_type_as_shipped(body: &[u8]) -> (String, String) {
    let value: &RawValue = serde_json::from_slice(body).expect("valid JSON");
    assert!(value.get().starts_with('{'));
    let map: HashMap<Cow<str>, &RawValue> = serde_json::from_str(value.get()).expect("an object");
    let get = |k: &str| {
        map.get(k)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
            .unwrap_or_default()
    };
    (get("id"), get("type"))
}

/// The same result in one pass: parse the body straight into the map of raw values.
fn json_id_type_one_pass(body: &[u8]) -> (String, String) {
    let map: HashMap<Cow<str>, &RawValue> = serde_json::from_slice(body).expect("an object");
    let get = |k: &str| {
        map.get(k)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
            .unwrap_or_default()
    };
    (get("id"), get("type"))
}

/// The message the ingest path builds for `event` (as `Ingestor::ingest` does).
fn message_for(event: &ApiGatewayV2httpRequest) -> NewMessage {
    let body = event_body(event);
    let (id, kind) = json_id_type_one_pass(body);
    NewMessage {
        key: MessageKey::new(
            SourceName::parse("stripe").expect("source name"),
            EventId::parse(&id).expect("event id"),
        ),
        event_type: Some(EventType::parse(&kind).expect("event type")),
        received_at_ms: NOW * 1000,
        body: body.to_vec(),
        body_digest: BodyDigest::of(body),
        headers: vec![
            (
                "content-type".into(),
                "application/json; charset=utf-8".into(),
            ),
            (
                "stripe-signature".into(),
                event
                    .headers
                    .get("stripe-signature")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .into(),
            ),
        ],
    }
}

/// One event and the message the ingest path builds from it: the input of every part.
struct Sample {
    event: ApiGatewayV2httpRequest,
    message: NewMessage,
}

impl Sample {
    fn new(fx: &Fixture) -> Self {
        let event = fx.new_event();
        let message = message_for(&event);
        Self { event, message }
    }

    fn body(&self) -> &[u8] {
        event_body(&self.event)
    }
}

/// One named part of the hot path.
type Part = (&'static str, fn(&Fixture, &Sample));

fn part_verify(fx: &Fixture, s: &Sample) {
    let scheme = &fx.sources.get("stripe").expect("stripe").scheme;
    let verdict = scheme.verify(Request::new(&s.event.headers, black_box(s.body()), NOW));
    assert!(matches!(verdict.ready(), Some(Ok(()))));
}

fn part_sha256(_: &Fixture, s: &Sample) {
    black_box(BodyDigest::of(black_box(s.body())));
}

fn part_json_as_shipped(_: &Fixture, s: &Sample) {
    black_box(json_id_type_as_shipped(black_box(s.body())));
}

fn part_json_one_pass(_: &Fixture, s: &Sample) {
    black_box(json_id_type_one_pass(black_box(s.body())));
}

fn part_copy_body(_: &Fixture, s: &Sample) {
    black_box(black_box(s.body()).to_vec());
}

fn part_dynamo_item(_: &Fixture, s: &Sample) {
    black_box(message_item(black_box(&s.message)));
}

const PARTS: [Part; 6] = [
    ("verify", part_verify),
    ("sha256_body", part_sha256),
    ("json_id_type_as_shipped", part_json_as_shipped),
    ("json_id_type_one_pass", part_json_one_pass),
    ("copy_body", part_copy_body),
    ("dynamo_item", part_dynamo_item),
];

// --- criterion ----------------------------------------------------------------------------------

fn fixtures() -> Vec<Fixture> {
    SIZES
        .iter()
        .map(|&(label, size)| Fixture::new(label, size))
        .collect()
}

fn bench_ingest(c: &mut Criterion) {
    for fx in fixtures() {
        let mut group = c.benchmark_group(format!("ingest/{}", fx.label));
        group.throughput(Throughput::Bytes(fx.size as u64));
        group.bench_function("full_new_event", |b| {
            b.iter_custom(|iters| chunked(iters, |n| time_new_events(&fx, n)));
        });
        group.bench_function("full_duplicate", |b| {
            b.iter_custom(|iters| chunked(iters, |n| time_duplicates(&fx, n)));
        });
        let body = fx.body_of(0);
        group.bench_function("raw_hmac_sha256", |b| {
            b.iter(|| fx.raw_hmac(black_box(body.as_bytes())));
        });
        group.finish();
    }
}

fn bench_parts(c: &mut Criterion) {
    for fx in fixtures() {
        let mut group = c.benchmark_group(format!("parts/{}", fx.label));
        group.throughput(Throughput::Bytes(fx.size as u64));
        let sample = Sample::new(&fx);
        for (name, part) in PARTS {
            group.bench_function(name, |b| b.iter(|| part(&fx, &sample)));
        }
        group.finish();
    }
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
    targets = bench_ingest, bench_parts
}

// --- the one-run summary ---------------------------------------------------------------------

/// Rounds per size; each round times every row once, in turn, and the median is reported.
const ROUNDS: usize = 101;
/// Operations per row and round.
const OPS: usize = CHUNK;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ns_per_op(ops: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..ops {
        f();
    }
    start.elapsed().as_nanos() as f64 / ops as f64
}

/// Full handler, raw HMAC and the parts, interleaved round by round (so drift hits all rows
/// alike), medians per row; then the ratio and the write requests per new event.
fn summary() {
    const TARGET: f64 = 2.0;
    println!();
    println!("== ingest hot path: one-run summary (std::time::Instant, median of {ROUNDS} rounds x {OPS} ops) ==");
    let mut verdicts = Vec::new();
    for fx in fixtures() {
        let mut rows: Vec<(&str, Vec<f64>)> = vec![
            ("full_new_event", Vec::new()),
            ("raw_hmac_sha256", Vec::new()),
            ("full_duplicate", Vec::new()),
        ];
        rows.extend(PARTS.iter().map(|(name, _)| (*name, Vec::new())));
        for _ in 0..ROUNDS {
            let full = time_new_events(&fx, OPS).as_nanos() as f64 / OPS as f64;
            rows[0].1.push(full);
            let body = fx.body_of(0);
            rows[1].1.push(ns_per_op(OPS, || {
                black_box(fx.raw_hmac(black_box(body.as_bytes())));
            }));
            let dup = time_duplicates(&fx, OPS).as_nanos() as f64 / OPS as f64;
            rows[2].1.push(dup);
            let sample = Sample::new(&fx);
            for (i, (_, part)) in PARTS.iter().enumerate() {
                rows[3 + i].1.push(ns_per_op(OPS, || part(&fx, &sample)));
            }
        }
        let medians: Vec<(&str, f64)> = rows.into_iter().map(|(n, v)| (n, median(v))).collect();
        let full = medians[0].1;
        let hmac = medians[1].1;
        println!();
        println!("{} Stripe event ({} bytes):", fx.label, fx.size);
        println!(
            "  {:<26} {:>12} {:>10} {:>10}",
            "row", "ns/op", "x raw HMAC", "% of full"
        );
        for (name, ns) in &medians {
            println!(
                "  {:<26} {:>12.0} {:>10.2} {:>9.1}%",
                name,
                ns,
                ns / hmac,
                100.0 * ns / full
            );
        }
        let ratio = full / hmac;
        let verdict = if ratio <= TARGET { "met" } else { "MISSED" };
        println!(
            "  ratio full/raw HMAC = {ratio:.2}x (target <= {TARGET:.1}x: {verdict}); {:.0} MB/s end to end",
            fx.size as f64 / full * 1e3
        );
        verdicts.push((fx.label, ratio, verdict));

        // Write requests per new event, counted by the in-memory store (what DynamoDB would get).
        let service = fx.service();
        let events = fx.new_events(1000);
        for event in &events {
            let resp = block_on(ingest_function::respond(&service, event));
            assert_eq!(resp.status_code, 200);
        }
        let writes = service.store().write_requests();
        println!(
            "  DynamoDB write requests per new event: {:.3} ({writes} writes for {} new events)",
            writes as f64 / events.len() as f64,
            events.len()
        );
    }
    println!();
    for (label, ratio, verdict) in verdicts {
        println!(
            "SUMMARY {label}: full/raw HMAC = {ratio:.2}x (target <= {TARGET:.1}x: {verdict})"
        );
    }
}

/// glibc hands freed memory at the top of the heap back to the OS once more than 128 KiB is free
/// there; with 64 KB bodies allocated and freed per event, whether that happens varies from run to
/// run and turns into page faults (measured: 36 k vs 260 k faults per run, 122 vs 148 us per 64 KB
/// event). A warm Lambda's heap sits at its steady size, so the benchmark re-runs itself with
/// trimming off, unless `GLIBC_TUNABLES` is already set (then it runs as told).
const GLIBC_TUNABLES: &str = "glibc.malloc.trim_threshold=4294967295";

/// Re-runs this binary with [`GLIBC_TUNABLES`]; `None` if it is already set (or cannot re-run).
fn rerun_without_heap_trimming() -> Option<ExitCode> {
    if std::env::var_os("GLIBC_TUNABLES").is_some() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let status = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("GLIBC_TUNABLES", GLIBC_TUNABLES)
        .status()
        .ok()?;
    Some(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

/// Criterion options that take a value (so that their value is not mistaken for a filter).
const VALUE_OPTIONS: &[&str] = &[
    "-c",
    "--color",
    "--colour",
    "-s",
    "--save-baseline",
    "-b",
    "--baseline",
    "--baseline-lenient",
    "--load-baseline",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--profile-time",
    "--plotting-backend",
    "--output-format",
    "--format",
];

/// Whether to print the one-run summary: under `cargo bench` (not `--test`, `--list` or
/// `--profile-time`), and only when no filter is given or the filter is `summary`.
fn wants_summary() -> bool {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench")
        || args
            .iter()
            .any(|a| a == "--test" || a == "--list" || a == "--profile-time")
    {
        return false;
    }
    let mut filter = None;
    let mut skip_value = false;
    for arg in &args {
        if skip_value {
            skip_value = false;
        } else if VALUE_OPTIONS.contains(&arg.as_str()) {
            skip_value = true;
        } else if !arg.starts_with('-') {
            filter = Some(arg.as_str());
        }
    }
    filter.is_none_or(|f| f == "summary")
}

fn main() -> ExitCode {
    if let Some(code) = rerun_without_heap_trimming() {
        return code;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    if wants_summary() {
        summary();
    }
    ExitCode::SUCCESS
}
