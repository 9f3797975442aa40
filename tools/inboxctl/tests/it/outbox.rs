//! `inboxctl dest`, `deliveries`, `listen` and the outbox part of `stats`, run as an operator runs
//! them, against the emulator: every change journaled, deliveries listed with their attempt
//! journal, retried in bulk, replayed; the local receiver verifies signatures and answers as told.

use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::delivery::{AttemptRecord, DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::SecretText;
use inbox_core::outbox::sign::Signer;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::outbox::{key, reference};
use integration_tests::{api_event, Harness};
use serde_json::Value;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::time::Duration;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    #[track_caller]
    fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }
}

struct Env {
    h: Harness,
    store: DynamoTable,
}

impl Env {
    async fn new() -> Self {
        let h = Harness::new().await;
        let store = DynamoTable::new(h.client.clone(), h.table.clone());
        Self { h, store }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_inboxctl"));
        c.envs(integration_tests::endpoints().env())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("TABLE_NAME", &self.h.table)
            .env("USER", "ana")
            .env_remove("INBOXCTL_JSON")
            .env_remove("DELIVERY_QUEUE_URL")
            .env_remove("INBOXCTL_SECRET")
            .env_remove("DESTINATION_SECRETS_KEY")
            .current_dir(integration_tests::root());
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        let out = self.command().args(args).output().expect("run inboxctl");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ingest(&self, id: &str) {
        let body = integration_tests::stripe_event(id, "invoice.paid", 0);
        let headers = self.h.sign("stripe", body.as_bytes(), id);
        let reply = self
            .h
            .send(&api_event("POST", "stripe", &headers, Some(&body), false))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.json);
    }
}

