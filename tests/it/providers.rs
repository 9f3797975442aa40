//! The providers' endpoint handshakes and batched deliveries through the ingest function's handler
//! against the emulator, and their events through the whole pipeline into the wallet ledger.
//!
//! - Each handshake is answered as its provider expects and leaves the table empty (before this
//!   change each was stored as an event and answered `{"status":"accepted"}`); SNS is confirmed by
//!   one visit of its `SubscribeURL`, through an injected fetcher: nothing reaches the network.
//! - A SendGrid batch costs one `PutItem` per event; one with a duplicate inside stores the others
//!   once; its events reassemble into the signed body.
//! - Email events of SendGrid (a batch), SES (through SNS), Mailgun, Postmark and Resend move the
//!   wallet as the providers table of `docs/wallet.md` says.

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::SystemClock;
use inbox_core::signature::{FetchError, FetchFuture, Fetcher};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::harness::Harness;
use integration_tests::pipeline::Pipeline;
use integration_tests::{api_event, endpoints, local_sources_fetching, now_secs, unique, Reply};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use wallet_ledger::{CreateOutcome, Currency, EmailProvider, Ledger, Wallet, WalletSources};

fn now() -> i64 {
    now_secs()
}

async fn post(h: &Harness, source: &str, headers: &[(String, String)], body: &str) -> Reply {
    h.post(source, headers, body).await
}

/// Answers 200 at the URLs it knows, fails elsewhere; records every URL visited.
#[derive(Debug, Default)]
struct FakeSns {
    known: Mutex<Vec<String>>,
    visited: Mutex<Vec<String>>,
}

impl Fetcher for FakeSns {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
        self.visited.lock().unwrap().push(url.to_owned());
        let known = self.known.lock().unwrap().iter().any(|u| u == url);
        Box::pin(async move {
            if known {
                Ok(b"<ConfirmSubscriptionResponse/>".to_vec())
            } else {
                Err(FetchError::new("the server did not answer 200"))
            }
        })
    }
}

