//! The Stripe client against the local Stripe stand-in (`scripts/stripe_standin.py`): each of
//! Stripe's decline test cards mapped to its outcome, one request each; a top-up's Checkout
//! Session as the stand-in reads it (the tenant on the session and on its PaymentIntent, the
//! method saved on a customer Checkout creates), one session per idempotency key, a refusal
//! mapped, a 5xx retried with the same key. Stripe's faults of charges (a crash after the call,
//! 429 storms, `Stripe-Should-Retry`, a 500 or a reset after the charge) are in `faults::stripe`.

use integration_tests::stripe::{charger, checkout, request, top_up, Standin};
use serde_json::{json, Value};
use wallet_ledger::autopay::{ChargeOutcome, Charger};
use wallet_ledger::payments::checkout::{Checkout, CheckoutError};

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

#[tokio::test]
async fn a_top_up_session_names_its_tenant_on_the_session_and_its_intent() {
    let s = Standin::start();
    let session = checkout(&s)
        .create_session(&top_up(2500, "top-up-1"))
        .await
        .unwrap();
    assert!(session.id.starts_with("cs_test_"), "{session:?}");
    assert_eq!(
        session.url,
        format!("{}/_standin/checkout_sessions/{}", s.base(), session.id)
    );
    let open = s.call(
        "GET",
        &format!("/v1/checkout/sessions/{}", session.id),
        None,
    );
    assert_eq!(
        (
            &open["status"],
            &open["mode"],
            &open["amount_total"],
            &open["currency"]
        ),
        (
            &json!("open"),
            &json!("payment"),
            &json!(2500),
            &json!("usd")
        )
    );
    assert_eq!(open["metadata"], json!({"tenant": "acme"}));
    assert_eq!(open["client_reference_id"], "acme");
    assert_eq!(open["customer_creation"], "always");
    assert_eq!(
        open["success_url"],
        "https://app.example/topped-up?session={CHECKOUT_SESSION_ID}"
    );
    let paid = s.pay(&session.id, json!({"webhook": "never"}));
    let intent = &paid["payment_intent"];
    assert_eq!(intent["metadata"], json!({"tenant": "acme"}));
    assert_eq!(intent["setup_future_usage"], "off_session");
    let customer = paid["object"]["customer"]
        .as_str()
        .expect("a customer made");
    assert_eq!(intent["customer"], customer);
    let method = intent["payment_method"].as_str().unwrap();
    let saved = s.call("GET", &format!("/v1/payment_methods/{method}"), None);
    assert_eq!(saved["customer"], customer, "saved for autopay");
    let sent = s.requests("/v1/checkout/sessions");
    assert_eq!(sent[0]["method"], "POST");
    assert_eq!(sent[0]["idempotency_key"], "top-up-1");
}

#[tokio::test]
async fn the_same_key_creates_one_session() {
    let s = Standin::start();
    let c = checkout(&s);
    let first = c.create_session(&top_up(2500, "k")).await.unwrap();
    let again = c.create_session(&top_up(2500, "k")).await.unwrap();
    assert_eq!(again, first);
    let other = c.create_session(&top_up(2500, "k2")).await.unwrap();
    assert_ne!(other.id, first.id);
    let sent = s.requests("/v1/checkout/sessions");
    let replayed: Vec<&Value> = sent.iter().map(|r| &r["replayed"]).collect();
    assert_eq!(replayed, [&json!(false), &json!(true), &json!(false)]);
    // The same key with another amount: Stripe's idempotency error, decisive.
    let reused = c.create_session(&top_up(2600, "k")).await;
    assert!(
        matches!(&reused, Err(CheckoutError::Refused(m)) if m.contains("same parameters")),
        "{reused:?}"
    );
}

