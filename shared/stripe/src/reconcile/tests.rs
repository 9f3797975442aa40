use super::*;
use crate::script::{answer, fast, rig};
use serde_json::json;

fn pi(id: &str, status: &str, tenant: Option<&str>) -> Value {
    let mut md = json!({});
    if let Some(t) = tenant {
        md = json!({"tenant": t, "attempt": "a1", "try": "1"});
    }
    json!({"id": id, "object": "payment_intent", "status": status, "amount": 2500,
        "amount_received": if status == "succeeded" { 2500 } else { 0 }, "currency": "USD",
        "created": 1_800_000_000, "metadata": md,
        "latest_charge": {"id": "ch_1", "object": "charge", "amount_refunded": 700}})
}

#[test]
fn the_requests_are_stripes_list_and_retrieve() {
    assert_eq!(
        list_page(1_800_000_000, None).path,
        "/v1/payment_intents?created%5Bgte%5D=1800000000&limit=100&expand%5B%5D=data.latest_charge"
    );
    assert!(list_page(1, Some("pi_9"))
        .path
        .ends_with("&starting_after=pi_9"));
    assert_eq!(
        retrieve("pi_1").path,
        "/v1/payment_intents/pi_1?expand%5B%5D=latest_charge"
    );
    assert_eq!(retrieve("pi_1").method, http::Method::GET);
}

#[test]
fn an_intent_is_read_with_its_metadata_and_refunds() {
    let r = reported(&pi("pi_1", "succeeded", Some("acme"))).unwrap();
    assert_eq!(
        (
            r.tenant.as_deref(),
            r.attempt.as_deref(),
            r.status,
            r.received
        ),
        (Some("acme"), Some("a1"), Status::Succeeded, 2500)
    );
    assert_eq!((r.currency.as_str(), r.refunded), ("usd", 700));
    let unexpanded = json!({"id": "pi_2", "status": "processing", "currency": "usd",
        "latest_charge": "ch_2", "metadata": {}});
    let r = reported(&unexpanded).unwrap();
    assert_eq!(
        (r.tenant, r.refunded, r.status),
        (None, 0, Status::Processing)
    );
    assert_eq!(
        reported(&json!({"id": "pi_3", "status": "new", "currency": "usd"})),
        None
    );
}

#[tokio::test]
async fn every_page_is_listed_and_a_missing_intent_is_none() {
    let page1 = json!({"object": "list", "has_more": true,
        "data": [pi("pi_3", "succeeded", Some("acme")), pi("pi_2", "processing", None)]});
    let page2 = json!({"object": "list", "has_more": false,
        "data": [pi("pi_1", "canceled", Some("acme"))]});
    let missing = json!({"error": {"type": "invalid_request_error", "code": "resource_missing",
        "message": "No such payment_intent: 'pi_x'"}});
    let r = rig(
        vec![answer(200, page1), answer(200, page2), answer(404, missing)],
        fast(),
        StripePayments::on,
    );
    let listed = r.it.list(1_800_000_000).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["pi_3", "pi_2", "pi_1"]);
    assert_eq!(r.it.retrieve("pi_x").await.unwrap(), None);
    assert_eq!(r.it.requests(), 3);
    let sent = r.script.sent.lock().unwrap();
    assert!(
        sent[1].0.path.ends_with("&starting_after=pi_2"),
        "{}",
        sent[1].0.path
    );
    drop(sent);
    let metrics = r.it.take_metrics();
    assert!(metrics.iter().any(|m| m.value == 3), "{metrics:?}");
}

#[tokio::test]
async fn a_refusal_is_an_error_never_an_empty_list() {
    let refused =
        json!({"error": {"type": "invalid_request_error", "code": "secret_key_required"}});
    let r = rig(vec![answer(403, refused)], fast(), StripePayments::on);
    let err = r.it.list(1).await.unwrap_err();
    assert!(err.0.contains("HTTP 403 secret_key_required"), "{}", err.0);
}
