//! The Stripe client against the local Stripe stand-in (`scripts/stripe_standin.py`, started per
//! test on a free port): a crash after the call re-sends the same key and is answered from
//! Stripe's idempotency store (one charge); a 429 `lock_timeout` storm backed off and kept to the
//! account's rate by the bucket two workers share in the table; `Stripe-Should-Retry: false` not
//! retried; a 500 after the charge and a reset after the charge repeat the same key and charge
//! once; each decline test card mapped to its outcome.

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::outbox::bucket::shared::LocalBucket;
use inbox_core::outbox::bucket::Rate;
use inbox_core::store::dynamo::DynamoTable;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stripe_charges::retry::RetryPolicy;
use stripe_charges::transport::{Answer, Failure, Request, Transport};
use stripe_charges::{HttpTransport, SecretKey, StripeCharger, StripeConfig};
use wallet_ledger::autopay::{idempotency_key, ChargeOutcome, ChargeRequest, Charger};
use wallet_ledger::money::Currency;
use wallet_ledger::tenant::TenantId;

/// A stand-in process, stopped when dropped.
struct Standin {
    child: Child,
    port: u16,
}

impl Standin {
    /// Starts one on a free port and waits for its ready line (no sleeping).
    fn start() -> Self {
        let mut child = Command::new(integration_tests::python())
            .arg(integration_tests::root().join("scripts/stripe_standin.py"))
            .args([
                "--port",
                "0",
                "--webhook-url",
                "",
                "--webhook-secret",
                "whsec_test",
                "--quiet",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the Stripe stand-in (INBOX_VENV)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the stand-in's ready line");
        let port = line
            .split("http://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Self { child, port }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A control or API request (HTTP/1.1, one connection each): the JSON answer.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer sk_test_it\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).expect("an answer");
        let json = raw
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or_default();
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {raw}"))
    }

    fn fault(&self, spec: Value) {
        self.call("POST", "/_standin/faults", Some(&spec));
    }

    /// A customer with `card` saved (a SetupIntent completed): (customer, payment method).
    fn customer(&self, card: &str) -> (String, String) {
        let out = self.call(
            "POST",
            "/_standin/setup_intents",
            Some(&json!({"payment_method": card, "metadata": {"tenant": "acme"}})),
        );
        let id = |v: &Value| v["id"].as_str().expect("an id").to_owned();
        (id(&out["customer"]), id(&out["payment_method"]))
    }

    /// The PaymentIntent requests it received.
    fn intent_requests(&self) -> Vec<Value> {
        let all = self.call("GET", "/_standin/requests?path=/v1/payment_intents", None);
        all["data"].as_array().cloned().unwrap_or_default()
    }

    /// Charges actually made: (succeeded, failed).
    fn charges(&self) -> (u64, u64) {
        let c = self.call("GET", "/_standin/charges", None);
        (
            c["succeeded"].as_u64().unwrap(),
            c["failed"].as_u64().unwrap(),
        )
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Quick retries, so a test of the budget takes milliseconds of backoff, not seconds.
fn quick() -> RetryPolicy {
    RetryPolicy {
        max_retries: 4,
        base: Duration::from_millis(20),
        cap: Duration::from_millis(100),
    }
}

fn fast() -> Rate {
    Rate {
        per_sec: 1000.0,
        burst: 50,
    }
}

fn config(s: &Standin) -> StripeConfig {
    StripeConfig::new(&s.base(), SecretKey::new("sk_test_it").unwrap())
}

fn charger(s: &Standin) -> StripeCharger<HttpTransport, LocalBucket> {
    let transport = HttpTransport::new(&config(s)).unwrap();
    StripeCharger::new(transport, LocalBucket::default(), fast(), quick())
}

fn request(customer: &str, pm: &str, attempt: &str) -> ChargeRequest {
    ChargeRequest {
        tenant: TenantId::parse("acme").unwrap(),
        attempt: attempt.into(),
        try_no: 0,
        amount: Currency::parse("usd").unwrap().amount(2500),
        customer: customer.into(),
        payment_method: pm.into(),
        idempotency_key: idempotency_key(attempt, 0),
    }
}

fn keys_of(requests: &[Value]) -> Vec<&str> {
    requests
        .iter()
        .map(|r| r["idempotency_key"].as_str().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_crash_after_the_call_resends_the_same_key_and_gets_the_saved_answer() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    let req = request(&cus, &pm, "crash-1");
    let first = charger(&s).charge(&req).await;
    assert_eq!(first.outcome, ChargeOutcome::Succeeded);
    assert!(!first.replayed);
    // The worker crashed before recording the answer: a new process sends the stored key again.
    let again = charger(&s).charge(&req).await;
    assert_eq!(again.outcome, ChargeOutcome::Succeeded);
    assert!(
        again.replayed,
        "Stripe's saved answer (Idempotent-Replayed: true)"
    );
    assert_eq!(again.provider_ref, first.provider_ref);
    assert_eq!(s.charges(), (1, 0), "one charge");
}

/// Records when each request was sent, around the HTTP transport.
struct Timed(HttpTransport, Arc<Mutex<Vec<i64>>>);

impl Transport for Timed {
    async fn send(&self, request: &Request) -> Result<Answer, Failure> {
        self.1.lock().unwrap().push(SystemClock.now_millis());
        self.0.send(request).await
    }
}

#[tokio::test]
async fn a_429_storm_is_backed_off_and_kept_to_the_accounts_rate_by_the_shared_bucket() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    let client = aws_sdk_dynamodb::Client::new(&integration_tests::sdk_config().await);
    let table = integration_tests::unique("stripe-bucket-");
    integration_tests::create_table(&client, &table).await;
    let storm = 6;
    s.fault(json!({"kind": "lock_timeout", "times": storm}));
    let rate = Rate {
        per_sec: 5.0,
        burst: 1,
    };
    let retry = RetryPolicy {
        max_retries: 10,
        ..quick()
    };
    let sent = Arc::new(Mutex::new(Vec::new()));
    // Two workers (two clients, as two Lambda instances), one bucket item in the table.
    let worker = || {
        let transport = Timed(HttpTransport::new(&config(&s)).unwrap(), sent.clone());
        StripeCharger::new(
            transport,
            DynamoTable::new(client.clone(), &table),
            rate,
            retry,
        )
    };
    let (a, b) = (worker(), worker());
    let reqs: Vec<_> = (0..4)
        .map(|i| request(&cus, &pm, &format!("storm-{i}")))
        .collect();
    let replies = futures_util::future::join_all([
        a.charge(&reqs[0]),
        b.charge(&reqs[1]),
        a.charge(&reqs[2]),
        b.charge(&reqs[3]),
    ])
    .await;
    for r in &replies {
        assert_eq!(r.outcome, ChargeOutcome::Succeeded, "{replies:?}");
    }
    let requests = s.intent_requests();
    assert_eq!(
        requests.len(),
        4 + storm,
        "each 429 retried once, nothing more"
    );
    let limited = requests.iter().filter(|r| r["status"] == 429).count();
    assert_eq!(limited, storm);
    assert_eq!(s.charges(), (4, 0));
    let metrics: Vec<_> = [a.take_metrics(), b.take_metrics()].concat();
    let rate_limited: i64 = metrics
        .iter()
        .filter(|m| m.name == "ProviderRateLimited")
        .map(|m| m.value)
        .sum();
    assert_eq!(rate_limited, storm as i64);
    // Kept to the rate: in any second, at most burst + rate requests (the holds only slow it).
    let times = sent.lock().unwrap().clone();
    assert_eq!(times.len(), 4 + storm);
    for (i, t) in times.iter().enumerate() {
        let within = times[i..].iter().filter(|u| **u < t + 1000).count();
        assert!(
            within <= 6,
            "{within} requests in the second from {t}: {times:?}"
        );
    }
    let span = times.iter().max().unwrap() - times.iter().min().unwrap();
    assert!(
        span >= 1_500,
        "10 requests at 5/s take at least 1.8 s, took {span} ms"
    );
}

#[tokio::test]
async fn should_retry_false_is_never_retried() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    s.fault(json!({"status": 503, "should_retry": false}));
    let reply = charger(&s).charge(&request(&cus, &pm, "no-retry")).await;
    assert_eq!(reply.outcome, ChargeOutcome::Indeterminate);
    assert_eq!(s.intent_requests().len(), 1, "one request");
}

#[tokio::test]
async fn a_500_after_the_charge_repeats_the_same_key_charges_once_and_find_settles_it() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    s.fault(json!({"kind": "error_after_charge"}));
    let c = charger(&s);
    let req = request(&cus, &pm, "after-500");
    let reply = c.charge(&req).await;
    // Stripe saved the 500 for the key: every retry gets it again, so the outcome stays unknown.
    assert_eq!(reply.outcome, ChargeOutcome::Indeterminate);
    let requests = s.intent_requests();
    assert_eq!(requests.len(), 1 + quick().max_retries as usize);
    assert!(
        keys_of(&requests).iter().all(|k| *k == req.idempotency_key),
        "the same key"
    );
    assert_eq!(s.charges(), (1, 0), "one charge");
    let found = c
        .find(&req.tenant, &req.attempt)
        .await
        .unwrap()
        .expect("the attempt's intent");
    assert_eq!(found.outcome, ChargeOutcome::Succeeded);
}

#[tokio::test]
async fn a_reset_after_the_charge_is_retried_with_the_same_key_and_is_one_charge() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    s.fault(json!({"kind": "reset_after_charge"}));
    let req = request(&cus, &pm, "after-reset");
    let reply = charger(&s).charge(&req).await;
    assert_eq!(reply.outcome, ChargeOutcome::Succeeded);
    assert!(reply.replayed, "the saved answer of the first request");
    let requests = s.intent_requests();
    assert_eq!(keys_of(&requests), [req.idempotency_key.as_str(); 2]);
    assert_eq!(s.charges(), (1, 0));
}

#[tokio::test]
async fn each_decline_test_card_maps_to_its_outcome() {
    let s = Standin::start();
    let soft = |c: &str| ChargeOutcome::DeclinedSoft { code: c.into() };
    let hard = |c: &str| ChargeOutcome::DeclinedHard { code: c.into() };
    let table = [
        ("pm_card_visa", ChargeOutcome::Succeeded),
        ("pm_card_visa_chargeDeclined", soft("generic_decline")),
        (
            "pm_card_visa_chargeDeclinedInsufficientFunds",
            soft("insufficient_funds"),
        ),
        (
            "pm_card_chargeDeclinedProcessingError",
            soft("processing_error"),
        ),
        ("pm_card_visa_chargeDeclinedLostCard", hard("lost_card")),
        ("pm_card_visa_chargeDeclinedStolenCard", hard("stolen_card")),
        ("pm_card_visa_chargeDeclinedFraudulent", hard("fraudulent")),
        ("pm_card_chargeDeclinedExpiredCard", hard("expired_card")),
        ("pm_card_chargeDeclinedIncorrectCvc", hard("incorrect_cvc")),
        (
            "pm_card_authenticationRequired",
            ChargeOutcome::NeedsCustomer {
                code: "authentication_required".into(),
            },
        ),
    ];
    let c = charger(&s);
    for (i, (card, want)) in table.into_iter().enumerate() {
        let (cus, pm) = s.customer(card);
        let reply = c.charge(&request(&cus, &pm, &format!("card-{i}"))).await;
        assert_eq!(reply.outcome, want, "{card}");
        assert_eq!(reply.requests, 1, "{card}: a decline is not retried");
    }
    let declined = c
        .take_metrics()
        .into_iter()
        .filter(|m| m.name == "ChargeDeclined")
        .count();
    assert_eq!(declined, 9);
}
