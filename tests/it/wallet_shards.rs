//! A hot tenant on DynamoDB Local: a wallet of 8 shards takes 2,000 holds through the wallet
//! API's real handler and 2,000 webhook debits through the processor at the same time, with no
//! movement lost or made twice (the entries sum to the balance and the held amount, every hold
//! has its row, reconciliation is clean), the floor on the total; a tight wallet of 8 shards
//! refuses exactly the holds the whole wallet cannot afford under 200 concurrent holds; and a
//! wallet funded on one shard, others overdrawn, refills them while concurrent holds and captures
//! contend, granting exactly what it affords. Each prints the conflicts, refills and retries it saw.
//! The API and the processor keep a view of the wallet as deployed (`WALLET_VIEW_MS`), so most
//! movements read only their own shard.

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use aws_lambda_events::encodings::Body;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::domain::{EventId, MessageKey, SourceName};
use inbox_core::metrics::RecordingSink;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::{Pipeline, TestProcessor};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use wallet_api::{ApiConfig, WalletApi};
use wallet_ledger::balance::rules::{EmailState, EntryKind};
use wallet_ledger::payments::checkout::{
    Checkout, CheckoutError, CheckoutRequest, CheckoutSession,
};
use wallet_ledger::reconcile::{reconcile, ReconcileOptions};
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletSources, WalletViews};

const PRICE: i64 = 25;
const FLOOR: i64 = 1_000;
const SHARDS: u32 = 8;

/// No checkout in these tests.
#[derive(Debug, Clone, Default)]
struct NoCheckout;

impl Checkout for NoCheckout {
    async fn create_session(
        &self,
        _request: &CheckoutRequest,
    ) -> Result<CheckoutSession, CheckoutError> {
        Err(CheckoutError::Unavailable("no checkout here".into()))
    }
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn wallet(store: &DynamoTable) -> Wallet {
    Ledger::new(store).wallet(&acme()).await.unwrap().unwrap()
}

/// A wallet of `SHARDS` shards credited with `amount` by a signed Stripe top-up through the
/// pipeline (it lands on the shard its payment hashes to).
async fn sharded_wallet(amount: i64) -> (Pipeline, DynamoTable) {
    sharded_wallet_paid(amount, "pi_1").await
}

/// [`sharded_wallet`] with the top-up's payment intent `payment` (which picks its shard).
async fn sharded_wallet_paid(amount: i64, payment: &str) -> (Pipeline, DynamoTable) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let usd = Currency::parse("usd").unwrap();
    let w = Wallet::new(acme(), usd.amount(PRICE), usd.amount(FLOOR), None, 0);
    Ledger::new(&store).create(&w).await.unwrap();
    let set = Ledger::new(&store)
        .set_shards(&acme(), SHARDS)
        .await
        .unwrap();
    assert_eq!((set.before, set.after), (1, SHARDS));
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let session = json!({"object": "checkout.session", "id": "cs_1", "payment_intent": payment,
        "amount_total": amount, "currency": "usd", "payment_status": "paid", "metadata": {"tenant": "acme"}});
    let r = p
        .ingest(
            "evt_topup",
            "checkout.session.completed",
            json!({"livemode": false, "data": {"object": session}}),
        )
        .await;
    assert_eq!(r.code(), "accepted");
    processor.handle_stream_batch(p.read_stream().await).await;
    let w = wallet(&store).await;
    assert_eq!((w.balance.minor(), w.shard_count()), (amount, SHARDS));
    (p, store)
}

/// A view of sharded wallets as the deployed functions keep one (`WALLET_VIEW_MS`' default).
fn views() -> WalletViews {
    WalletViews::system(Duration::from_millis(
        wallet_ledger::balance::views::DEFAULT_VIEW_MS,
    ))
}

/// The API on a client with the SDK's default timeouts (DynamoDB Local under thousands of
/// transactions at once on a shared machine is slower than the deployed 2 s per attempt), its
/// metrics recorded.
async fn api(
    p: &Pipeline,
) -> (
    Arc<WalletApi<DynamoTable, NoCheckout, SystemClock>>,
    Arc<RecordingSink>,
) {
    let patient = aws_sdk_dynamodb::Client::new(&integration_tests::sdk_config().await);
    let store = DynamoTable::new(patient, p.harness.table.clone());
    let sink = Arc::new(RecordingSink::new());
    let api = WalletApi::new(store, NoCheckout, SystemClock, ApiConfig::default())
        .with_metrics(sink.clone())
        .with_views(views());
    (Arc::new(api), sink)
}

