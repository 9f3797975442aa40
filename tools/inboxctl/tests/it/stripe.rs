//! `inboxctl stripe catch-up` against DynamoDB Local and the local Stripe stand-in: top-ups paid
//! on the stand-in, the webhooks of one of them ingested through the real ingest handler, the
//! others' never; the command (a dry run, then for real, then again) finds and stores exactly
//! the missing events, recorded as caught up by the operator, and nothing twice.

use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::ingest::ORIGIN_HEADER;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::MessageStore as _;
use integration_tests::stripe::Standin;
use integration_tests::{api_event, Harness};
use serde_json::{json, Value};
use std::process::Command;

#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    #[track_caller]
    fn json(&self, code: i32) -> Value {
        assert_eq!(
            self.code, code,
            "exit code\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr: {}", self.stdout, self.stderr))
    }
}

fn inboxctl(h: &Harness, s: &Standin, args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_inboxctl"))
        .envs(integration_tests::endpoints().env())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("TABLE_NAME", &h.table)
        .env("STRIPE_API_BASE", s.base())
        .env("STRIPE_SECRET_KEY", "sk_test_it")
        .env_remove("INBOXCTL_JSON")
        .env_remove("WEBHOOK_SOURCES")
        .env_remove("WEBHOOK_SECRETS")
        .env_remove("WALLET_STRIPE_SOURCE")
        .current_dir(integration_tests::root())
        .args(["stripe", "catch-up", "--json", "--operator", "ops"])
        .args(args)
        .output()
        .expect("run inboxctl");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn key(id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse("stripe").unwrap(),
        EventId::parse(id).unwrap(),
    )
}

/// A top-up paid on the stand-in, its webhooks not sent: its events of the wallet's types.
fn top_up(s: &Standin, minor: i64) -> Vec<Value> {
    let paid = s.call(
        "POST",
        "/_standin/checkout_sessions",
        Some(&json!({"amount": minor, "currency": "usd", "metadata": {"tenant": "acme"}})),
    );
    s.events(paid["events"].as_array().unwrap())
        .into_iter()
        .filter(|e| wallet_ledger::STRIPE_TYPES.contains(&e["type"].as_str().unwrap()))
        .collect()
}

fn ids(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn catch_up_stores_what_the_inbox_lacks_once_and_a_dry_run_nothing() {
    let s = Standin::start();
    let h = Harness::new().await;
    let store = DynamoTable::new(h.client.clone(), h.table.clone());
    let received = top_up(&s, 2500);
    let lost = top_up(&s, 1000);
    assert_eq!((received.len(), lost.len()), (2, 2), "{received:?}");
    for event in &received {
        let body = event.to_string();
        let id = event["id"].as_str().unwrap();
        let headers = h.sign("stripe", body.as_bytes(), id);
        let reply = h
            .send(&api_event("POST", "stripe", &headers, Some(&body), false))
            .await;
        assert_eq!(reply.code(), "accepted");
    }
    let mut lost_ids: Vec<String> = lost
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    lost_ids.sort();

    let look = inboxctl(&h, &s, &["--since", "1h", "--dry-run"]).json(0);
    assert_eq!(
        (look["listed"].as_u64(), look["new"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(look["already_had"], 2);
    assert_eq!(ids(&look["missing"]["ids"]), lost_ids);
    for id in &lost_ids {
        assert!(
            store.get(&key(id)).await.unwrap().is_none(),
            "a dry run stores nothing"
        );
    }

    let done = inboxctl(&h, &s, &["--since", "1h"]).json(0);
    assert_eq!(
        (done["new"].as_u64(), done["already_had"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        done["missing"]["by_type"],
        json!({"checkout.session.completed": 1, "payment_intent.succeeded": 1})
    );
    assert!(done["stripe_requests"].as_u64().unwrap() >= 1);
    for id in &lost_ids {
        let m = store.get(&key(id)).await.unwrap().expect("stored");
        assert!(m.headers[ORIGIN_HEADER].starts_with("catch-up; operator=ops; at="));
    }
    let received_one = store
        .get(&key(received[0]["id"].as_str().unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert!(
        !received_one.headers.contains_key(ORIGIN_HEADER),
        "the webhook's left alone"
    );

    let again = inboxctl(
        &h,
        &s,
        &["--since", "1h", "--types", "payment_intent.succeeded"],
    )
    .json(0);
    assert_eq!(
        (again["listed"].as_u64(), again["new"].as_u64()),
        (Some(2), Some(0))
    );

    let too_far = inboxctl(&h, &s, &["--since", "31d"]);
    assert_eq!(too_far.code, 2, "{}", too_far.stderr);
    assert!(too_far.stderr.contains("30 days"), "{}", too_far.stderr);
}
