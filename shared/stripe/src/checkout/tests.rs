//! The checkout over the call loop against a scripted transport ([`crate::script`]): what is
//! sent, a 5xx repeated with the same key, a refusal mapped and not repeated, the budget.

use super::*;
use crate::script::{answer, answer_retry, fast, Rig, Script};
use crate::transport::{Answer, Failure};
use inbox_core::outbox::bucket::shared::LocalBucket;
use inbox_core::outbox::bucket::Rate;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::money::Currency;
use wallet_ledger::tenant::TenantId;

type Tested = StripeCheckout<Arc<Script>, Arc<LocalBucket>>;

fn rig(answers: Vec<Result<Answer, Failure>>, rate: Rate) -> Rig<Tested> {
    crate::script::rig(answers, rate, StripeCheckout::on)
}

fn request() -> CheckoutRequest {
    CheckoutRequest {
        tenant: TenantId::parse("acme").unwrap(),
        amount: Currency::parse("usd").unwrap().amount(2500),
        success_url: "https://app.example/ok".into(),
        cancel_url: "https://app.example/no".into(),
        save_payment_method: true,
        customer: None,
        idempotency_key: "k1".into(),
    }
}

fn created() -> Result<Answer, Failure> {
    answer(
        200,
        json!({"id": "cs_test_1", "object": "checkout.session", "status": "open",
            "url": "https://checkout.stripe.com/c/pay/cs_test_1"}),
    )
}

fn session() -> CheckoutSession {
    CheckoutSession {
        id: "cs_test_1".into(),
        url: "https://checkout.stripe.com/c/pay/cs_test_1".into(),
    }
}

fn names(metrics: &[Metric]) -> Vec<(&str, i64)> {
    metrics.iter().map(|m| (m.name.as_str(), m.value)).collect()
}

#[tokio::test]
async fn the_session_of_the_request_is_sent_once_with_its_key() {
    let r = rig(vec![created()], fast());
    assert_eq!(r.it.create_session(&request()).await, Ok(session()));
    let sent = r.script.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0, form::checkout_session(&request()));
    assert_eq!(names(&r.it.take_metrics()), [("ProviderRequests", 1)]);
    assert!(r.it.take_metrics().is_empty(), "taken once");
}

#[tokio::test]
async fn a_5xx_and_a_lock_are_repeated_with_the_same_key() {
    let r = rig(
        vec![
            answer(500, json!({"error": {"type": "api_error"}})),
            Err(Failure::Broken("connection reset".into())),
            answer_retry(
                429,
                json!({"error": {"type": "invalid_request_error", "code": "lock_timeout"}}),
                Some(true),
            ),
            created(),
        ],
        fast(),
    );
    let (got, metrics) = r.it.create_measured(&request()).await;
    assert_eq!(got, Ok(session()));
    assert_eq!(r.script.keys(), vec![Some("k1".to_owned()); 4]);
    assert_eq!(r.waits.lock().unwrap().len(), 3);
    assert!(r.bucket.tat().is_some(), "the bucket was used");
    assert_eq!(
        names(&metrics),
        [
            ("ProviderRequests", 4),
            ("ProviderRetries", 3),
            ("ProviderRateLimited", 1)
        ]
    );
}

#[tokio::test]
async fn a_refusal_is_final_with_stripes_message() {
    let r = rig(
        vec![answer(
            400,
            json!({"error": {"type": "invalid_request_error", "code": "url_invalid",
                "param": "success_url", "message": "Not a valid URL"}}),
        )],
        fast(),
    );
    let (got, metrics) = r.it.create_measured(&request()).await;
    assert_eq!(
        got,
        Err(CheckoutError::Refused(
            "Not a valid URL (parameter success_url)".into()
        ))
    );
    assert_eq!(r.script.sent.lock().unwrap().len(), 1, "not repeated");
    let failed = metrics.iter().find(|m| m.name == "CheckoutFailed").unwrap();
    assert!(failed
        .properties
        .contains(&("Reason".into(), "refused".into())));
}

#[tokio::test]
async fn nothing_decisive_after_the_retries_is_unavailable() {
    let n = crate::retry::RetryPolicy::default().max_retries as usize + 1;
    let r = rig(
        (0..n)
            .map(|_| answer(503, json!({"error": {"type": "api_error"}})))
            .collect(),
        fast(),
    );
    let got = r.it.create_session(&request()).await;
    assert!(
        matches!(&got, Err(CheckoutError::Unavailable(why)) if why.contains("retries spent")),
        "{got:?}"
    );
    assert_eq!(r.script.keys(), vec![Some("k1".to_owned()); n]);
    let stop = rig(
        vec![answer_retry(
            500,
            json!({"error": {"type": "api_error"}}),
            Some(false),
        )],
        fast(),
    );
    assert_eq!(
        stop.it.create_session(&request()).await,
        Err(CheckoutError::Unavailable("HTTP 500 api_error".into()))
    );
    let metrics = r.it.take_metrics();
    assert!(metrics.iter().any(|m| m.name == "CheckoutFailed"
        && m.properties
            .contains(&("Reason".into(), "unavailable".into()))));
}

#[tokio::test]
async fn no_token_in_time_sends_nothing_and_is_unavailable() {
    let rate = Rate {
        per_sec: 0.1,
        burst: 1,
    };
    let r = rig(vec![created()], rate);
    let mut it = r.it;
    it.client.max_wait = Duration::from_secs(1);
    assert_eq!(it.create_session(&request()).await, Ok(session()));
    assert!(matches!(
        it.create_session(&request()).await,
        Err(CheckoutError::Unavailable(_))
    ));
    assert_eq!(r.script.sent.lock().unwrap().len(), 1);
}