/// A real-shaped API Gateway HTTP API (payload 2.0) event of an IAM-authorized hold.
fn hold_event(key: &str, message_id: &str) -> ApiGatewayV2httpRequest {
    let body = json!({"message_id": message_id}).to_string();
    let e = json!({
        "version": "2.0",
        "routeKey": "POST /wallets/{tenant}/holds",
        "rawPath": "/wallets/acme/holds",
        "rawQueryString": "",
        "headers": {
            "host": "abc123.execute-api.us-east-1.amazonaws.com",
            "content-type": "application/json",
            "idempotency-key": key,
            "x-amz-date": "20261130T100000Z",
            "authorization": "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261130/us-east-1/execute-api/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123abcd",
        },
        "pathParameters": {"tenant": "acme"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {"method": "POST", "path": "/wallets/acme/holds", "protocol": "HTTP/1.1",
                     "sourceIp": "10.0.0.1", "userAgent": "sender/1.0"},
            "requestId": format!("req-{key}"),
            "routeKey": "POST /wallets/{tenant}/holds",
            "stage": "$default",
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1_796_032_800_000_i64,
            "authorizer": {"iam": {"accessKey": "ASIAEXAMPLE", "accountId": "123456789012",
                "callerId": "AROAEXAMPLE:sender", "cognitoIdentity": null, "principalOrgId": null,
                "userArn": "arn:aws:sts::123456789012:assumed-role/WalletApiCallerRole/sender",
                "userId": "AROAEXAMPLE:sender"}},
        },
        "body": body,
        "isBase64Encoded": false,
    });
    serde_json::from_value(e).unwrap()
}

