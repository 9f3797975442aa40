//! CPU per webhook, side by side in one run: the full ingest against the providers' own
//! verifiers and raw HMAC-SHA256, on the same payloads.
//!
//! `cargo bench -p ingest-function --bench sidebyside` (part of `make bench`, which installs the
//! peers first: `bench/peers/install.sh`) times, for a 2 KB and a 64 KB Stripe event:
//!
//! - **ingest**: [`ingest_function::respond`] on a real-shaped API Gateway event (verify,
//!   identify, build the message, store it in the in-memory store, the response), each call a NEW
//!   event (signed before the timed loop);
//! - **raw HMAC**: HMAC-SHA256 of the same bodies (hmac + sha2 at `opt-level = 3`, the release
//!   profile's setting for them), keyed from the secret each time, over the same new events in
//!   the same order (so both sides read bodies that are not in the cache);
//! - **stripe-node** `webhooks.constructEvent` and **stripe-python** `Webhook.construct_event`
//!   on the same body and header, in their own processes (`bench/peers/*`), timed by themselves
//!   around their loop.
//!
//! It also times the ingest's steps apart on the same events (signature verification, identity,
//! the in-memory store's insert; the rest is the transport, the message's construction and the
//! response), to say what bounds the full figure.
//!
//! Rounds alternate the four (the order rotates each round) so that load from elsewhere hits
//! every side alike; a figure is the median over rounds of the per-round ratio. It prints the
//! figures with their targets and writes them as JSON lines to
//! `target/bench-figures/cpu.jsonl` for `bench-tools figures`. Nothing asserts on a time; a
//! missing peer (not installed) is reported as such and its figures are left out.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a measurement harness: a failed setup ends the run

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use hmac::{Hmac, KeyInit, Mac};
use inbox_core::clock::ManualClock;
use inbox_core::config::DEFAULT_RETENTION_DAYS;
use inbox_core::ingest::Ingestor;
use inbox_core::signature::Unsigned;
use inbox_core::sources::{parse_secrets, Sources};
use inbox_core::store::memory::MemoryInbox;
use serde_json::json;
use sha2::Sha256;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const SECRET: &str = "whsec_local_stripe_secret";
const SOURCES: &str = r#"{"stripe":{"scheme":"stripe"}}"#;
const SECRETS: &str = r#"{"stripe":["whsec_local_stripe_secret"]}"#;
/// Event sizes, iterations per round for each, and the targets (ingest at least `vs_node` times
/// faster than stripe-node, at most `vs_hmac` raw HMACs).
const SIZES: [Size; 2] = [
    Size {
        label: "2KB",
        bytes: 2 * 1024,
        iterations: 2000,
        vs_node: 2.5,
        vs_hmac: 2.0,
    },
    Size {
        label: "64KB",
        bytes: 64 * 1024,
        iterations: 200,
        vs_node: 1.5,
        vs_hmac: 1.4,
    },
];
const ROUNDS: usize = 21;
const ID_DIGITS: usize = 24;

