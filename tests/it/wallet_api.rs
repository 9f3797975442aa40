//! The wallet API through the real handler (`wallet_api_function::respond`) with real-shaped API
//! Gateway HTTP API (payload 2.0) events of IAM-authorized calls, against DynamoDB Local: 200
//! concurrent holds against a wallet that affords 100 (exactly 100 × 201 and 100 × 402, and the
//! balance, held amount and entries reconcile), every idempotency case (replay, another body, in
//! flight, after the retention), bad input naming its field, no wallet, release, the wallet's
//! view, and checkout sessions through a fake provider (the request it got).

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_lambda_events::encodings::Body;
use inbox_core::clock::{ManualClock, SystemClock};
use inbox_core::domain::Status;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::pipeline::Pipeline;
use integration_tests::Harness;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use wallet_api::idempotency::{Begun, Fingerprint, Keys};
use wallet_api::request::{canonical_json, IdempotencyKey};
use wallet_api::{ApiConfig, WalletApi};
use wallet_ledger::balance::rules::EntryKind;
use wallet_ledger::payments::checkout::{
    Checkout, CheckoutError, CheckoutRequest, CheckoutSession,
};
use wallet_ledger::reconcile::{reconcile, ReconcileOptions};
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 25;
const FLOOR: i64 = 2_000;

/// A provider that records what it was asked and answers a session.
#[derive(Debug, Clone, Default)]
struct FakeCheckout(Arc<Mutex<Vec<CheckoutRequest>>>);

impl Checkout for FakeCheckout {
    async fn create_session(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, CheckoutError> {
        let mut requests = self.0.lock().unwrap();
        requests.push(request.clone());
        let n = requests.len();
        Ok(CheckoutSession {
            id: format!("cs_test_{n}"),
            url: format!("https://checkout.stripe.com/c/pay/cs_test_{n}"),
        })
    }
}

type Api<C> = WalletApi<DynamoTable, FakeCheckout, C>;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn tenant(t: &str) -> TenantId {
    TenantId::parse(t).unwrap()
}

async fn create_wallet(store: &DynamoTable, t: &str) {
    let wallet = Wallet::new(
        tenant(t),
        usd().amount(PRICE),
        usd().amount(FLOOR),
        Some(usd().amount(100_000)),
        0,
    );
    Ledger::new(store).create(&wallet).await.unwrap();
}

fn api<C: inbox_core::clock::Clock + Clone + 'static>(
    store: &DynamoTable,
    clock: C,
) -> (Api<C>, FakeCheckout) {
    let checkout = FakeCheckout::default();
    let api = WalletApi::new(store.clone(), checkout.clone(), clock, ApiConfig::default());
    (api, checkout)
}

/// A real-shaped API Gateway HTTP API (payload 2.0) event of a SigV4-signed call to `path`
/// (`/wallets/...`), as the IAM authorizer passes it on.
fn event(
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> ApiGatewayV2httpRequest {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (route, params) = match segments.as_slice() {
        ["wallets", t] => ("GET /wallets/{tenant}", json!({"tenant": t})),
        ["wallets", t, "holds"] => ("POST /wallets/{tenant}/holds", json!({"tenant": t})),
        ["wallets", t, "holds", h, "release"] => (
            "POST /wallets/{tenant}/holds/{hold_id}/release",
            json!({"tenant": t, "hold_id": h}),
        ),
        ["wallets", t, "checkout-sessions"] => (
            "POST /wallets/{tenant}/checkout-sessions",
            json!({"tenant": t}),
        ),
        _ => ("$default", Value::Null),
    };
    let mut headers = serde_json::Map::new();
    headers.insert(
        "host".into(),
        json!("abc123.execute-api.us-east-1.amazonaws.com"),
    );
    headers.insert("content-type".into(), json!("application/json"));
    headers.insert("x-amz-date".into(), json!("20261130T100000Z"));
    headers.insert("x-amz-security-token".into(), json!("IQoJb3JpZ2luX2VjE..."));
    headers.insert("authorization".into(), json!("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20261130/us-east-1/execute-api/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123abcd"));
    if let Some(k) = key {
        headers.insert("idempotency-key".into(), json!(k));
    }
    let mut e = json!({
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "authorizer": {"iam": {
                "accessKey": "ASIAEXAMPLE", "accountId": "123456789012",
                "callerId": "AROAEXAMPLE:sender", "cognitoIdentity": null,
                "principalOrgId": null, "userArn": "arn:aws:sts::123456789012:assumed-role/WalletApiCallerRole/sender",
                "userId": "AROAEXAMPLE:sender"
            }},
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "192.0.2.10", "userAgent": "sender/1.0"},
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": route,
            "stage": "$default",
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1_795_000_000_000_i64
        },
        "pathParameters": params,
        "isBase64Encoded": false
    });
    if let Some(b) = body {
        e["body"] = json!(b);
    }
    serde_json::from_value(e).expect("a valid API Gateway v2 event")
}

