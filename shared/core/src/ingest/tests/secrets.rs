//! Secrets re-read in a warm container (TTL, after a mismatch) through the ingest command, and
//! the metrics of refusals and failures.

use super::*;
use crate::config::ConfigError;
use crate::metrics::RecordingSink;
use crate::sources::SecretsFetch;
use futures_util::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// A secret store whose value the test changes.
#[derive(Default)]
struct Store(Mutex<String>);

impl Store {
    fn set(&self, json: &str) {
        *self.0.lock().unwrap() = json.to_owned();
    }
}

impl SecretsFetch for Store {
    fn fetch(&self) -> BoxFuture<'_, Result<String, ConfigError>> {
        let value = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(value) })
    }
}

const SOURCES: &str = r#"{"stripe":{"scheme":"stripe"}}"#;

fn reloading(store: &Arc<Store>) -> Ingestor<MemoryInbox, Arc<ManualClock>> {
    store.set(r#"{"stripe":["whsec_compromised","whsec_new"]}"#);
    let secrets = parse_secrets(&store.0.lock().unwrap(), "WEBHOOK_SECRETS_ARN").unwrap();
    let sources = Sources::from_json(SOURCES, &secrets).unwrap();
    let fetch: Arc<dyn SecretsFetch> = store.clone();
    let reloader = crate::sources::Reloader::new(SOURCES, "WEBHOOK_SECRETS_ARN", fetch);
    Ingestor::new(
        sources,
        MemoryInbox::new(),
        Arc::new(ManualClock::at_secs(NOW)),
        4096,
        30,
    )
    .with_reload(reloader, std::time::Duration::from_secs(300))
}

/// A Stripe event `id` signed with `secret` at `t`.
fn event(id: &str, secret: &str, t: i64) -> (HeaderMap, String) {
    let body = EVENT.replace("evt_1", id);
    let settings = serde_json::Map::new();
    let scheme = crate::signature::build(
        "stripe",
        &crate::signature::Spec::new(
            &settings,
            &[crate::signature::Secret::from(secret)],
            std::time::Duration::from_secs(300),
        ),
    )
    .unwrap();
    let headers = scheme
        .sign(&Unsigned::new(body.as_bytes(), t, ""))
        .unwrap()
        .header_map();
    (headers, body)
}

async fn send(
    ing: &Ingestor<MemoryInbox, Arc<ManualClock>>,
    id: &str,
    secret: &str,
) -> Result<Acknowledgement, IngestError> {
    let t = ing.clock.now_secs();
    let (headers, body) = event(id, secret, t);
    ing.ingest(IngestRequest {
        source_ip: None,
        method: "POST",
        source: "stripe",
        headers: &headers,
        body: Some(&body),
        body_is_base64: false,
    })
    .await
}

#[tokio::test]
async fn a_removed_secret_is_refused_by_a_warm_container_after_the_ttl() {
    let store = Arc::new(Store::default());
    let ing = reloading(&store);
    assert!(send(&ing, "evt_a", "whsec_compromised").await.is_ok());
    // The operator removes the compromised secret from Secrets Manager.
    store.set(r#"{"stripe":["whsec_new"]}"#);
    ing.clock.advance_millis(299_000);
    assert!(
        send(&ing, "evt_b", "whsec_compromised").await.is_ok(),
        "still cached within the TTL"
    );
    ing.clock.advance_millis(1_000);
    let refused = send(&ing, "evt_c", "whsec_compromised").await.unwrap_err();
    assert_eq!(refused.code(), "signature_invalid");
    assert!(send(&ing, "evt_d", "whsec_new").await.is_ok());
    assert_eq!(ing.store().message_count(), 3);
}

#[tokio::test]
async fn a_new_secret_is_accepted_after_a_mismatch_at_most_a_minute_after_the_last_read() {
    let store = Arc::new(Store::default());
    let ing = reloading(&store);
    // The provider rotates to a secret the operator has just added.
    store.set(r#"{"stripe":["whsec_new","whsec_rotated"]}"#);
    ing.clock.advance_millis(30_000);
    assert_eq!(
        send(&ing, "evt_a", "whsec_rotated")
            .await
            .unwrap_err()
            .code(),
        "signature_invalid",
        "the cold start's read is 30 s old: no re-read yet"
    );
    ing.clock.advance_millis(30_000);
    let ack = send(&ing, "evt_b", "whsec_rotated").await.unwrap();
    assert_eq!(
        ack.outcome,
        Outcome::Accepted,
        "re-read, then verified again"
    );
    // A forgery right after is refused without another read.
    assert_eq!(
        send(&ing, "evt_c", "whsec_forged")
            .await
            .unwrap_err()
            .code(),
        "signature_invalid"
    );
}

#[tokio::test]
async fn refusals_and_failures_are_counted_with_their_source() {
    let sink = Arc::new(RecordingSink::new());
    let ing = ingestor(1024).with_metrics(sink.clone());
    let ok = signed(&ing, "stripe", EVENT.as_bytes(), "");
    post(&ing, "stripe", &ok, EVENT).await.unwrap();
    post(&ing, "stripe", &ok, EVENT).await.unwrap();
    assert!(
        sink.emitted().is_empty(),
        "accepted and duplicates: nothing"
    );
    post(&ing, "stripe", &HeaderMap::new(), EVENT)
        .await
        .unwrap_err();
    post(&ing, "nope", &ok, EVENT).await.unwrap_err();
    ing.store().set_down(true);
    let other = EVENT.replace("evt_1", "evt_2");
    let h = signed(&ing, "stripe", other.as_bytes(), "");
    post(&ing, "stripe", &h, &other).await.unwrap_err();
    let emitted: Vec<(String, Vec<(String, String)>)> = sink
        .emitted()
        .into_iter()
        .map(|(_, m)| {
            assert_eq!(m.namespace, METRICS_NAMESPACE);
            (m.name, m.properties)
        })
        .collect();
    let props = |source: &str, error: &str| {
        vec![
            ("Source".to_owned(), source.to_owned()),
            ("Error".to_owned(), error.to_owned()),
        ]
    };
    assert_eq!(
        emitted,
        vec![
            (
                "Unauthorized".to_owned(),
                props("stripe", "signature_missing")
            ),
            (
                "ServerErrors".to_owned(),
                props("stripe", "store_unavailable")
            ),
        ],
        "a 404 is not counted"
    );
}
