//! Events fetched from the provider's own API (`Ingestor::store_fetched`): the same identity and
//! the same conditional write as a webhook, the origin kept instead of a signature, a repeat
//! writes nothing.

use super::*;

fn origin() -> Origin {
    Origin {
        how: "catch-up",
        operator: "alice; x=1".into(),
        at_ms: NOW * 1000 + 250,
    }
}

#[tokio::test]
async fn a_fetched_event_is_stored_once_under_its_own_id_with_its_origin() {
    let ing = ingestor(1024);
    let ack = ing
        .store_fetched("stripe", EVENT.as_bytes().to_vec(), &origin())
        .await
        .unwrap();
    assert_eq!(ack.outcome, Outcome::Accepted);
    assert_eq!(ack.key.event_id.as_str(), "evt_1");
    assert_eq!(
        ing.fetched_key("stripe", EVENT.as_bytes()).unwrap(),
        ack.key
    );
    assert_eq!(ing.store().write_requests(), 1, "one conditional write");
    let stored = ing.store().message(&ack.key).unwrap();
    assert_eq!(stored.body, EVENT.as_bytes());
    assert_eq!(
        stored.event_type.as_ref().map(|t| t.as_str()),
        Some("invoice.paid")
    );
    assert_eq!(stored.received_at, NOW * 1000 + 250);
    assert_eq!(
        stored.headers.get(ORIGIN_HEADER).map(String::as_str),
        Some("catch-up; operator=alicex=1; at=2023-11-14T22:13:20Z")
    );
    assert!(!stored.headers.contains_key("stripe-signature"));

    // Its webhook, late: a duplicate of it (journaled as webhooks are), the original kept.
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let late = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(late.outcome, Outcome::Duplicate);
    assert_eq!(ing.store().message_count(), 1);
    assert!(ing
        .store()
        .message(&ack.key)
        .unwrap()
        .headers
        .contains_key(ORIGIN_HEADER));
}

#[tokio::test]
async fn an_event_already_received_is_a_duplicate_that_writes_nothing() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    post(&ing, "stripe", &headers, EVENT).await.unwrap();
    let writes = ing.store().write_requests();
    // The API's serialization of the event differs from the webhook's bytes: still the same id.
    let fetched = EVENT.replace(",\"type\"", ", \"type\"");
    let ack = ing
        .store_fetched("stripe", fetched.into_bytes(), &origin())
        .await
        .unwrap();
    assert_eq!(ack.outcome, Outcome::Duplicate);
    assert_eq!((ack.repeated, ack.body_differs), (None, false));
    assert_eq!(
        ing.store().write_requests(),
        writes + 1,
        "only the refused conditional write"
    );
    assert!(ing.store().journal().is_empty(), "no repeat journaled");
    let stored = ing.store().message(&ack.key).unwrap();
    assert!(stored.headers.contains_key("stripe-signature"));
    assert!(!stored.headers.contains_key(ORIGIN_HEADER));
}

#[tokio::test]
async fn a_fetched_event_is_refused_as_ingest_refuses_it() {
    let ing = ingestor(64);
    let too_big = ing
        .store_fetched("stripe", EVENT.as_bytes().to_vec(), &origin())
        .await;
    assert!(matches!(
        too_big,
        Err(IngestError::TooLarge { limit: 64, .. })
    ));
    let unknown = ing.store_fetched("nope", b"{}".to_vec(), &origin()).await;
    assert!(matches!(unknown, Err(IngestError::UnknownSource(_))));
    assert_eq!(ing.store().write_requests(), 0);
}
