//! The charger over the call loop against a scripted transport ([`crate::script`]): retries
//! with the same key, the budget, declines, `Stripe-Should-Retry: false`, the shared bucket; a
//! manual clock and recorded waits.

use super::*;
use crate::script::{answer, answer_retry, fast, Rig, Script};
use crate::transport::{Answer, Failure};
use inbox_core::outbox::bucket::shared::LocalBucket;
use serde_json::json;
use std::sync::Arc;
use wallet_ledger::money::Currency;
use wallet_ledger::tenant::TenantId;

type Tested = StripeCharger<Arc<Script>, Arc<LocalBucket>>;

fn rig(answers: Vec<Result<Answer, Failure>>, rate: Rate) -> Rig<Tested> {
    crate::script::rig(answers, rate, StripeCharger::on)
}

fn succeeded() -> Result<Answer, Failure> {
    answer(
        200,
        json!({"id": "pi_1", "status": "succeeded", "created": 1}),
    )
}

fn lock_timeout() -> Result<Answer, Failure> {
    answer_retry(
        429,
        json!({"error": {"type": "invalid_request_error", "code": "lock_timeout"}}),
        Some(true),
    )
}

fn server_error(should_retry: Option<bool>) -> Result<Answer, Failure> {
    answer_retry(500, json!({"error": {"type": "api_error"}}), should_retry)
}

fn request() -> ChargeRequest {
    ChargeRequest {
        tenant: TenantId::parse("acme").unwrap(),
        attempt: "a1".into(),
        try_no: 0,
        amount: Currency::parse("usd").unwrap().amount(2000),
        customer: "cus_1".into(),
        payment_method: "pm_card_visa".into(),
        idempotency_key: "autopay-a1-try-0".into(),
    }
}

#[tokio::test]
async fn throttling_and_locks_are_retried_with_the_same_key_backed_off_and_held() {
    let r = rig(vec![lock_timeout(), lock_timeout(), succeeded()], fast());
    let (reply, metrics) = r.it.charge_measured(&request()).await;
    assert_eq!(reply.outcome, ChargeOutcome::Succeeded);
    assert_eq!(reply.provider_ref.as_deref(), Some("pi_1"));
    assert_eq!(reply.requests, 3);
    assert_eq!(
        r.script.keys(),
        vec![Some("autopay-a1-try-0".to_owned()); 3]
    );
    // Full jitter at a draw of 0.5: half of 0.5 s, then half of 1 s.
    let waits = r.waits.lock().unwrap().clone();
    assert!(waits.contains(&Duration::from_millis(250)), "{waits:?}");
    assert!(waits.contains(&Duration::from_millis(500)), "{waits:?}");
    // The 429 held the account's bucket past the backoff: every worker waits.
    assert!(r.bucket.tat().unwrap() >= 1_000_000 * 1000 + 250_000);
    let counts: Vec<_> = metrics.iter().map(|m| (m.name.as_str(), m.value)).collect();
    assert_eq!(
        counts,
        [
            ("ProviderRequests", 3),
            ("ProviderRetries", 2),
            ("ProviderRateLimited", 2)
        ]
    );
}

