//! The API on the in-memory store with a fake checkout and a manual clock: routes, errors, the
//! wallet's view, and every idempotency case (replay, another body, in flight, after the
//! retention, a 5xx giving the key back, a 4xx stored).

use crate::idempotency::{record_sk, Begun, Fingerprint, Keys};
use crate::request::{IdempotencyKey, IDEMPOTENCY_HEADER};
use crate::{ApiConfig, ApiRequest, ApiResponse, WalletApi};
use inbox_core::clock::{Clock, ManualClock};
use inbox_core::metrics::RecordingSink;
use inbox_core::store::attr;
use inbox_core::store::memory::MemoryStore;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use wallet_ledger::balance::items::shards::shard_key;
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::payments::checkout::{
    Checkout, CheckoutError, CheckoutRequest, CheckoutSession,
};
use wallet_ledger::{Currency, Ledger, TenantId, Wallet};

const NOW: i64 = 1_796_000_000_000; // 2026-11-30

/// Records every request; answers a session, or `Unavailable` while `down`.
#[derive(Debug, Default)]
struct FakeCheckout {
    requests: Mutex<Vec<CheckoutRequest>>,
    down: std::sync::atomic::AtomicBool,
}

/// The fake, shared with the test that inspects it.
#[derive(Debug, Clone, Default)]
struct Shared(Arc<FakeCheckout>);

impl std::ops::Deref for Shared {
    type Target = FakeCheckout;
    fn deref(&self) -> &FakeCheckout {
        &self.0
    }
}

impl Checkout for Shared {
    async fn create_session(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CheckoutSession, CheckoutError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(CheckoutError::Unavailable("connection reset".into()));
        }
        let mut requests = self.requests.lock().unwrap();
        requests.push(request.clone());
        let n = requests.len();
        Ok(CheckoutSession {
            id: format!("cs_test_{n}"),
            url: format!("https://checkout.example/c/cs_test_{n}"),
        })
    }
}

struct Rig {
    api: WalletApi<MemoryStore, Shared, Arc<ManualClock>>,
    checkout: Shared,
    clock: Arc<ManualClock>,
}

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

async fn rig() -> Rig {
    let store = MemoryStore::new();
    let wallet = Wallet::new(
        TenantId::parse("acme").unwrap(),
        usd().amount(25),
        usd().amount(2_000),
        Some(usd().amount(100_000)),
        NOW,
    );
    Ledger::new(&store).create(&wallet).await.unwrap();
    let checkout = Shared::default();
    let clock = Arc::new(ManualClock::at_millis(NOW));
    Rig {
        api: WalletApi::new(store, checkout.clone(), clock.clone(), ApiConfig::default()),
        checkout,
        clock,
    }
}

impl Rig {
    async fn send(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&str>,
    ) -> ApiResponse {
        let mut headers = http::HeaderMap::new();
        if let Some(k) = key {
            headers.insert(IDEMPOTENCY_HEADER, k.parse().unwrap());
        }
        self.api
            .handle(&ApiRequest {
                method,
                path,
                headers: &headers,
                body,
                body_is_base64: false,
            })
            .await
    }

    async fn checkout(&self, key: &str, body: &Value) -> ApiResponse {
        self.send(
            "POST",
            "/wallets/acme/checkout-sessions",
            Some(key),
            Some(&body.to_string()),
        )
        .await
    }

    fn calls(&self) -> usize {
        self.checkout.requests.lock().unwrap().len()
    }
}

fn top_up(amount: i64) -> Value {
    json!({"amount": amount, "success_url": "https://app.example/ok", "cancel_url": "https://app.example/cancel"})
}

