//! End-to-end tests of the `inboxctl` binary against the local AWS emulators (DynamoDB Local, moto).
//!
//! Each test gets its own table (created from `template.yaml`, filled through the real ingest
//! handler) and its own SQS queues, runs the built binary as an operator would, and checks both
//! its output (`--json`) and the resulting state in DynamoDB and SQS. Run with `make test`, which
//! starts the emulators and sets `AWS_ENDPOINT_URL` and `AWS_ENDPOINT_URL_DYNAMODB`.

use aws_sdk_sqs::types::QueueAttributeName;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{BodyDigest, EventId, EventType, MessageKey, SourceName, Status};
use inbox_core::message::{HistoryEntry, QuarantineNotice, RetryRequest};
use inbox_core::process::registry::{Handler, HandlerFuture, HandlerOutcome, Registry};
use inbox_core::process::{Outcome, Processor, ProcessorConfig};
use inbox_core::queue::sqs::{SqsQuarantine, SqsRetryQueue};
use inbox_core::signature::Request;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{Applied, Inbox as _, MessageStore as _, NewMessage, Repeat, Transition};
use integration_tests::{api_event, Harness};
use serde_json::{json, Value};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{mpsc, Arc};
use std::time::Duration;

const DAY_MS: i64 = 86_400_000;

/// What one run of the binary did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A fresh table (through the ingest harness) and fresh queues.
struct Env {
    h: Harness,
    store: DynamoTable,
    sqs: aws_sdk_sqs::Client,
    retry_url: String,
    quarantine_url: String,
}

/// A fresh SQS queue on the emulator (also the console test's).
pub(crate) async fn create_queue(sqs: &aws_sdk_sqs::Client, kind: &str) -> String {
    sqs.create_queue()
        .queue_name(format!("inboxctl-{kind}-{}", uuid::Uuid::new_v4().simple()))
        .send()
        .await
        .expect("create queue in the emulator")
        .queue_url
        .expect("queue url")
}

impl Env {
    async fn new() -> Self {
        let h = Harness::new().await;
        let sqs = aws_sdk_sqs::Client::new(&integration_tests::sdk_config().await);
        let retry_url = create_queue(&sqs, "retry").await;
        let quarantine_url = create_queue(&sqs, "quarantine").await;
        let store = DynamoTable::new(h.client.clone(), h.table.clone());
        Self {
            h,
            store,
            sqs,
            retry_url,
            quarantine_url,
        }
    }

    /// The binary with the emulator's AWS environment and this test's table and queues (from the
    /// environment variables the Lambda functions use).
    fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_inboxctl"));
        c.envs(integration_tests::endpoints().env())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("TABLE_NAME", &self.h.table)
            .env("RETRY_QUEUE_URL", &self.retry_url)
            .env("QUARANTINE_QUEUE_URL", &self.quarantine_url)
            .env_remove("INBOXCTL_JSON")
            .env_remove("WEBHOOK_SOURCES")
            .env_remove("WEBHOOK_SECRETS")
            .current_dir(integration_tests::root());
        c
    }

    fn run(&self, args: &[&str]) -> Run {
        run(self.command().args(args))
    }

    /// Ingests a Stripe event through the real ingest handler (answers 200).
    async fn ingest_stripe(&self, id: &str, kind: &str) -> MessageKey {
        let body = integration_tests::stripe_event(id, kind, 0);
        let headers = self.h.sign("stripe", body.as_bytes(), id);
        let reply = self
            .h
            .send(&api_event("POST", "stripe", &headers, Some(&body), false))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.json);
        key("stripe", id)
    }

    /// Ingests a GitHub ping.
    /// A GitHub ping naming `hook`; its key is its body's hash (GitHub's delivery id is not
    /// signed, so it is kept as metadata only).
    async fn ingest_github(&self, hook: &str) -> MessageKey {
        let body = format!(r#"{{"zen":"Keep it logically awesome.","hook":"{hook}"}}"#);
        let mut headers = self.h.sign("github", body.as_bytes(), "d-1");
        headers.push(("x-github-event".into(), "ping".into()));
        let reply = self
            .h
            .send(&api_event("POST", "github", &headers, Some(&body), false))
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.json);
        key("github", reply.json["id"].as_str().expect("id"))
    }

    /// Runs the real processor over `key` with handlers that reject checkout sessions
    /// permanently (→ failed + a quarantine notice on the SQS queue); other types have no
    /// handler (→ ignored).
    async fn process(&self, key: &MessageKey) -> Outcome {
        let registry = Registry::new().on(
            "stripe",
            "checkout.session.completed",
            Arc::new(Reject) as Arc<dyn Handler>,
        );
        let processor = Processor::new(
            self.store.clone(),
            SqsRetryQueue::new(self.sqs.clone(), self.retry_url.clone()),
            SqsQuarantine::new(self.sqs.clone(), self.quarantine_url.clone()),
            SystemClock,
            registry,
            ProcessorConfig::default(),
        );
        processor.process_key(key).await.expect("process")
    }

    async fn status(&self, key: &MessageKey) -> Option<Status> {
        self.store.get(key).await.expect("get").map(|m| m.status)
    }

    /// Every message currently on a queue (received, then made visible again).
    async fn peek(&self, url: &str) -> Vec<String> {
        let mut bodies = Vec::new();
        let mut handles = Vec::new();
        loop {
            let out = self
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .visibility_timeout(30)
                .send()
                .await
                .expect("receive");
            let msgs = out.messages.unwrap_or_default();
            if msgs.is_empty() {
                break;
            }
            for m in msgs {
                bodies.push(m.body.unwrap_or_default());
                handles.push(m.receipt_handle.unwrap_or_default());
            }
        }
        for h in handles {
            self.sqs
                .change_message_visibility()
                .queue_url(url)
                .receipt_handle(h)
                .visibility_timeout(0)
                .send()
                .await
                .expect("make visible again");
        }
        bodies
    }

    /// (visible, in flight) of a queue.
    async fn depth(&self, url: &str) -> (u64, u64) {
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .expect("queue attributes");
        let attrs = out.attributes.unwrap_or_default();
        let get = |n: QueueAttributeName| {
            attrs
                .get(&n)
                .and_then(|v| v.parse().ok())
                .expect("numeric attribute")
        };
        (
            get(QueueAttributeName::ApproximateNumberOfMessages),
            get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        )
    }

    /// Stores a message directly (as the ingest path would) received at `received_at_ms`, then
    /// moves it to `status` unless that is pending.
    async fn put_at(&self, id: &str, received_at_ms: i64, status: Status) -> MessageKey {
        let k = key("stripe", id);
        let body = integration_tests::stripe_event(id, "invoice.paid", 0).into_bytes();
        let msg = NewMessage {
            key: k.clone(),
            event_type: Some(EventType::parse("invoice.paid").expect("type")),
            received_at_ms,
            body_digest: Some(BodyDigest::of(&body)),
            body,
            headers: vec![("content-type".into(), "application/json".into())],
            provider_id: None,
            unidentified: None,
            batch: None,
        };
        self.store.put_if_absent(&msg).await.expect("put");
        if status != Status::Pending {
            let now = SystemClock.now_millis();
            let stored = self.store.get(&k).await.expect("get").expect("stored");
            let t = Transition {
                attempts: 1,
                last_error: (status == Status::Failed).then(|| "boom".to_owned()),
                ..Transition::of(
                    &stored,
                    status,
                    HistoryEntry::new(now, status, "set by the test"),
                )
            };
            assert_eq!(
                self.store
                    .transition(&k, 0, &t, Vec::new())
                    .await
                    .expect("transition"),
                Applied::Done
            );
        }
        k
    }
}

