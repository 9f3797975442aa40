use super::*;
use crate::retry::RetryPolicy;
use crate::script::{answer, fast, rig};
use serde_json::json;

fn query(delivery_success: Option<bool>) -> EventQuery {
    EventQuery {
        types: vec!["payment_intent.succeeded".into(), "charge.refunded".into()],
        created_gte: 1_800_000_000,
        created_lte: None,
        delivery_success,
    }
}

#[test]
fn a_page_is_asked_for_as_stripe_documents_the_list() {
    let first = list_events(&query(Some(false)), None);
    assert_eq!(first.method, http::Method::GET);
    assert_eq!(first.idempotency_key, None);
    assert_eq!(
        first.path,
        "/v1/events?types%5B%5D=payment_intent.succeeded&types%5B%5D=charge.refunded\
         &created%5Bgte%5D=1800000000&limit=100&delivery_success=false"
    );
    let next = list_events(&query(None), Some("evt_9"));
    assert!(
        next.path.ends_with("&limit=100&starting_after=evt_9"),
        "{}",
        next.path
    );
    assert!(!next.path.contains("delivery_success"));
    let bounded = EventQuery {
        created_lte: Some(1_800_086_400),
        ..query(None)
    };
    assert!(
        list_events(&bounded, None)
            .path
            .contains("&created%5Bgte%5D=1800000000&created%5Blte%5D=1800086400&limit=100"),
        "{}",
        list_events(&bounded, None).path
    );
}

#[tokio::test]
async fn every_page_is_read_each_event_kept_as_stripe_wrote_it() {
    // Stripe's spacing and key order, kept byte for byte.
    let page1 = br#"{"object": "list", "data": [{"id": "evt_3", "type": "payment_intent.succeeded", "created": 30, "livemode": false, "data": {"object": {"id": "pi_3"}}},
      {"id":"evt_2","type":"charge.refunded","created":20,"livemode":false,"account":"acct_1"}], "has_more": true, "url": "/v1/events"}"#;
    let page2 = json!({"object": "list", "data": [{"id": "evt_1", "type": "payment_intent.succeeded",
        "created": 10}], "has_more": false});
    let raw = |body: &[u8]| {
        Ok(crate::transport::Answer {
            status: 200,
            should_retry: None,
            replayed: false,
            request_id: None,
            body: body.to_vec(),
        })
    };
    let r = rig(
        vec![raw(page1), answer(200, page2)],
        fast(),
        StripeEvents::on,
    );
    let mut tally = Tally::default();
    let mut seen = Vec::new();
    let all =
        r.it.all(&query(Some(false)), &mut tally, |n| seen.push(n))
            .await
            .unwrap();
    let ids: Vec<&str> = all.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["evt_3", "evt_2", "evt_1"]);
    assert_eq!(seen, [2, 3]);
    assert_eq!(tally.requests, 2);
    assert_eq!(
        all[0].body,
        br#"{"id": "evt_3", "type": "payment_intent.succeeded", "created": 30, "livemode": false, "data": {"object": {"id": "pi_3"}}}"#
    );
    assert_eq!(
        (all[1].account.as_deref(), all[1].livemode, all[2].livemode),
        (Some("acct_1"), Some(false), None)
    );
    let sent = r.script.sent.lock().unwrap();
    assert!(
        sent[1].0.path.ends_with("&starting_after=evt_2"),
        "{}",
        sent[1].0.path
    );
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_the_page_asked_again() {
    let page = json!({"object": "list", "data": [], "has_more": false});
    let limited = json!({"error": {"type": "invalid_request_error", "code": "rate_limit"}});
    let r = rig(
        vec![answer(429, limited), answer(200, page)],
        fast(),
        StripeEvents::on,
    );
    let mut tally = Tally::default();
    let all = r.it.all(&query(None), &mut tally, |_| {}).await.unwrap();
    assert!(all.is_empty());
    assert_eq!(
        (tally.requests, tally.retries, tally.rate_limited),
        (2, 1, 1)
    );
    assert_eq!(r.waits.lock().unwrap().len(), 1, "one backoff, no sleep");
}

#[tokio::test]
async fn refusals_outages_and_nonsense_are_told_apart() {
    let denied = json!({"error": {"type": "invalid_request_error", "code": "secret_key_required",
        "message": "This API call cannot be made with a publishable API key."}});
    let r = rig(vec![answer(401, denied)], fast(), StripeEvents::on);
    let refused = r.it.page(&query(None), None, &mut Tally::default()).await;
    assert!(
        matches!(&refused, Err(ListError::Refused { status: 401, code, .. }) if code == "secret_key_required"),
        "{refused:?}"
    );

    let down = (0..=RetryPolicy::default().max_retries)
        .map(|_| answer(500, json!({"error": {"type": "api_error"}})))
        .collect();
    let r = rig(down, fast(), StripeEvents::on);
    let out = r.it.page(&query(None), None, &mut Tally::default()).await;
    assert!(matches!(out, Err(ListError::Unavailable(_))), "{out:?}");

    for body in [
        json!({"object": "list"}),
        json!({"data": [{"type": "x"}], "has_more": false}),
        json!({"data": [], "has_more": "yes"}),
    ] {
        let r = rig(vec![answer(200, body.clone())], fast(), StripeEvents::on);
        let out = r.it.page(&query(None), None, &mut Tally::default()).await;
        assert!(
            matches!(out, Err(ListError::NotAList(_))),
            "{body}: {out:?}"
        );
    }
}