#[tokio::test]
async fn destinations_are_managed_and_every_change_is_journaled() {
    let env = Env::new().await;
    let refused = env.run(&[
        "dest",
        "add",
        "crm",
        "--url",
        "http://crm.example/h",
        "--pattern",
        "stripe:*",
    ]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("https"), "{}", refused.stderr);
    let bad = env.run(&[
        "dest",
        "add",
        "crm",
        "--url",
        "https://crm.example/h",
        "--pattern",
        "stripe",
    ]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("source:type"), "{}", bad.stderr);
    let added = env
        .run(&[
            "--json",
            "dest",
            "add",
            "crm",
            "--url",
            "https://crm.example/h",
            "--pattern",
            "stripe:invoice.*",
            "--pattern",
            "mailer:*",
            "--rate",
            "5",
            "--burst",
            "2",
        ])
        .ok()
        .json();
    let secret = added["secret"]
        .as_str()
        .expect("a generated secret, shown once");
    assert!(SecretText::parse(secret).is_ok());
    assert_eq!(
        env.run(&[
            "dest",
            "add",
            "crm",
            "--url",
            "https://crm.example/h",
            "--pattern",
            "*"
        ])
        .code,
        2,
        "never overwritten"
    );
    let list = env.run(&["--json", "dest", "list"]).ok().json();
    assert_eq!(list[0]["id"], "crm");
    assert_eq!(list[0]["circuit"], "closed");
    assert_eq!(
        list[0]["patterns"],
        serde_json::json!(["stripe:invoice.*", "mailer:*"])
    );
    env.run(&["dest", "pause", "crm", "--reason", "maintenance window"])
        .ok();
    // A delivery parked while it is paused: its backlog, one Query of its index partition.
    let mut parked = OutboundDelivery::new(&"crm".parse().unwrap(), &key("evt_parked"), None, 1);
    parked.parked = Some(inbox_core::outbox::delivery::Parked {
        reason: inbox_core::outbox::delivery::ParkReason::Paused,
        since: 2,
    });
    env.store.save_delivery(&parked, None).await.unwrap();
    let shown = env.run(&["--json", "dest", "show", "crm"]).ok().json();
    assert_eq!(
        (shown["state"].as_str(), shown["reason"].as_str()),
        (Some("paused"), Some("maintenance window"))
    );
    assert_eq!(shown["backlog"]["parked"], 1, "{shown}");
    // The circuit's recent failure rate: no attempt yet.
    assert_eq!(
        (&shown["circuit"], &shown["breaker"]["requests"]),
        (&serde_json::json!("closed"), &serde_json::json!(0)),
        "{shown}"
    );
    let human = env.run(&["dest", "show", "crm"]).ok().stdout;
    assert!(human.contains("backlog 1 parked"), "{human}");
    assert!(human.contains("no requests in the last 120 s"), "{human}");
    let resumed = env.run(&["dest", "resume", "crm"]).ok();
    assert!(
        resumed.stdout.contains("1 parked deliveries released"),
        "{}",
        resumed.stdout
    );
    let shown = env.run(&["--json", "dest", "show", "crm"]).ok().json();
    assert_eq!(shown["backlog"]["parked"], 0, "released: {shown}");
    let rotated = env
        .run(&[
            "--json",
            "dest",
            "rotate-secret",
            "crm",
            "--keep-old-for",
            "1h",
        ])
        .ok()
        .json();
    assert_eq!(rotated["active_secrets"], 2);
    assert_ne!(rotated["secret"].as_str(), Some(secret));
    let shown = env.run(&["--json", "dest", "show", "crm"]).ok().json();
    assert_eq!(shown["state"], "active");
    let journal: Vec<(String, String)> = shown["journal"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["actor"].as_str().unwrap().to_owned(),
                e["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let actions: Vec<&str> = journal.iter().map(|(_, a)| a.as_str()).collect();
    assert_eq!(
        actions,
        vec!["added", "paused", "resumed", "secret-rotated"]
    );
    assert!(journal.iter().all(|(who, _)| who == "ana"), "{journal:?}");
    assert!(
        !shown.to_string().contains("whsec_"),
        "show never prints a secret"
    );
    let human = env.run(&["dest", "show", "crm"]).ok();
    assert!(human.stdout.contains("secret-rotated") && !human.stdout.contains("whsec_"));
    env.run(&["dest", "rm", "crm"]).ok();
    assert_eq!(env.run(&["dest", "show", "crm"]).code, 2);
    assert_eq!(env.run(&["dest", "pause", "crm"]).code, 2);
}

/// A failed delivery of `id` to `crm`, with two journaled attempts.
async fn failed_delivery(env: &Env, id: &str) {
    save_failed_delivery(&env.store, "crm", id).await;
}

/// Stores a delivery of Stripe event `id` to `destination` that failed after a 500 and a 503
/// (both journaled, body "upstream down"); also the console test's.
pub(crate) async fn save_failed_delivery(store: &DynamoTable, destination: &str, id: &str) {
    let now = SystemClock.now_millis();
    let mut d = OutboundDelivery::new(&destination.parse().unwrap(), &key(id), None, now - 60_000);
    for (i, status) in [500u16, 503].into_iter().enumerate() {
        d.journal_attempt(AttemptRecord {
            at: now - 50_000 + i as i64,
            attempt: i as u32 + 1,
            status: Some(status),
            duration_ms: 12,
            error: Some(format!("HTTP {status}")),
            body: "upstream down".into(),
            outcome: "retry".into(),
        });
    }
    d.attempts = 2;
    d.status = DeliveryStatus::Failed;
    d.last_error = Some("HTTP 503; gave up after 2 attempts".into());
    store.save_delivery(&d, None).await.unwrap();
}

#[tokio::test]
async fn deliveries_are_listed_shown_retried_in_bulk_and_replayed() {
    let env = Env::new().await;
    env.run(&[
        "dest",
        "add",
        "crm",
        "--url",
        "https://crm.example/h",
        "--pattern",
        "stripe:*",
    ])
    .ok();
    for id in ["evt_d1", "evt_d2"] {
        env.ingest(id).await;
        failed_delivery(&env, id).await;
    }
    let listed = env
        .run(&[
            "--json",
            "deliveries",
            "list",
            "--status",
            "failed",
            "--dest",
            "crm",
        ])
        .ok()
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(env
        .run(&["--json", "deliveries", "list", "--status", "delivered"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .is_empty());
    let shown = env
        .run(&["--json", "deliveries", "show", "crm", "stripe", "evt_d1"])
        .ok()
        .json();
    assert_eq!(shown["journal"].as_array().unwrap().len(), 2);
    assert_eq!(shown["journal"][1]["status"], 503);
    assert_eq!(shown["journal"][0]["body"], "upstream down");
    let human = env
        .run(&["deliveries", "show", "crm", "stripe", "evt_d1"])
        .ok();
    assert!(
        human.stdout.contains("upstream down") && human.stdout.contains("503"),
        "{}",
        human.stdout
    );
    let dry = env
        .run(&[
            "--json",
            "deliveries",
            "retry",
            "--status",
            "failed",
            "--dest",
            "crm",
        ])
        .ok()
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        env.store
            .delivery(&reference("crm", "evt_d1"))
            .await
            .unwrap()
            .unwrap()
            .status,
        DeliveryStatus::Failed
    );
    let done = env
        .run(&[
            "--json",
            "deliveries",
            "retry",
            "--status",
            "failed",
            "--dest",
            "crm",
            "--yes",
        ])
        .ok()
        .json();
    assert_eq!(done.as_array().unwrap().len(), 2);
    assert!(
        done.as_array()
            .unwrap()
            .iter()
            .all(|r| r["outcome"] == "retried"),
        "{done}"
    );
    let d = env
        .store
        .delivery(&reference("crm", "evt_d1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (d.status, d.attempts, d.journal.len()),
        (DeliveryStatus::Pending, 0, 2),
        "a new round, the journal kept"
    );
    assert!(d.notes.last().unwrap().note.contains("retried by ana"));
    // Replay to every destination that wants it: the existing delivery again (same webhook-id),
    // and a new destination added since gets one.
    env.run(&[
        "dest",
        "add",
        "analytics",
        "--url",
        "https://analytics.example/h",
        "--pattern",
        "*",
    ])
    .ok();
    let replayed = env
        .run(&["--json", "deliveries", "replay", "stripe", "evt_d2"])
        .ok()
        .json();
    let mut outcomes: Vec<(String, String)> = replayed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["destination"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        vec![
            ("analytics".into(), "created".into()),
            ("crm".into(), "retried".into())
        ]
    );
    let again = env
        .store
        .delivery(&reference("crm", "evt_d2"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.status, DeliveryStatus::Pending);
    assert_eq!(
        again.webhook_id,
        inbox_core::outbox::schema::webhook_id("crm", &key("evt_d2")),
        "the same webhook-id"
    );
    assert_eq!(
        env.run(&["deliveries", "show", "crm", "stripe", "evt_nope"])
            .code,
        1
    );
    // stats: per destination.
    let stats = env.run(&["--json", "stats"]).ok().json();
    let crm = stats["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == "crm")
        .unwrap()
        .clone();
    assert_eq!(crm["deliveries"], 2);
    assert_eq!(crm["attempts"], 4);
    assert_eq!(crm["success_rate"], 0.0);
    assert_eq!(crm["circuit"], "closed");
    assert!(crm["oldest_pending_age_secs"].as_i64().unwrap() >= 59);
    assert!(env.run(&["stats"]).ok().stdout.contains("analytics"));
}

#[tokio::test]
async fn dest_takes_its_secret_from_the_environment_and_stores_it_encrypted() {
    let env = Env::new().await;
    let kms = aws_sdk_kms::Client::new(&integration_tests::sdk_config().await);
    let key = kms
        .create_key()
        .send()
        .await
        .unwrap()
        .key_metadata
        .and_then(|m| m.arn)
        .unwrap();
    let secret = SecretText::generate();
    let out = env
        .command()
        .env("INBOXCTL_SECRET", secret.expose())
        .env("DESTINATION_SECRETS_KEY", &key)
        .args([
            "--json",
            "dest",
            "add",
            "crm",
            "--url",
            "https://crm.example/h",
            "--pattern",
            "*",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        added["secret"],
        Value::Null,
        "given, so not printed: {stdout}"
    );
    let item = env
        .h
        .client
        .get_item()
        .table_name(&env.h.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S("DESTINATIONS".into()),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("DEST#crm".into()),
        )
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    let raw = format!("{item:?}");
    assert!(!raw.contains("whsec_"), "plaintext in the table: {raw}");
    let keyed = env
        .store
        .clone()
        .with_secrets_key(Some(inbox_core::store::dynamo::SecretsKey::new(kms, key)));
    let id = inbox_core::outbox::destination::DestinationId::parse("crm").unwrap();
    let read = inbox_core::outbox::admin::get(&keyed, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.secrets[0].secret.expose(), secret.expose());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn listen_takes_its_secret_from_the_environment_and_prints_a_payload_only_when_asked() {
    let env = Env::new().await;
    let out = env
        .command()
        .args(["listen", "--port", &free_port().to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("INBOXCTL_SECRET"), "{stderr}");

    let secret = SecretText::generate();
    let body = br#"{"id":"evt_1","type":"invoice.paid","email":"ana@example.com"}"#;
    for show in [false, true] {
        let port = free_port().to_string();
        let mut args = vec!["--json", "listen", "--port", &port, "--max", "1"];
        if show {
            args.push("--show-body");
        }
        let mut child = env
            .command()
            .env("INBOXCTL_SECRET", secret.expose())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the listener did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let signed = Signer::new([&secret])
            .unwrap()
            .sign("msg_env", SystemClock.now_secs(), body)
            .unwrap();
        assert_eq!(post(port.parse().unwrap(), &signed, body).0, 200);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = lines.next().unwrap().unwrap();
        let printed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(printed["verified"].as_bool(), Some(true), "{line}");
        assert_eq!(printed["bytes"].as_u64(), Some(body.len() as u64));
        assert_eq!(
            line.contains("ana@example.com"),
            show,
            "the payload only with --show-body: {line}"
        );
        assert!(child.wait().unwrap().success());
    }
}

/// Sends one POST to 127.0.0.1:`port` and returns the status line and the headers.
fn post(port: u16, headers: &[(String, String)], body: &[u8]) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the listener");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!(
        "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out)
}

#[tokio::test]
async fn listen_verifies_prints_and_answers_as_told() {
    let env = Env::new().await;
    let secret = SecretText::generate();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = env
        .command()
        .args([
            "--json",
            "listen",
            "--port",
            &port.to_string(),
            "--secret",
            secret.expose(),
            "--status",
            "429",
            "--retry-after",
            "7",
            "--fail-every",
            "3",
            "--max",
            "3",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the listener did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let body = br#"{"id":"evt_1","type":"invoice.paid"}"#;
    let mut signed = Signer::new([&secret])
        .unwrap()
        .sign("msg_abc", SystemClock.now_secs(), body)
        .unwrap();
    signed.push(("webhook-source".into(), "stripe".into()));
    let (status, raw) = post(port, &signed, body);
    assert_eq!(status, 429);
    assert!(raw.to_ascii_lowercase().contains("retry-after: 7"), "{raw}");
    let forged = Signer::new([&SecretText::generate()])
        .unwrap()
        .sign("msg_abc", SystemClock.now_secs(), body)
        .unwrap();
    assert_eq!(
        post(port, &forged, body).0,
        401,
        "a bad signature is refused"
    );
    assert_eq!(post(port, &signed, body).0, 500, "every third fails");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        (
            first["verified"].as_bool(),
            first["answered"].as_u64(),
            first["webhook_id"].as_str()
        ),
        (Some(true), Some(429), Some("msg_abc"))
    );
    assert_eq!(first["source"], "stripe");
    let second: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(
        (second["verified"].as_bool(), second["answered"].as_u64()),
        (Some(false), Some(401))
    );
    assert!(child.wait().unwrap().success(), "stops after --max");
}

/// A child process, killed if a test fails before it ends.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads one HTTP/1.1 answer from `s` (its head, then `Content-Length` bytes), leaving the
/// connection open: its status and the whole text.
fn read_answer(s: &mut std::net::TcpStream) -> std::io::Result<(u16, String)> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                let status = text.split(' ').nth(1).and_then(|c| c.parse().ok());
                return Ok((status.unwrap_or(0), text));
            }
        }
        match s.read(&mut chunk)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => got.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Fifty deliveries on fifty new connections at once, each connection kept open (keep-alive, as
/// a deliverer keeps it) until every one is answered: each is received, printed once, verified
/// and answered. (`tiny_http`'s thread pool could queue a new connection while every thread served
/// an open one: its request was never read and the sender timed out.)
#[tokio::test]
async fn listen_answers_fifty_new_connections_at_once() {
    const N: usize = 50;
    let env = Env::new().await;
    let secret = SecretText::generate();
    let port = free_port();
    let mut child = Killed(
        env.command()
            .env("INBOXCTL_SECRET", secret.expose())
            .args(["--json", "listen", "--port", &port.to_string()])
            .args(["--max", &N.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the listener did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let body: &'static [u8] = br#"{"id":"evt_many","type":"invoice.paid"}"#;
    let go = std::sync::Arc::new(std::sync::Barrier::new(N));
    let answered = std::sync::Arc::new(std::sync::Barrier::new(N));
    let signer = Signer::new([&secret]).unwrap();
    let clients: Vec<_> = (0..N)
        .map(|i| {
            let signed = signer
                .sign(&format!("msg_many_{i:02}"), SystemClock.now_secs(), body)
                .unwrap();
            let (go, answered) = (go.clone(), answered.clone());
            std::thread::spawn(move || {
                go.wait();
                let result = (|| {
                    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
                    // Generous: answered at once by the listener, but never by one that lost it.
                    s.set_read_timeout(Some(Duration::from_secs(20)))?;
                    let mut req = format!(
                        "POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n",
                        body.len()
                    );
                    for (k, v) in &signed {
                        req.push_str(&format!("{k}: {v}\r\n"));
                    }
                    req.push_str("\r\n");
                    s.write_all(req.as_bytes())?;
                    s.write_all(body)?;
                    read_answer(&mut s).map(|answer| (s, answer))
                })();
                // Every connection stays open until each has its answer (or gave up).
                answered.wait();
                result.map(|(_open, (status, _))| status)
            })
        })
        .collect();
    let results: Vec<_> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let unanswered: Vec<String> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| !matches!(r, Ok(200)))
        .map(|(i, r)| format!("msg_many_{i:02}: {r:?}"))
        .collect();
    assert!(unanswered.is_empty(), "not answered 200: {unanswered:#?}");
    let lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    let mut printed: Vec<String> = lines
        .map(|l| {
            let v: Value = serde_json::from_str(&l.unwrap()).unwrap();
            assert_eq!(v["verified"].as_bool(), Some(true), "{v}");
            v["webhook_id"].as_str().unwrap().to_owned()
        })
        .collect();
    printed.sort();
    let expected: Vec<String> = (0..N).map(|i| format!("msg_many_{i:02}")).collect();
    assert_eq!(printed, expected, "each printed once");
    assert!(child.0.wait().unwrap().success(), "stops after --max");
}
