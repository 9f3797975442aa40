//! Smoke test of the deployable artifact through the real Lambda runtime path.
//!
//! The release binary `$INGEST_BOOTSTRAP` (target/lambda/ingest/bootstrap, built by
//! `cargo lambda build --release --bin ingest` in `make test`) runs as a Lambda custom runtime
//! against cargo lambda's runtime API emulator (`cargo lambda watch --only-lambda-apis`), with the
//! function's configuration in its environment as in the cloud, writing to a fresh table in the
//! emulators (DynamoDB Local). The sample events of `events/` go in through the Lambda Invoke API, exactly as
//! `cargo lambda invoke ingest --data-file events/…` sends them.
//!
//! Verified wiring (cargo-lambda 1.9.2):
//! - runtime API for a function named `ingest`: `AWS_LAMBDA_RUNTIME_API=http://127.0.0.1:<port>/.rt/ingest`
//!   (the `http://` is required: without it `lambda_runtime` panics with "Unable to convert to
//!   URL"); the bare `http://127.0.0.1:<port>/.rt` serves the function named `_`;
//! - Invoke API: `POST http://127.0.0.1:<port>/2015-03-31/functions/ingest/invocations` with the
//!   event as body; it answers 200 with the function's result (the HTTP response object).

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::store::attr;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The function name the bootstrap registers under and the Invoke API addresses.
const FUNCTION: &str = "ingest";
const PING_ID: &str = "5d1f3a60-ce3b-11f0-8d6a-2a1b3c4d5e6f";

/// Kills (and reaps) every child process when dropped, so that nothing outlives the test, even
/// when an assertion panics.
#[derive(Default)]
struct Children(Vec<(&'static str, Child)>);

impl Children {
    fn add(&mut self, name: &'static str, child: Child) -> usize {
        self.0.push((name, child));
        self.0.len() - 1
    }

    /// Panics if child `i` has exited (e.g. a cold-start failure), with its captured output.
    fn assert_running(&mut self, i: usize, output: &Lines) {
        let (name, child) = &mut self.0[i];
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{name} exited early ({status}); its output:\n{}",
                output.text()
            );
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        // Reverse order: the function before the emulator it polls.
        for (_, child) in self.0.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Lines read from a child's stdout or stderr by a background thread.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn capture(&self, pipe: impl Read + Send + 'static) {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }

    fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn text(&self) -> String {
        self.snapshot().join("\n")
    }
}

/// Polls `cond` every 20 ms until it holds or `timeout` passes.
fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

/// A minimal HTTP/1.0 POST (the server closes the connection after the response, so no chunked
/// decoding is needed). Returns the status and the body. While waiting for the answer it calls
/// `alive` every 100 ms, which may panic (e.g. when the function process has died), and gives up
/// after `timeout`.
fn http_post(
    port: u16,
    path: &str,
    body: &[u8],
    timeout: Duration,
    mut alive: impl FnMut(),
) -> std::io::Result<(u16, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    let mut buf = [0_u8; 8192];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if Instant::now() >= deadline {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer within {timeout:?}"),
                    ));
                }
                alive();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "no HTTP header end in {:?}",
                String::from_utf8_lossy(&raw)
            ))
        })?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line in {head:?}")))?;
    let mut rest = raw[split + 4..].to_vec();
    if let Some(len) = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())?
    }) {
        rest.truncate(len);
    }
    Ok((status, rest))
}

fn event_file(name: &str) -> PathBuf {
    integration_tests::root().join("events").join(name)
}