struct Answer {
    status: i64,
    body: Value,
    replayed: bool,
    headers: http::HeaderMap,
}

fn answer(r: ApiGatewayV2httpResponse) -> Answer {
    let text = match r.body {
        Some(Body::Text(t)) => t,
        other => panic!("a text body, got {other:?}"),
    };
    assert_eq!(
        r.headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("application/json")
    );
    Answer {
        status: r.status_code,
        body: serde_json::from_str(&text).expect("a JSON body"),
        replayed: r
            .headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true"),
        headers: r.headers,
    }
}

async fn call<C: inbox_core::clock::Clock + Clone + 'static>(
    api: &Api<C>,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let body = body.map(|b| b.to_string());
    answer(wallet_api_function::respond(api, &event(method, path, key, body.as_deref())).await)
}

async fn hold<C: inbox_core::clock::Clock + Clone + 'static>(
    api: &Api<C>,
    key: &str,
    message_id: &str,
) -> Answer {
    call(
        api,
        "POST",
        "/wallets/acme/holds",
        Some(key),
        Some(json!({"message_id": message_id})),
    )
    .await
}

async fn wallet(store: &DynamoTable) -> Wallet {
    Ledger::new(store)
        .wallet(&tenant("acme"))
        .await
        .unwrap()
        .unwrap()
}

/// A wallet credited with `amount` through the real pipeline (a signed Stripe top-up).
async fn credited_wallet(amount: i64) -> (Pipeline, DynamoTable) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    create_wallet(&store, "acme").await;
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let session = json!({"object": "checkout.session", "id": "cs_1", "payment_intent": "pi_1",
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
    assert_eq!(p.message("evt_topup").await.status, Status::Processed);
    assert_eq!(wallet(&store).await.balance.minor(), amount);
    (p, store)
}

#[tokio::test]
async fn two_hundred_concurrent_holds_against_a_wallet_affording_a_hundred() {
    let (p, store) = credited_wallet(FLOOR + 100 * PRICE).await;
    // The SDK's default timeouts: the deployed client's 2 s per attempt is for DynamoDB, not for
    // DynamoDB Local taking 200 transactions at once on a shared machine.
    let patient = aws_sdk_dynamodb::Client::new(&integration_tests::sdk_config().await);
    let (api, _) = api(
        &DynamoTable::new(patient, p.harness.table.clone()),
        SystemClock,
    );
    let api = Arc::new(api);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let api = api.clone();
            tokio::spawn(async move {
                // As a client does: a 503 (the table timing out under the burst) is retried with
                // the same key, which never holds twice; so is a 409 after its Retry-After (a
                // first try whose key could not be given back, on an emulator this loaded, holds
                // it until its lease lapses).
                let (key, message) = (format!("key-{i}"), format!("msg-{i}"));
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
                let mut retried = 0;
                loop {
                    let a = hold(&api, &key, &message).await;
                    let again = matches!(a.status, 503 | 409);
                    if !again || std::time::Instant::now() > deadline {
                        return (a, retried);
                    }
                    retried += 1;
                    // The answer's Retry-After (1 s).
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            })
        })
        .collect();
    let mut statuses: HashMap<i64, usize> = HashMap::new();
    let mut retries = 0;
    let mut hold_ids = std::collections::HashSet::new();
    for t in tasks {
        let (a, retried) = t.await.unwrap();
        retries += retried;
        *statuses.entry(a.status).or_default() += 1;
        match a.status {
            201 => {
                assert_eq!(a.body["amount"], PRICE);
                assert!(a.body["available"].as_i64().unwrap() >= FLOOR, "{}", a.body);
                hold_ids.insert(a.body["hold_id"].as_str().unwrap().to_owned());
            }
            402 => assert_eq!(a.body["error"], "insufficient_funds"),
            other => panic!("status {other}: {}", a.body),
        }
    }
    assert_eq!(
        (statuses.get(&201), statuses.get(&402)),
        (Some(&100), Some(&100)),
        "{statuses:?} ({retries} retried after a 503)"
    );
    assert_eq!(hold_ids.len(), 100);
    let w = wallet(&store).await;
    assert_eq!(
        (w.balance.minor(), w.held.minor()),
        (FLOOR + 100 * PRICE, 100 * PRICE)
    );
    assert_eq!(w.available().unwrap().minor(), FLOOR);
    let entries = Ledger::new(&store).entries(&w).await.unwrap();
    assert_eq!(entries.unreadable, 0);
    let holds: Vec<_> = entries
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::Hold)
        .collect();
    assert_eq!(holds.len(), 100);
    let held: i64 = entries.entries.iter().map(|e| e.held_delta.minor()).sum();
    let balance: i64 = entries
        .entries
        .iter()
        .map(|e| e.balance_delta.minor())
        .sum();
    assert_eq!((balance, held), (w.balance.minor(), w.held.minor()));
    let report = reconcile(
        &store,
        inbox_core::clock::Clock::now_millis(&SystemClock),
        ReconcileOptions::new(86_400_000, std::time::Duration::from_secs(30 * 86_400)),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    // The view says the same.
    let view = call(&*api, "GET", "/wallets/acme", None, None).await;
    assert_eq!(view.status, 200);
    assert_eq!(
        (
            view.body["balance"].clone(),
            view.body["held"].clone(),
            view.body["available"].clone()
        ),
        (json!(FLOOR + 100 * PRICE), json!(100 * PRICE), json!(FLOOR))
    );
}