#[derive(Clone, Copy)]
struct Size {
    label: &'static str,
    bytes: usize,
    iterations: usize,
    vs_node: f64,
    vs_hmac: f64,
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Stripe event of the criterion benchmark (`benches/ingest.rs`): exactly `size` bytes.
fn stripe_body(size: usize, n: u64) -> String {
    let mut event = json!({
        "id": format!("evt_{n:0ID_DIGITS$}"),
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_795_000_000,
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
    event["data"]["object"]["metadata"]["padding"] = json!("x".repeat(size - base));
    let body = event.to_string();
    assert_eq!(body.len(), size);
    body
}

struct Fixture {
    sources: Sources,
    template: ApiGatewayV2httpRequest,
    now: i64,
}

impl Fixture {
    fn new() -> Self {
        let secrets = parse_secrets(SECRETS, "WEBHOOK_SECRETS").unwrap();
        let template: ApiGatewayV2httpRequest = serde_json::from_value(json!({
            "version": "2.0", "routeKey": "POST /webhooks/{source}", "rawPath": "/webhooks/stripe",
            "rawQueryString": "",
            "headers": {"content-type": "application/json; charset=utf-8",
                        "host": "abc123.execute-api.us-east-1.amazonaws.com",
                        "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
                        "x-forwarded-for": "54.187.174.169", "x-forwarded-proto": "https"},
            "requestContext": {"accountId": "123456789012", "apiId": "abc123",
                "http": {"method": "POST", "path": "/webhooks/stripe", "protocol": "HTTP/1.1",
                         "sourceIp": "54.187.174.169", "userAgent": "Stripe/1.0"},
                "requestId": "JKJaXmPLvHcESHA=", "routeKey": "POST /webhooks/{source}",
                "stage": "$default", "time": "30/Nov/2026:10:00:00 +0000", "timeEpoch": 0},
            "pathParameters": {"source": "stripe"}, "isBase64Encoded": false
        }))
        .unwrap();
        Self {
            sources: Sources::from_json(SOURCES, &secrets).unwrap(),
            template,
            now: now_secs(),
        }
    }

    fn signature(&self, body: &str) -> String {
        let signed = self
            .sources
            .get("stripe")
            .unwrap()
            .scheme
            .sign(&Unsigned::new(body.as_bytes(), self.now, ""))
            .unwrap();
        signed.headers[0].1.to_str().unwrap().to_owned()
    }

    fn event(&self, body: String) -> ApiGatewayV2httpRequest {
        let mut event = self.template.clone();
        let header = self.signature(&body);
        event
            .headers
            .insert("stripe-signature", header.parse().unwrap());
        event
            .headers
            .insert(http::header::CONTENT_LENGTH, body.len().into());
        event.body = Some(body);
        event
    }

    fn service(&self) -> Ingestor<MemoryInbox, ManualClock> {
        Ingestor::new(
            self.sources.clone(),
            MemoryInbox::new(),
            ManualClock::at_secs(self.now),
            inbox_core::config::DEFAULT_MAX_BODY_BYTES,
            DEFAULT_RETENTION_DAYS,
        )
    }
}

/// A peer process speaking the line protocol of `bench/peers/*`.
struct Peer {
    name: &'static str,
    version: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Peer {
    fn start(name: &'static str, mut cmd: Command) -> Result<Self, String> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{name}: cannot start: {e}"))?;
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut peer = Self {
            name,
            version: String::new(),
            child,
            input,
            output,
        };
        peer.version = peer.ask("version")?;
        Ok(peer)
    }

    fn ask(&mut self, line: &str) -> Result<String, String> {
        writeln!(self.input, "{line}").map_err(|e| format!("{}: {e}", self.name))?;
        self.input
            .flush()
            .map_err(|e| format!("{}: {e}", self.name))?;
        let mut answer = String::new();
        self.output
            .read_line(&mut answer)
            .map_err(|e| format!("{}: {e}", self.name))?;
        if answer.is_empty() {
            return Err(format!(
                "{}: no answer to {line:?} (see its stderr)",
                self.name
            ));
        }
        Ok(answer.trim().to_owned())
    }

    /// Nanoseconds per call over `n` calls.
    fn run(&mut self, label: &str, n: usize) -> Result<f64, String> {
        let ns: f64 = self
            .ask(&format!("run {label} {n}"))?
            .parse()
            .map_err(|e| format!("{}: {e}", self.name))?;
        Ok(ns / n as f64)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = writeln!(self.input, "quit");
        let _ = self.child.wait();
    }
}

fn peers() -> Vec<Peer> {
    let dir = workspace().join("bench");
    let deps = dir.join(".peers");
    let mut found = Vec::new();
    let mut node = Command::new("node");
    node.arg(dir.join("peers/stripe_node.js"))
        .env("NODE_PATH", deps.join("node/node_modules"));
    let mut python = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()));
    python
        .arg(dir.join("peers/stripe_python.py"))
        .env("PYTHONPATH", deps.join("python"));
    for (name, cmd) in [("stripe-node", node), ("stripe-python", python)] {
        match Peer::start(name, cmd) {
            Ok(p) => found.push(p),
            Err(e) => eprintln!("peer left out: {e} (run bench/peers/install.sh)"),
        }
    }
    found
}

fn raw_hmac(key: &[u8], body: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(body);
    mac.finalize().into_bytes().into()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Per-round times (ns per call) of each side.
#[derive(Default)]
struct Samples {
    ingest: Vec<f64>,
    hmac: Vec<f64>,
    peers: Vec<Vec<f64>>,
}

fn keep_heap_untrimmed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes a malloc tuning parameter; no memory is touched.
        let set = unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) };
        assert_eq!(set, 1, "mallopt(M_TRIM_THRESHOLD) failed");
    }
}