#[tokio::test]
async fn should_retry_false_is_never_retried() {
    let r = rig(vec![server_error(Some(false))], fast());
    let reply = r.it.charge(&request()).await;
    assert_eq!(reply.outcome, ChargeOutcome::Indeterminate);
    assert_eq!(r.script.sent.lock().unwrap().len(), 1);
    assert!(r.waits.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_500_repeats_the_same_key_and_is_indeterminate_after_the_budget() {
    let n = RetryPolicy::default().max_retries as usize + 1;
    let r = rig((0..n).map(|_| server_error(None)).collect(), fast());
    let reply = r.it.charge(&request()).await;
    assert_eq!(reply.outcome, ChargeOutcome::Indeterminate);
    assert_eq!(reply.requests as usize, n);
    assert_eq!(
        r.script.keys(),
        vec![Some("autopay-a1-try-0".to_owned()); n]
    );
    let metrics = r.it.take_metrics();
    assert!(metrics.iter().any(|m| m.name == "ChargeIndeterminate"));
    assert!(r.it.take_metrics().is_empty(), "taken once");
}

#[tokio::test]
async fn a_reset_then_the_saved_answer_is_the_charge_replayed() {
    let mut replay = succeeded();
    if let Ok(a) = &mut replay {
        a.replayed = true;
    }
    let r = rig(
        vec![
            Err(Failure::Broken("connection reset".into())),
            Err(Failure::TimedOut),
            answer(
                409,
                json!({"error": {"type": "idempotency_error", "code": "idempotency_key_in_use"}}),
            ),
            replay,
        ],
        fast(),
    );
    let reply = r.it.charge(&request()).await;
    assert_eq!(reply.outcome, ChargeOutcome::Succeeded);
    assert!(reply.replayed);
    assert_eq!(
        r.script.keys(),
        vec![Some("autopay-a1-try-0".to_owned()); 4]
    );
}

#[tokio::test]
async fn declines_are_final_answers_mapped() {
    let decline = |code: &str, decline: &str| {
        answer(
            402,
            json!({"error": {"type": "card_error", "code": code, "decline_code": decline,
            "payment_intent": {"id": "pi_9"}}}),
        )
    };
    let table = [
        (
            decline("card_declined", "insufficient_funds"),
            ChargeOutcome::DeclinedSoft {
                code: "insufficient_funds".into(),
            },
        ),
        (
            decline("card_declined", "lost_card"),
            ChargeOutcome::DeclinedHard {
                code: "lost_card".into(),
            },
        ),
        (
            decline("authentication_required", "authentication_required"),
            ChargeOutcome::NeedsCustomer {
                code: "authentication_required".into(),
            },
        ),
    ];
    for (a, want) in table {
        let r = rig(vec![a], fast());
        let (reply, metrics) = r.it.charge_measured(&request()).await;
        assert_eq!(reply.outcome, want);
        assert_eq!(reply.provider_ref.as_deref(), Some("pi_9"));
        assert_eq!(
            r.script.sent.lock().unwrap().len(),
            1,
            "a decline is not retried"
        );
        assert!(metrics.iter().any(|m| m.name == "ChargeDeclined"));
    }
}

#[tokio::test]
async fn every_send_takes_a_token_of_the_account() {
    let rate = Rate {
        per_sec: 2.0,
        burst: 1,
    };
    let r = rig((0..5).map(|_| succeeded()).collect(), rate);
    for _ in 0..5 {
        assert_eq!(
            r.it.charge(&request()).await.outcome,
            ChargeOutcome::Succeeded
        );
    }
    let times: Vec<i64> = r
        .script
        .sent
        .lock()
        .unwrap()
        .iter()
        .map(|(_, t)| *t)
        .collect();
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= 500, "{times:?}");
    }
}

#[tokio::test]
async fn no_token_in_time_sends_nothing_and_is_indeterminate() {
    let rate = Rate {
        per_sec: 0.1,
        burst: 1,
    };
    let mut r = rig(vec![succeeded()], rate);
    r.it = r.it.with_max_wait(Duration::from_secs(1));
    assert_eq!(
        r.it.charge(&request()).await.outcome,
        ChargeOutcome::Succeeded
    );
    assert_eq!(
        r.it.charge(&request()).await.outcome,
        ChargeOutcome::Indeterminate
    );
    assert_eq!(r.script.sent.lock().unwrap().len(), 1);
}

fn find(customer: &str) -> Find {
    Find {
        tenant: TenantId::parse("acme").unwrap(),
        attempt: "a1".into(),
        try_no: Some(1),
        customer: customer.into(),
        since_secs: 1_000,
    }
}