#[tokio::test]
async fn a_retried_hold_is_replayed_never_held_twice() {
    let (_p, store) = credited_wallet(FLOOR + 10 * PRICE).await;
    let (api, _) = api(&store, SystemClock);
    let api = Arc::new(api);
    // A client retrying after a timeout, twenty times at once: one hold.
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move { hold(&api, "retry-key", "msg-r").await })
        })
        .collect();
    let mut first: Option<Value> = None;
    for t in tasks {
        let a = t.await.unwrap();
        match a.status {
            201 => {
                if let Some(f) = &first {
                    assert_eq!(&a.body, f, "every 201 is the first answer");
                }
                first.get_or_insert(a.body);
            }
            409 => assert_eq!(a.body["error"], "idempotency_request_in_progress"),
            other => panic!("status {other}: {}", a.body),
        }
    }
    let first = first.expect("one hold placed");
    let again = hold(&api, "retry-key", "msg-r").await;
    assert_eq!(
        (again.status, again.replayed, &again.body),
        (201, true, &first)
    );
    assert_eq!(wallet(&store).await.held.minor(), PRICE);
    // The key with another request: 422, nothing held.
    let other = hold(&api, "retry-key", "msg-other").await;
    assert_eq!(
        (other.status, other.body["error"].clone()),
        (422, json!("idempotency_key_reused"))
    );
    // The same message under a new key: its hold is not placed twice either.
    let twice = hold(&api, "new-key", "msg-r").await;
    assert_eq!(
        (twice.status, twice.body["error"].clone()),
        (409, json!("message_already_held")),
        "{}",
        twice.body
    );
    assert_eq!(wallet(&store).await.held.minor(), PRICE);
}

#[tokio::test]
async fn a_hold_in_flight_is_a_409_and_a_key_past_its_retention_is_new() {
    let (_p, store) = credited_wallet(FLOOR + 10 * PRICE).await;
    let clock = Arc::new(ManualClock::at_millis(
        inbox_core::clock::Clock::now_millis(&SystemClock),
    ));
    let (api, _) = api(&store, clock.clone());
    // A first run that claimed the key and has not answered.
    let body = json!({"message_id": "msg-f"});
    let fp = Fingerprint::of("POST /wallets/acme/holds", &canonical_json(&body));
    let keys = Keys {
        store: &store,
        clock: &*clock,
        retention: api.config.idempotency_retention,
        lease: api.config.lease,
    };
    let key = IdempotencyKey::parse("flight").unwrap();
    assert!(matches!(
        keys.begin(&tenant("acme"), &key, &fp).await.unwrap(),
        Begun::Run(_)
    ));
    let busy = hold(&api, "flight", "msg-f").await;
    assert_eq!(
        (busy.status, busy.body["error"].clone()),
        (409, json!("idempotency_request_in_progress"))
    );
    assert_eq!(busy.headers.get("retry-after").unwrap(), "1");
    assert_eq!(wallet(&store).await.held.minor(), 0);
    // The lease lapsed (the first run crashed): its retry takes the key over and holds once.
    clock.advance_millis(i64::try_from(api.config.lease.as_millis()).unwrap());
    let taken = hold(&api, "flight", "msg-f").await;
    assert_eq!(
        (taken.status, taken.replayed),
        (201, false),
        "{}",
        taken.body
    );
    assert!(hold(&api, "flight", "msg-f").await.replayed);
    // Past the retention the key is new: another request with it is carried out, not a 422,
    // though DynamoDB's TTL has not deleted the record.
    clock.advance_millis(i64::try_from(api.config.idempotency_retention.as_millis()).unwrap());
    let fresh = hold(&api, "flight", "msg-g").await;
    assert_eq!(
        (fresh.status, fresh.replayed),
        (201, false),
        "{}",
        fresh.body
    );
    assert_eq!(wallet(&store).await.held.minor(), 2 * PRICE);
}

