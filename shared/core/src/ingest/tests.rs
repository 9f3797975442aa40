//! The ingest command against the in-memory store and a manual clock. Repeated deliveries:
//! `tests/repeats.rs`; secrets re-read in a warm container and metrics: `tests/secrets.rs`.

mod batches;
mod fetched;
mod handshakes;
mod repeats;
mod secrets;

use super::*;
use crate::clock::ManualClock;
use crate::domain::BodyDigest;
use crate::signature::Unsigned;
use crate::sources::parse_secrets;
use crate::store::memory::MemoryInbox;
use base64::Engine as _;

const NOW: i64 = 1_700_000_000;

fn ingestor(max_body: usize) -> Ingestor<MemoryInbox, ManualClock> {
    let secrets = parse_secrets(
        r#"{"stripe":["whsec_test"],"gh":["gh-secret"],"slack":["slack-secret"]}"#,
        "WEBHOOK_SECRETS",
    )
    .unwrap();
    let sources = Sources::from_json(
        r#"{"stripe":{"scheme":"stripe"},"gh":{"scheme":"github"},"slack":{"scheme":"slack"}}"#,
        &secrets,
    )
    .unwrap();
    Ingestor::new(
        sources,
        MemoryInbox::new(),
        ManualClock::at_secs(NOW),
        max_body,
        30,
    )
}

fn signed(
    ing: &Ingestor<MemoryInbox, ManualClock>,
    source: &str,
    body: &[u8],
    id: &str,
) -> HeaderMap {
    let sources = ing.sources();
    let src = sources.get(source).unwrap();
    let mut headers = HeaderMap::new();
    for (k, v) in src
        .scheme
        .sign(&Unsigned::new(body, NOW, id))
        .unwrap()
        .headers
    {
        headers.append(k, v);
    }
    headers
}

async fn post(
    ing: &Ingestor<MemoryInbox, ManualClock>,
    source: &str,
    headers: &HeaderMap,
    body: &str,
) -> Result<Acknowledgement, IngestError> {
    ing.ingest(IngestRequest {
        method: "POST",
        source,
        headers,
        body: Some(body),
        body_is_base64: false,
        source_ip: None,
    })
    .await
}

const EVENT: &str =
    r#"{"id":"evt_1","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}"#;

#[tokio::test]
async fn new_event_is_accepted_and_stored_once_with_one_write() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(ack.outcome, Outcome::Accepted);
    assert_eq!(ack.to_json(), r#"{"status":"accepted","id":"evt_1"}"#);
    assert_eq!(
        ing.store().write_requests(),
        1,
        "one durable write on the hot path"
    );
    let stored = ing.store().message(&ack.key).unwrap();
    assert_eq!(stored.body, EVENT.as_bytes());
    assert_eq!(
        stored.event_type.as_ref().map(|t| t.as_str()),
        Some("invoice.paid")
    );
    assert_eq!(stored.received_at, NOW * 1000);
    assert!(stored.headers.contains_key("stripe-signature"));
}

#[tokio::test]
async fn repeated_delivery_is_a_duplicate_and_journaled() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    post(&ing, "stripe", &headers, EVENT).await.unwrap();
    let ack = post(&ing, "stripe", &headers, EVENT).await.unwrap();
    assert_eq!(ack.outcome, Outcome::Duplicate);
    assert!(!ack.body_differs);
    assert_eq!(ing.store().message_count(), 1);
    let journal = ing.store().journal();
    assert_eq!(journal.len(), 1);
    assert!(!journal[0].body_differs && journal[0].differing_body.is_none());
    assert_eq!(journal[0].expires_at_secs, NOW + 30 * 86_400);
}

#[tokio::test]
async fn same_id_with_another_body_keeps_the_original_and_flags_the_journal() {
    let ing = ingestor(1024);
    post(
        &ing,
        "stripe",
        &signed(&ing, "stripe", EVENT.as_bytes(), ""),
        EVENT,
    )
    .await
    .unwrap();
    let changed = EVENT.replace("in_1", "in_2");
    let ack = post(
        &ing,
        "stripe",
        &signed(&ing, "stripe", changed.as_bytes(), ""),
        &changed,
    )
    .await
    .unwrap();
    assert_eq!(ack.outcome, Outcome::Duplicate);
    assert!(ack.body_differs);
    assert_eq!(
        ing.store().message(&ack.key).unwrap().body,
        EVENT.as_bytes(),
        "original untouched"
    );
    let journal = ing.store().journal();
    assert_eq!(
        journal[0].differing_body.as_deref(),
        Some(changed.as_bytes())
    );
}

