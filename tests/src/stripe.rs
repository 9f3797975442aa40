//! The local Stripe stand-in (`scripts/stripe_standin.py`) for tests: started per test on a free
//! port (its ready line read, no sleeping), its control API (faults, the requests and charges it
//! saw, customers with saved cards, Checkout Sessions paid), and the Stripe client (the charger,
//! the checkout) configured against it.

use inbox_core::outbox::bucket::shared::LocalBucket;
use inbox_core::outbox::bucket::Rate;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use stripe_charges::events::StripeEvents;
use stripe_charges::retry::RetryPolicy;
use stripe_charges::{
    HttpTransport, SecretKey, StripeCharger, StripeCheckout, StripeClient, StripeConfig,
};
use wallet_ledger::autopay::{idempotency_key, ChargeRequest};
use wallet_ledger::money::Currency;
use wallet_ledger::payments::checkout::CheckoutRequest;
use wallet_ledger::tenant::TenantId;

/// A stand-in process, stopped when dropped.
pub struct Standin {
    child: Child,
    pub port: u16,
}

impl Standin {
    /// Starts one on a free port and waits for its ready line (no sleeping); its webhooks go
    /// nowhere.
    pub fn start() -> Self {
        Self::delivering("", "whsec_test")
    }

    /// The same, its webhooks POSTed to `url` signed with `secret`.
    pub fn delivering(url: &str, secret: &str) -> Self {
        let mut child = Command::new(crate::python())
            .arg(crate::root().join("scripts/stripe_standin.py"))
            .args([
                "--port",
                "0",
                "--webhook-url",
                url,
                "--webhook-secret",
                secret,
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

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A control or API request (HTTP/1.1, one connection each): the JSON answer.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        self.exchange(method, path, "application/json", &body)
    }

    /// A form-encoded POST to Stripe's API (`/v1/...`, as Stripe takes them): the JSON answer
    /// (an error's body too).
    pub fn post_form(&self, path: &str, form: &str) -> Value {
        self.exchange("POST", path, "application/x-www-form-urlencoded", form)
    }

    fn exchange(&self, method: &str, path: &str, content_type: &str, body: &str) -> Value {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer sk_test_it\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
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

    /// Moves the stand-in's own clock (its objects' times, its keys' ages, settlements):
    /// the stand-in's now, in Unix seconds.
    pub fn advance(&self, secs: i64) -> i64 {
        let now = self.call("POST", "/_standin/clock", Some(&json!({"advance": secs})));
        now["now"].as_i64().expect("the stand-in's clock")
    }

    /// Sets the stand-in's settings (`key_ttl_s`, `settle_after_s`, `search_lag_s`, …).
    pub fn configure(&self, settings: Value) {
        self.call("POST", "/_standin/config", Some(&settings));
    }

    pub fn fault(&self, spec: Value) {
        self.call("POST", "/_standin/faults", Some(&spec));
    }

    /// A customer with `card` saved (a SetupIntent completed): (customer, payment method).
    pub fn customer(&self, card: &str) -> (String, String) {
        let out = self.call(
            "POST",
            "/_standin/setup_intents",
            Some(&json!({"payment_method": card, "metadata": {"tenant": "acme"}})),
        );
        let id = |v: &Value| v["id"].as_str().expect("an id").to_owned();
        (id(&out["customer"]), id(&out["payment_method"]))
    }

    /// The PaymentIntent requests it received.
    pub fn intent_requests(&self) -> Vec<Value> {
        self.requests("/v1/payment_intents")
    }

    /// The API requests it received under `path`.
    pub fn requests(&self, path: &str) -> Vec<Value> {
        let all = self.call("GET", &format!("/_standin/requests?path={path}"), None);
        all["data"].as_array().cloned().unwrap_or_default()
    }

    /// The payer pays Checkout Session `id` (`spec`: the stand-in's `pay` options): its answer
    /// (the session, its PaymentIntent and customer, the events raised in the order asked).
    pub fn pay(&self, id: &str, spec: Value) -> Value {
        self.call(
            "POST",
            &format!("/_standin/checkout_sessions/{id}/pay"),
            Some(&spec),
        )
    }

    /// The events it raised (their ids in `order`, as `pay` answers them): the Stripe events.
    pub fn events(&self, ids: &[Value]) -> Vec<Value> {
        let all = self.call("GET", "/_standin/events", None);
        let all = all["data"].as_array().cloned().unwrap_or_default();
        ids.iter()
            .filter_map(|id| {
                all.iter()
                    .map(|e| e["event"].clone())
                    .find(|e| &e["id"] == id)
            })
            .collect()
    }

    /// Charges actually made: (succeeded, failed).
    pub fn charges(&self) -> (u64, u64) {
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
pub fn quick() -> RetryPolicy {
    RetryPolicy {
        max_retries: 4,
        base: Duration::from_millis(20),
        cap: Duration::from_millis(100),
    }
}

pub fn fast() -> Rate {
    Rate {
        per_sec: 1000.0,
        burst: 50,
    }
}

pub fn config(s: &Standin) -> StripeConfig {
    StripeConfig::new(&s.base(), SecretKey::new("sk_test_it").unwrap())
}

/// The configuration of the tests: quick retries, a rate nothing waits for.
pub fn quick_config(s: &Standin) -> StripeConfig {
    StripeConfig {
        rate: fast(),
        retry: quick(),
        ..config(s)
    }
}

pub fn charger(s: &Standin) -> StripeCharger<HttpTransport, LocalBucket> {
    StripeCharger::from_config(&quick_config(s), LocalBucket::default()).unwrap()
}

/// Stripe's events listed on the stand-in (the client of the tests' configuration).
pub fn events(s: &Standin) -> StripeEvents<HttpTransport, LocalBucket> {
    StripeEvents::on(StripeClient::from_config(&quick_config(s), LocalBucket::default()).unwrap())
}

pub fn checkout(s: &Standin) -> StripeCheckout<HttpTransport, LocalBucket> {
    StripeCheckout::from_config(&quick_config(s), LocalBucket::default()).unwrap()
}

/// A top-up of acme's wallet by `minor` cents, the method saved for autopay, under `key`.
pub fn top_up(minor: i64, key: &str) -> CheckoutRequest {
    CheckoutRequest {
        tenant: TenantId::parse("acme").unwrap(),
        amount: Currency::parse("usd").unwrap().amount(minor),
        success_url: "https://app.example/topped-up?session={CHECKOUT_SESSION_ID}".into(),
        cancel_url: "https://app.example/wallet".into(),
        save_payment_method: true,
        customer: None,
        idempotency_key: key.into(),
    }
}

pub fn request(customer: &str, pm: &str, attempt: &str) -> ChargeRequest {
    ChargeRequest {
        tenant: TenantId::parse("acme").unwrap(),
        attempt: attempt.into(),
        try_no: 0,
        amount: Currency::parse("usd").unwrap().amount(2500),
        customer: customer.into(),
        payment_method: pm.into(),
        idempotency_key: idempotency_key(&TenantId::parse("acme").unwrap(), attempt, 0),
    }
}

pub fn keys_of(requests: &[Value]) -> Vec<&str> {
    requests
        .iter()
        .map(|r| r["idempotency_key"].as_str().unwrap_or_default())
        .collect()
}