fn read_event(name: &str) -> Value {
    let text = std::fs::read_to_string(event_file(name))
        .unwrap_or_else(|e| panic!("read events/{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("events/{name} is not JSON: {e}"))
}

/// The raw body bytes an event carries (base64-decoded when flagged).
fn raw_body(event: &Value) -> Vec<u8> {
    use base64::Engine as _;
    let body = event["body"].as_str().expect("event body");
    if event["isBase64Encoded"].as_bool() == Some(true) {
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("base64 body")
    } else {
        body.as_bytes().to_vec()
    }
}

/// The function's answer to an invocation: the HTTP API response's status and parsed body.
#[derive(Debug)]
struct Answer {
    status: i64,
    json: Value,
}

fn parse_answer(raw: &[u8], what: &str) -> Answer {
    let resp: Value = serde_json::from_slice(raw).unwrap_or_else(|e| {
        panic!(
            "{what}: the invocation result is not JSON ({e}): {:?}",
            String::from_utf8_lossy(raw)
        )
    });
    let body = resp["body"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no body in {resp}"));
    assert_eq!(
        resp["headers"]["content-type"], "application/json",
        "{what}: content type of {resp}"
    );
    Answer {
        status: resp["statusCode"]
            .as_i64()
            .unwrap_or_else(|| panic!("{what}: no statusCode in {resp}")),
        json: serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{what}: body is not JSON ({e}): {body:?}")),
    }
}

/// The running emulator and function; dropping it kills both.
struct Lambda {
    port: u16,
    children: Children,
    function_idx: usize,
    function_out: Lines,
    function_err: Lines,
    watch_out: Lines,
}

impl Lambda {
    fn output(&self) -> String {
        format!(
            "function stdout:\n{}\nfunction stderr:\n{}\ncargo lambda watch:\n{}",
            self.function_out.text(),
            self.function_err.text(),
            self.watch_out.text()
        )
    }

    /// Panics if the function process has exited (e.g. a cold-start failure).
    fn assert_function_running(&mut self) {
        let output = self.output();
        let (name, child) = &mut self.children.0[self.function_idx];
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{name} exited ({status}) while invocations were pending\n{output}");
        }
    }

    /// Invokes the function with `events/<name>` through the Lambda Invoke API.
    fn invoke(&mut self, name: &str) -> Answer {
        let body = std::fs::read(event_file(name)).expect("read event file");
        let path = format!("/2015-03-31/functions/{FUNCTION}/invocations");
        let port = self.port;
        let result = http_post(port, &path, &body, Duration::from_secs(30), || {
            self.assert_function_running();
        });
        let (status, raw) =
            result.unwrap_or_else(|e| panic!("invoke {name}: {e}\n{}", self.output()));
        assert_eq!(
            status,
            200,
            "invoke {name}: Invoke API status; body {:?}",
            String::from_utf8_lossy(&raw)
        );
        parse_answer(&raw, name)
    }

    /// Invokes the function with `events/<name>` through `cargo lambda invoke --data-file`.
    fn cli_invoke(&self, name: &str) -> Answer {
        let out = Command::new(cargo_lambda())
            .args([
                "lambda",
                "invoke",
                "--invoke-address",
                "127.0.0.1",
                "--invoke-port",
            ])
            .arg(self.port.to_string())
            .arg("--data-file")
            .arg(event_file(name))
            .arg(FUNCTION)
            .env("PATH", venv_path())
            .stdin(Stdio::null())
            .output()
            .expect("run cargo lambda invoke");
        assert!(
            out.status.success(),
            "cargo lambda invoke {name} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        parse_answer(&out.stdout, name)
    }
}

fn cargo_lambda() -> PathBuf {
    integration_tests::venv().join("bin").join("cargo-lambda")
}

/// PATH with the venv's bin first (cargo lambda finds zig through the venv's python).
fn venv_path() -> std::ffi::OsString {
    let mut paths = vec![integration_tests::venv().join("bin")];
    if let Some(p) = std::env::var_os("PATH") {
        paths.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(paths).expect("PATH")
}

fn s<'a>(item: &'a HashMap<String, AttributeValue>, k: &str) -> &'a str {
    attr::get_s(item, k).unwrap_or_else(|| panic!("item has no string {k}: {item:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn release_artifact_serves_the_sample_events_through_the_lambda_runtime_api() {
    let bootstrap = std::env::var_os("INGEST_BOOTSTRAP").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "INGEST_BOOTSTRAP is not set: this smoke test runs the release artifact. Run `make test` \
             (it builds target/lambda/ingest/bootstrap with `cargo lambda build --release --bin ingest` \
             and sets INGEST_BOOTSTRAP, AWS_ENDPOINT_URL and INBOX_VENV)"
        )
    });
    assert!(
        bootstrap.is_file(),
        "INGEST_BOOTSTRAP={} does not exist: build it with `make build-lambda` (or run `make test`)",
        bootstrap.display()
    );
    assert!(
        cargo_lambda().is_file(),
        "{} is missing: run `make venv` (or `make test`)",
        cargo_lambda().display()
    );
    let endpoints = integration_tests::endpoints();

    // A fresh table, as template.yaml declares it.
    let sdk = integration_tests::sdk_config().await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let table = format!("inbox-smoke-{}", uuid::Uuid::new_v4().simple());
    integration_tests::create_table(&client, &table).await;

    let mut children = Children::default();

    // 1. cargo lambda's runtime API emulator, alone.
    let port = free_port();
    let watch_out = Lines::default();
    let mut watch = Command::new(cargo_lambda())
        .args([
            "lambda",
            "watch",
            "--only-lambda-apis",
            "--invoke-address",
            "127.0.0.1",
            "--invoke-port",
        ])
        .arg(port.to_string())
        .current_dir(integration_tests::root())
        .env("PATH", venv_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cargo lambda watch");
    watch_out.capture(watch.stdout.take().expect("watch stdout"));
    watch_out.capture(watch.stderr.take().expect("watch stderr"));
    let watch_idx = children.add("cargo lambda watch", watch);
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listening = wait_until(Duration::from_secs(20), || {
        children.assert_running(watch_idx, &watch_out);
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    });
    assert!(
        listening,
        "cargo lambda watch did not listen on {addr} within 20 s:\n{}",
        watch_out.text()
    );

    // 2. The release artifact as the function, with only the environment Lambda would give it.
    let read_local = |f: &str| {
        std::fs::read_to_string(integration_tests::root().join("local").join(f))
            .expect("read local config")
    };
    let function_out = Lines::default();
    let function_err = Lines::default();
    let mut function = Command::new(&bootstrap)
        .env_clear()
        .env(
            "AWS_LAMBDA_RUNTIME_API",
            format!("http://127.0.0.1:{port}/.rt/{FUNCTION}"),
        )
        .env("AWS_LAMBDA_FUNCTION_NAME", FUNCTION)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
        .envs(endpoints.env())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("TABLE_NAME", &table)
        .env("WEBHOOK_SOURCES", read_local("sources.json"))
        .env("WEBHOOK_SECRETS", read_local("secrets.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the bootstrap");
    function_out.capture(function.stdout.take().expect("bootstrap stdout"));
    function_err.capture(function.stderr.take().expect("bootstrap stderr"));
    let function_idx = children.add("bootstrap", function);

    let mut lambda = Lambda {
        port,
        children,
        function_idx,
        function_out: function_out.clone(),
        function_err: function_err.clone(),
        watch_out,
    };

    // 3. The sample events. (An invocation waits until the function polls for it, so no readiness
    //    wait is needed; a cold-start failure shows up as the process exiting, checked while
    //    waiting.)
    // GitHub does not sign its delivery id: the ping is keyed by its signed body's SHA-256, so
    // the base64 copy, the same raw bytes under another delivery id, is a duplicate too.
    let ping_key = hex::encode(Sha256::digest(raw_body(&read_event("github-ping.json"))));
    let first = lambda.invoke("github-ping.json");
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(
        first.json,
        serde_json::json!({"status": "accepted", "id": ping_key})
    );

    let again = lambda.cli_invoke("github-ping.json");
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(
        again.json,
        serde_json::json!({"status": "duplicate", "id": ping_key})
    );

    let b64 = lambda.invoke("github-ping-base64.json");
    assert_eq!(b64.status, 200, "{b64:?}");
    assert_eq!(
        b64.json,
        serde_json::json!({"status": "duplicate", "id": ping_key})
    );

    let stale = lambda.invoke("stripe-checkout-session-completed.json");
    assert_eq!(stale.status, 401, "{stale:?}");
    assert_eq!(
        stale.json["error"], "timestamp_out_of_tolerance",
        "{stale:?}"
    );

    let bad = lambda.invoke("bad-signature.json");
    assert_eq!(bad.status, 401, "{bad:?}");
    assert_eq!(bad.json["error"], "signature_invalid", "{bad:?}");

    let unknown = lambda.invoke("unknown-source.json");
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert_eq!(unknown.json["error"], "unknown_source", "{unknown:?}");

    // 4. The table: one message (the plain and the base64 ping are the same raw bytes), with
    //    the first delivery id as metadata; two journal records and a counter for the repeats;
    //    nothing for the refused requests.
    let items = integration_tests::scan_all(&client, &table).await;
    let ping = read_event("github-ping.json");
    let ping_b64 = read_event("github-ping-base64.json");
    assert_eq!(raw_body(&ping), raw_body(&ping_b64));
    let mut messages: Vec<_> = items.iter().filter(|i| s(i, "kind") == "message").collect();
    messages.sort_by_key(|i| s(i, "pk").to_owned());
    let keys: Vec<_> = messages.iter().map(|i| (s(i, "pk"), s(i, "sk"))).collect();
    assert_eq!(
        keys,
        [(format!("MSG#github#{ping_key}").as_str(), "MSG")],
        "message items: {messages:?}"
    );
    let m = messages[0];
    assert_eq!(s(m, "source"), "github");
    assert_eq!(s(m, "event_type"), "ping");
    assert_eq!(s(m, "status"), "pending");
    assert_eq!(
        s(m, "provider_id"),
        PING_ID,
        "the unsigned delivery id, as metadata"
    );
    assert_eq!(
        s(m, "body_sha256"),
        ping_key,
        "stored body is the raw (decoded) bytes"
    );
    let deliveries: Vec<_> = items
        .iter()
        .filter(|i| s(i, "kind") == "delivery")
        .collect();
    assert_eq!(
        deliveries.len(),
        2,
        "one journal record per repeat: {deliveries:?}"
    );
    for d in &deliveries {
        assert_eq!(s(d, "pk"), format!("MSG#github#{ping_key}"));
    }
    let counters: Vec<_> = items
        .iter()
        .filter(|i| s(i, "kind") == "delivery_count")
        .collect();
    assert_eq!(counters.len(), 1, "{counters:?}");
    assert_eq!(items.len(), 4, "nothing else in the table: {items:?}");

    // 5. The function's log: one JSON line per request, with no secret, signature or body.
    let logged = wait_until(Duration::from_secs(10), || {
        function_out
            .snapshot()
            .iter()
            .filter(|l| l.contains("\"webhook stored\"") || l.contains("\"webhook refused\""))
            .count()
            >= 6
    });
    let lines = function_out.snapshot();
    assert!(
        logged,
        "expected 6 request log lines, got:\n{}",
        lines.join("\n")
    );
    let mut outcomes = Vec::new();
    for line in &lines {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line}"));
        let fields = &v["fields"];
        if let Some(o) = fields["outcome"]
            .as_str()
            .or_else(|| fields["error"].as_str())
        {
            outcomes.push((fields["status"].as_i64().unwrap_or_default(), o.to_owned()));
        }
    }
    assert_eq!(
        outcomes,
        [
            (200, "accepted".to_owned()),
            (200, "duplicate".to_owned()),
            (200, "duplicate".to_owned()),
            (401, "timestamp_out_of_tolerance".to_owned()),
            (401, "signature_invalid".to_owned()),
            (404, "unknown_source".to_owned()),
        ],
        "log:\n{}",
        lines.join("\n")
    );

    let mut forbidden: Vec<String> = Vec::new();
    let secrets: HashMap<String, Vec<String>> =
        serde_json::from_str(&read_local("secrets.json")).expect("secrets JSON");
    forbidden.extend(secrets.into_values().flatten());
    for name in [
        "github-ping.json",
        "github-ping-base64.json",
        "bad-signature.json",
        "stripe-checkout-session-completed.json",
        "unknown-source.json",
    ] {
        let event = read_event(name);
        let headers = &event["headers"];
        for h in [
            "x-hub-signature-256",
            "x-hub-signature",
            "stripe-signature",
            "x-signature",
        ] {
            if let Some(v) = headers[h].as_str() {
                forbidden.push(v.to_owned());
                // the bare hex, too (`sha256=<hex>`, `t=…,v1=<hex>`)
                forbidden.extend(
                    v.split([',', '='])
                        .filter(|p| p.len() >= 32)
                        .map(str::to_owned),
                );
            }
        }
        forbidden.push(event["body"].as_str().expect("body").to_owned());
    }
    forbidden.extend(
        [
            "Keep it logically awesome",
            "jenny.rosen@example.com",
            "cs_test_a1",
        ]
        .map(String::from),
    );
    let all = lines.join("\n") + &function_err.text();
    for f in &forbidden {
        assert!(
            !all.contains(f.as_str()),
            "the function's log contains {f:?}:\n{all}"
        );
    }

    lambda.assert_function_running();
    drop(lambda); // kills the function and the emulator (also done on panic)
}

/// The committed `events/*.json` are what `events/generate.py` produces from the current local
/// secrets (a changed secret or generator without regenerating would break the samples).
#[test]
fn sample_events_are_up_to_date() {
    let out = Command::new(integration_tests::python())
        .arg(integration_tests::root().join("events/generate.py"))
        .arg("--check")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "run events/generate.py with {}: {e}",
                integration_tests::python().display()
            )
        });
    assert!(
        out.status.success(),
        "events/ is outdated: run `.venv/bin/python events/generate.py`\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