#[tokio::test]
async fn slack_url_verification_is_echoed_and_stores_nothing() {
    let h = Harness::new().await;
    let challenge = unique("ch_");
    let body = json!({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": challenge, "type": "url_verification"}).to_string();
    let r = post(&h, "slack", &h.sign("slack", body.as_bytes(), ""), &body).await;
    assert_eq!(
        (r.status, r.json["challenge"].as_str()),
        (200, Some(challenge.as_str())),
        "{r:?}"
    );
    // A handshake with a wrong signature is refused like any forgery.
    let forged = h.sign("slack", b"another body", "");
    let r = post(&h, "slack", &forged, &body).await;
    assert_eq!((r.status, r.code()), (401, "signature_invalid"));
    assert!(h.items().await.is_empty(), "handshakes store nothing");
}

#[tokio::test]
async fn zoom_url_validation_is_answered_with_the_signed_token_and_stores_nothing() {
    let h = Harness::new().await;
    let body = json!({"payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}, "event_ts": now() * 1000, "event": "endpoint.url_validation"}).to_string();
    let r = post(&h, "zoom", &h.sign("zoom", body.as_bytes(), ""), &body).await;
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(b"local-zoom-secret-token")
            .unwrap();
    hmac::Mac::update(&mut mac, b"qgg8vlvZRS6UYooatFL8Aw");
    let expected = hex::encode(hmac::Mac::finalize(mac).into_bytes());
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        r.json,
        json!({"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected})
    );
    assert_eq!(
        r.headers.get("content-type").map(|v| v.to_str().unwrap()),
        Some("application/json")
    );
    assert!(h.items().await.is_empty(), "handshakes store nothing");
}

#[tokio::test]
async fn discord_pings_are_answered_and_store_nothing() {
    let h = Harness::new().await;
    // An interactions endpoint's PING, then a webhook events endpoint's (204, no body).
    let body = json!({"application_id": "1", "id": "2", "token": "t", "type": 1, "version": 1})
        .to_string();
    let r = post(
        &h,
        "discord",
        &h.sign("discord", body.as_bytes(), ""),
        &body,
    )
    .await;
    assert_eq!(
        (r.status, r.json.clone()),
        (200, json!({"type": 1})),
        "{r:?}"
    );
    let body = json!({"version": 1, "application_id": "1", "type": 0}).to_string();
    let r = post(
        &h,
        "discord",
        &h.sign("discord", body.as_bytes(), ""),
        &body,
    )
    .await;
    assert_eq!((r.status, r.json.clone()), (204, Value::Null), "{r:?}");
    assert!(r.headers.get("content-type").is_none());
    assert!(h.items().await.is_empty(), "handshakes store nothing");
}

#[tokio::test]
async fn an_sns_subscription_is_confirmed_at_sns_and_stores_nothing() {
    let sns = Arc::new(FakeSns::default());
    let fetcher: Arc<dyn Fetcher> = sns.clone();
    let sources = local_sources_fetching(Some(&fetcher));
    let h = Harness::with_sources(
        &endpoints(),
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        sources,
    )
    .await;
    let topic = "arn:aws:sns:us-east-1:123456789012:ses-events";
    let url = format!(
        "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn={topic}&Token={}",
        unique("")
    );
    let confirmation = |url: &str| {
        json!({"Type": "SubscriptionConfirmation", "MessageId": unique(""), "Token": "2336412f37",
            "TopicArn": topic, "Message": "You have chosen to subscribe to the topic.", "SubscribeURL": url})
        .to_string()
    };
    // SNS's confirmation URL fails: 503, nothing stored (SNS retries).
    let (headers, body) = h.sign_message("ses", confirmation(&url).as_bytes(), "", now());
    let r = post(&h, "ses", &headers, &body).await;
    assert_eq!((r.status, r.code()), (503, "handshake_failed"), "{r:?}");
    assert!(r.headers.get("retry-after").is_some());
    // It answers: confirmed with one visit, stored as nothing.
    sns.known.lock().unwrap().push(url.clone());
    let r = post(&h, "ses", &headers, &body).await;
    assert_eq!(
        (r.status, r.json["status"].as_str()),
        (200, Some("confirmed")),
        "{r:?}"
    );
    assert_eq!(*sns.visited.lock().unwrap(), vec![url.clone(), url]);
    assert!(h.items().await.is_empty());
    // A confirmation naming another URL is never visited: it is stored for an operator.
    let (headers, body) = h.sign_message(
        "ses",
        confirmation("https://example.com/?Action=ConfirmSubscription").as_bytes(),
        "",
        now(),
    );
    let r = post(&h, "ses", &headers, &body).await;
    assert_eq!((r.status, r.code()), (200, "accepted"));
    assert_eq!(sns.visited.lock().unwrap().len(), 2);
    assert_eq!(h.items_of_kind("message").await.len(), 1);
}

fn sendgrid_event(id: &str, kind: &str, message_id: &str, extra: Value) -> Value {
    let mut e = json!({"email": "customer@example.com", "timestamp": now(), "event": kind,
        "sg_event_id": id, "sg_message_id": format!("{message_id}.filterdrecv-1.0"), "tenant": "acme"});
    e.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    e
}

#[tokio::test]
async fn a_sendgrid_batch_costs_one_put_per_event_and_a_duplicate_inside_stores_the_others_once() {
    let p = Pipeline::new().await;
    let counted = inbox_core::ingest::Ingestor::new(
        integration_tests::local_sources(),
        DynamoTable::new(p.counted_dynamodb().await, p.harness.table.clone()),
        SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let send = |body: String| {
        let headers = p.harness.sign("sendgrid", body.as_bytes(), "");
        let event = api_event("POST", "sendgrid", &headers, Some(&body), false);
        let counted = &counted;
        async move { Reply::from(ingest_function::respond(counted, &event).await) }
    };
    let ids: Vec<String> = (0..5).map(|_| unique("sg_")).collect();
    let first: Vec<Value> = ids
        .iter()
        .map(|id| sendgrid_event(id, "processed", "m", json!({})))
        .collect();
    let r = send(Value::Array(first.clone()).to_string()).await;
    assert_eq!(
        (r.status, r.json["accepted"].as_u64()),
        (200, Some(5)),
        "{r:?}"
    );
    assert_eq!(
        p.counter.counts().get("PutItem"),
        Some(&5),
        "one PutItem per event"
    );
    assert_eq!(
        p.counter.writes(),
        5,
        "and nothing else: {:?}",
        p.counter.counts()
    );
    // A second batch: two new events around one of the first batch.
    let new: Vec<String> = (0..2).map(|_| unique("sg_")).collect();
    let body = serde_json::to_string_pretty(&json!([
        sendgrid_event(&new[0], "delivered", "m", json!({})),
        first[2],
        sendgrid_event(&new[1], "open", "m", json!({})),
    ]))
    .unwrap();
    let r = send(body).await;
    assert_eq!(r.status, 200);
    let statuses: Vec<(&str, &str)> = r.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        vec![
            (new[0].as_str(), "accepted"),
            (ids[2].as_str(), "duplicate"),
            (new[1].as_str(), "accepted")
        ]
    );
    let messages = p.harness.items_of_kind("message").await;
    assert_eq!(messages.len(), 7, "5 + 2, the duplicate once");
    // Every stored event keeps its batch: the second batch reassembles and verifies again.
    let of_second: Vec<_> = messages
        .iter()
        .filter(|m| {
            new.iter()
                .any(|id| m.get("event_id").and_then(|v| v.as_s().ok()) == Some(id))
        })
        .collect();
    assert_eq!(of_second.len(), 2);
    for m in of_second {
        let Some(AttributeValue::M(batch)) = m.get("batch") else {
            panic!("no batch part: {m:?}");
        };
        assert_eq!(
            batch
                .get("count")
                .and_then(|v| v.as_n().ok())
                .map(String::as_str),
            Some("3")
        );
    }
}

/// A pipeline whose wallet takes every provider's events, each on its local source.
async fn wallet_pipeline() -> (
    Pipeline,
    integration_tests::pipeline::TestProcessor<SystemClock>,
    DynamoTable,
) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let sources = WalletSources::with_email(
        [
            EmailProvider::Ses,
            EmailProvider::Sendgrid,
            EmailProvider::Mailgun,
            EmailProvider::Postmark,
            EmailProvider::Resend,
        ]
        .map(|e| (e.as_str().to_owned(), e)),
    );
    let processor = p
        .processor(
            process_function::registry(store.clone(), sources),
            SystemClock,
        )
        .await;
    let wallet = Wallet::new(
        wallet_ledger::TenantId::parse("acme").unwrap(),
        Currency::parse("usd").unwrap().amount(5),
        Currency::parse("usd").unwrap().amount(-1_000),
        None,
        0,
    );
    assert_eq!(
        Ledger::new(&store).create(&wallet).await.unwrap(),
        CreateOutcome::Created
    );
    (p, processor, store)
}

#[tokio::test]
async fn every_providers_email_events_move_the_wallet_through_the_pipeline() {
    let (p, processor, store) = wallet_pipeline().await;
    let h = &p.harness;
    // SendGrid, one batch: m-sg held then debited; m-sg2 debited then hard-bounced (refunded).
    let batch = json!([
        sendgrid_event(&unique("sg_"), "processed", "m-sg", json!({})),
        sendgrid_event(&unique("sg_"), "delivered", "m-sg2", json!({})),
    ])
    .to_string();
    let r = post(
        h,
        "sendgrid",
        &h.sign("sendgrid", batch.as_bytes(), ""),
        &batch,
    )
    .await;
    assert_eq!(r.json["accepted"].as_u64(), Some(2), "{r:?}");
    // SES through SNS: a delivery of m-ses (debit).
    let ses = json!({"eventType": "Delivery", "mail": {"messageId": "m-ses", "tags": {"tenant": ["acme"]}},
        "delivery": {"recipients": ["c@example.com"]}}).to_string();
    let (headers, body) = h.sign_message("ses", ses.as_bytes(), &unique(""), now());
    assert_eq!(post(h, "ses", &headers, &body).await.code(), "accepted");
    // Mailgun (signed inside the body): m-mg delivered (debit).
    let mg = json!({"event-data": {"event": "delivered", "user-variables": {"tenant": "acme"},
        "message": {"headers": {"message-id": "m-mg"}}}})
    .to_string();
    let (headers, body) = h.sign_message("mailgun", mg.as_bytes(), &unique(""), now());
    assert_eq!(post(h, "mailgun", &headers, &body).await.code(), "accepted");
    // Postmark: m-pm delivered (debit).
    let pm = json!({"RecordType": "Delivery", "MessageID": "m-pm", "Metadata": {"tenant": "acme"}})
        .to_string();
    assert_eq!(
        post(h, "postmark", &h.sign("postmark", pm.as_bytes(), ""), &pm)
            .await
            .code(),
        "accepted"
    );
    // Resend: m-rs sent (hold).
    let rs = json!({"type": "email.sent", "created_at": "2026-11-30T10:00:00Z", "data": {"email_id": "m-rs", "tags": {"tenant": "acme"}}}).to_string();
    assert_eq!(
        post(
            h,
            "resend",
            &h.sign("resend", rs.as_bytes(), &unique("msg_")),
            &rs
        )
        .await
        .code(),
        "accepted"
    );
    processor.handle_stream_batch(p.read_stream().await).await;
    // Then SendGrid's hard bounce of m-sg2: refunded.
    let bounce = json!([sendgrid_event(
        &unique("sg_"),
        "bounce",
        "m-sg2",
        json!({"type": "bounce"})
    )])
    .to_string();
    post(
        h,
        "sendgrid",
        &h.sign("sendgrid", bounce.as_bytes(), ""),
        &bounce,
    )
    .await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let w = Ledger::new(&store)
        .wallet(&wallet_ledger::TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .unwrap();
    // Held: m-sg (SendGrid processed), m-rs (Resend sent). Debited: m-ses, m-mg, m-pm (m-sg2 refunded).
    assert_eq!((w.balance.minor(), w.held.minor()), (-15, 10));
    let rows: Vec<(String, wallet_ledger::balance::rules::EmailState)> = {
        let ledger = Ledger::new(&store);
        let mut rows = Vec::new();
        for id in ["m-sg", "m-sg2", "m-ses", "m-mg", "m-pm", "m-rs"] {
            rows.push((
                id.to_owned(),
                ledger
                    .email_row(&wallet_ledger::TenantId::parse("acme").unwrap(), id)
                    .await
                    .unwrap()
                    .unwrap()
                    .state,
            ));
        }
        rows
    };
    use wallet_ledger::balance::rules::EmailState::*;
    assert_eq!(
        rows.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        vec![Held, Refunded, Debited, Debited, Debited, Held],
        "{rows:?}"
    );
}

#[tokio::test]
async fn the_readme_sendgrid_batch_holds_one_email_and_debits_the_other() {
    let (p, processor, store) = wallet_pipeline().await;
    let path = integration_tests::root().join("events/wallet/sendgrid-batch.json");
    let body = std::fs::read_to_string(path).unwrap();
    let h = &p.harness;
    let r = post(
        h,
        "sendgrid",
        &h.sign("sendgrid", body.as_bytes(), ""),
        &body,
    )
    .await;
    assert_eq!(
        (r.status, r.json["accepted"].as_u64()),
        (200, Some(2)),
        "{r:?}"
    );
    let (_, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(summary.outcomes.get("processed"), Some(&2), "{summary:?}");
    let w = Ledger::new(&store)
        .wallet(&wallet_ledger::TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (w.balance.minor(), w.held.minor()),
        (-5, 5),
        "hold m_demo_2, debit m_demo_3"
    );
}
