//! Replays and unidentifiable events through the ingest handler against DynamoDB: a captured
//! request resent with a fresh unsigned id is a duplicate, repeated deliveries are journaled ten
//! times and then only counted, and a correctly signed event whose type cannot be read is stored
//! as `unknown` rather than refused (so a provider never retries it until it gives up).

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::domain::BodyDigest;
use inbox_core::store::attr;
use integration_tests::{api_event, stripe_event, Harness};
use std::collections::HashMap;

fn s<'a>(item: &'a HashMap<String, AttributeValue>, k: &str) -> &'a str {
    attr::get_s(item, k).unwrap_or_else(|| panic!("no string {k} in {item:?}"))
}

fn with(mut headers: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_owned(), value.to_owned()));
    headers
}

#[tokio::test]
async fn a_captured_github_request_resent_with_fresh_delivery_ids_is_stored_once() {
    let h = Harness::new().await;
    let body = r#"{"action":"created","comment":{"id":1},"sender":{"login":"octocat"}}"#;
    let signed = h.sign("github", body.as_bytes(), "d-original");
    let original = with(signed, "X-GitHub-Event", "issue_comment");
    let first = h
        .send(&api_event("POST", "github", &original, Some(body), false))
        .await;
    assert_eq!((first.status, first.code()), (200, "accepted"), "{first:?}");
    // The attacker keeps the signature and body, and makes up delivery ids.
    for fresh in ["d-replay-1", "d-replay-2", "d-replay-3"] {
        let replay = with(original.clone(), "X-GitHub-Delivery", fresh);
        let r = h
            .send(&api_event("POST", "github", &replay, Some(body), false))
            .await;
        assert_eq!((r.status, r.code()), (200, "duplicate"), "{fresh}: {r:?}");
        assert_eq!(r.json["id"], first.json["id"]);
    }
    let messages = h.items_of_kind("message").await;
    assert_eq!(messages.len(), 1, "one event, processed once: {messages:?}");
    let m = &messages[0];
    assert_eq!(
        s(m, "event_id"),
        BodyDigest::of(body.as_bytes()).to_hex(),
        "keyed by the signed body"
    );
    assert_eq!(
        s(m, "provider_id"),
        "d-original",
        "the header id, as metadata"
    );
    assert_eq!(s(m, "event_type"), "issue_comment");
}

#[tokio::test]
async fn repeated_deliveries_are_journaled_ten_times_then_only_counted() {
    let h = Harness::new().await;
    let body = stripe_event("evt_flood_1", "invoice.paid", 600);
    let event = api_event(
        "POST",
        "stripe",
        &h.sign("stripe", body.as_bytes(), ""),
        Some(&body),
        false,
    );
    assert_eq!(h.send(&event).await.code(), "accepted");
    for _ in 0..15 {
        assert_eq!(h.send(&event).await.code(), "duplicate");
    }
    let journal = h.items_of_kind("delivery").await;
    assert_eq!(journal.len(), 10, "the first ten repeats, no more");
    let counters = h.items_of_kind("delivery_count").await;
    assert_eq!(counters.len(), 1, "{counters:?}");
    assert_eq!(s(&counters[0], "pk"), "MSG#stripe#evt_flood_1");
    assert_eq!(attr::get_n(&counters[0], "count"), Some(15));
    assert!(
        attr::get_n(&counters[0], "expires_at").is_some(),
        "expires by TTL"
    );
    assert_eq!(
        h.items().await.len(),
        1 + 10 + 1,
        "message, journal, counter"
    );
}

#[tokio::test]
async fn a_signed_event_whose_type_cannot_be_read_is_stored_as_unknown() {
    let h = Harness::new().await;
    let cases = [
        (
            r#"{"id":"evt_untyped_1","object":"event"}"#,
            "evt_untyped_1",
        ),
        (r#"{"id":"evt_untyped_2","type":""}"#, "evt_untyped_2"),
        ("not json at all", ""),
    ];
    for (body, id) in cases {
        let r = h
            .send(&api_event(
                "POST",
                "stripe",
                &h.sign("stripe", body.as_bytes(), ""),
                Some(body),
                false,
            ))
            .await;
        assert_eq!((r.status, r.code()), (200, "accepted"), "{body}: {r:?}");
        let expected_id = if id.is_empty() {
            BodyDigest::of(body.as_bytes()).to_hex()
        } else {
            id.to_owned()
        };
        assert_eq!(r.json["id"], expected_id.as_str(), "{body}");
    }
    let messages = h.items_of_kind("message").await;
    assert_eq!(messages.len(), 3);
    for m in &messages {
        assert_eq!(s(m, "event_type"), "unknown");
        assert_eq!(s(m, "status"), "pending", "then ignored by the processor");
        assert!(!s(m, "identity_error").is_empty());
    }
    // The same body unsigned is still refused.
    let r = h
        .send(&api_event(
            "POST",
            "stripe",
            &[],
            Some("not json at all"),
            false,
        ))
        .await;
    assert_eq!(r.status, 401);
}
