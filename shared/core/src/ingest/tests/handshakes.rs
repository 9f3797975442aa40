//! Endpoint handshakes through [`Ingestor::receive`]: answered after verification, stored as
//! nothing; a forged one is refused before anything is done; a source may opt out.

use super::*;
use crate::signature::{FetchError, FetchFuture, Fetcher};
use crate::store::{ListFilter, MessageStore};
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:ses-events";
const SUBSCRIBE: &str = "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:us-east-1:123456789012:ses-events&Token=2336412f37fb687f";

/// Answers 200 to the URLs it was given, fails for every other one; counts the visits.
#[derive(Debug, Default)]
struct Visits {
    answers: Mutex<Vec<String>>,
    visited: AtomicUsize,
}

impl Fetcher for Visits {
    fn fetch<'a>(&'a self, url: &'a str) -> FetchFuture<'a> {
        self.visited.fetch_add(1, Ordering::SeqCst);
        let known = self.answers.lock().unwrap().iter().any(|u| u == url);
        Box::pin(async move {
            if known {
                Ok(b"<ConfirmSubscriptionResponse/>".to_vec())
            } else {
                Err(FetchError::new("the server did not answer 200"))
            }
        })
    }
}

fn discord_key() -> String {
    let seed = [7u8; 32];
    let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
    format!(
        "{}{}",
        hex::encode(seed),
        hex::encode(pair.public_key().as_ref())
    )
}

/// Slack, Zoom, Discord and SNS sources (and Slack and SNS again without handshakes), SNS visits
/// going to `visits`.
fn handshaking(visits: &Arc<Visits>) -> Ingestor<MemoryInbox, ManualClock> {
    let secrets = serde_json::to_string(&json!({
        "slack": ["slack-secret"], "slack-off": ["slack-secret"], "zoom": ["zoom-secret"],
        "discord": [discord_key()], "ses": [crate::signature::sns_test_identity()],
        "ses-off": [crate::signature::sns_test_identity()],
    }))
    .unwrap();
    let secrets = parse_secrets(&secrets, "WEBHOOK_SECRETS").unwrap();
    let sources = json!({
        "slack": {"scheme": "slack"}, "slack-off": {"scheme": "slack", "handshake": false},
        "zoom": {"scheme": "zoom"}, "discord": {"scheme": "discord"},
        "ses": {"scheme": "sns", "topic_arn": TOPIC},
        "ses-off": {"scheme": "sns", "topic_arn": TOPIC, "handshake": false},
    });
    let fetcher: Arc<dyn Fetcher> = visits.clone();
    let sources =
        Sources::from_json_with_fetcher(&sources.to_string(), &secrets, Some(&fetcher)).unwrap();
    Ingestor::new(
        sources,
        MemoryInbox::new(),
        ManualClock::at_secs(NOW),
        64 * 1024,
        30,
    )
}

/// Signs `body` as `source` does (the body the scheme sent: SNS signs inside it) and receives it.
async fn receive(
    ing: &Ingestor<MemoryInbox, ManualClock>,
    source: &str,
    body: &str,
) -> Result<Reply, IngestError> {
    let signed = ing
        .sources()
        .get(source)
        .unwrap()
        .scheme
        .sign(&Unsigned::new(body.as_bytes(), NOW, ""))
        .unwrap();
    let body = String::from_utf8(signed.body.clone().unwrap_or(body.as_bytes().to_vec())).unwrap();
    ing.receive(IngestRequest {
        method: "POST",
        source,
        headers: &signed.header_map(),
        body: Some(&body),
        body_is_base64: false,
        source_ip: None,
    })
    .await
}

async fn stored(ing: &Ingestor<MemoryInbox, ManualClock>) -> Vec<crate::message::StoredMessage> {
    ing.store().list(&ListFilter::default(), 100).await.unwrap()
}

fn handshake(reply: Result<Reply, IngestError>) -> crate::signature::HandshakeReply {
    match reply {
        Ok(Reply::Handshake(h)) => h,
        other => panic!("not a handshake: {other:?}"),
    }
}

#[tokio::test]
async fn slack_url_verification_is_echoed_and_stored_as_nothing() {
    let ing = handshaking(&Arc::default());
    let body = r#"{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}"#;
    let reply = handshake(receive(&ing, "slack", body).await);
    assert_eq!(
        (reply.status, reply.content_type),
        (200, Some("application/json"))
    );
    let echoed: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        echoed["challenge"],
        "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
    );
    assert_eq!(ing.store().write_requests(), 0, "nothing written");
    // A source that opts out stores it as an event; an event is stored as before.
    assert!(matches!(
        receive(&ing, "slack-off", body).await,
        Ok(Reply::Event(_))
    ));
    let event = r#"{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention"}}"#;
    assert!(matches!(
        receive(&ing, "slack", event).await,
        Ok(Reply::Event(_))
    ));
    assert_eq!(stored(&ing).await.len(), 2);
}