#[tokio::test]
async fn a_refusal_is_mapped_and_not_retried() {
    let s = Standin::start();
    let c = checkout(&s);
    let small = c.create_session(&top_up(10, "small")).await;
    assert!(
        matches!(&small, Err(CheckoutError::Refused(m)) if m.contains("at least 0.50 usd")),
        "{small:?}"
    );
    let mut unknown = top_up(2500, "unknown-customer");
    unknown.customer = Some("cus_nope".into());
    let missing = c.create_session(&unknown).await;
    assert_eq!(
        missing,
        Err(CheckoutError::Refused(
            "No such customer: 'cus_nope' (parameter customer)".into()
        ))
    );
    assert_eq!(
        s.requests("/v1/checkout/sessions").len(),
        2,
        "one request each"
    );
    let failed = c
        .take_metrics()
        .into_iter()
        .filter(|m| m.name == "CheckoutFailed")
        .count();
    assert_eq!(failed, 2);
}

#[tokio::test]
async fn a_5xx_is_retried_with_the_same_key_and_a_saved_500_is_unavailable() {
    let s = Standin::start();
    let c = checkout(&s);
    // Two 503s before the endpoint runs, then the session.
    s.fault(json!({"path": "/v1/checkout/sessions", "status": 503, "times": 2}));
    let got = c.create_session(&top_up(2500, "retried")).await.unwrap();
    let sent = s.requests("/v1/checkout/sessions");
    let keys: Vec<&Value> = sent.iter().map(|r| &r["idempotency_key"]).collect();
    assert_eq!(keys, [&json!("retried"); 3]);
    let statuses: Vec<&Value> = sent.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, [&json!(503), &json!(503), &json!(200)]);
    assert!(got.id.starts_with("cs_test_"));
    // A 500 saved for the key after the endpoint ran: every retry gets it again.
    s.fault(json!({"path": "/v1/checkout/sessions", "status": 500, "phase": "after"}));
    let lost = c.create_session(&top_up(2500, "saved-500")).await;
    assert!(
        matches!(&lost, Err(CheckoutError::Unavailable(why)) if why.contains("retries spent")),
        "{lost:?}"
    );
    let saved: Vec<Value> = s
        .requests("/v1/checkout/sessions")
        .into_iter()
        .filter(|r| r["idempotency_key"] == "saved-500")
        .collect();
    assert_eq!(saved.len(), 5, "1 + 4 retries, all with the key");
    assert!(saved[1..].iter().all(|r| r["replayed"] == true));
}

/// Every PaymentIntent status Stripe's own library types (`PaymentIntent.status` in the pinned
/// `stripe` package, a closed `Literal`) has its row in the answer table: a status Stripe adds
/// fails this test instead of falling into a default.
#[test]
fn every_payment_intent_status_of_stripes_library_has_a_defined_outcome() {
    let out = std::process::Command::new(integration_tests::python())
        .args([
            "-c",
            "import typing, json\n\
             from stripe._payment_intent import PaymentIntent\n\
             t = PaymentIntent.__annotations__['status']\n\
             lits = [a for a in typing.get_args(t) if typing.get_origin(a) is typing.Literal]\n\
             print(json.dumps(sorted(x for l in lits for x in typing.get_args(l))))",
        ])
        .output()
        .expect("the venv's python (INBOX_VENV)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let library: Vec<String> = serde_json::from_slice(&out.stdout).expect("a JSON list");
    assert!(library.len() >= 7, "{library:?}");
    let table: Vec<&str> = stripe_charges::answer::STATUSES
        .iter()
        .map(|(name, _)| *name)
        .collect();
    let mut sorted = table.clone();
    sorted.sort_unstable();
    assert_eq!(library, sorted, "the library's statuses and the table's");
    // Each reads as the table says, an intent naming itself: never an unknown answer.
    for name in table {
        let read = stripe_charges::answer::intent(&json!({"id": "pi_1", "status": name}));
        assert_eq!(read.intent.as_deref(), Some("pi_1"), "{name}");
        assert_ne!(read.outcome, ChargeOutcome::Indeterminate, "{name}");
    }
}