#[tokio::test]
async fn a_hold_is_released_once() {
    let (_p, store) = credited_wallet(FLOOR + 10 * PRICE).await;
    let (api, _) = api(&store, SystemClock);
    let placed = hold(&api, "h", "msg-1").await;
    assert_eq!(placed.status, 201, "{}", placed.body);
    let id = placed.body["hold_id"].as_str().unwrap().to_owned();
    let path = format!("/wallets/acme/holds/{id}/release");
    let released = call(&api, "POST", &path, Some("r1"), None).await;
    assert_eq!(released.status, 200, "{}", released.body);
    assert_eq!(
        (
            released.body["hold_id"].as_str(),
            released.body["amount"].clone()
        ),
        (Some(id.as_str()), json!(PRICE))
    );
    assert_eq!(wallet(&store).await.held.minor(), 0);
    let replay = call(&api, "POST", &path, Some("r1"), Some(json!({}))).await;
    assert_eq!((replay.status, replay.replayed), (200, true));
    let again = call(&api, "POST", &path, Some("r2"), None).await;
    assert_eq!(
        (again.status, again.body["error"].clone()),
        (409, json!("hold_settled")),
        "{}",
        again.body
    );
    let unknown = call(
        &api,
        "POST",
        "/wallets/acme/holds/hold_nope/release",
        Some("r3"),
        None,
    )
    .await;
    assert_eq!(
        (unknown.status, unknown.body["error"].clone()),
        (404, json!("hold_not_found"))
    );
    assert_eq!(wallet(&store).await.held.minor(), 0);
}

#[tokio::test]
async fn no_wallet_is_a_404_stored_under_its_key() {
    let h = Harness::new().await;
    let store = DynamoTable::new(h.client.clone(), h.table.clone());
    let (api, _) = api(&store, SystemClock);
    let first = hold(&api, "k", "msg-1").await;
    assert_eq!(
        (first.status, first.body["error"].clone()),
        (404, json!("wallet_not_found")),
        "{}",
        first.body
    );
    create_wallet(&store, "acme").await;
    let again = hold(&api, "k", "msg-1").await;
    assert_eq!((again.status, again.replayed), (404, true));
    let view = call(&api, "GET", "/wallets/globex", None, None).await;
    assert_eq!(
        (view.status, view.body["error"].clone()),
        (404, json!("wallet_not_found"))
    );
}