#[tokio::test]
async fn a_forged_handshake_is_refused_before_anything_is_done() {
    let visits = Arc::new(Visits::default());
    let ing = handshaking(&visits);
    let body = r#"{"challenge":"c","type":"url_verification"}"#;
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-slack-request-timestamp",
        NOW.to_string().parse().unwrap(),
    );
    headers.insert(
        "x-slack-signature",
        format!("v0={}", "0".repeat(64)).parse().unwrap(),
    );
    let request = |source, headers| IngestRequest {
        method: "POST",
        source,
        headers,
        body: Some(body),
        body_is_base64: false,
        source_ip: None,
    };
    let e = ing.receive(request("slack", &headers)).await.unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (401, "signature_invalid"));
    // An SNS confirmation with a wrong signature visits nothing.
    let confirmation = json!({"Type": "SubscriptionConfirmation", "MessageId": "m", "Token": "t",
        "TopicArn": TOPIC, "Message": "confirm", "SubscribeURL": SUBSCRIBE,
        "Timestamp": "2023-11-14T22:13:20.000Z", "SignatureVersion": "2",
        "Signature": base64::engine::general_purpose::STANDARD.encode([1u8; 256]),
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123456789abcdef0123456789abcdef.pem"});
    let text = confirmation.to_string();
    let e = ing
        .receive(IngestRequest {
            body: Some(&text),
            ..request("ses", &HeaderMap::new())
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.status(),
        503,
        "the unknown certificate could not be fetched: {e}"
    );
    assert!(!visits
        .answers
        .lock()
        .unwrap()
        .iter()
        .any(|u| u == SUBSCRIBE));
    assert_eq!(ing.store().write_requests(), 0);
}

#[tokio::test]
async fn zoom_url_validation_is_answered_and_zoom_events_are_stored() {
    let ing = handshaking(&Arc::default());
    let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
    let reply = handshake(receive(&ing, "zoom", body).await);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    let mut mac =
        <hmac::Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(b"zoom-secret").unwrap();
    hmac::Mac::update(&mut mac, b"qgg8vlvZRS6UYooatFL8Aw");
    let expected = hex::encode(hmac::Mac::finalize(mac).into_bytes());
    assert_eq!(
        answer,
        json!({"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected})
    );
    assert_eq!(ing.store().write_requests(), 0);
    let event = r#"{"event":"meeting.started","event_ts":1654503849680,"payload":{}}"#;
    let Ok(Reply::Event(ack)) = receive(&ing, "zoom", event).await else {
        panic!("an event");
    };
    assert_eq!(ack.event_type.unwrap().as_str(), "meeting.started");
}

#[tokio::test]
async fn discord_pings_are_answered_and_stored_as_nothing() {
    let ing = handshaking(&Arc::default());
    let interaction = r#"{"application_id":"1","id":"2","token":"t","type":1,"version":1}"#;
    let reply = handshake(receive(&ing, "discord", interaction).await);
    assert_eq!((reply.status, reply.body.as_str()), (200, r#"{"type":1}"#));
    let webhook = r#"{"version":1,"application_id":"1","type":0}"#;
    let reply = handshake(receive(&ing, "discord", webhook).await);
    assert_eq!(
        (reply.status, reply.content_type, reply.body.as_str()),
        (204, None, "")
    );
    assert_eq!(ing.store().write_requests(), 0);
    let event =
        r#"{"version":1,"application_id":"1","type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}"#;
    assert!(matches!(
        receive(&ing, "discord", event).await,
        Ok(Reply::Event(_))
    ));
}

fn confirmation(subscribe_url: &str) -> String {
    json!({"Type": "SubscriptionConfirmation", "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
        "Token": "2336412f37fb687f", "TopicArn": TOPIC,
        "Message": "You have chosen to subscribe to the topic.", "SubscribeURL": subscribe_url})
    .to_string()
}

#[tokio::test]
async fn an_sns_subscription_is_confirmed_by_visiting_sns_only() {
    let visits = Arc::new(Visits::default());
    let ing = handshaking(&visits);
    // The visit fails: nothing decided, nothing stored, 503 so that SNS retries.
    let e = receive(&ing, "ses", &confirmation(SUBSCRIBE))
        .await
        .unwrap_err();
    assert_eq!((e.status().as_u16(), e.code()), (503, "handshake_failed"));
    assert!(e.headers().iter().any(|(h, _)| *h == "retry-after"));
    assert_eq!(visits.visited.load(Ordering::SeqCst), 1);
    // SNS answers: confirmed, stored as nothing.
    visits.answers.lock().unwrap().push(SUBSCRIBE.to_owned());
    let reply = handshake(receive(&ing, "ses", &confirmation(SUBSCRIBE)).await);
    assert_eq!(
        serde_json::from_str::<Value>(&reply.body).unwrap()["status"],
        "confirmed"
    );
    assert_eq!(visits.visited.load(Ordering::SeqCst), 2);
    assert_eq!(ing.store().write_requests(), 0);
    // Another URL is never visited: the (signed) confirmation is stored for an operator.
    let elsewhere = "https://attacker.example/?Action=ConfirmSubscription&TopicArn=x&Token=t";
    let Ok(Reply::Event(ack)) = receive(&ing, "ses", &confirmation(elsewhere)).await else {
        panic!("stored as an event");
    };
    assert_eq!(ack.event_type.unwrap().as_str(), "SubscriptionConfirmation");
    assert_eq!(visits.visited.load(Ordering::SeqCst), 2, "not visited");
    // A source without handshakes stores confirmations (and visits nothing).
    assert!(matches!(
        receive(&ing, "ses-off", &confirmation(SUBSCRIBE)).await,
        Ok(Reply::Event(_))
    ));
    assert_eq!(visits.visited.load(Ordering::SeqCst), 2);
}