fn run(c: &mut Command) -> Run {
    let out = c.output().expect("run inboxctl");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn key(source: &str, id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse(source).expect("source"),
        EventId::parse(id).expect("id"),
    )
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

struct Reject;

impl Handler for Reject {
    fn name(&self) -> &str {
        "reject"
    }

    fn handle<'a>(&'a self, _message: &'a inbox_core::message::StoredMessage) -> HandlerFuture<'a> {
        Box::pin(async { HandlerOutcome::Permanent("card declined".into()) })
    }
}

fn ids(listing: &Value) -> Vec<String> {
    let mut v: Vec<String> = listing["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["event_id"].as_str().expect("event_id").to_owned())
        .collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[tokio::test]
async fn list_show_and_stats() {
    let env = Env::new().await;
    let (a, b) = (unique("evt_a"), unique("evt_b"));
    let ka = env.ingest_stripe(&a, "customer.created").await;
    // b is sent twice with the same signed headers (signing again could cross a second and
    // change `t=`), so the kept headers are exactly `headers_b`.
    let body_b = integration_tests::stripe_event(&b, "invoice.paid", 0);
    let headers_b = env.h.sign("stripe", body_b.as_bytes(), &b);
    let first = env
        .h
        .send(&api_event(
            "POST",
            "stripe",
            &headers_b,
            Some(&body_b),
            false,
        ))
        .await;
    assert_eq!(first.code(), "accepted", "{:?}", first.json);
    // A repeated delivery of b, journaled beside it.
    let dup = env
        .h
        .send(&api_event(
            "POST",
            "stripe",
            &headers_b,
            Some(&body_b),
            false,
        ))
        .await;
    assert_eq!(dup.code(), "duplicate");
    let g = env
        .ingest_github(&unique("hook"))
        .await
        .event_id
        .to_string();
    assert_eq!(
        env.process(&ka).await,
        Outcome::Ignored,
        "no handler for its type"
    );

    // list
    let all = env.run(&["list", "--json"]).ok().json();
    assert_eq!(all["count"], 3);
    assert_eq!(all["truncated"], false);
    assert_eq!(ids(&all), sorted(vec![a.clone(), b.clone(), g.clone()]));
    let status_of = |id: &str| {
        all["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .find(|m| m["event_id"] == id)
            .map(|m| m["status"].clone())
    };
    assert_eq!(status_of(&a), Some(json!("ignored")));
    assert_eq!(status_of(&b), Some(json!("pending")));
    assert_eq!(status_of(&g), Some(json!("pending")));
    let pending = env
        .run(&["list", "--json", "--status", "pending"])
        .ok()
        .json();
    assert_eq!(ids(&pending), sorted(vec![b.clone(), g.clone()]));
    let github = env
        .run(&["list", "--source", "github", "--json"])
        .ok()
        .json();
    assert_eq!(ids(&github), vec![g.clone()]);
    let typed = env
        .run(&["list", "--type", "invoice.paid", "--json"])
        .ok()
        .json();
    assert_eq!(ids(&typed), vec![b.clone()]);
    assert_eq!(
        env.run(&["list", "--since", "1h", "--json"]).ok().json()["count"],
        3
    );
    assert_eq!(
        env.run(&["list", "--until", "1h", "--json"]).ok().json()["count"],
        0
    );
    let one = env.run(&["list", "--limit", "1", "--json"]).ok().json();
    assert_eq!(
        (one["count"].clone(), one["truncated"].clone()),
        (json!(1), json!(true))
    );
    let table = env.run(&["list"]).ok().stdout;
    assert!(
        table.contains("event id") && table.contains(&b) && table.contains("ignored"),
        "{table}"
    );

    // show
    let shown = env.run(&["show", "stripe", &b, "--json"]).ok();
    let s = shown.json();
    assert_eq!(s["status"], "pending");
    assert_eq!(s["event_type"], "invoice.paid");
    assert_eq!(s["attempts"], 0);
    assert_eq!(s["body_sha256_matches"], true);
    assert_eq!(s["history"][0]["note"], "received");
    assert_eq!(s["deliveries"].as_array().map(Vec::len), Some(1), "{s}");
    assert_eq!(s["deliveries"][0]["body_differs"], false);
    assert_eq!(s["repeated_deliveries"], 1);
    assert_eq!(s["provider_id"], Value::Null, "Stripe's id is signed");
    let gh = env.run(&["show", "github", &g, "--json"]).ok().json();
    assert_eq!(
        gh["provider_id"], "d-1",
        "GitHub's delivery id, as metadata"
    );
    let names = s["headers"].as_array().expect("header names only");
    assert!(names.contains(&json!("stripe-signature")), "{names:?}");
    assert!(s.get("body").is_none(), "the payload only with --body");
    let signature = headers_b
        .iter()
        .find(|(k, _)| k == "stripe-signature")
        .map(|(_, v)| v.clone())
        .expect("signed");
    assert!(
        !shown.stdout.contains("v1="),
        "no signature values by default"
    );
    let with_values = env
        .run(&["show", "stripe", &b, "--json", "--headers"])
        .ok()
        .json();
    assert_eq!(with_values["headers"]["stripe-signature"], json!(signature));
    let with_body = env
        .run(&["show", "stripe", &b, "--json", "--body"])
        .ok()
        .json();
    assert_eq!(with_body["body"]["id"], json!(b));
    assert_eq!(with_body["body_encoding"], "json");
    let human = env.run(&["show", "stripe", &b]).ok().stdout;
    assert!(
        human.contains("History")
            && human.contains("Repeated deliveries (1)")
            && human.contains("stripe-signature"),
        "{human}"
    );
    assert!(!human.contains("v1="), "{human}");
    let missing = env.run(&["show", "stripe", "evt_nope"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stderr.contains("no message stripe/evt_nope"),
        "{missing:?}"
    );

    // stats
    let stats = env.run(&["stats", "--json"]).ok().json();
    assert_eq!(stats["total"], 3);
    assert_eq!(stats["by_status"]["pending"], 2);
    assert_eq!(stats["by_status"]["ignored"], 1);
    assert_eq!(stats["by_status"]["failed"], 0);
    assert_eq!(stats["by_source"]["stripe"], 2);
    assert_eq!(stats["by_source"]["github"], 1);
    assert_eq!(stats["by_source_status"]["stripe"]["ignored"], 1);
    assert_eq!(stats["by_source_status"]["github"]["pending"], 1);
    let oldest = stats["oldest_pending"]["event_id"]
        .as_str()
        .expect("oldest pending");
    assert!(oldest == b || oldest == g, "{oldest}");
    assert_eq!(stats["oldest_retrying"], Value::Null);
    assert_eq!(stats["quarantine"], json!({"visible": 0, "in_flight": 0}));
    let human = env.run(&["stats"]).ok().stdout;
    assert!(
        human.contains("github") && human.contains("oldest pending"),
        "{human}"
    );
}

#[tokio::test]
async fn replay_one_then_in_bulk() {
    let env = Env::new().await;
    let (c1, c2, c3) = (unique("evt_c1"), unique("evt_c2"), unique("evt_c3"));
    let k1 = env.ingest_stripe(&c1, "checkout.session.completed").await;
    let k2 = env.ingest_stripe(&c2, "checkout.session.completed").await;
    let k3 = env.ingest_stripe(&c3, "checkout.session.completed").await;
    for k in [&k1, &k2] {
        assert_eq!(
            env.process(k).await,
            Outcome::Failed {
                attempts: 1,
                permanent: true
            }
        );
    }
    let shown = env.run(&["show", "stripe", &c1, "--json"]).ok().json();
    assert_eq!(shown["last_error"], "card declined");
    assert_eq!(
        env.run(&["list", "--status", "failed", "--json"])
            .ok()
            .json()["count"],
        2
    );

    // One message, with the global options given as flags instead of the environment.
    let mut c = env.command();
    c.env_remove("TABLE_NAME")
        .env_remove("RETRY_QUEUE_URL")
        .args([
            "replay",
            "stripe",
            &c1,
            "--operator",
            "tester",
            "--json",
            "--table",
            &env.h.table,
            "--retry-queue-url",
            &env.retry_url,
        ]);
    let out = run(&mut c).ok().json();
    assert_eq!(out["outcome"], "replayed");
    let m = env.store.get(&k1).await.expect("get").expect("stored");
    assert_eq!((m.status, m.attempts), (Status::Pending, 0));
    assert_eq!(
        m.history.last().map(|h| h.note.as_str()),
        Some("replayed by tester (was failed)")
    );
    let retries = env.peek(&env.retry_url).await;
    let requested: Vec<RetryRequest> = retries
        .iter()
        .map(|b| serde_json::from_str(b).expect("a retry request"))
        .collect();
    assert_eq!(requested, vec![RetryRequest::from(&k1)]);

    // A pending message is not replayed without --force.
    let refused = env.run(&["replay", "stripe", &c3]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("--force"), "{refused:?}");
    assert_eq!(env.status(&k3).await, Some(Status::Pending));
    assert_eq!(
        env.store.get(&k3).await.expect("get").map(|m| m.version),
        Some(0)
    );

    // Bulk: a dry run changes nothing.
    let dry = env
        .run(&["replay", "--status", "failed", "--json"])
        .ok()
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["matched"], 1);
    assert_eq!(dry["messages"][0]["event_id"], json!(c2));
    assert_eq!(dry["messages"][0]["outcome"], "would_replay");
    assert_eq!(env.status(&k2).await, Some(Status::Failed));
    let human = env.run(&["replay", "--status", "failed"]).ok().stdout;
    assert!(human.contains("dry run") && human.contains(&c2), "{human}");

    let done = env
        .run(&[
            "replay", "--status", "failed", "--source", "stripe", "--yes", "--json",
        ])
        .ok()
        .json();
    assert_eq!(
        (done["dry_run"].clone(), done["replayed"].clone()),
        (json!(false), json!(1))
    );
    assert_eq!(env.status(&k2).await, Some(Status::Pending));
    let retries: Vec<RetryRequest> = env
        .peek(&env.retry_url)
        .await
        .iter()
        .map(|b| serde_json::from_str(b).expect("a retry request"))
        .collect();
    assert!(retries.contains(&RetryRequest::from(&k2)), "{retries:?}");
    assert_eq!(
        env.run(&["list", "--status", "failed", "--json"])
            .ok()
            .json()["count"],
        0
    );
}

#[tokio::test]
async fn replay_from_the_quarantine_queue() {
    let env = Env::new().await;
    let (q1, q2) = (unique("evt_q1"), unique("evt_q2"));
    let k1 = env.ingest_stripe(&q1, "checkout.session.completed").await;
    let k2 = env.ingest_stripe(&q2, "checkout.session.completed").await;
    for k in [&k1, &k2] {
        assert!(matches!(env.process(k).await, Outcome::Failed { .. }));
    }
    // The processor put real notices on the queue.
    let notices: Vec<QuarantineNotice> = env
        .peek(&env.quarantine_url)
        .await
        .iter()
        .map(|b| serde_json::from_str(b).expect("a quarantine notice"))
        .collect();
    assert_eq!(notices.len(), 2);
    // q2 was replayed by someone else meanwhile: its notice is stale (nothing left to do).
    let mem = inbox_core::queue::memory::MemoryRetryQueue::default();
    assert_eq!(
        inbox_core::ops::replay(&env.store, &mem, &SystemClock, &k2, "someone", false)
            .await
            .expect("replay"),
        inbox_core::ops::ReplayOutcome::Replayed
    );
    // A retry request naming a message that is not in this table, and a stream on-failure record.
    let ghost = RetryRequest::from(&key("stripe", "evt_not_here"));
    let on_failure = json!({
        "requestContext": {"requestId": "r", "functionArn": "arn:aws:lambda:us-east-1:1:function:process",
                           "condition": "RetryAttemptsExhausted", "approximateInvokeCount": 3},
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0", "timestamp": "2026-11-30T10:00:00.000Z",
        "DDBStreamBatchInfo": {"shardId": "shardId-00000001", "startSequenceNumber": "100",
                               "endSequenceNumber": "100", "batchSize": 1,
                               "streamArn": "arn:aws:dynamodb:us-east-1:1:table/t/stream/2026"}
    });
    for body in [
        serde_json::to_string(&ghost).expect("json"),
        on_failure.to_string(),
    ] {
        env.sqs
            .send_message()
            .queue_url(&env.quarantine_url)
            .message_body(body)
            .send()
            .await
            .expect("send");
    }
    let before = env.run(&["stats", "--json"]).ok().json();
    assert_eq!(before["quarantine"]["visible"], 4);

    let report = env
        .run(&[
            "replay",
            "--from-quarantine",
            "--wait-secs",
            "1",
            "--operator",
            "tester",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(report["received"], 4, "{report}");
    assert_eq!(report["replayed"], 1, "{report}");
    assert_eq!(report["deleted"], 2, "{report}");
    assert_eq!(report["kept"], 2, "{report}");
    let outcome_of = |pred: &dyn Fn(&Value) -> bool| {
        report["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .find(|m| pred(m))
            .map(|m| (m["outcome"].clone(), m["action"].clone()))
    };
    assert_eq!(
        outcome_of(&|m| m["event_id"] == json!(q1)),
        Some((json!("replayed"), json!("deleted")))
    );
    assert_eq!(
        outcome_of(&|m| m["event_id"] == json!(q2)),
        Some((json!("not_replayable"), json!("deleted")))
    );
    assert_eq!(
        outcome_of(&|m| m["event_id"] == "evt_not_here"),
        Some((json!("missing"), json!("kept")))
    );
    assert_eq!(
        outcome_of(&|m| m.get("event_id").is_none()),
        Some((json!("unreadable"), json!("kept")))
    );
    let m1 = env.store.get(&k1).await.expect("get").expect("stored");
    assert_eq!(m1.status, Status::Pending);
    assert_eq!(
        m1.history.last().map(|h| h.note.as_str()),
        Some("replayed by tester (was failed)")
    );
    let retries: Vec<RetryRequest> = env
        .peek(&env.retry_url)
        .await
        .iter()
        .map(|b| serde_json::from_str(b).expect("a retry request"))
        .collect();
    assert_eq!(retries, vec![RetryRequest::from(&k1)]);
    // The kept ones are visible again at once, for the next run.
    assert_eq!(env.depth(&env.quarantine_url).await, (2, 0));

    // --max 1, then the rest: unreadable records go with --drop-unreadable, the missing one stays.
    let first = env
        .run(&[
            "replay",
            "--from-quarantine",
            "--wait-secs",
            "1",
            "--max",
            "1",
            "--drop-unreadable",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(first["received"], 1, "{first}");
    let rest = env
        .run(&[
            "replay",
            "--from-quarantine",
            "--wait-secs",
            "1",
            "--drop-unreadable",
            "--json",
        ])
        .ok()
        .json();
    // Whichever the first run took, the rest saw what was left: a kept message comes back.
    let first_deleted = first["deleted"].as_u64().expect("deleted");
    assert_eq!(
        rest["received"].as_u64(),
        Some(2 - first_deleted),
        "{first}\n{rest}"
    );
    assert_eq!(
        first_deleted + rest["deleted"].as_u64().expect("deleted"),
        1,
        "only the unreadable record goes"
    );
    let left = env.peek(&env.quarantine_url).await;
    assert_eq!(left.len(), 1);
    assert_eq!(
        serde_json::from_str::<RetryRequest>(&left[0]).expect("retry request"),
        ghost
    );
}

#[tokio::test]
async fn purge_is_a_dry_run_until_yes() {
    let env = Env::new().await;
    let now = SystemClock.now_millis();
    let old_processed = env
        .put_at(&unique("evt_op"), now - 10 * DAY_MS, Status::Processed)
        .await;
    let old_failed = env
        .put_at(&unique("evt_of"), now - 10 * DAY_MS, Status::Failed)
        .await;
    let old_pending = env
        .put_at(&unique("evt_oq"), now - 10 * DAY_MS, Status::Pending)
        .await;
    let recent = env
        .put_at(&unique("evt_rp"), now - DAY_MS, Status::Processed)
        .await;
    env.store
        .journal_repeat(&Repeat {
            key: old_processed.clone(),
            received_at_ms: now - 9 * DAY_MS,
            body_digest: BodyDigest::of(b"x"),
            body_differs: true,
            differing_body: Some(b"x".to_vec()),
            headers: Vec::new(),
            expires_at_secs: now / 1000 + 86_400,
        })
        .await
        .expect("journal");
    assert_eq!(
        env.store
            .deliveries(&old_processed)
            .await
            .expect("deliveries")
            .len(),
        1
    );

    let dry = env
        .run(&["purge", "--older-than-days", "7", "--json"])
        .ok()
        .json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["matched"], 1, "{dry}");
    assert_eq!(
        dry["messages"][0]["event_id"],
        json!(old_processed.event_id.as_str())
    );
    assert_eq!(
        env.status(&old_processed).await,
        Some(Status::Processed),
        "a dry run deletes nothing"
    );
    let human = env.run(&["purge", "--older-than-days", "7"]).ok().stdout;
    assert!(
        human.contains("dry run") && human.contains(old_processed.event_id.as_str()),
        "{human}"
    );

    let done = env
        .run(&["purge", "--older-than-days", "7", "--yes", "--json"])
        .ok()
        .json();
    assert_eq!(
        (done["purged"].clone(), done["skipped"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(env.status(&old_processed).await, None);
    assert!(
        env.store
            .deliveries(&old_processed)
            .await
            .expect("deliveries")
            .is_empty(),
        "its journal goes too"
    );
    assert_eq!(env.status(&recent).await, Some(Status::Processed));
    assert_eq!(
        env.status(&old_failed).await,
        Some(Status::Failed),
        "failed only when named"
    );
    assert_eq!(env.status(&old_pending).await, Some(Status::Pending));

    let failed = env
        .run(&[
            "purge",
            "--older-than-days",
            "7",
            "--status",
            "failed",
            "--yes",
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(failed["purged"], 1);
    assert_eq!(env.status(&old_failed).await, None);
    assert_eq!(
        env.status(&old_pending).await,
        Some(Status::Pending),
        "never a non-terminal message"
    );
    assert_eq!(env.status(&recent).await, Some(Status::Processed));
}

/// A one-route HTTP server recording each request; `/reject` answers 401.
fn http_server() -> (String, mpsc::Receiver<(String, http::HeaderMap, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                continue;
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let mut headers = http::HeaderMap::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("header line");
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (k, v) = line.split_once(':').expect("name: value");
                headers.append(
                    http::HeaderName::from_bytes(k.trim().as_bytes()).expect("name"),
                    http::HeaderValue::from_str(v.trim()).expect("value"),
                );
            }
            let len: usize = headers
                .get("content-length")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .expect("a content-length");
            let mut body = vec![0; len];
            reader.read_exact(&mut body).expect("body");
            let (status, reply) = if path.ends_with("/reject") {
                (
                    "401 Unauthorized",
                    r#"{"error":"invalid_signature","message":"no"}"#,
                )
            } else {
                ("200 OK", r#"{"status":"accepted","id":"recorded"}"#)
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
            let _ = stream.flush();
            if tx.send((path, headers, body)).is_err() {
                return;
            }
        }
    });
    (base, rx)
}

fn received(
    rx: &mpsc::Receiver<(String, http::HeaderMap, Vec<u8>)>,
) -> (String, http::HeaderMap, Vec<u8>) {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a request reached the server")
}

#[tokio::test]
async fn send_signs_like_the_provider() {
    let env = Env::new().await;
    let (base, rx) = http_server();
    let root = integration_tests::root();
    let sources = root.join("local/sources.json");
    let secrets = root.join("local/secrets.json");
    let (sources, secrets) = (
        sources.to_str().expect("utf-8"),
        secrets.to_str().expect("utf-8"),
    );
    let now = SystemClock.now_secs();
    let id = unique("evt_cli");

    let url = format!("{base}/webhooks/stripe");
    let out = env
        .run(&[
            "send",
            "stripe",
            "--url",
            &url,
            "--event-id",
            &id,
            "--repeat",
            "2",
            "--sources",
            sources,
            "--secrets",
            secrets,
            "--json",
        ])
        .ok();
    let report = out.json();
    assert_eq!(report["event_id"], json!(id));
    assert_eq!(report["event_type"], "checkout.session.completed");
    let statuses: Vec<&Value> = report["responses"]
        .as_array()
        .expect("responses")
        .iter()
        .map(|r| &r["status"])
        .collect();
    assert_eq!(statuses, vec![&json!(200), &json!(200)]);
    assert_eq!(report["responses"][0]["body"]["status"], "accepted");

    let stripe = env.h.sources.get("stripe").expect("stripe");
    let mut bodies = Vec::new();
    for _ in 0..2 {
        let (path, headers, body) = received(&rx);
        assert_eq!(path, "/webhooks/stripe");
        assert_eq!(headers["content-type"], "application/json");
        stripe
            .scheme
            .verify(Request::new(&headers, &body, now))
            .resolve()
            .await
            .expect("the signature verifies");
        let mut tampered = body.clone();
        tampered[0] = b' ';
        assert!(stripe
            .scheme
            .verify(Request::new(&headers, &tampered, now))
            .resolve()
            .await
            .is_err());
        let signature = headers["stripe-signature"]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert!(
            !out.stdout.contains(&signature) && !out.stderr.contains(&signature),
            "signature printed"
        );
        bodies.push((headers, body));
    }
    assert!(!out.stdout.contains("whsec_local_stripe_secret"));
    assert_eq!(bodies[0].1, bodies[1].1, "a repeat is the same event");
    let event: Value = serde_json::from_slice(&bodies[0].1).expect("json body");
    assert_eq!(event["id"], json!(id));
    assert_eq!(event["object"], "event");
    assert_eq!(event["data"]["object"]["metadata"]["tenant"], "acme");

    // What was sent is what the real ingest function accepts: once, then as a duplicate.
    for (expected, (headers, body)) in ["accepted", "duplicate"].into_iter().zip(&bodies) {
        let pairs: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().expect("ascii").to_owned()))
            .collect();
        let text = std::str::from_utf8(body).expect("utf-8");
        let reply = env
            .h
            .send(&api_event("POST", "stripe", &pairs, Some(text), false))
            .await;
        assert_eq!(reply.code(), expected, "{:?}", reply.json);
    }
    let listed = env.run(&["list", "--json"]).ok().json();
    assert_eq!(ids(&listed), vec![id.clone()]);

    // GitHub: a ping with the event and delivery headers the source reads.
    let url = format!("{base}/webhooks/github");
    let gh = env
        .run(&[
            "send",
            "github",
            "--url",
            &url,
            "--sources",
            sources,
            "--secrets",
            secrets,
            "--json",
        ])
        .ok()
        .json();
    let (_, headers, body) = received(&rx);
    env.h
        .sources
        .get("github")
        .expect("github")
        .scheme
        .verify(Request::new(&headers, &body, now))
        .resolve()
        .await
        .expect("verifies");
    assert_eq!(headers["x-github-event"], "ping");
    assert!(headers.contains_key("x-github-delivery"));
    assert_eq!(
        gh["event_id"],
        json!(inbox_core::domain::BodyDigest::of(&body).to_hex()),
        "GitHub's delivery id is not signed: the key the endpoint derives is the body's hash"
    );

    // Standard Webhooks, configured through the environment instead of files (from another
    // directory, so the default local/ files cannot be what is read).
    let url = format!("{base}/webhooks/mailer");
    let mut c = env.command();
    c.current_dir(std::env::temp_dir())
        .env(
            "WEBHOOK_SOURCES",
            std::fs::read_to_string(sources).expect("sources"),
        )
        .env(
            "WEBHOOK_SECRETS",
            std::fs::read_to_string(secrets).expect("secrets"),
        )
        .args(["send", "mailer", "--url", &url, "--json"]);
    let mailer = run(&mut c).ok().json();
    let (_, headers, body) = received(&rx);
    env.h
        .sources
        .get("mailer")
        .expect("mailer")
        .scheme
        .verify(Request::new(&headers, &body, now))
        .resolve()
        .await
        .expect("verifies");
    let msg_id = headers["webhook-id"].to_str().expect("ascii");
    assert!(msg_id.starts_with("msg_"), "{msg_id}");
    assert_eq!(mailer["event_id"], json!(msg_id));
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("json")["type"],
        "message.sent"
    );

    // A refusal is an operational failure; an unknown source a usage error.
    let url = format!("{base}/reject");
    let refused = env.run(&[
        "send",
        "stripe",
        "--url",
        &url,
        "--sources",
        sources,
        "--secrets",
        secrets,
    ]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stdout.contains("401"), "{refused:?}");
    let _ = received(&rx);
    let unknown = env.run(&[
        "send",
        "nosuch",
        "--url",
        &url,
        "--sources",
        sources,
        "--secrets",
        secrets,
    ]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("stripe"),
        "lists the configured sources: {unknown:?}"
    );
}

#[tokio::test]
async fn exit_codes() {
    let env = Env::new().await;
    let mut c = env.command();
    c.env_remove("TABLE_NAME").arg("list");
    let no_table = run(&mut c);
    assert_eq!(no_table.code, 2, "{no_table:?}");
    assert!(no_table.stderr.contains("TABLE_NAME"), "{no_table:?}");

    let bad_when = env.run(&["list", "--since", "last tuesday"]);
    assert_eq!(bad_when.code, 2, "{bad_when:?}");

    let no_mode = env.run(&["replay"]);
    assert_eq!(no_mode.code, 2, "{no_mode:?}");

    let mut c = env.command();
    c.env_remove("RETRY_QUEUE_URL")
        .args(["replay", "stripe", "evt_1"]);
    let no_queue = run(&mut c);
    assert_eq!(no_queue.code, 2, "{no_queue:?}");
    assert!(no_queue.stderr.contains("RETRY_QUEUE_URL"), "{no_queue:?}");

    let missing_table = env.run(&["list", "--table", "inboxctl-no-such-table"]);
    assert_eq!(missing_table.code, 1, "{missing_table:?}");
    assert!(
        missing_table.stderr.starts_with("error: "),
        "{missing_table:?}"
    );

    assert_eq!(env.run(&["list", "--json"]).ok().json()["count"], 0);
}

#[tokio::test]
async fn show_and_replay_read_a_body_kept_in_s3() {
    let env = Env::new().await;
    let (_, bodies) = integration_tests::body_bucket(&integration_tests::endpoints(), 1024).await;
    let store = DynamoTable::new(env.h.client.clone(), env.h.table.clone())
        .with_bodies(Some(bodies.clone()));
    let id = unique("evt_s3");
    let body = integration_tests::stripe_event(&id, "invoice.paid", 300 * 1024);
    let msg = NewMessage {
        key: key("stripe", &id),
        event_type: Some(EventType::parse("invoice.paid").expect("type")),
        received_at_ms: SystemClock.now_millis(),
        body: body.clone().into_bytes(),
        body_digest: None,
        headers: Vec::new(),
        provider_id: None,
        unidentified: None,
        batch: None,
    };
    store.put_if_absent(&msg).await.expect("put");
    let with_bucket = |args: &[&str]| {
        let mut c = env.command();
        c.env("BODY_BUCKET", bodies.bucket()).args(args);
        run(&mut c)
    };
    let shown = with_bucket(&["show", "stripe", &id, "--json", "--body"])
        .ok()
        .json();
    assert_eq!(shown["body"]["id"], json!(id), "the body, read from S3");
    assert_eq!(shown["body_bytes"], json!(body.len()));
    assert_eq!(shown["body_sha256_matches"], true);
    assert_eq!(
        shown["body_sha256"],
        json!(BodyDigest::of(body.as_bytes()).to_hex())
    );
    // A pending message is replayed only with --force; the body is read again from S3.
    with_bucket(&["replay", "stripe", &id, "--force", "--json"]).ok();
    let replayed = store
        .get(&key("stripe", &id))
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(replayed.body, body.as_bytes());
    assert!(replayed
        .history
        .iter()
        .any(|h| h.note.starts_with("replayed by")));
    // Without the bucket, the message cannot be shown whole: a clear error, not an empty body.
    let without = env.run(&["show", "stripe", &id, "--json"]);
    assert_ne!(without.code, 0);
    assert!(without.stderr.contains("BODY_BUCKET"), "{}", without.stderr);
}

/// The wallet's own events (source `wallet`, no signature scheme, no handler) as an operator
/// meets them: listed, shown with their body, ignored by the processor, replayed.
#[tokio::test]
async fn the_wallets_own_events_are_listed_shown_and_replayed_like_any_message() {
    use inbox_core::store::ItemWriter as _;
    use wallet_ledger::balance::events::WalletEvent;
    let env = Env::new().await;
    let event = WalletEvent::AutopaySuspended {
        tenant: wallet_ledger::TenantId::parse("acme").unwrap(),
        subject: unique("att"),
        reason: "the dunning ladder ended (expired_card)".into(),
    };
    let now = inbox_core::clock::Millis::new(SystemClock.now_millis());
    let publish = event.publish(now).expect("a valid event");
    assert_eq!(
        env.store.commit(vec![publish]).await.expect("commit"),
        Applied::Done
    );
    let id = event.id();
    let k = key("wallet", &id);
    assert_eq!(env.process(&k).await, Outcome::Ignored, "no handler for it");

    let listed = env
        .run(&["list", "--source", "wallet", "--json"])
        .ok()
        .json();
    assert_eq!(ids(&listed), vec![id.clone()]);
    let shown = env
        .run(&["show", "wallet", &id, "--body", "--json"])
        .ok()
        .json();
    assert_eq!(
        (
            &shown["status"],
            &shown["event_type"],
            &shown["body_sha256_matches"]
        ),
        (
            &json!("ignored"),
            &json!("wallet.autopay_suspended"),
            &json!(true)
        )
    );
    assert_eq!(
        shown["body"]["data"]["reason"],
        "the dunning ladder ended (expired_card)"
    );
    assert_eq!(shown["body"]["id"], id.as_str());
    let human = env.run(&["show", "wallet", &id]).ok().stdout;
    assert!(human.contains("wallet.autopay_suspended"), "{human}");

    let out = env
        .run(&["replay", "wallet", &id, "--operator", "tester", "--json"])
        .ok()
        .json();
    assert_eq!(out["outcome"], "replayed");
    assert_eq!(env.status(&k).await, Some(Status::Pending));
    let requested: Vec<RetryRequest> = env
        .peek(&env.retry_url)
        .await
        .iter()
        .map(|b| serde_json::from_str(b).expect("a retry request"))
        .collect();
    assert_eq!(requested, vec![RetryRequest::from(&k)]);
    assert_eq!(env.process(&k).await, Outcome::Ignored);
}

/// Whether the events index lists `key` (the Events page's query, searching its id).
async fn listed(store: &DynamoTable, key: &MessageKey) -> bool {
    use inbox_core::store::{EventIndex as _, EventQuery};
    let page = store
        .page(&EventQuery {
            source: None,
            event_type: None,
            search: Some(key.event_id.as_str().to_owned()),
            since: None,
            until: None,
            from: None,
            rows: 50,
        })
        .await
        .expect("page");
    page.messages.iter().any(|m| m.event_id == key.event_id)
}

/// Messages stored before the events index existed (no `list_shard`, no `list_at`) are not on
/// the Events page; `events reindex --dry-run` counts and names them and writes nothing, then
/// `events reindex` indexes each once (as the ingest would have), and a second run finds none.
#[tokio::test]
async fn events_reindex_backfills_the_messages_stored_before_the_index() {
    use aws_sdk_dynamodb::types::AttributeValue;
    use inbox_core::store::schema;
    let env = Env::new().await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let old: Vec<MessageKey> = ingested_three(&env, &suffix).await;
    let new = env
        .ingest_stripe(&format!("evt_new_{suffix}"), "invoice.paid")
        .await;
    for k in &old {
        // As stored before the index: the two attributes it reads were never written.
        env.h
            .client
            .update_item()
            .table_name(&env.h.table)
            .key(schema::PK, AttributeValue::S(schema::message_pk(k)))
            .key(schema::SK, AttributeValue::S(schema::MESSAGE_SK.into()))
            .update_expression("REMOVE list_shard, list_at")
            .condition_expression("attribute_exists(pk)")
            .send()
            .await
            .expect("remove the index attributes");
        assert!(!listed(&env.store, k).await, "{k:?} is not on the page");
    }
    assert!(listed(&env.store, &new).await);

    let dry = env
        .run(&["--json", "events", "reindex", "--dry-run"])
        .ok()
        .json();
    assert_eq!(dry["missing"], 3, "{dry}");
    assert_eq!(dry["indexed"], 0, "{dry}");
    assert!(dry["scanned"].as_u64().unwrap_or(0) >= 4, "{dry}");
    for k in &old {
        assert!(
            dry["found"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f.as_str() == Some(&format!("stripe/{}", k.event_id))),
            "{dry}"
        );
        assert!(!listed(&env.store, k).await, "a dry run writes nothing");
    }
    let bad = env.run(&["events", "reindex", "--from", "not-a-token"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("--from"), "{}", bad.stderr);

    let done = env.run(&["events", "reindex"]).ok();
    assert!(
        done.stdout.contains("3 message(s) not in the events index"),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.contains("indexed 3; skipped 0"),
        "{}",
        done.stdout
    );
    for k in &old {
        assert!(listed(&env.store, k).await, "{k:?} indexed");
        let m = env.store.get_head(k).await.expect("get").expect("kept");
        assert_eq!(m.status, Status::Pending, "nothing else changed: {m:?}");
    }
    let again = env.run(&["--json", "events", "reindex"]).ok().json();
    assert_eq!(
        (again["missing"].as_u64(), again["indexed"].as_u64()),
        (Some(0), Some(0)),
        "{again}"
    );
}

/// Three messages ingested through the real handler (the index's attributes removed after).
async fn ingested_three(env: &Env, suffix: &str) -> Vec<MessageKey> {
    let mut keys = Vec::new();
    for i in 0..3 {
        keys.push(
            env.ingest_stripe(&format!("evt_old{i}_{suffix}"), "invoice.paid")
                .await,
        );
    }
    keys
}
