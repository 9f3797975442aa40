//! `inboxctl wallet …` against the local AWS emulators (DynamoDB Local): a wallet created by the CLI, real
//! signed Stripe and mailer (Standard Webhooks) events ingested through the ingest handler, read
//! from the table's stream and processed by the real processor with the wallet handler; then the
//! CLI's balance, ledger and reconcile views of the result, before and after a balance is
//! tampered with. Run with `make test`, which starts the emulators and sets their endpoints.

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::SystemClock;
use inbox_core::domain::{EventId, MessageKey, SourceName, Status};
use inbox_core::process::registry::Registry;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::MessageStore as _;
use integration_tests::api_event;
use integration_tests::pipeline::Pipeline;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::Command;
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::{Currency, Wallet, WalletHandler, WalletSources};

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

    #[track_caller]
    fn fails(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "expected exit code {code}\nstdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Runs the binary against `table` in the emulator.
fn inboxctl(table: &str, args: &[&str]) -> Run {
    inboxctl_with(table, &[], args)
}

/// Runs the binary against `table` with more variables set.
fn inboxctl_with(table: &str, vars: &[(&str, &str)], args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_inboxctl"))
        .envs(vars.iter().copied())
        .envs(integration_tests::endpoints().env())
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("TABLE_NAME", table)
        .env_remove("INBOXCTL_JSON")
        .env_remove("RETRY_QUEUE_URL")
        .env_remove("QUARANTINE_QUEUE_URL")
        .current_dir(integration_tests::root())
        .args(args)
        .output()
        .expect("run inboxctl");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn key(source: &str, id: &str) -> MessageKey {
    MessageKey::new(
        SourceName::parse(source).expect("source"),
        EventId::parse(id).expect("event id"),
    )
}

/// Ingests a Stripe event (signed now with the local secret) through the real ingest handler.
async fn ingest_stripe(p: &Pipeline, id: &str, kind: &str) -> MessageKey {
    let body = integration_tests::stripe_event(id, kind, 0);
    let headers = p.harness.sign("stripe", body.as_bytes(), id);
    let reply = p
        .harness
        .send(&api_event("POST", "stripe", &headers, Some(&body), false))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.json);
    key("stripe", id)
}

/// Ingests a mailer (Standard Webhooks) event: `webhook-id` is the event id.
async fn ingest_mailer(
    p: &Pipeline,
    webhook_id: &str,
    kind: &str,
    message_id: &str,
    tenant: &str,
) -> MessageKey {
    let body =
        json!({"type": kind, "data": {"message_id": message_id, "tenant": tenant}}).to_string();
    let headers = p.harness.sign("mailer", body.as_bytes(), webhook_id);
    let reply = p
        .harness
        .send(&api_event("POST", "mailer", &headers, Some(&body), false))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.json);
    key("mailer", webhook_id)
}

fn store(p: &Pipeline) -> DynamoTable {
    DynamoTable::new(p.harness.client.clone(), p.harness.table.clone())
}

