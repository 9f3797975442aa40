//! Batched deliveries through [`Ingestor::receive`]: one message per event, each deduplicated on
//! its own id, one `PutItem` per event, acknowledged only when every one is durable, and enough
//! kept to put the signed batch back together and verify it again.

use super::*;
use crate::batch::reassemble;
use crate::store::{ListFilter, MessageStore};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use serde_json::{json, Value};

fn sendgrid_key() -> String {
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
        .unwrap();
    base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
}

fn batching() -> Ingestor<MemoryInbox, ManualClock> {
    batching_up_to(256 * 1024)
}

/// [`batching`] accepting bodies of up to `max_body_bytes`.
fn batching_up_to(max_body_bytes: usize) -> Ingestor<MemoryInbox, ManualClock> {
    let secrets = serde_json::to_string(&json!({
        "sendgrid": [sendgrid_key()], "custom": ["custom-secret"], "unsplit": ["custom-secret"],
    }))
    .unwrap();
    let secrets = parse_secrets(&secrets, "WEBHOOK_SECRETS").unwrap();
    let sources = json!({
        "sendgrid": {"scheme": "sendgrid"},
        "custom": {"scheme": "hmac-sha256", "header": "X-Signature", "encoding": "hex",
                   "event_id": {"json_pointer": "/id"}, "event_type": {"json_pointer": "/kind"},
                   "batch": true},
        "unsplit": {"scheme": "hmac-sha256", "header": "X-Signature", "encoding": "hex"},
    });
    let sources = Sources::from_json(&sources.to_string(), &secrets).unwrap();
    Ingestor::new(
        sources,
        MemoryInbox::new(),
        ManualClock::at_secs(NOW),
        max_body_bytes,
        30,
    )
}

async fn receive(
    ing: &Ingestor<MemoryInbox, ManualClock>,
    source: &str,
    body: &str,
) -> Result<Reply, IngestError> {
    let headers = signed(ing, source, body.as_bytes(), "");
    receive_with(ing, source, &headers, body).await
}

async fn receive_with(
    ing: &Ingestor<MemoryInbox, ManualClock>,
    source: &str,
    headers: &HeaderMap,
    body: &str,
) -> Result<Reply, IngestError> {
    ing.receive(IngestRequest {
        method: "POST",
        source,
        headers,
        body: Some(body),
        body_is_base64: false,
        source_ip: None,
    })
    .await
}

fn batch(reply: Result<Reply, IngestError>) -> BatchAcknowledgement {
    match reply {
        Ok(Reply::Batch(b)) => b,
        other => panic!("not a batch: {other:?}"),
    }
}

fn event(id: &str, kind: &str) -> Value {
    json!({"email": "customer@example.com", "timestamp": NOW, "event": kind,
        "sg_event_id": id, "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.0", "tenant": "acme"})
}