#[tokio::test]
async fn bad_input_is_a_400_naming_the_field_and_stores_nothing() {
    let h = Harness::new().await;
    let store = DynamoTable::new(h.client.clone(), h.table.clone());
    create_wallet(&store, "acme").await;
    let (api, checkout) = api(&store, SystemClock);
    let long = "k".repeat(256);
    for (method, path, key, body, status, param) in [
        (
            "POST",
            "/wallets/acme/holds",
            None,
            Some(json!({"message_id": "m"})),
            400,
            Some("Idempotency-Key"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some(long.as_str()),
            Some(json!({"message_id": "m"})),
            400,
            Some("Idempotency-Key"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some("k"),
            Some(json!({"message_id": "m", "amount": -1})),
            400,
            Some("amount"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some("k"),
            Some(json!({"messageId": "m"})),
            400,
            Some("messageId"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some("k"),
            Some(json!([1])),
            400,
            Some("body"),
        ),
        (
            "POST",
            "/wallets/acme/checkout-sessions",
            Some("k"),
            Some(json!({"amount": 500, "success_url": "https://a.example/ok"})),
            400,
            Some("cancel_url"),
        ),
        (
            "POST",
            "/wallets/acme/checkout-sessions",
            Some("k"),
            Some(
                json!({"amount": 500, "success_url": "https://a.example/ok", "cancel_url": "https://a.example/no", "save_payment_method": "yes"}),
            ),
            400,
            Some("save_payment_method"),
        ),
        ("DELETE", "/wallets/acme", None, None, 405, None),
        ("GET", "/wallets/acme/balance", None, None, 404, None),
    ] {
        let a = call(&api, method, path, key, body.clone()).await;
        assert_eq!(a.status, status, "{method} {path} {body:?}: {}", a.body);
        assert!(
            a.body["error"].is_string() && a.body["message"].is_string(),
            "{}",
            a.body
        );
        if let Some(p) = param {
            assert_eq!(a.body["param"], p, "{method} {path} {body:?}");
        }
    }
    // A body flagged base64 that is not base64: a JSON 400, no panic.
    let mut e = event("POST", "/wallets/acme/holds", Some("k"), Some("%%%"));
    e.is_base64_encoded = true;
    let a = answer(wallet_api_function::respond(&api, &e).await);
    assert_eq!((a.status, a.body["param"].clone()), (400, json!("body")));
    assert!(checkout.0.lock().unwrap().is_empty());
    assert_eq!(wallet(&store).await.held.minor(), 0);
    // Nothing was stored under "k": with a good body it is carried out.
    let ok = call(&api, "POST", "/wallets/acme/checkout-sessions", Some("k"), Some(json!({"amount": 500, "success_url": "https://a.example/ok", "cancel_url": "https://a.example/no"}))).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
}

#[tokio::test]
async fn the_wallet_view_and_a_checkout_session_through_the_provider() {
    let h = Harness::new().await;
    let store = DynamoTable::new(h.client.clone(), h.table.clone());
    create_wallet(&store, "acme").await;
    let (api, checkout) = api(&store, SystemClock);
    let view = call(&api, "GET", "/wallets/acme", None, None).await;
    assert_eq!(view.status, 200, "{}", view.body);
    assert_eq!(
        (
            view.body["balance"].clone(),
            view.body["held"].clone(),
            view.body["available"].clone(),
            view.body["floor"].clone(),
            view.body["price"].clone(),
            view.body["currency"].clone()
        ),
        (
            json!(0),
            json!(0),
            json!(0),
            json!(FLOOR),
            json!(PRICE),
            json!("usd")
        )
    );
    // An empty wallet cannot afford a send: it starts low (docs/wallet.md, the notices).
    assert_eq!(
        view.body["flags"],
        json!({"overdrawn": false, "review": false, "low": true})
    );
    assert_eq!(view.body["month_debits"]["amount"], 0);
    let body = json!({"amount": 5_000, "success_url": "https://app.example/paid", "cancel_url": "https://app.example/cancel", "save_payment_method": true});
    let created = call(
        &api,
        "POST",
        "/wallets/acme/checkout-sessions",
        Some("top-1"),
        Some(body.clone()),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        (created.body["id"].clone(), created.body["url"].clone()),
        (
            json!("cs_test_1"),
            json!("https://checkout.stripe.com/c/pay/cs_test_1")
        )
    );
    {
        let asked = checkout.0.lock().unwrap();
        assert_eq!(asked.len(), 1);
        let r = &asked[0];
        assert_eq!(r.tenant.as_str(), "acme");
        assert_eq!(r.amount, usd().amount(5_000));
        assert_eq!(
            (r.success_url.as_str(), r.cancel_url.as_str()),
            ("https://app.example/paid", "https://app.example/cancel")
        );
        assert!(r.save_payment_method);
        assert_eq!(r.customer, None);
        assert!(
            r.idempotency_key.starts_with("wallet-api-checkout-") && r.idempotency_key.len() <= 255
        );
    }
    let replay = call(
        &api,
        "POST",
        "/wallets/acme/checkout-sessions",
        Some("top-1"),
        Some(body),
    )
    .await;
    assert_eq!(
        (replay.status, replay.replayed, &replay.body),
        (201, true, &created.body)
    );
    assert_eq!(checkout.0.lock().unwrap().len(), 1, "one session per key");
}