/// One client's hold: a 503 or 409 is retried with the same key after its Retry-After (1 s),
/// within a deadline, as a client does; the final status and body, and how often it retried.
async fn hold(
    api: &WalletApi<DynamoTable, NoCheckout, SystemClock>,
    i: usize,
) -> (i64, Value, u32) {
    let (key, message) = (format!("key-{i}"), held_message(i));
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut retried = 0;
    loop {
        let r = wallet_api_function::respond(api, &hold_event(&key, &message)).await;
        let body: Value = match r.body {
            Some(Body::Text(t)) => serde_json::from_str(&t).unwrap(),
            other => panic!("a text body, got {other:?}"),
        };
        if !matches!(r.status_code, 503 | 409) || Instant::now() > deadline {
            return (r.status_code, body, retried);
        }
        retried += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `hold(api, i)` as its own task, at most as many in flight as `gate` lets through.
fn spawn_hold(
    api: &Arc<WalletApi<DynamoTable, NoCheckout, SystemClock>>,
    gate: &Arc<Semaphore>,
    i: usize,
) -> tokio::task::JoinHandle<(i64, Value, u32)> {
    let (api, gate) = (api.clone(), gate.clone());
    tokio::spawn(async move {
        let _permit = gate.acquire().await.unwrap();
        hold(&api, i).await
    })
}

/// The holds' final statuses counted and the client retries summed; a granted hold never leaves
/// the wallet below its floor, a refused one names the reason, nothing else is answered.
async fn hold_statuses(
    tasks: Vec<tokio::task::JoinHandle<(i64, Value, u32)>>,
) -> (HashMap<i64, usize>, u32) {
    let mut statuses: HashMap<i64, usize> = HashMap::new();
    let mut client_retries = 0;
    for t in tasks {
        let (status, body, retried) = t.await.unwrap();
        client_retries += retried;
        *statuses.entry(status).or_default() += 1;
        match status {
            201 => assert!(body["available"].as_i64().unwrap() >= FLOOR, "{body}"),
            402 => assert_eq!(body["error"], "insufficient_funds", "{body}"),
            other => panic!("status {other}: {body}"),
        }
    }
    (statuses, client_retries)
}

/// The mailer's signed `message.accepted` webhook `id` for `message_id`, through the real ingest
/// handler (a debit, or the capture of the message's hold).
async fn accepted(p: &Pipeline, id: &str, message_id: &str) {
    let body = json!({"type": "message.accepted", "timestamp": "2026-11-30T10:00:00Z",
        "data": {"message_id": message_id, "tenant": "acme"}});
    let body = body.to_string();
    let headers = p.harness.sign("mailer", body.as_bytes(), id);
    let event = integration_tests::api_event("POST", "mailer", &headers, Some(&body), false);
    assert_eq!(p.harness.send(&event).await.code(), "accepted", "{id}");
}

/// The processor's run of the mailer's webhook `id`; the emulator timing out under the load is
/// retried, as the stream's redelivery would. The outcome, and how often it ran again.
async fn process<C: Clock>(
    processor: &TestProcessor<C>,
    id: &str,
) -> (inbox_core::process::Outcome, u32) {
    let key = MessageKey::new(
        SourceName::parse("mailer").unwrap(),
        EventId::parse(id).unwrap(),
    );
    let mut unavailable = 0u32;
    loop {
        match processor.process_key(&key).await {
            Ok(outcome) => return (outcome, unavailable),
            Err(e) if unavailable < 20 => {
                unavailable += 1;
                eprintln!("{key:?}: {e}; again");
            }
            Err(e) => panic!("{key:?}: {e}"),
        }
    }
}

/// The message id of client `i`'s hold.
fn held_message(i: usize) -> String {
    format!("held-{i}")
}

/// What the holds' metrics counted: conflicts (sum of `HoldConflicts`), refills that moved and
/// that conflicted, busy answers.
fn hold_metrics(sink: &RecordingSink) -> (i64, usize, usize, usize) {
    let emitted = sink.emitted();
    let conflicts = emitted
        .iter()
        .filter(|(_, m)| m.name == "HoldConflicts")
        .map(|(_, m)| m.value)
        .sum();
    let refills = |moved: &str| {
        emitted
            .iter()
            .filter(|(_, m)| {
                m.name == "ShardRefills"
                    && m.properties.iter().any(|(k, v)| k == "Moved" && v == moved)
            })
            .count()
    };
    (
        conflicts,
        refills("true"),
        refills("false"),
        sink.count("HoldBusy"),
    )
}

/// The wallet's entries sum to its balance and held amount; reconciliation is clean.
async fn reconciles(store: &DynamoTable, w: &Wallet) -> Vec<wallet_ledger::Entry> {
    let entries = Ledger::new(store).entries(w).await.unwrap();
    assert_eq!(entries.unreadable, 0);
    let sum = |f: fn(&wallet_ledger::Entry) -> i64| entries.entries.iter().map(f).sum::<i64>();
    assert_eq!(
        (
            sum(|e| e.balance_delta.minor()),
            sum(|e| e.held_delta.minor())
        ),
        (w.balance.minor(), w.held.minor()),
        "the entries sum to the wallet"
    );
    let report = reconcile(
        store,
        SystemClock.now_millis(),
        ReconcileOptions::new(86_400_000, Duration::from_secs(30 * 86_400)),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    entries.entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wallet_of_eight_shards_takes_hundreds_of_holds_and_debits_at_once() {
    // 300 of each in `make test` (the emulator is shared with the rest of the suite: a heavier run
    // slows every other test on it); `WALLET_SHARDS_MOVEMENTS=2000`
    // for the larger run.
    let n = std::env::var("WALLET_SHARDS_MOVEMENTS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(300);
    // Enough for every hold and every debit, in any order: each hold is affordable.
    let funds = FLOOR + 2 * n as i64 * PRICE;
    let (p, store) = sharded_wallet(funds).await;
    // The debits' webhooks, ingested first (signed, through the real ingest handler).
    for i in 0..n {
        accepted(&p, &format!("evt_debit_{i}"), &format!("sent-{i}")).await;
    }
    let (api, sink) = api(&p).await;
    let registry =
        process_function::registry_with(store.clone(), WalletSources::default(), views());
    let processor = Arc::new(p.processor(registry, SystemClock).await);
    // At most 16 requests of each kind in flight, interleaved: holds and debits at once (DynamoDB
    // Local on a shared machine times out its locks beyond that).
    let (gate_h, gate_d) = (Arc::new(Semaphore::new(16)), Arc::new(Semaphore::new(16)));
    let started = Instant::now();
    let mut holds = Vec::new();
    let mut debits = Vec::new();
    for i in 0..n {
        holds.push(spawn_hold(&api, &gate_h, i));
        let (processor, gate) = (processor.clone(), gate_d.clone());
        debits.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            process(&processor, &format!("evt_debit_{i}")).await
        }));
    }
    let (statuses, client_retries) = hold_statuses(holds).await;
    assert_eq!(statuses, HashMap::from([(201, n)]), "every hold affordable");
    let mut outcomes: HashMap<&'static str, usize> = HashMap::new();
    let mut unavailable = 0;
    for t in debits {
        let (outcome, again) = t.await.unwrap();
        unavailable += again;
        *outcomes.entry(outcome.as_str()).or_default() += 1;
    }
    let elapsed = started.elapsed();
    let (conflicts, refills, refill_conflicts, busy) = hold_metrics(&sink);
    println!(
        "{n} holds + {n} debits on {SHARDS} shards in {elapsed:?}: holds {statuses:?} \
         (client retries after a 503/409: {client_retries}); debits {outcomes:?} \
         (processed again after the emulator timed out: {unavailable}); \
         hold conflicts (read again and retried): {conflicts}; refills: {refills} moved, \
         {refill_conflicts} conflicted; busy answers: {busy}"
    );
    assert_eq!(outcomes.get("processed"), Some(&n), "{outcomes:?}");
    let w = wallet(&store).await;
    assert_eq!(
        (w.balance.minor(), w.held.minor()),
        (funds - n as i64 * PRICE, n as i64 * PRICE),
        "every hold held once, every debit debited once"
    );
    assert!(w.available().unwrap().minor() >= FLOOR);
    let parts: i64 = w.shards.iter().map(|s| s.balance.get()).sum();
    assert_eq!(parts, w.balance.minor());
    let entries = reconciles(&store, &w).await;
    let count = |k: EntryKind| entries.iter().filter(|e| e.kind == k).count();
    assert_eq!(
        (
            count(EntryKind::Topup),
            count(EntryKind::Hold),
            count(EntryKind::Debit)
        ),
        (1, n, n)
    );
    let rows = Ledger::new(&store).email_rows(&acme()).await.unwrap();
    let state = |s: EmailState| rows.iter().filter(|r| r.state == s).count();
    assert_eq!(
        (state(EmailState::Held), state(EmailState::Debited)),
        (n, n)
    );
    // Every shard carried some of the load.
    assert!(
        w.shards.iter().all(|s| s.changes > 0),
        "{:?}",
        w.shards.iter().map(|s| s.changes).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tight_wallet_of_eight_shards_refuses_exactly_what_the_whole_wallet_cannot_afford() {
    // Affords 100 holds above its floor; 200 clients ask, 32 at a time.
    let (p, store) = sharded_wallet(FLOOR + 100 * PRICE).await;
    let (api, sink) = api(&p).await;
    let gate = Arc::new(Semaphore::new(32));
    let tasks: Vec<_> = (0..200).map(|i| spawn_hold(&api, &gate, i)).collect();
    let (statuses, client_retries) = hold_statuses(tasks).await;
    let (conflicts, refills, refill_conflicts, busy) = hold_metrics(&sink);
    println!(
        "200 holds on {SHARDS} shards affording 100: {statuses:?} (client retries: \
         {client_retries}); hold conflicts: {conflicts}; refills: {refills} moved, \
         {refill_conflicts} conflicted; busy answers: {busy}"
    );
    assert_eq!(
        (statuses.get(&201), statuses.get(&402)),
        (Some(&100), Some(&100)),
        "{statuses:?}"
    );
    let w = wallet(&store).await;
    assert_eq!(
        (
            w.balance.minor(),
            w.held.minor(),
            w.available().unwrap().minor()
        ),
        (FLOOR + 100 * PRICE, 100 * PRICE, FLOOR)
    );
    // No shard below its floor: the total's floor is shard 0's, the others' 0.
    assert!(
        w.shards.iter().all(|s| s.surplus().unwrap().get() >= 0),
        "{:?}",
        w.shards
    );
    reconciles(&store, &w).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wallet_funded_on_one_shard_refills_the_others_while_holds_and_captures_contend() {
    // Holds captured while the asked ones run (placed first), debits that overdraw empty shards
    // (processed first), then holds granted of those asked: the money affords exactly
    // `CAPTURED + OVERDRAWN + GRANTED` movements above the floor, and a capture leaves the
    // available amount as it is, so exactly `GRANTED` of the `ASKED` holds can be granted
    // whatever the order.
    const CAPTURED: usize = 30;
    const OVERDRAWN: usize = 3;
    const GRANTED: usize = 50;
    const ASKED: usize = 80;
    let funds = FLOOR + (CAPTURED + OVERDRAWN + GRANTED) as i64 * PRICE;
    // Its payment hashes to a shard other than 0, whose floor is the wallet's: shard 0 starts
    // short of it, six more shards have nothing.
    let (p, store) = sharded_wallet_paid(funds, "pi_refill").await;
    let w = wallet(&store).await;
    let funded: Vec<_> = w.shards.iter().filter(|s| s.balance.get() != 0).collect();
    assert!(
        funded.len() == 1 && funded[0].shard != 0 && funded[0].balance.get() == funds,
        "{:?}",
        w.shards
    );
    let funded = funded[0].shard;
    // The holds to capture: of messages on the funded shard (a hold stays on its message's
    // shard), so the other shards stay empty; placed through the API first (the first refills
    // shard 0 up to its floor and a share), and their `accepted` webhooks ingested.
    let captured: Vec<usize> = (ASKED..)
        .filter(|i| {
            wallet_ledger::balance::items::shards::pick(&held_message(*i), SHARDS) == funded
        })
        .take(CAPTURED)
        .collect();
    let (first, _) = api(&p).await;
    let gate = Arc::new(Semaphore::new(16));
    let placed: Vec<_> = captured
        .iter()
        .map(|i| spawn_hold(&first, &gate, *i))
        .collect();
    let (statuses, _) = hold_statuses(placed).await;
    assert_eq!(statuses, HashMap::from([(201, CAPTURED)]));
    for i in captured.iter().copied() {
        accepted(&p, &format!("evt_capture_{i}"), &held_message(i)).await;
    }
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = Arc::new(p.processor(registry, SystemClock).await);
    // Debits of messages never held, each on an empty shard of its own (the one its message
    // hashes to): each leaves its shard in deficit, which the next hold must cover from the
    // others first, so the asked holds cannot but refill.
    let w = wallet(&store).await;
    let mut empty: Vec<u32> = w
        .shards
        .iter()
        .filter(|s| s.balance.get() == 0 && s.shard != funded)
        .map(|s| s.shard)
        .collect();
    assert!(empty.len() >= OVERDRAWN, "{:?}", w.shards);
    let mut overdrawing = Vec::new();
    for j in 0..100_000 {
        let message = format!("unheld-{j}");
        let shard = wallet_ledger::balance::items::shards::pick(&message, SHARDS);
        if let Some(at) = empty.iter().position(|s| *s == shard) {
            empty.remove(at);
            overdrawing.push(message);
        }
        if overdrawing.len() == OVERDRAWN {
            break;
        }
    }
    for (j, message) in overdrawing.iter().enumerate() {
        let id = format!("evt_unheld_{j}");
        accepted(&p, &id, message).await;
        assert_eq!(process(&processor, &id).await.0.as_str(), "processed");
    }
    let w = wallet(&store).await;
    assert_eq!(
        w.shards
            .iter()
            .filter(|s| s.surplus().unwrap().get() < 0)
            .count(),
        OVERDRAWN,
        "{:?}",
        w.shards
    );
    assert_eq!(
        w.available().unwrap().minor(),
        FLOOR + GRANTED as i64 * PRICE
    );
    // Then the asked holds through the API's handler and the captures through the processor, at
    // once: the shards in deficit refilled, the funded ones run dry, while others hold and
    // capture on them.
    let (api, sink) = api(&p).await;
    let (gate_h, gate_c) = (Arc::new(Semaphore::new(16)), Arc::new(Semaphore::new(8)));
    let started = Instant::now();
    let holds: Vec<_> = (0..ASKED).map(|i| spawn_hold(&api, &gate_h, i)).collect();
    let captures: Vec<_> = captured
        .iter()
        .copied()
        .map(|i| {
            let (processor, gate) = (processor.clone(), gate_c.clone());
            tokio::spawn(async move {
                let _permit = gate.acquire().await.unwrap();
                process(&processor, &format!("evt_capture_{i}")).await
            })
        })
        .collect();
    let (statuses, client_retries) = hold_statuses(holds).await;
    let mut outcomes: HashMap<&'static str, usize> = HashMap::new();
    let mut unavailable = 0;
    for t in captures {
        let (outcome, again) = t.await.unwrap();
        unavailable += again;
        *outcomes.entry(outcome.as_str()).or_default() += 1;
    }
    let elapsed = started.elapsed();
    let (conflicts, refills, refill_conflicts, busy) = hold_metrics(&sink);
    let (w, item) = Ledger::new(&store)
        .wallet_and_item(&acme())
        .await
        .unwrap()
        .unwrap();
    let counted = item.get("refills").and_then(|v| v.as_n().ok()).cloned();
    println!(
        "{ASKED} holds (affording {GRANTED}) + {CAPTURED} captures on {SHARDS} shards funded on \
         one, {OVERDRAWN} overdrawn, in {elapsed:?}: holds {statuses:?} (client retries after a 503/409: \
         {client_retries}); captures {outcomes:?} (processed again after the emulator timed out: \
         {unavailable}); hold conflicts (read again and retried): {conflicts}; refills: \
         {refills} moved, {refill_conflicts} conflicted; busy answers: {busy}; the wallet's \
         refill counter {counted:?}; shards (balance, held): {:?}",
        w.shards
            .iter()
            .map(|s| (s.balance.get(), s.held.get()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        (statuses.get(&201), statuses.get(&402)),
        (Some(&GRANTED), Some(&(ASKED - GRANTED))),
        "{statuses:?}"
    );
    assert_eq!(outcomes.get("processed"), Some(&CAPTURED), "{outcomes:?}");
    // The money the shards ran short of moved to them while the holds contended: each deficit
    // by a refill of its own at least.
    assert!(refills >= OVERDRAWN, "{refills} refills moved");
    // Every debit and capture debited once, every granted hold held once: the shards' balances
    // sum to the credits less the debits (no amount in two shards or none), no shard below its
    // floor.
    let debited = (CAPTURED + OVERDRAWN) as i64 * PRICE;
    assert_eq!(
        (
            w.shards.iter().map(|s| s.balance.get()).sum::<i64>(),
            w.shards.iter().map(|s| s.held.get()).sum::<i64>(),
        ),
        (funds - debited, GRANTED as i64 * PRICE)
    );
    assert_eq!(
        (w.balance.minor(), w.available().unwrap().minor()),
        (funds - debited, FLOOR)
    );
    assert!(
        w.shards.iter().all(|s| s.surplus().unwrap().get() >= 0),
        "{:?}",
        w.shards
    );
    let entries = reconciles(&store, &w).await;
    let count = |k: EntryKind| entries.iter().filter(|e| e.kind == k).count();
    assert_eq!(
        (
            count(EntryKind::Topup),
            count(EntryKind::Hold),
            count(EntryKind::Debit)
        ),
        (1, CAPTURED + GRANTED, CAPTURED + OVERDRAWN)
    );
    let rows = Ledger::new(&store).email_rows(&acme()).await.unwrap();
    let state = |s: EmailState| rows.iter().filter(|r| r.state == s).count();
    assert_eq!(
        (
            rows.len(),
            state(EmailState::Held),
            state(EmailState::Debited)
        ),
        (
            CAPTURED + OVERDRAWN + GRANTED,
            GRANTED,
            CAPTURED + OVERDRAWN
        )
    );
}