#[tokio::test]
async fn a_batch_with_a_duplicate_inside_stores_the_others_once() {
    let ing = batching();
    let first = json!([event("sg-1", "processed")]).to_string();
    let b = batch(receive(&ing, "sendgrid", &first).await);
    assert_eq!((b.accepted(), b.duplicates()), (1, 0));
    assert_eq!(
        ing.store().write_requests(),
        1,
        "a batch of one costs one write"
    );
    // Pretty-printed (as SendGrid's documentation shows it), with sg-1 again inside.
    let body = serde_json::to_string_pretty(&json!([
        event("sg-2", "delivered"),
        event("sg-1", "processed"),
        {"email": "x@example.com", "event": "open", "timestamp": NOW},
    ]))
    .unwrap();
    let writes = ing.store().write_requests();
    let b = batch(receive(&ing, "sendgrid", &body).await);
    let outcomes: Vec<(&str, Outcome)> = b
        .events
        .iter()
        .map(|a| (a.key.event_id.as_str(), a.outcome))
        .collect();
    let digest_of_third = {
        let parts = crate::batch::split(body.as_bytes()).unwrap();
        BodyDigest::of(parts[2].bytes).to_hex()
    };
    assert_eq!(
        outcomes,
        vec![
            ("sg-2", Outcome::Accepted),
            ("sg-1", Outcome::Duplicate),
            (digest_of_third.as_str(), Outcome::Accepted),
        ],
        "each event on its own id; without sg_event_id, the event's digest"
    );
    // 3 puts, and the duplicate's bookkeeping as for any repeat (its first: the counter
    // created, one journal record).
    assert_eq!(ing.store().write_requests() - writes, 3 + 2);
    let messages = ing.store().list(&ListFilter::default(), 100).await.unwrap();
    assert_eq!(messages.len(), 3, "sg-1 once, sg-2 once, the open once");
    let types: Vec<String> = {
        let mut t: Vec<String> = messages
            .iter()
            .map(|m| m.event_type.as_ref().unwrap().as_str().to_owned())
            .collect();
        t.sort();
        t
    };
    assert_eq!(types, vec!["delivered", "open", "processed"]);
    let json = b.to_json();
    let parsed: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (
            parsed["status"].as_str(),
            parsed["accepted"].as_u64(),
            parsed["duplicate"].as_u64()
        ),
        (Some("accepted"), Some(2), Some(1))
    );
    // The same batch again: all duplicates.
    let again = batch(receive(&ing, "sendgrid", &body).await);
    assert_eq!((again.accepted(), again.outcome()), (0, Outcome::Duplicate));
}