fn unique(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn create_process_inspect_and_reconcile_a_wallet() {
    let p = Pipeline::new().await;
    let table = p.harness.table.clone();
    let t = table.as_str();

    // Nothing yet: balance and ledger say how to create the wallet; reconcile has nothing to check.
    let missing = inboxctl(t, &["wallet", "balance", "acme"]).fails(1);
    assert!(
        missing.stderr.contains("no wallet") && missing.stderr.contains("wallet create"),
        "{}",
        missing.stderr
    );
    inboxctl(t, &["wallet", "ledger", "acme"]).fails(1);
    let empty = inboxctl(t, &["wallet", "reconcile"]).ok();
    assert!(empty.stdout.contains("all 0 wallet"), "{}", empty.stdout);

    // Create, then refuse a second create (the first stays as it was).
    let created = inboxctl(
        t,
        &[
            "wallet",
            "create",
            "acme",
            "--currency",
            "USD",
            "--price",
            "25",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(created["created"], true);
    assert_eq!(
        (
            created["wallet"]["floor"].as_i64(),
            created["wallet"]["review_threshold"].as_i64()
        ),
        (Some(2000), Some(100000)),
        "the prepaid floor and the review threshold by default"
    );
    assert_eq!(created["wallet"]["currency"], "usd");
    assert_eq!(created["wallet"]["message_price"], 25);
    assert_eq!(created["wallet"]["formatted"]["message_price"], "0.25 USD");
    let again = inboxctl(
        t,
        &[
            "wallet",
            "create",
            "acme",
            "--currency",
            "eur",
            "--price",
            "99",
        ],
    )
    .fails(1);
    assert!(
        again.stderr.contains("already has a wallet"),
        "{}",
        again.stderr
    );
    inboxctl(
        t,
        &[
            "wallet",
            "create",
            "beta",
            "--currency",
            "dollars",
            "--price",
            "1",
        ],
    )
    .fails(2);
    inboxctl(
        t,
        &[
            "wallet",
            "create",
            "beta",
            "--currency",
            "jpy",
            "--price",
            "3",
            "--floor",
            "-1000",
        ],
    )
    .ok();

    // Real signed events, each processed in its own batch (in one batch, at the deployed
    // concurrency, they may be decided in any order: a different, equally valid ledger): a 20.00
    // USD top-up; email m1 sent then accepted (held, then debited); email m2 sent (held).
    let registry =
        WalletHandler::new(store(&p), WalletSources::default()).register(Registry::new());
    let processor = p.processor(registry, SystemClock).await;
    let process_next = || async {
        let batch = p.read_stream().await;
        assert_eq!(batch.records.len(), 1);
        let (response, summary) = processor.handle_stream_batch(batch).await;
        assert!(response.batch_item_failures.is_empty(), "{summary:?}");
    };
    let topup = ingest_stripe(&p, &unique("evt"), "checkout.session.completed").await;
    process_next().await;
    let m1_sent = ingest_mailer(&p, &unique("msg"), "message.sent", "m1", "acme").await;
    process_next().await;
    let m1_accepted = ingest_mailer(&p, &unique("msg"), "message.accepted", "m1", "acme").await;
    process_next().await;
    let m2_sent = ingest_mailer(&p, &unique("msg"), "message.sent", "m2", "acme").await;
    process_next().await;
    let keys = [&topup, &m1_sent, &m1_accepted, &m2_sent];
    for k in keys {
        let m = store(&p)
            .get(k)
            .await
            .expect("get")
            .expect("the message exists");
        assert_eq!(m.status, Status::Processed, "{k:?}: {:?}", m.last_error);
    }

    // Balance: 2000 − 25 (m1 debited) = 1975; held 25 (m2); available 1950.
    let b = inboxctl(t, &["wallet", "balance", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(
        (
            b["balance"].as_i64(),
            b["held"].as_i64(),
            b["available"].as_i64()
        ),
        (Some(1975), Some(25), Some(1950))
    );
    assert_eq!(b["formatted"]["balance"], "19.75 USD");
    assert_eq!(b["formatted"]["available"], "19.50 USD");
    assert_eq!(b["floor"], 2000);
    assert_eq!(b["review_threshold"], 100000);
    assert_eq!(
        (
            b["overdrawn"].as_bool(),
            b["review"].as_bool(),
            b["low"].as_bool()
        ),
        (Some(true), Some(false), Some(true)),
        "webhook-driven holds below the floor are recorded and flag the wallet"
    );
    let debits: i64 = b["debits_by_month"]
        .as_object()
        .map(|m| m.values().filter_map(Value::as_i64).sum())
        .unwrap_or_default();
    assert_eq!(debits, 25, "{b}");
    let human = inboxctl(t, &["wallet", "balance", "acme"]).ok();
    assert!(
        human.stdout.contains("19.75 USD (1975)") && human.stdout.contains("0.25 USD (25)"),
        "{}",
        human.stdout
    );

    // Ledger: one entry per movement, each naming its webhook event.
    let l = inboxctl(t, &["wallet", "ledger", "acme", "--rows", "--json"])
        .ok()
        .json();
    assert_eq!(l["total_entries"], 4);
    assert_eq!(l["unreadable_entries"], 0);
    assert_eq!(l["truncated"], false);
    let entries = l["entries"].as_array().cloned().unwrap_or_default();
    let summary: BTreeSet<(String, i64, i64, String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_owned(),
                e["balance_delta"].as_i64().unwrap_or_default(),
                e["held_delta"].as_i64().unwrap_or_default(),
                e["event_source"].as_str().unwrap_or_default().to_owned(),
                e["event_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, i64, i64, String, String)> = [
        ("topup", 2000, 0, &topup),
        ("hold", 0, 25, &m1_sent),
        ("debit", -25, -25, &m1_accepted),
        ("hold", 0, 25, &m2_sent),
    ]
    .into_iter()
    .map(|(kind, b, h, k)| {
        (
            kind.to_owned(),
            b,
            h,
            k.source.to_string(),
            k.event_id.to_string(),
        )
    })
    .collect();
    assert_eq!(summary, expected);
    let topup_entry = entries
        .iter()
        .find(|e| e["kind"] == "topup")
        .expect("a top-up entry");
    assert_eq!(topup_entry["payment_id"], "pi_123");
    assert_eq!(topup_entry["email_id"], Value::Null);
    let emails = l["emails"].as_array().cloned().unwrap_or_default();
    let m1 = emails
        .iter()
        .find(|r| r["message_id"] == "m1")
        .expect("row m1");
    assert_eq!(
        (m1["state"].as_str(), m1["amount"].as_i64()),
        (Some("debited"), Some(25))
    );
    assert_eq!(
        strings(&m1["events"]),
        vec![
            m1_sent.event_id.to_string(),
            m1_accepted.event_id.to_string()
        ]
    );
    let m2 = emails
        .iter()
        .find(|r| r["message_id"] == "m2")
        .expect("row m2");
    assert_eq!(m2["state"], "held");
    let pay = &l["payments"][0];
    assert_eq!(
        (pay["payment_key"].as_str(), pay["credited"].as_i64()),
        (Some("pi_123"), Some(2000))
    );
    assert_eq!(strings(&pay["events"]), vec![topup.event_id.to_string()]);
    let limited = inboxctl(t, &["wallet", "ledger", "acme", "--limit", "1", "--json"])
        .ok()
        .json();
    assert_eq!(limited["entries"].as_array().map(Vec::len), Some(1));
    assert_eq!(limited["truncated"], true);
    assert_eq!(limited.get("emails"), None, "rows only with --rows");
    let table_view = inboxctl(t, &["wallet", "ledger", "acme", "--rows"]).ok();
    assert!(
        table_view.stdout.contains(topup.event_id.as_str())
            && table_view.stdout.contains("+20.00")
            && table_view.stdout.contains("Emails (2)"),
        "{}",
        table_view.stdout
    );

    // Everything reconciles.
    let clean = inboxctl(t, &["wallet", "reconcile"]).ok();
    assert!(
        clean.stdout.contains("all 2 wallet(s) reconcile"),
        "{}",
        clean.stdout
    );
    let clean = inboxctl(t, &["wallet", "reconcile", "--json"]).ok().json();
    assert_eq!(clean["clean"], true);
    assert_eq!(
        (clean["wallets"].as_u64(), clean["entries"].as_u64()),
        (Some(2), Some(4))
    );
    // With no patience at all, m2's hold is stale.
    let stale = inboxctl(
        t,
        &["wallet", "reconcile", "--stale-after-hours", "0", "--json"],
    )
    .fails(1)
    .json();
    assert_eq!(stale["stale_holds"][0]["message_id"], "m2");
    assert_eq!(stale["stale_holds"].as_array().map(Vec::len), Some(1));

    // Someone edits acme's balance by hand: reconcile fails and names the tenant.
    p.harness
        .client
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(wallet_pk("acme")))
        .key("sk", AttributeValue::S(WALLET_SK.into()))
        .update_expression("SET balance = balance + :d")
        .expression_attribute_values(":d", AttributeValue::N("100".into()))
        .send()
        .await
        .expect("tamper with the balance");
    let bad = inboxctl(t, &["wallet", "reconcile"]).fails(1);
    assert!(bad.stdout.contains("acme"), "{}", bad.stdout);
    assert!(
        bad.stderr.contains("do not reconcile") && bad.stderr.contains("acme"),
        "{}",
        bad.stderr
    );
    let bad = inboxctl(t, &["wallet", "reconcile", "--json"])
        .fails(1)
        .json();
    assert_eq!(bad["clean"], false);
    let mismatches = bad["mismatched_wallets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(mismatches.len(), 1, "{bad}");
    assert_eq!(mismatches[0]["tenant"], "acme");
    assert_eq!(
        (
            mismatches[0]["balance"].as_i64(),
            mismatches[0]["entries_balance"].as_i64()
        ),
        (Some(2075), Some(1975))
    );
    assert_eq!(bad["orphan_entries"], json!([]));

    // The second create did not touch the wallet: still USD, price 25.
    let b = inboxctl(t, &["wallet", "balance", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(
        (b["currency"].as_str(), b["message_price"].as_i64()),
        (Some("usd"), Some(25))
    );
    assert!(store(&p).get(&topup).await.expect("get").is_some());

    // Amounts beyond WALLET_MAX_AMOUNT are refused at creation.
    let big = inboxctl_with(
        t,
        &[("WALLET_MAX_AMOUNT", "1000")],
        &[
            "wallet",
            "create",
            "gamma",
            "--currency",
            "usd",
            "--price",
            "1001",
        ],
    )
    .fails(2);
    assert!(big.stderr.contains("WALLET_MAX_AMOUNT"), "{}", big.stderr);

    // A wallet created before the registry existed (its item alone): found by the fallback scan
    // and named, until `reindex` registers it; then reconciliation reads the registry only.
    let legacy = Wallet::new(
        wallet_ledger::TenantId::parse("legacy").expect("tenant"),
        Currency::parse("eur").expect("eur").amount(5),
        Currency::parse("eur").expect("eur").amount(0),
        None,
        0,
    );
    p.harness
        .client
        .put_item()
        .table_name(&table)
        .set_item(Some(legacy.to_item()))
        .send()
        .await
        .expect("put a wallet the old way");
    let before = inboxctl(t, &["wallet", "reconcile", "--json"])
        .fails(1)
        .json();
    assert_eq!(before["wallets"], 3);
    assert_eq!(before["registry_complete"], false);
    assert_eq!(before["unregistered_wallets"], json!(["legacy"]));
    assert_eq!(before["retention_days"], 30);
    let human = inboxctl(t, &["wallet", "reconcile"]).fails(1);
    assert!(
        human.stdout.contains("inboxctl wallet reindex"),
        "{}",
        human.stdout
    );
    let done = inboxctl(t, &["wallet", "reindex", "--json"]).ok().json();
    assert_eq!(
        (done["wallets"].as_u64(), done["newly_registered"].as_u64()),
        (Some(3), Some(1))
    );
    let after = inboxctl(t, &["wallet", "reconcile", "--json"])
        .fails(1)
        .json();
    assert_eq!(after["wallets"], 3);
    assert_eq!(after["registry_complete"], true);
    assert_eq!(after["unregistered_wallets"], json!([]));
    let again = inboxctl(t, &["wallet", "reindex"]).ok();
    assert!(
        again.stdout.contains("0 newly registered"),
        "{}",
        again.stdout
    );
}

#[tokio::test]
async fn autopay_is_set_shown_paused_resumed_and_removed_in_the_table_each_change_journaled() {
    let p = Pipeline::new().await;
    let t = p.harness.table.clone();
    let t = t.as_str();
    let refused = inboxctl(t, &["wallet", "autopay", "set", "acme", "--cap", "100"]).fails(1);
    assert!(refused.stderr.contains("no wallet"), "{}", refused.stderr);
    inboxctl(
        t,
        &[
            "wallet",
            "create",
            "acme",
            "--currency",
            "USD",
            "--price",
            "25",
        ],
    )
    .ok();
    let set = &[
        "wallet",
        "autopay",
        "set",
        "acme",
        "--threshold",
        "1000",
        "--target",
        "5000",
        "--cap",
        "20000",
        "--customer",
        "cus_1",
        "--payment-method",
        "pm_1",
        "--operator",
        "ana",
    ];
    inboxctl(t, set).ok();
    let shown = inboxctl(t, &["wallet", "autopay", "show", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(shown["status"], "active", "{shown}");
    assert_eq!(shown["top_up"]["target"], 5000, "{shown}");
    inboxctl(
        t,
        &[
            "wallet",
            "autopay",
            "pause",
            "acme",
            "--reason",
            "card review",
        ],
    )
    .ok();
    let paused = inboxctl(t, &["wallet", "autopay", "show", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(paused["status"], "paused", "{paused}");
    inboxctl(t, &["wallet", "autopay", "resume", "acme"]).ok();
    inboxctl(t, &["wallet", "autopay", "rm", "acme"]).ok();
    let removed = inboxctl(t, &["wallet", "autopay", "show", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(removed["top_up"], Value::Null, "{removed}");

    // What the commands wrote is what the ledger reads, and each change left a journal entry.
    let store = DynamoTable::new(p.harness.client.clone(), t);
    let ledger = wallet_ledger::Ledger::new(&store);
    let tenant = wallet_ledger::TenantId::parse("acme").expect("tenant");
    let stored = ledger
        .autopay(&tenant)
        .await
        .expect("readable")
        .expect("stored");
    assert_eq!(stored.top_up, None);
    assert_eq!(stored.method, None, "rm removes the saved method");
    let journal = ledger.autopay_journal(&tenant).await.expect("journal");
    assert_eq!(journal.len(), 4, "set, pause, resume, rm: {journal:?}");
}

#[tokio::test]
async fn new_wallets_take_the_stages_limits_and_set_changes_one_wallets_later() {
    let p = Pipeline::new().await;
    let t = p.harness.table.clone();
    let t = t.as_str();
    let store = store(&p);
    inboxctl(
        t,
        &[
            "wallet",
            "create",
            "acme",
            "--currency",
            "usd",
            "--price",
            "25",
        ],
    )
    .ok();
    // A movement's amount, as the handler adds it: `set` must leave it alone.
    inbox_core::store::ItemWriter::commit(
        &store,
        vec![inbox_core::store::Effect::Adjust {
            pk: wallet_pk("acme"),
            sk: WALLET_SK.into(),
            add: vec![("balance".into(), 1234)],
            set: Vec::new(),
        }],
    )
    .await
    .expect("adjust");
    // The stage's defaults come from its variables; one wallet's are changed by `set`, which
    // leaves the amounts alone and is journaled.
    let delta = inboxctl_with(
        t,
        &[
            ("WALLET_DEFAULT_FLOOR", "-300"),
            ("WALLET_DEFAULT_REVIEW_THRESHOLD", "700"),
        ],
        &[
            "wallet",
            "create",
            "delta",
            "--currency",
            "usd",
            "--price",
            "5",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(
        (
            delta["wallet"]["floor"].as_i64(),
            delta["wallet"]["review_threshold"].as_i64()
        ),
        (Some(-300), Some(700))
    );
    let set = inboxctl(
        t,
        &[
            "wallet",
            "set",
            "acme",
            "--floor",
            "0",
            "--no-review-threshold",
            "--operator",
            "ops",
            "--json",
        ],
    )
    .ok()
    .json();
    assert_eq!(set["before"]["floor"], 2000);
    assert_eq!(
        (
            set["after"]["floor"].as_i64(),
            set["after"]["review_threshold"].as_i64()
        ),
        (Some(0), None)
    );
    assert_eq!(
        (
            set["wallet"]["balance"].as_i64(),
            set["wallet"]["held"].as_i64()
        ),
        (Some(1234), Some(0)),
        "the amounts are left alone"
    );
    assert_eq!(set["wallet"]["review_threshold"], Value::Null);
    let journal = wallet_ledger::Ledger::new(&store)
        .limits_log(&wallet_ledger::TenantId::parse("acme").expect("tenant"))
        .await
        .expect("the journal");
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].actor, "ops");
    let nothing = inboxctl(t, &["wallet", "set", "acme"]).fails(2);
    assert!(
        nothing.stderr.contains("nothing to change"),
        "{}",
        nothing.stderr
    );
    let ghost = inboxctl(t, &["wallet", "set", "ghost", "--floor", "1"]).fails(1);
    assert!(ghost.stderr.contains("no wallet"), "{}", ghost.stderr);

    let human = inboxctl(t, &["wallet", "set", "delta", "--review-threshold", "900"]).ok();
    assert!(
        human
            .stdout
            .contains("review threshold 7.00 USD (700) → 9.00 USD (900)"),
        "{}",
        human.stdout
    );
}

/// Ingests a test-mode Stripe event carrying `object` through the real ingest handler.
async fn ingest_object(p: &Pipeline, id: &str, kind: &str, object: Value) -> MessageKey {
    let body = json!({"id": id, "object": "event", "type": kind, "api_version": "2024-06-20",
        "livemode": false, "data": {"object": object}})
    .to_string();
    let headers = p.harness.sign("stripe", body.as_bytes(), id);
    let reply = p
        .harness
        .send(&api_event("POST", "stripe", &headers, Some(&body), false))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.json);
    key("stripe", id)
}

#[tokio::test]
async fn unmatched_payments_are_listed_and_bound_once() {
    let p = Pipeline::new().await;
    let table = p.harness.table.clone();
    let t = table.as_str();
    for tenant in ["acme", "beta"] {
        inboxctl(
            t,
            &[
                "wallet",
                "create",
                tenant,
                "--currency",
                "usd",
                "--price",
                "5",
            ],
        )
        .ok();
    }
    let none = inboxctl(t, &["wallet", "unmatched"]).ok();
    assert!(
        none.stdout.contains("no unmatched payments"),
        "{}",
        none.stdout
    );
    let registry =
        WalletHandler::new(store(&p), WalletSources::default()).register(Registry::new());
    let processor = p.processor(registry, SystemClock).await;

    // A paid session without metadata (a misconfigured payment link), then a refund of part of
    // it: nobody knows whose it is yet.
    let paid = unique("evt_lost");
    let refund = unique("evt_refund");
    ingest_object(
        &p,
        &paid,
        "checkout.session.completed",
        json!({"id": "cs_lost", "object": "checkout.session", "payment_intent": "pi_lost",
            "amount_total": 4000, "currency": "usd", "customer": "cus_9",
            "customer_details": {"email": "payer@example.com"}, "mode": "payment",
            "payment_status": "paid", "metadata": {}}),
    )
    .await;
    let (response, _) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    ingest_object(
        &p,
        &refund,
        "charge.refunded",
        json!({"id": "ch_lost", "object": "charge", "amount": 4000, "amount_refunded": 1000,
            "currency": "usd", "metadata": {}, "payment_intent": "pi_lost"}),
    )
    .await;
    let (response, _) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());

    let listed = inboxctl(t, &["wallet", "unmatched", "--json"]).ok().json();
    assert_eq!(
        (listed["count"].clone(), listed["over_window"].clone()),
        (json!(1), json!(0))
    );
    assert_eq!(listed["unmatched_after_minutes"], 60);
    let one = &listed["payments"][0];
    assert_eq!(one["payment"], "pi_lost");
    assert_eq!(one["amount"], 4000);
    assert_eq!(one["amount_text"], "40.00 USD (4000)");
    assert_eq!(one["customer"], "cus_9");
    assert_eq!(one["email"], "payer@example.com");
    assert_eq!(strings(&one["messages"]), vec![format!("stripe/{paid}")]);
    let human = inboxctl(t, &["wallet", "unmatched"]).ok().stdout;
    assert!(
        human.contains("pi_lost")
            && human.contains("payer@example.com")
            && human.contains("40.00 USD"),
        "{human}"
    );
    // Within the window the reconciliation is clean. Aged by two minutes (its first sighting
    // moved back, as the clock would), a window of one minute counts it, and the report says so.
    inboxctl(t, &["wallet", "reconcile"]).ok();
    let earlier = one["first_seen_ms"].as_i64().unwrap() - 120_000;
    let (pk, sk) = wallet_ledger::payments::unmatched::items::unmatched_key("pi_lost");
    p.harness
        .client
        .update_item()
        .table_name(t)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .update_expression("SET first_seen = :t, open_due = :t")
        .expression_attribute_values(":t", AttributeValue::N(earlier.to_string()))
        .send()
        .await
        .expect("age the unmatched payment");
    let aged = inboxctl(t, &["wallet", "unmatched", "--json"]).ok().json();
    assert_eq!(aged["over_window"], 0, "an hour by default");
    let aged = inboxctl_with(
        t,
        &[("RECONCILE_UNMATCHED_AFTER_MINUTES", "1")],
        &["wallet", "unmatched", "--json"],
    )
    .ok()
    .json();
    assert_eq!(aged["payments"][0]["over_window"], true);
    let counted = inboxctl_with(
        t,
        &[("RECONCILE_UNMATCHED_AFTER_MINUTES", "1")],
        &["wallet", "reconcile", "--json"],
    )
    .fails(1)
    .json();
    assert_eq!(counted["unmatched_payments"][0]["payment_key"], "pi_lost");
    assert_eq!(counted["unmatched_after_minutes"], 1);
    let said = inboxctl_with(
        t,
        &[("RECONCILE_UNMATCHED_AFTER_MINUTES", "1")],
        &["wallet", "reconcile"],
    )
    .fails(1);
    assert!(
        said.stderr
            .contains("1 payment(s) unmatched longer than the window")
            && said.stdout.contains("pi_lost"),
        "{said:?}"
    );

    // Bind: refused without a wallet; then bound, its message replayed through the pipeline.
    let retry = ["--retry-queue-url", p.retry_url.as_str()];
    let ghost = inboxctl(
        t,
        &[&["wallet", "bind", "pi_lost", "ghost"][..], &retry].concat(),
    )
    .fails(1);
    assert!(
        ghost.stderr.contains("no wallet for tenant \"ghost\""),
        "{}",
        ghost.stderr
    );
    let bound = inboxctl(
        t,
        &[
            &[
                "wallet",
                "bind",
                "pi_lost",
                "acme",
                "--operator",
                "alice",
                "--json",
            ][..],
            &retry,
        ]
        .concat(),
    )
    .ok()
    .json();
    assert_eq!(bound["tenant"], "acme");
    assert_eq!(bound["refund_total"], 1000);
    assert_eq!(bound["replayed"][0]["message"], format!("stripe/{paid}"));
    assert_eq!(bound["replayed"][0]["outcome"], "replayed");
    let replayed = store(&p)
        .get(&key("stripe", &paid))
        .await
        .expect("get")
        .expect("the message exists");
    assert_eq!(replayed.status, Status::Pending);
    assert_eq!(
        replayed.history.last().map(|h| h.note.as_str()),
        Some("replayed by alice (was processed)")
    );
    while store(&p)
        .get(&key("stripe", &paid))
        .await
        .expect("get")
        .map(|m| m.status)
        != Some(Status::Processed)
    {
        p.drain_retry_once(&processor).await;
    }
    let balance = inboxctl(t, &["wallet", "balance", "acme", "--json"])
        .ok()
        .json();
    assert_eq!(
        balance["balance"], 3000,
        "credited once, less the refund that waited"
    );
    assert_eq!(
        inboxctl(t, &["wallet", "unmatched", "--json"]).ok().json()["count"],
        0
    );

    // Twice, or to another tenant: refused, naming the tenant it is bound to.
    let twice = inboxctl(
        t,
        &[&["wallet", "bind", "pi_lost", "acme"][..], &retry].concat(),
    )
    .fails(1);
    assert!(
        twice
            .stderr
            .contains("already bound to tenant \"acme\" (by alice)"),
        "{}",
        twice.stderr
    );
    let other = inboxctl(
        t,
        &[&["wallet", "bind", "pi_lost", "beta"][..], &retry].concat(),
    )
    .fails(1);
    assert!(
        other
            .stderr
            .contains("bound to tenant \"acme\" (by alice), not to \"beta\""),
        "{}",
        other.stderr
    );
    assert_eq!(
        inboxctl(t, &["wallet", "balance", "beta", "--json"])
            .ok()
            .json()["balance"],
        0
    );
    inboxctl_with(
        t,
        &[("RECONCILE_UNMATCHED_AFTER_MINUTES", "1")],
        &["wallet", "reconcile"],
    )
    .ok();
}

/// A payment that is not ours (another product's, on a shared Stripe account) dismissed with a
/// reason: off the list and the UnmatchedPayments count, listed with `--dismissed` (who, when,
/// why), refused without a reason or twice, and still bound if it turns out to be ours.
#[tokio::test]
async fn an_unmatched_payment_that_is_not_ours_is_dismissed_and_can_still_be_bound() {
    let p = Pipeline::new().await;
    let table = p.harness.table.clone();
    let t = table.as_str();
    inboxctl(
        t,
        &[
            "wallet",
            "create",
            "acme",
            "--currency",
            "usd",
            "--price",
            "5",
        ],
    )
    .ok();
    let registry =
        WalletHandler::new(store(&p), WalletSources::default()).register(Registry::new());
    let processor = p.processor(registry, SystemClock).await;
    let paid = ingest_object(
        &p,
        &unique("evt_shop"),
        "payment_intent.succeeded",
        json!({"id": "pi_shop", "object": "payment_intent", "amount": 4200,
            "amount_received": 4200, "currency": "usd", "latest_charge": "ch_shop",
            "status": "succeeded", "metadata": {}}),
    )
    .await;
    let (response, _) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        inboxctl(t, &["wallet", "unmatched", "--json"]).ok().json()["count"],
        1
    );

    let no_reason = inboxctl(
        t,
        &["wallet", "unmatched", "dismiss", "pi_shop", "--reason", " "],
    )
    .fails(1);
    assert!(
        no_reason.stderr.contains("needs a reason"),
        "{}",
        no_reason.stderr
    );
    let dismissed = inboxctl(
        t,
        &[
            "wallet",
            "unmatched",
            "dismiss",
            "pi_shop",
            "--reason",
            "the shop's sale",
            "--operator",
            "bob",
        ],
    )
    .ok();
    assert!(
        dismissed
            .stdout
            .contains("dismissed payment pi_shop (42.00 USD (4200)) as bob"),
        "{}",
        dismissed.stdout
    );
    assert_eq!(
        inboxctl(t, &["wallet", "unmatched", "--json"]).ok().json()["count"],
        0
    );
    let listed = inboxctl(t, &["wallet", "unmatched", "--dismissed", "--json"])
        .ok()
        .json();
    assert_eq!(listed["count"], 1);
    assert_eq!(
        (
            listed["payments"][0]["payment"].clone(),
            listed["payments"][0]["dismissed_by"].clone(),
            listed["payments"][0]["reason"].clone()
        ),
        (json!("pi_shop"), json!("bob"), json!("the shop's sale"))
    );
    // Not counted by reconciliation, however long it waits: first seen two hours ago, with a
    // window of one minute.
    let earlier = listed["payments"][0]["dismissed_at_ms"].as_i64().unwrap() - 7_200_000;
    let (pk, sk) = wallet_ledger::payments::unmatched::items::unmatched_key("pi_shop");
    p.harness
        .client
        .update_item()
        .table_name(t)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .update_expression("SET first_seen = :t")
        .expression_attribute_values(":t", AttributeValue::N(earlier.to_string()))
        .send()
        .await
        .expect("age the payment");
    inboxctl_with(
        t,
        &[("RECONCILE_UNMATCHED_AFTER_MINUTES", "1")],
        &["wallet", "reconcile"],
    )
    .ok();
    let twice = inboxctl(
        t,
        &[
            "wallet",
            "unmatched",
            "dismiss",
            "pi_shop",
            "--reason",
            "again",
        ],
    )
    .fails(1);
    assert!(
        twice.stderr.contains("dismissed already by bob"),
        "{}",
        twice.stderr
    );

    // Ours after all: bound, its message replayed and processed, credited once.
    let retry = ["--retry-queue-url", p.retry_url.as_str()];
    inboxctl(
        t,
        &[&["wallet", "bind", "pi_shop", "acme"][..], &retry].concat(),
    )
    .ok();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while store(&p).get(&paid).await.expect("get").map(|m| m.status) != Some(Status::Processed) {
        assert!(
            std::time::Instant::now() < deadline,
            "the replayed message was not processed"
        );
        p.drain_retry_once(&processor).await;
    }
    assert_eq!(
        inboxctl(t, &["wallet", "balance", "acme", "--json"])
            .ok()
            .json()["balance"],
        4200
    );
    assert_eq!(
        inboxctl(t, &["wallet", "unmatched", "--dismissed", "--json"])
            .ok()
            .json()["count"],
        0
    );
}

/// Issue 32: `wallet create` refuses a tenant outside the grammar before anything is written; a
/// wallet stored before the grammar is still shown and listed, and refused for a new write.
#[tokio::test]
async fn tenants_outside_the_grammar_are_refused_and_stored_ones_still_read() {
    let p = Pipeline::new().await;
    let table = p.harness.table.clone();
    let t = table.as_str();
    for bad in ["a/b", "..", "Acme Corp", "é"] {
        let refused = inboxctl(
            t,
            &[
                "wallet",
                "create",
                bad,
                "--currency",
                "usd",
                "--price",
                "25",
            ],
        )
        .fails(2);
        assert!(
            refused.stderr.contains("A-Z a-z 0-9 . _ : -"),
            "{bad:?}: {}",
            refused.stderr
        );
        let item = p
            .harness
            .client
            .get_item()
            .table_name(&table)
            .key("pk", AttributeValue::S(wallet_pk(bad)))
            .key("sk", AttributeValue::S(WALLET_SK.into()))
            .send()
            .await
            .expect("get_item");
        assert!(item.item.is_none(), "{bad:?}: a wallet was written");
    }

    let legacy = Wallet::new(
        wallet_ledger::TenantId::stored("Acme Corp").expect("a stored tenant"),
        Currency::parse("usd").expect("usd").amount(25),
        Currency::parse("usd").expect("usd").amount(0),
        None,
        0,
    );
    p.harness
        .client
        .put_item()
        .table_name(&table)
        .set_item(Some(legacy.to_item()))
        .send()
        .await
        .expect("put a wallet stored before the grammar");
    let shown = inboxctl(t, &["wallet", "balance", "Acme Corp", "--json"])
        .ok()
        .json();
    assert_eq!(shown["tenant"], "Acme Corp");
    let listed = inboxctl(t, &["wallet", "reconcile", "--json"]).json();
    assert_eq!(listed["wallets"], 1, "{listed}");
    let set = inboxctl(t, &["wallet", "set", "Acme Corp", "--floor", "0"]).fails(2);
    assert!(set.stderr.contains("contains ' '"), "{}", set.stderr);
}