fn main() {
    // `cargo test --benches` runs bench targets with `--test`-like flags: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("sidebyside: run with `cargo bench` (it times; it does not test)");
        return;
    }
    keep_heap_untrimmed();
    let fx = Fixture::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let figures_dir = workspace().join("target/bench-figures");
    std::fs::create_dir_all(&figures_dir).unwrap();
    let mut peers = peers();
    let mut lines = Vec::new();
    let mut next_id = 1u64;
    for size in SIZES {
        let payload_path = figures_dir.join(format!("stripe-{}.json", size.label));
        let body = stripe_body(size.bytes, 0);
        let payload = json!({"id": format!("evt_{:0ID_DIGITS$}", 0), "body": body,
                             "header": fx.signature(&body), "secret": SECRET});
        std::fs::write(&payload_path, payload.to_string()).unwrap();
        for peer in &mut peers {
            let ok = peer.ask(&format!("load {} {}", size.label, payload_path.display()));
            assert_eq!(ok.as_deref(), Ok("ok"), "{}", peer.name);
        }
        // The check: a new event is accepted.
        let service = fx.service();
        let reply = runtime.block_on(ingest_function::respond(&service, &fx.event(body.clone())));
        assert_eq!(reply.status_code, 200);

        let mut s = Samples {
            peers: vec![Vec::new(); peers.len()],
            ..Samples::default()
        };
        for round in 0..=ROUNDS {
            let events: Vec<_> = (0..size.iterations)
                .map(|_| {
                    next_id += 1;
                    fx.event(stripe_body(size.bytes, next_id))
                })
                .collect();
            let service = fx.service();
            let sides = 2 + peers.len();
            let mut times = vec![0.0; sides];
            for k in 0..sides {
                let side = (k + round) % sides;
                times[side] = match side {
                    0 => {
                        let started = Instant::now();
                        for event in &events {
                            black_box(runtime.block_on(ingest_function::respond(&service, event)));
                        }
                        started.elapsed().as_nanos() as f64 / size.iterations as f64
                    }
                    1 => {
                        // The same bodies the ingest reads, in the same order (a new event's
                        // body is not in the cache either way).
                        let started = Instant::now();
                        for event in &events {
                            black_box(raw_hmac(SECRET.as_bytes(), black_box(self::body(event))));
                        }
                        started.elapsed().as_nanos() as f64 / size.iterations as f64
                    }
                    p => peers[p - 2].run(size.label, size.iterations).unwrap(),
                };
            }
            assert_eq!(service.store().write_requests(), size.iterations);
            if round == 0 {
                continue; // warm-up
            }
            s.ingest.push(times[0]);
            s.hmac.push(times[1]);
            for (p, t) in times[2..].iter().enumerate() {
                s.peers[p].push(*t);
            }
        }
        lines.extend(report(size, &mut s, &peers));
        lines.push(breakdown(
            &fx,
            size,
            &mut next_id,
            median(&mut s.ingest.clone()),
        ));
    }
    let path = figures_dir.join("cpu.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    println!("figures written to {}", path.display());
}