#[tokio::test]
async fn a_stored_batch_reassembles_and_verifies_again() {
    let ing = batching();
    let body = "[\n  {\"sg_event_id\":\"a\",\"event\":\"processed\"} ,\n{\"sg_event_id\":\"b\",\"event\":\"delivered\"}\n]\n";
    let headers = signed(&ing, "sendgrid", body.as_bytes(), "");
    batch(receive_with(&ing, "sendgrid", &headers, body).await);
    let messages = ing.store().list(&ListFilter::default(), 100).await.unwrap();
    let again = reassemble(
        messages
            .iter()
            .map(|m| (m.body.as_slice(), m.batch.as_ref().unwrap())),
    )
    .unwrap();
    assert_eq!(again, body.as_bytes(), "byte for byte");
    let part = messages[0].batch.as_ref().unwrap();
    assert_eq!(part.sha256, BodyDigest::of(body.as_bytes()).to_hex());
    // The headers kept with an event are the batch's signature: verify the reassembled body.
    let kept: HeaderMap = messages[0]
        .headers
        .iter()
        .map(|(k, v)| {
            (
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kept.get("x-twilio-email-event-webhook-signature"),
        headers.get("x-twilio-email-event-webhook-signature")
    );
    let sources = ing.sources();
    let scheme = &sources.get("sendgrid").unwrap().scheme;
    let verdict = scheme.verify(crate::signature::Request::new(&kept, &again, NOW));
    assert_eq!(verdict.ready(), Some(Ok(())));
}

#[tokio::test]
async fn a_batch_is_acknowledged_only_when_every_event_is_durable() {
    let ing = batching();
    let body = json!([event("x-1", "processed"), event("x-2", "delivered")]).to_string();
    ing.store().set_down(true);
    let e = receive(&ing, "sendgrid", &body).await.unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (503, "store_unavailable"));
    ing.store().set_down(false);
    let b = batch(receive(&ing, "sendgrid", &body).await);
    assert_eq!(b.accepted(), 2);
}

/// A clock that moves one second every time it is read.
#[derive(Debug)]
struct Ticking(std::sync::atomic::AtomicI64);

impl Clock for Ticking {
    fn now_millis(&self) -> i64 {
        self.0.fetch_add(1000, std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_batch_whose_writes_cannot_start_within_the_budget_is_not_acknowledged() {
    let sources = batching().sources().as_ref().clone();
    let slow = Ingestor::new(
        sources,
        MemoryInbox::new(),
        Ticking(std::sync::atomic::AtomicI64::new(NOW * 1000)),
        256 * 1024,
        30,
    );
    let body = json!([
        event("t-1", "processed"),
        event("t-2", "delivered"),
        event("t-3", "open")
    ])
    .to_string();
    let headers = {
        let sources = slow.sources();
        sources
            .get("sendgrid")
            .unwrap()
            .scheme
            .sign(&Unsigned::new(body.as_bytes(), NOW, ""))
            .unwrap()
            .header_map()
    };
    let e = slow
        .receive(IngestRequest {
            method: "POST",
            source: "sendgrid",
            headers: &headers,
            body: Some(&body),
            body_is_base64: false,
            source_ip: None,
        })
        .await
        .unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (503, "store_unavailable"));
    let cause = std::error::Error::source(&e).map(ToString::to_string);
    assert!(cause.is_some(), "{e:?}");
    assert!(
        slow.store().message_count() < 3,
        "the third write never started"
    );
}

#[tokio::test]
async fn any_source_may_split_arrays_and_single_events_keep_one_write() {
    let ing = batching();
    let body = r#"[{"id":"c-1","kind":"a"},{"id":"c-2","kind":"b"}]"#;
    let b = batch(receive(&ing, "custom", body).await);
    let ids: Vec<&str> = b.events.iter().map(|a| a.key.event_id.as_str()).collect();
    assert_eq!(ids, vec!["c-1", "c-2"]);
    // An object on a batching source is one event, one write; an empty array stores nothing.
    let writes = ing.store().write_requests();
    assert!(matches!(
        receive(&ing, "custom", r#"{"id":"c-3","kind":"a"}"#).await,
        Ok(Reply::Event(_))
    ));
    assert_eq!(ing.store().write_requests() - writes, 1);
    let empty = batch(receive(&ing, "custom", "[]").await);
    assert_eq!(
        (empty.events.len(), empty.outcome()),
        (0, Outcome::Accepted)
    );
    // A source that does not batch stores an array as one message.
    assert!(matches!(
        receive(&ing, "unsplit", body).await,
        Ok(Reply::Event(_))
    ));
}

#[tokio::test]
async fn a_batch_of_more_events_than_the_limit_is_refused_whole_and_stores_nothing() {
    // A signed 6 MiB `[1,1,…]`: three million elements, refused at the default limit.
    let ing = batching_up_to(crate::config::DEFAULT_MAX_BODY_BYTES);
    let mut huge = String::with_capacity(6 << 20);
    huge.push('[');
    while huge.len() < (6 << 20) - 8 {
        huge.push_str("1,");
    }
    huge.push_str("1]");
    let e = receive(&ing, "custom", &huge).await.unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (413, "too_many_events"));
    let message = e.body().message.into_owned();
    let limit = crate::config::DEFAULT_MAX_BATCH_EVENTS.to_string();
    assert!(
        message.contains(&limit) && message.contains("MAX_BATCH_EVENTS"),
        "the answer names the limit: {message}"
    );
    assert_eq!(ing.store().write_requests(), 0, "nothing stored");

    // A configured limit: exactly that many pass, one more is refused.
    let ing = batching().with_max_batch_events(2);
    let two = r#"[{"id":"l-1","kind":"a"},{"id":"l-2","kind":"a"}]"#;
    assert_eq!(batch(receive(&ing, "custom", two).await).accepted(), 2);
    let writes = ing.store().write_requests();
    let three = r#"[{"id":"l-3","kind":"a"},{"id":"l-4","kind":"a"},{"id":"l-5","kind":"a"}]"#;
    let e = receive(&ing, "custom", three).await.unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (413, "too_many_events"));
    assert_eq!(
        e.to_string(),
        "the batch has 3 events; the limit is 2 per request (MAX_BATCH_EVENTS); send it in smaller batches"
    );
    assert_eq!(
        ing.store().write_requests(),
        writes,
        "none of the three stored"
    );
    // A source that does not split arrays stores the same body as one event.
    assert!(matches!(
        receive(&ing, "unsplit", three).await,
        Ok(Reply::Event(_))
    ));
}