/// An intent of acme's attempt a1, try `t`.
fn of(id: &str, t: &str, status: &str, created: i64) -> serde_json::Value {
    json!({"id": id, "status": status, "created": created,
        "metadata": {"tenant": "acme", "attempt": "a1", "try": t}})
}

#[tokio::test]
async fn find_reads_the_newest_intent_of_the_try_from_the_search_and_the_customers_list() {
    let searched = answer(
        200,
        json!({"object": "search_result", "has_more": false, "data": [
            of("pi_try0", "0", "succeeded", 5),
            of("pi_old", "1", "requires_payment_method", 1)]}),
    );
    // The list (strongly consistent) has what the search does not show yet, over two pages.
    let page1 = answer(
        200,
        json!({"object": "list", "has_more": true, "data": [
            {"id": "pi_other", "status": "succeeded", "created": 9,
             "metadata": {"tenant": "globex", "attempt": "a1", "try": "1"}}]}),
    );
    let page2 = answer(
        200,
        json!({"object": "list", "has_more": false, "data": [of("pi_new", "1", "processing", 3)]}),
    );
    let r = rig(vec![searched, page1, page2], fast());
    let found = r.it.find(&find("cus_1")).await.unwrap().unwrap();
    assert_eq!(
        (found.outcome, found.provider_ref.as_deref()),
        (ChargeOutcome::Pending, Some("pi_new")),
        "the try's newest, not another try's or another tenant's"
    );
    let sent = r.script.sent.lock().unwrap();
    assert!(sent[0]
        .0
        .path
        .starts_with("/v1/payment_intents/search?query=metadata"));
    assert!(
        sent[1].0.path.contains("customer=cus_1")
            && sent[1].0.path.contains("created%5Bgte%5D=1000"),
        "{}",
        sent[1].0.path
    );
    assert!(
        sent[2].0.path.contains("starting_after=pi_other"),
        "{}",
        sent[2].0.path
    );
    assert!(sent.iter().all(|(req, _)| req.method == http::Method::GET));
}

#[tokio::test]
async fn find_proves_nothing_unless_every_read_answered() {
    let empty = || {
        answer(
            200,
            json!({"object": "list", "has_more": false, "data": []}),
        )
    };
    let r = rig(vec![empty(), empty()], fast());
    assert_eq!(
        r.it.find(&find("cus_1")).await,
        Ok(None),
        "both empty: proof"
    );
    let r = rig(vec![empty(), server_error(Some(false))], fast());
    assert!(r.it.find(&find("cus_1")).await.is_err(), "the list failed");
    let r = rig(vec![server_error(Some(false))], fast());
    assert!(
        r.it.find(&find("cus_1")).await.is_err(),
        "the search failed"
    );
    // More pages than it reads: no proof either way.
    let more = || {
        answer(
            200,
            json!({"object": "list", "has_more": true, "data": [{"id": "pi_x", "created": 1}]}),
        )
    };
    let mut answers = vec![empty()];
    answers.extend((0..MAX_LIST_PAGES).map(|_| more()));
    let r = rig(answers, fast());
    assert!(r.it.find(&find("cus_1")).await.is_err());
}

#[tokio::test]
async fn lookup_reads_the_intent_as_stripe_has_it_now() {
    let r = rig(
        vec![
            answer(200, of("pi_1", "0", "processing", 1)),
            answer(200, json!({"object": "list"})),
            answer_retry(
                404,
                json!({"error": {"type": "invalid_request_error", "code": "resource_missing"}}),
                Some(false),
            ),
        ],
        fast(),
    );
    let found = r.it.lookup("pi_1").await.unwrap();
    assert_eq!(
        (found.outcome, found.provider_ref.as_deref()),
        (ChargeOutcome::Pending, Some("pi_1"))
    );
    assert!(r.it.lookup("pi_1").await.is_err(), "not an intent");
    assert!(r.it.lookup("pi_1").await.is_err(), "missing");
    let sent = r.script.sent.lock().unwrap();
    assert_eq!(sent[0].0.path, "/v1/payment_intents/pi_1");
}