#[tokio::test]
async fn store_outage_is_503_with_retry_after() {
    let ing = ingestor(1024);
    ing.store().set_down(true);
    let err = post(
        &ing,
        "stripe",
        &signed(&ing, "stripe", EVENT.as_bytes(), ""),
        EVENT,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (err.status().as_u16(), err.code()),
        (503, "store_unavailable")
    );
    assert_eq!(err.headers(), vec![("retry-after", "5".to_string())]);
    ing.store().set_down(false);
    assert_eq!(ing.store().message_count(), 0);
}

#[tokio::test]
async fn base64_bodies_are_decoded_before_verification() {
    let ing = ingestor(1024);
    let headers = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let encoded = base64::engine::general_purpose::STANDARD.encode(EVENT);
    let req = IngestRequest {
        method: "POST",
        source: "stripe",
        headers: &headers,
        body: Some(&encoded),
        body_is_base64: true,
        source_ip: None,
    };
    assert_eq!(ing.ingest(req).await.unwrap().outcome, Outcome::Accepted);
    let bad = IngestRequest {
        body: Some("%%%not base64"),
        ..req
    };
    assert_eq!(
        ing.ingest(bad).await.unwrap_err().code(),
        "invalid_body_encoding"
    );
}

#[tokio::test]
async fn refusals_write_nothing() {
    let ing = ingestor(64);
    let h = signed(&ing, "stripe", EVENT.as_bytes(), "");
    let get = IngestRequest {
        method: "GET",
        source: "stripe",
        headers: &h,
        body: None,
        body_is_base64: false,
        source_ip: None,
    };
    let cases: Vec<(Result<Acknowledgement, IngestError>, u16, &str)> = vec![
        (ing.ingest(get).await, 405, "method_not_allowed"),
        (post(&ing, "nope", &h, EVENT).await, 404, "unknown_source"),
        (post(&ing, "", &h, EVENT).await, 404, "unknown_source"),
        (
            post(&ing, "stripe", &h, EVENT).await,
            413,
            "payload_too_large",
        ),
        (
            post(&ing, "stripe", &HeaderMap::new(), "{}").await,
            401,
            "signature_missing",
        ),
    ];
    for (result, status, code) in cases {
        let err = result.unwrap_err();
        assert_eq!((err.status().as_u16(), err.code()), (status, code), "{err}");
        let body: serde_json::Value = serde_json::from_str(&err.body().to_json()).unwrap();
        assert_eq!(body["error"], code);
        assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    assert_eq!(ing.store().write_requests(), 0);
}

#[tokio::test]
async fn signed_but_unidentifiable_events_are_stored_as_unknown() {
    let ing = ingestor(4096);
    let huge = format!(r#"{{"id":"{}","type":"x"}}"#, "x".repeat(300));
    // (body, the code of why, whether the id is the provider's)
    let cases: Vec<(&str, &str, Option<&str>)> = vec![
        ("[1,2]", "invalid_json", None),
        ("null", "invalid_json", None),
        ("", "invalid_json", None),
        ("{\"id\":", "invalid_json", None),
        (r#"{"type":"x"}"#, "missing_event_id", None),
        (r#"{"id":"","type":"x"}"#, "invalid_event_id", None),
        (r#"{"id":"a b","type":"x"}"#, "invalid_event_id", None),
        (r#"{"id":{"x":1},"type":"x"}"#, "invalid_event_id", None),
        (&huge, "invalid_event_id", None),
        (
            r#"{"id":"evt_notype"}"#,
            "missing_event_type",
            Some("evt_notype"),
        ),
        (
            r#"{"id":"evt_badtype","type":7.5}"#,
            "invalid_event_type",
            Some("evt_badtype"),
        ),
    ];
    for (body, code, provider_id) in cases {
        let ack = post(
            &ing,
            "stripe",
            &signed(&ing, "stripe", body.as_bytes(), ""),
            body,
        )
        .await
        .unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(ack.outcome, Outcome::Accepted, "{body}");
        let expected_id = provider_id
            .map(str::to_owned)
            .unwrap_or_else(|| BodyDigest::of(body.as_bytes()).to_hex());
        assert_eq!(ack.key.event_id.as_str(), expected_id, "{body}");
        let stored = ing.store().message(&ack.key).unwrap();
        assert_eq!(stored.event_type, Some(EventType::unknown()), "{body}");
        assert_eq!(stored.body, body.as_bytes());
        let why = stored.identity_error.unwrap_or_default();
        let expected_reason = match code {
            "invalid_json" => "JSON",
            "missing_event_id" | "invalid_event_id" => "event id",
            _ => "event type",
        };
        assert!(why.contains(expected_reason), "{body}: {why}");
    }
    assert_eq!(ing.store().message_count(), 11);
    // Unsigned, the same bodies are refused and nothing more is stored.
    let refused = post(&ing, "stripe", &HeaderMap::new(), "[1,2]")
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 401);
    assert_eq!(ing.store().message_count(), 11);
}

#[tokio::test]
async fn a_captured_github_request_resent_with_a_fresh_delivery_id_is_a_duplicate() {
    let ing = ingestor(4096);
    let body = r#"{"zen":"Keep it logically awesome.","hook_id":1}"#;
    let send = |delivery: &'static str| {
        let mut h = signed(&ing, "gh", body.as_bytes(), delivery);
        h.insert("x-github-event", http::HeaderValue::from_static("ping"));
        h
    };
    let first = post(
        &ing,
        "gh",
        &send("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
        body,
    )
    .await
    .unwrap();
    assert_eq!(first.outcome, Outcome::Accepted);
    assert_eq!(
        first.key.event_id.as_str(),
        BodyDigest::of(body.as_bytes()).to_hex(),
        "the dedupe key is the signed body's hash, not the unsigned delivery id"
    );
    for replay in ["replay-1", "replay-2"] {
        let ack = post(&ing, "gh", &send(replay), body).await.unwrap();
        assert_eq!((ack.outcome, &ack.key), (Outcome::Duplicate, &first.key));
    }
    assert_eq!(ing.store().message_count(), 1, "stored and processed once");
    let stored = ing.store().message(&first.key).unwrap();
    assert_eq!(
        stored.provider_id.as_deref(),
        Some("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
        "the header id is kept as metadata"
    );
    assert_eq!(
        stored.headers.get("x-github-delivery").map(String::as_str),
        Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")
    );
    let journal = ing.store().journal();
    assert_eq!(journal.len(), 2);
    assert_eq!(
        journal[1]
            .headers
            .iter()
            .find(|(k, _)| k == "x-github-delivery")
            .map(|(_, v)| v.as_str()),
        Some("replay-2")
    );
}

#[tokio::test]
async fn ids_from_headers_numbers_and_body_hash() {
    let ing = ingestor(4096);
    let slack = "token=x&command=%2Fweather";
    let ack = post(
        &ing,
        "slack",
        &signed(&ing, "slack", slack.as_bytes(), ""),
        slack,
    )
    .await
    .unwrap();
    assert_eq!(
        ack.key.event_id.as_str(),
        BodyDigest::of(slack.as_bytes()).to_hex(),
        "no id: body hash"
    );
    assert_eq!(ack.event_type, None);

    let numeric = r#"{"id":12345,"type":"a.b","nested":{"deep":[1,{"x":"y"}]}}"#;
    let ack = post(
        &ing,
        "stripe",
        &signed(&ing, "stripe", numeric.as_bytes(), ""),
        numeric,
    )
    .await
    .unwrap();
    assert_eq!(ack.key.event_id.as_str(), "12345");
    let stored = ing.store().message(&ack.key).unwrap();
    assert_eq!((stored.provider_id, stored.identity_error), (None, None));
}

#[test]
fn base64_size_is_checked_before_decoding() {
    let big = "A".repeat(4000);
    assert!(matches!(
        decode_body(Some(&big), true, 1000),
        Err(IngestError::TooLarge { .. })
    ));
    let exact = base64::engine::general_purpose::STANDARD.encode([7u8; 1000]);
    assert_eq!(decode_body(Some(&exact), true, 1000).unwrap().len(), 1000);
    let over = base64::engine::general_purpose::STANDARD.encode([7u8; 1001]);
    assert!(matches!(
        decode_body(Some(&over), true, 1000),
        Err(IngestError::TooLarge { len: 1001, .. })
    ));
    assert_eq!(decode_body(None, true, 10).unwrap().len(), 0);
}
