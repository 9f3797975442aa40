//! Stripe's faults against the autopay client (the local stand-in, `scripts/stripe_standin.py`,
//! started per test on a free port): a crash after the call re-sends the same key and is answered
//! from Stripe's idempotency store (one charge); a 429 `lock_timeout` storm backed off and kept to
//! the account's rate by the bucket two workers share in the table; `Stripe-Should-Retry: false`
//! not retried; a 500 and a reset after the charge repeat the same key and charge once.

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::outbox::bucket::Rate;
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::faults::report::record;
use integration_tests::stripe::{charger, config, keys_of, quick, request, Standin};
use serde_json::json;
use std::sync::{Arc, Mutex};
use stripe_charges::retry::RetryPolicy;
use stripe_charges::transport::{Answer, Failure, Request, Transport};
use stripe_charges::{HttpTransport, StripeCharger};
use wallet_ledger::autopay::{idempotency_key, ChargeOutcome, Charger, Find};
use wallet_ledger::tenant::TenantId;

const ROW: &str = "9-stripe";

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
    record(
        ROW,
        "autopay's worker crashed after the Stripe call (its answer never recorded)",
        "1 off-session charge, then the same request from a new client with the stored Idempotency-Key".into(),
        format!(
            "replayed {} (Idempotent-Replayed), the same intent {}; charges made {} (a new key would make 2)",
            again.replayed,
            again.provider_ref == first.provider_ref,
            s.charges().0
        ),
    );
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
    // Kept to the rate: in any second, at most burst + rate requests (the holds only slow it),
    // one more for the time between a token and its send, which the timestamps include.
    let times = sent.lock().unwrap().clone();
    assert_eq!(times.len(), 4 + storm);
    for (i, t) in times.iter().enumerate() {
        let within = times[i..].iter().filter(|u| **u < t + 1000).count();
        assert!(
            within <= 7,
            "{within} requests in the second from {t}: {times:?}"
        );
    }
    let span = times.iter().max().unwrap() - times.iter().min().unwrap();
    assert!(
        span >= 1_500,
        "10 requests at 5/s take at least 1.8 s, took {span} ms"
    );
    let busiest = (0..times.len())
        .map(|i| times[i..].iter().filter(|u| **u < times[i] + 1000).count())
        .max()
        .unwrap_or(0);
    record(
        ROW,
        "a 429 `lock_timeout` storm from Stripe",
        format!("{storm} lock_timeouts for 4 charges from 2 workers sharing one bucket item (5/s, burst 1)"),
        format!(
            "succeeded 4/4, charges 4; requests {} ({limited} answered 429, each retried once with \
             its key); the busiest second {busiest} requests (burst + rate: 6), all in {span} ms",
            requests.len()
        ),
    );
}

#[tokio::test]
async fn should_retry_false_is_never_retried() {
    let s = Standin::start();
    let (cus, pm) = s.customer("pm_card_visa");
    s.fault(json!({"status": 503, "should_retry": false}));
    let reply = charger(&s).charge(&request(&cus, &pm, "no-retry")).await;
    assert_eq!(reply.outcome, ChargeOutcome::Indeterminate);
    let sent = s.intent_requests().len();
    assert_eq!(sent, 1, "one request");
    record(
        ROW,
        "Stripe answering `Stripe-Should-Retry: false`",
        "1 charge answered 503 with Stripe-Should-Retry: false".into(),
        format!("requests {sent} (not retried), outcome indeterminate"),
    );
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
    let find = Find {
        tenant: req.tenant.clone(),
        attempt: req.attempt.clone(),
        try_no: Some(0),
        customer: cus.clone(),
        since_secs: s.advance(0) - 600,
    };
    let found = c.find(&find).await.unwrap().expect("the attempt's intent");
    assert_eq!(found.outcome, ChargeOutcome::Succeeded);
    record(
        ROW,
        "Stripe's 500 after the charge was made (saved for the key)",
        format!(
            "1 charge; the saved 500 answered again to {} retries",
            quick().max_retries
        ),
        format!(
            "requests {} all with the same key, outcome indeterminate; charges made {}; the \
             attempt's intent found by its metadata: succeeded",
            requests.len(),
            s.charges().0
        ),
    );
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
    record(
        ROW,
        "the connection reset after Stripe made the charge",
        "1 charge, its answer lost to a TCP reset".into(),
        format!(
            "requests {} with the same key, the second answered from Stripe's idempotency store \
             (replayed {}); charges made 1",
            requests.len(),
            reply.replayed
        ),
    );
}

#[tokio::test]
async fn two_tenants_charging_the_same_attempt_id_send_two_keys_and_are_each_charged() {
    // Keys are scoped to the Stripe account, which every tenant shares; two tenants' recurring
    // periods on one anchor date have the same attempt id.
    let s = Standin::start();
    let c = charger(&s);
    let mut replies = Vec::new();
    for tenant in ["acme", "globex"] {
        let (cus, pm) = s.customer("pm_card_visa");
        let mut req = request(&cus, &pm, "rec-20261201-month-0");
        req.tenant = TenantId::parse(tenant).unwrap();
        req.idempotency_key = idempotency_key(&req.tenant, &req.attempt, 0);
        replies.push(c.charge(&req).await);
    }
    assert!(replies
        .iter()
        .all(|r| r.outcome == ChargeOutcome::Succeeded));
    assert_eq!(s.charges(), (2, 0), "each tenant charged once");
    // The same key for both (the key without the tenant): Stripe refuses the second.
    let (cus, pm) = s.customer("pm_card_visa");
    let mut shared = request(&cus, &pm, "rec-20261201-month-0");
    shared.idempotency_key = "autopay-rec-20261201-month-0-try-0".into();
    assert_eq!(c.charge(&shared).await.outcome, ChargeOutcome::Succeeded);
    shared.tenant = TenantId::parse("initech").unwrap();
    shared.customer = s.customer("pm_card_visa").0;
    let refused = c.charge(&shared).await;
    assert_eq!(refused.outcome, ChargeOutcome::Indeterminate);
    let last = s.intent_requests().last().cloned().unwrap_or_default();
    assert_eq!(last["status"], 400, "{last}");
    record(
        ROW,
        "two tenants' recurring charges on one anchor date (one Stripe account)",
        "2 tenants charging attempt rec-20261201-month-0, try 0".into(),
        format!(
            "keys 2 (each carries the tenant's tag), charges made 2; the same key for both \
             (as before): the second answered 400 idempotency_error, {} charge made for it",
            s.charges().0 - 3
        ),
    );
}