#[tokio::test]
async fn the_wallet_is_read_with_its_flags_and_this_months_debits() {
    let r = rig().await;
    let mut item = r.api.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    item.insert("balance".into(), attr::n(10_000));
    item.insert("held".into(), attr::n(300));
    item.insert("debits_2026_11".into(), attr::n(1_234));
    item.insert("debits_2026_10".into(), attr::n(99));
    item.insert("low".into(), attr::bool(false));
    item.insert("suspended".into(), attr::bool(true));
    item.insert("review".into(), attr::bool(true));
    r.api.store.put_item(item);
    let got = r.send("GET", "/wallets/acme", None, None).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(
        got.body_json(),
        json!({
            "tenant": "acme", "currency": "usd", "balance": 10_000, "held": 300,
            "available": 9_700, "floor": 2_000, "price": 25, "review_threshold": 100_000,
            "flags": {"overdrawn": false, "review": true, "low": false, "suspended": true},
            "month_debits": {"month": "2026-11", "amount": 1_234},
        })
    );
    let none = r.send("GET", "/wallets/nobody", None, None).await;
    assert_eq!(
        (none.status.as_u16(), none.body_json()["error"].clone()),
        (404, json!("wallet_not_found"))
    );
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_bad_input_answer_json_errors() {
    let r = rig().await;
    for (method, path, key, body, status, code, param) in [
        ("GET", "/wallets", None, None, 404, "not_found", None),
        (
            "PUT",
            "/wallets/acme",
            None,
            None,
            405,
            "method_not_allowed",
            None,
        ),
        (
            "POST",
            "/wallets/acme/holds",
            None,
            Some(r#"{"message_id":"m1"}"#),
            400,
            "invalid_request",
            Some("Idempotency-Key"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some("k"),
            Some("{"),
            400,
            "invalid_request",
            Some("body"),
        ),
        (
            "POST",
            "/wallets/acme/holds",
            Some("k"),
            Some(r#"{"amount":5}"#),
            400,
            "invalid_request",
            Some("message_id"),
        ),
        (
            "POST",
            "/wallets/acme/checkout-sessions",
            Some("k"),
            Some(r#"{"amount":5}"#),
            400,
            "invalid_request",
            Some("success_url"),
        ),
        (
            "POST",
            "/wallets/acme/holds/h1/release",
            Some("k"),
            Some(r#"{"why":"x"}"#),
            400,
            "invalid_request",
            Some("why"),
        ),
    ] {
        let got = r.send(method, path, key, body).await;
        let b = got.body_json();
        assert_eq!(got.status.as_u16(), status, "{method} {path}: {}", got.body);
        assert_eq!(b["error"], code, "{method} {path}");
        assert!(b["message"].is_string());
        if let Some(p) = param {
            assert_eq!(b["param"], p, "{method} {path}");
        }
    }
    // A bad request stores nothing under its key: corrected, it is carried out.
    assert_eq!(r.api.store.item(&wallet_pk("acme"), "IDEM#k"), None);
    let fixed = r.checkout("k", &top_up(5_000)).await;
    assert_eq!(fixed.status, 201, "{}", fixed.body);
}

#[tokio::test]
async fn a_checkout_session_is_created_once_per_key_and_replayed() {
    let r = rig().await;
    let first = r.checkout("key-1", &top_up(5_000)).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.body_json()["id"], "cs_test_1");
    assert_eq!(
        first.body_json()["url"],
        "https://checkout.example/c/cs_test_1"
    );
    assert_eq!(first.header("idempotent-replayed"), None);
    {
        let got = r.checkout.requests.lock().unwrap();
        let req = &got[0];
        assert_eq!(req.tenant.as_str(), "acme");
        assert_eq!(req.amount, usd().amount(5_000));
        assert_eq!(
            (req.success_url.as_str(), req.cancel_url.as_str()),
            ("https://app.example/ok", "https://app.example/cancel")
        );
        assert!(!req.save_payment_method);
        assert_eq!(req.customer, None);
        assert!(
            req.idempotency_key.starts_with("wallet-api-checkout-"),
            "{}",
            req.idempotency_key
        );
    }
    // The same key and request, fields in another order: the first answer, replayed.
    let again = r
        .send("POST", "/wallets/acme/checkout-sessions", Some("key-1"), Some(r#"{"cancel_url":"https://app.example/cancel","success_url":"https://app.example/ok","amount":5000}"#))
        .await;
    assert_eq!(
        (again.status, again.body.as_str()),
        (first.status, first.body.as_str())
    );
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(r.calls(), 1);
    // The same key, another request: refused, nothing asked of the provider.
    let other = r.checkout("key-1", &top_up(6_000)).await;
    assert_eq!(
        (other.status.as_u16(), other.body_json()["error"].clone()),
        (422, json!("idempotency_key_reused"))
    );
    let path = r
        .send(
            "POST",
            "/wallets/acme/holds",
            Some("key-1"),
            Some(r#"{"message_id":"m"}"#),
        )
        .await;
    assert_eq!(path.status, 422, "{}", path.body);
    assert_eq!(r.calls(), 1);
    // Keys are scoped per tenant: another tenant's key-1 is its own (here: no wallet, 404).
    let elsewhere = r
        .send(
            "POST",
            "/wallets/globex/checkout-sessions",
            Some("key-1"),
            Some(&top_up(5_000).to_string()),
        )
        .await;
    assert_eq!(elsewhere.status, 404);
    // Saving the method for autopay is passed on.
    let mut saving = top_up(7_000);
    saving["save_payment_method"] = json!(true);
    assert_eq!(r.checkout("key-2", &saving).await.status, 201);
    assert!(r.checkout.requests.lock().unwrap()[1].save_payment_method);
}

#[tokio::test]
async fn a_4xx_outcome_is_stored_and_a_5xx_gives_the_key_back() {
    let r = rig().await;
    // No wallet: a 404, stored; replayed even once the wallet exists.
    let body = top_up(5_000).to_string();
    let path = "/wallets/globex/checkout-sessions";
    let first = r.send("POST", path, Some("k"), Some(&body)).await;
    assert_eq!(
        (first.status.as_u16(), first.body_json()["error"].clone()),
        (404, json!("wallet_not_found"))
    );
    let globex = Wallet::new(
        TenantId::parse("globex").unwrap(),
        usd().amount(25),
        usd().amount(0),
        None,
        NOW,
    );
    Ledger::new(&r.api.store).create(&globex).await.unwrap();
    let again = r.send("POST", path, Some("k"), Some(&body)).await;
    assert_eq!(
        (again.status.as_u16(), again.header("idempotent-replayed")),
        (404, Some("true"))
    );
    // The provider unavailable: a 503 with Retry-After, and the key is free for the retry.
    r.checkout
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let down = r.checkout("k2", &top_up(5_000)).await;
    assert_eq!(
        (down.status.as_u16(), down.header("retry-after")),
        (503, Some("1"))
    );
    assert_eq!(down.body_json()["error"], "payment_provider_unavailable");
    assert!(!down.body.contains("connection reset"), "{}", down.body);
    r.checkout
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let retried = r.checkout("k2", &top_up(5_000)).await;
    assert_eq!(
        (
            retried.status.as_u16(),
            retried.header("idempotent-replayed")
        ),
        (201, None)
    );
}

#[tokio::test]
async fn a_request_still_in_flight_is_a_409_until_its_lease_lapses() {
    let r = rig().await;
    let tenant = TenantId::parse("acme").unwrap();
    let key = IdempotencyKey::parse("k").unwrap();
    let body = top_up(5_000);
    let fp = Fingerprint::of(
        "POST /wallets/acme/checkout-sessions",
        &crate::request::canonical_json(&body),
    );
    // A first run that claimed the key and has not answered (still running, or crashed).
    let keys = Keys {
        store: &r.api.store,
        clock: &r.clock,
        retention: r.api.config.idempotency_retention,
        lease: r.api.config.lease,
    };
    assert!(matches!(
        keys.begin(&tenant, &key, &fp).await.unwrap(),
        Begun::Run(_)
    ));
    let busy = r.checkout("k", &body).await;
    assert_eq!(
        (busy.status.as_u16(), busy.body_json()["error"].clone()),
        (409, json!("idempotency_request_in_progress"))
    );
    assert_eq!(busy.header("retry-after"), Some("1"));
    // Another request with the key is still a reuse, in flight or not.
    assert_eq!(r.checkout("k", &top_up(1)).await.status, 422);
    assert_eq!(r.calls(), 0);
    // Its lease lapsed: the retry takes the key over and runs.
    r.clock
        .advance_millis(i64::try_from(r.api.config.lease.as_millis()).unwrap());
    let taken = r.checkout("k", &body).await;
    assert_eq!(
        (taken.status.as_u16(), taken.header("idempotent-replayed")),
        (201, None)
    );
    assert_eq!(r.calls(), 1);
}

#[tokio::test]
async fn after_the_retention_a_key_counts_as_new_even_before_the_ttl_deletes_it() {
    let r = rig().await;
    assert_eq!(r.checkout("k", &top_up(5_000)).await.status, 201);
    let item = r
        .api
        .store
        .item(
            &wallet_pk("acme"),
            &record_sk(&IdempotencyKey::parse("k").unwrap()),
        )
        .unwrap();
    let expires = attr::get_n(&item, "expires_at").unwrap();
    assert_eq!(
        expires,
        r.clock
            .now()
            .plus(r.api.config.idempotency_retention)
            .as_secs()
    );
    assert_eq!(attr::get_s(&item, "kind"), Some("idempotency"));
    // A moment before: still the same key (another body is a reuse).
    r.clock.set_millis(expires * 1000 - 1);
    assert_eq!(r.checkout("k", &top_up(6_000)).await.status, 422);
    // At its time: the record is still there (DynamoDB's TTL deletes it later), but it is gone.
    r.clock.set_millis(expires * 1000);
    let fresh = r.checkout("k", &top_up(6_000)).await;
    assert_eq!(
        (fresh.status.as_u16(), fresh.header("idempotent-replayed")),
        (201, None)
    );
    assert_eq!(r.calls(), 2);
}

/// The wallet of the rig credited with `balance` (as a top-up would).
fn credit(r: &Rig, balance: i64) {
    let mut item = r.api.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    item.insert("balance".into(), attr::n(balance));
    r.api.store.put_item(item);
}

async fn hold(r: &Rig, key: &str, body: Value) -> ApiResponse {
    r.send(
        "POST",
        "/wallets/acme/holds",
        Some(key),
        Some(&body.to_string()),
    )
    .await
}

#[tokio::test]
async fn a_hold_and_its_answer_commit_together_and_replay() {
    let r = rig().await;
    credit(&r, 2_050);
    let first = hold(&r, "h1", json!({"message_id": "m1"})).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let b = first.body_json();
    assert_eq!(
        (b["amount"].clone(), b["available"].clone()),
        (json!(25), json!(2_025))
    );
    let hold_id = b["hold_id"].as_str().unwrap().to_owned();
    // The key's record holds the answer the hold committed with.
    let record = r.api.store.item(&wallet_pk("acme"), "IDEM#h1").unwrap();
    assert_eq!(attr::get_s(&record, "state"), Some("done"));
    assert_eq!(attr::get_s(&record, "body"), Some(first.body.as_str()));
    let again = hold(&r, "h1", json!({"message_id": "m1"})).await;
    assert_eq!(
        (again.body.as_str(), again.header("idempotent-replayed")),
        (first.body.as_str(), Some("true"))
    );
    let w = Ledger::new(&r.api.store)
        .wallet(&TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(w.held.minor(), 25);
    // Another 25 would take available to 2,000: still the floor, so allowed; a third is not.
    assert_eq!(
        hold(&r, "h2", json!({"message_id": "m2"})).await.status,
        201
    );
    let poor = hold(&r, "h3", json!({"message_id": "m3"})).await;
    assert_eq!(poor.status, 402, "{}", poor.body);
    assert_eq!(poor.body_json()["error"], "insufficient_funds");
    assert_eq!(poor.body_json()["floor"], 2_000);
    // The 402 is stored: the same key answers it again though the wallet was topped up since.
    credit(&r, 10_000);
    let replay = hold(&r, "h3", json!({"message_id": "m3"})).await;
    assert_eq!(
        (replay.status.as_u16(), replay.header("idempotent-replayed")),
        (402, Some("true"))
    );
    // Released once; its key replays the release.
    let path = format!("/wallets/acme/holds/{hold_id}/release");
    let released = r.send("POST", &path, Some("rel-1"), None).await;
    assert_eq!(released.status, 200, "{}", released.body);
    assert_eq!(released.body_json()["released"], true);
    assert_eq!(
        r.send("POST", &path, Some("rel-1"), Some("{}"))
            .await
            .header("idempotent-replayed"),
        Some("true")
    );
    let twice = r.send("POST", &path, Some("rel-2"), None).await;
    assert_eq!(
        (twice.status.as_u16(), twice.body_json()["error"].clone()),
        (409, json!("hold_settled"))
    );
}

#[tokio::test]
async fn a_holds_metrics_reach_the_apis_sink() {
    // A wallet of two shards funded on shard 1 only: shard 0 is below the wallet's floor, so the
    // hold refills it first, and says so in `ShardRefills`.
    let store = MemoryStore::new();
    let acme = TenantId::parse("acme").unwrap();
    let wallet = Wallet::new(
        acme.clone(),
        usd().amount(25),
        usd().amount(2_000),
        None,
        NOW,
    );
    Ledger::new(&store).create(&wallet).await.unwrap();
    Ledger::new(&store).set_shards(&acme, 2).await.unwrap();
    let (pk, sk) = shard_key("acme", 1);
    let mut item = store.item(&pk, &sk).unwrap();
    item.insert("balance".into(), attr::n(3_000));
    store.put_item(item);
    let sink = Arc::new(RecordingSink::new());
    let (checkout, clock) = (Shared::default(), Arc::new(ManualClock::at_millis(NOW)));
    let api = WalletApi::new(store, checkout.clone(), clock.clone(), ApiConfig::default())
        .with_metrics(sink.clone());
    let r = Rig {
        api,
        checkout,
        clock,
    };
    let placed = hold(&r, "h1", json!({"message_id": "m1"})).await;
    assert_eq!(placed.status, 201, "{}", placed.body);
    let refills: Vec<_> = sink
        .emitted()
        .into_iter()
        .filter(|(_, m)| m.name == "ShardRefills")
        .map(|(at, m)| (at, m.properties))
        .collect();
    assert_eq!(refills.len(), 1, "{:?}", sink.emitted());
    assert_eq!(refills[0].0, NOW, "at the API's clock");
    assert!(refills[0]
        .1
        .iter()
        .any(|(k, v)| k == "Moved" && v == "true"));
}

#[tokio::test]
async fn a_tenant_outside_the_grammar_is_refused_before_anything_is_written() {
    let r = rig().await;
    credit(&r, 10_000);
    // A wallet stored before the grammar: still there, but no request reaches it.
    let legacy = TenantId::stored("Acme Corp").unwrap();
    let old = Wallet::new(legacy.clone(), usd().amount(25), usd().amount(0), None, NOW);
    Ledger::new(&r.api.store).create(&old).await.unwrap();
    let writes = r.api.store.write_requests();
    let hold_body = json!({"message_id": "m1"}).to_string();
    let top_up_body = top_up(5_000).to_string();
    for (segment, decoded) in [
        ("Acme%20Corp", "Acme Corp"),
        ("a%2Fb", "a/b"),
        ("..", ".."),
        ("%C3%A9", "é"),
    ] {
        for (path, body) in [
            (format!("/wallets/{segment}/holds"), hold_body.as_str()),
            (
                format!("/wallets/{segment}/checkout-sessions"),
                top_up_body.as_str(),
            ),
            (format!("/wallets/{segment}/holds/h1/release"), ""),
        ] {
            let got = r.send("POST", &path, Some("k"), Some(body)).await;
            let b = got.body_json();
            assert_eq!(got.status.as_u16(), 400, "{path}: {}", got.body);
            assert_eq!(
                (b["error"].as_str(), b["param"].as_str()),
                (Some("invalid_request"), Some("tenant")),
                "{path}"
            );
            assert!(
                b["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("A-Z a-z 0-9 . _ : -"),
                "{path}: {}",
                got.body
            );
            assert_eq!(
                r.api.store.item(&wallet_pk(decoded), "IDEM#k"),
                None,
                "{path}"
            );
        }
        let read = r
            .send("GET", &format!("/wallets/{segment}"), None, None)
            .await;
        assert_eq!(read.status.as_u16(), 400, "{segment}: {}", read.body);
    }
    assert_eq!(r.api.store.write_requests(), writes, "nothing written");
    assert_eq!(r.calls(), 0, "no checkout asked for");
    let still = Ledger::new(&r.api.store)
        .wallet(&legacy)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((still.held.minor(), still.balance.minor()), (0, 0));
    // The same key, the tenant corrected: carried out (the refusal kept nothing under it).
    let fixed = hold(&r, "k", json!({"message_id": "m1"})).await;
    assert_eq!(fixed.status, 201, "{}", fixed.body);
}