/// Prints one size's figures and returns them as JSON lines.
fn report(size: Size, s: &mut Samples, peers: &[Peer]) -> Vec<String> {
    let paired = |a: &[f64], b: &[f64]| {
        let mut r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        median(&mut r)
    };
    let ingest = median(&mut s.ingest.clone());
    let hmac = median(&mut s.hmac.clone());
    let vs_hmac = paired(&s.ingest, &s.hmac);
    println!(
        "== CPU per webhook, {} Stripe event ({ROUNDS} rounds x {} calls, medians) ==",
        size.label, size.iterations
    );
    println!("  ingest (full, in-memory store)  {:>9.2} µs", ingest / 1e3);
    println!("  raw HMAC-SHA256 (opt-level 3)   {:>9.2} µs", hmac / 1e3);
    let mut out = vec![figure(
        &format!("cpu.{}.vs_hmac", size.label),
        &format!(
            "ingest / raw HMAC-SHA256 at opt-level 3, {} Stripe event",
            size.label
        ),
        &format!("≤ {:.1}×", size.vs_hmac),
        &format!(
            "{vs_hmac:.2}× ({:.2} µs / {:.2} µs)",
            ingest / 1e3,
            hmac / 1e3
        ),
        Some(vs_hmac <= size.vs_hmac),
    )];
    for (i, peer) in peers.iter().enumerate() {
        let t = median(&mut s.peers[i].clone());
        let faster = paired(&s.peers[i], &s.ingest);
        println!(
            "  {:<31} {:>9.2} µs   ingest is {faster:.2}x faster",
            format!("{} {}", peer.name, peer.version),
            t / 1e3
        );
        let node = peer.name == "stripe-node";
        out.push(figure(
            &format!("cpu.{}.vs_{}", size.label, peer.name.replace("stripe-", "")),
            &format!(
                "ingest faster than {} {} ({}), {} Stripe event",
                peer.name,
                peer.version,
                if node {
                    "webhooks.constructEvent"
                } else {
                    "Webhook.construct_event"
                },
                size.label
            ),
            &if node {
                format!("≥ {:.1}×", size.vs_node)
            } else {
                "—".into()
            },
            &format!("{faster:.2}× ({:.2} µs vs {:.2} µs)", ingest / 1e3, t / 1e3),
            node.then_some(faster >= size.vs_node),
        ));
    }
    println!(
        "  ingest / raw HMAC = {vs_hmac:.2}x (target <= {:.1}x)",
        size.vs_hmac
    );
    out
}

fn body(e: &ApiGatewayV2httpRequest) -> &[u8] {
    e.body.as_deref().unwrap_or_default().as_bytes()
}

/// Median ns per call of the ingest's steps, timed apart on new events.
fn breakdown(fx: &Fixture, size: Size, next_id: &mut u64, full: f64) -> String {
    use inbox_core::identity::{identify_lazy, BodyHash};
    use inbox_core::signature::Request;
    use inbox_core::store::{Inbox, NewMessage};
    let source = fx.sources.get("stripe").unwrap().clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut steps: [Vec<f64>; 3] = Default::default();
    for _ in 0..ROUNDS {
        let events: Vec<_> = (0..size.iterations)
            .map(|_| {
                *next_id += 1;
                fx.event(stripe_body(size.bytes, *next_id))
            })
            .collect();
        let started = Instant::now();
        for e in &events {
            let verdict = source
                .scheme
                .verify(Request::new(&e.headers, body(e), fx.now));
            black_box(verdict.ready());
        }
        steps[0].push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        let mut identities = Vec::with_capacity(events.len());
        for e in &events {
            identities.push(identify_lazy(
                &source.event_id,
                source.id_signed,
                source.event_type.as_ref(),
                &e.headers,
                &BodyHash::new(body(e)),
            ));
        }
        steps[1].push(started.elapsed().as_nanos() as f64);
        let messages: Vec<_> = events
            .iter()
            .zip(identities)
            .map(|(e, id)| NewMessage {
                key: inbox_core::domain::MessageKey::new(source.name.clone(), id.event_id),
                event_type: id.event_type,
                received_at_ms: 0,
                body: body(e).to_vec(),
                body_digest: None,
                headers: Vec::new(),
                provider_id: None,
                unidentified: None,
                batch: None,
            })
            .collect();
        let store = MemoryInbox::new();
        let started = Instant::now();
        for m in &messages {
            black_box(runtime.block_on(store.put_if_absent(m)).unwrap());
        }
        steps[2].push(started.elapsed().as_nanos() as f64);
    }
    let per = |v: &mut Vec<f64>| median(v) / size.iterations as f64;
    let (verify, identify, store) = (per(&mut steps[0]), per(&mut steps[1]), per(&mut steps[2]));
    let rest = (full - verify - identify - store).max(0.0);
    let text = format!(
        "verify {:.2} µs, identify (JSON) {:.2} µs, in-memory store {:.2} µs, rest (transport, message, response) {:.2} µs",
        verify / 1e3,
        identify / 1e3,
        store / 1e3,
        rest / 1e3
    );
    println!("  where the time goes: {text}");
    figure(
        &format!("cpu.{}.steps", size.label),
        &format!("ingest's steps timed apart, {} Stripe event", size.label),
        "—",
        &text,
        None,
    )
}

/// One figure as the JSON line `bench-tools figures` reads.
fn figure(id: &str, name: &str, target: &str, measured: &str, met: Option<bool>) -> String {
    json!({"id": id, "figure": name, "target": target, "measured": measured, "met": met})
        .to_string()
}
