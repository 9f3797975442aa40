//! Secret rotation and revocation reaching a warm function, without a redeploy: the ingest path
//! re-reads its secrets from Secrets Manager (the emulator's) once their TTL passed, on a manual
//! clock, and after a signature that matched no secret at most once a minute.

use inbox_core::clock::{Clock, ManualClock, SystemClock};
use inbox_core::ingest::Ingestor;
use inbox_core::signature::{Secret, Spec, Unsigned};
use inbox_core::sources::SecretsManagerSecrets;
use inbox_core::sources::{Reloader, SecretsFetch};
use inbox_core::store::dynamo::DynamoTable;
use integration_tests::{api_event, sdk_config, stripe_event, Harness, Reply};
use std::sync::Arc;
use std::time::Duration;

const SOURCES: &str = r#"{"stripe":{"scheme":"stripe"}}"#;

struct Warm {
    service: Ingestor<DynamoTable, Arc<ManualClock>>,
    clock: Arc<ManualClock>,
    sm: aws_sdk_secretsmanager::Client,
    arn: String,
    _h: Harness,
}

impl Warm {
    /// A warm function whose secrets are `json` in a new Secrets Manager secret, TTL 5 minutes.
    async fn new(json: &str) -> Self {
        let h = Harness::new().await;
        let sdk = sdk_config().await;
        let sm = aws_sdk_secretsmanager::Client::new(&sdk);
        let created = sm
            .create_secret()
            .name(format!("webhook-secrets-{}", uuid::Uuid::new_v4().simple()))
            .secret_string(json)
            .send()
            .await
            .unwrap();
        let arn = created.arn().unwrap().to_owned();
        let fetch: Arc<dyn SecretsFetch> = Arc::new(SecretsManagerSecrets::new(&sdk, &arn));
        let reloader = Reloader::new(SOURCES, "WEBHOOK_SECRETS_ARN", fetch);
        let sources = reloader.load().await.unwrap();
        let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
        let service = Ingestor::new(
            sources,
            DynamoTable::new(h.client.clone(), h.table.clone()),
            clock.clone(),
            inbox_core::config::DEFAULT_MAX_BODY_BYTES,
            30,
        )
        .with_reload(reloader, Duration::from_secs(300));
        Self {
            service,
            clock,
            sm,
            arn,
            _h: h,
        }
    }

    async fn store_secrets(&self, json: &str) {
        self.sm
            .put_secret_value()
            .secret_id(&self.arn)
            .secret_string(json)
            .send()
            .await
            .unwrap();
    }

    /// A Stripe event signed with `secret` now (on the manual clock), through the handler.
    async fn send(&self, id: &str, secret: &str) -> Reply {
        let body = stripe_event(id, "invoice.paid", 0);
        let settings = serde_json::Map::new();
        let signer = inbox_core::signature::build(
            "stripe",
            &Spec::new(&settings, &[Secret::from(secret)], Duration::from_secs(300)),
        )
        .unwrap();
        let headers: Vec<(String, String)> = signer
            .sign(&Unsigned::new(body.as_bytes(), self.clock.now_secs(), ""))
            .unwrap()
            .headers
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        let event = api_event("POST", "stripe", &headers, Some(&body), false);
        Reply::from(ingest_function::respond(&self.service, &event).await)
    }
}

#[tokio::test]
async fn a_secret_removed_from_secrets_manager_is_refused_once_the_ttl_passed() {
    let w = Warm::new(r#"{"stripe":["whsec_compromised","whsec_new"]}"#).await;
    assert_eq!(
        w.send("evt_sec_1", "whsec_compromised").await.code(),
        "accepted"
    );
    // The operator revokes the compromised secret.
    w.store_secrets(r#"{"stripe":["whsec_new"]}"#).await;
    w.clock.advance_millis(299_000);
    assert_eq!(
        w.send("evt_sec_2", "whsec_compromised").await.code(),
        "accepted",
        "within the TTL the warm function still has it"
    );
    w.clock.advance_millis(1_000);
    let refused = w.send("evt_sec_3", "whsec_compromised").await;
    assert_eq!((refused.status, refused.code()), (401, "signature_invalid"));
    assert_eq!(w.send("evt_sec_4", "whsec_new").await.code(), "accepted");
}

#[tokio::test]
async fn a_secret_added_to_secrets_manager_is_accepted_after_the_first_mismatch() {
    let w = Warm::new(r#"{"stripe":["whsec_current"]}"#).await;
    w.store_secrets(r#"{"stripe":["whsec_current","whsec_next"]}"#)
        .await;
    w.clock.advance_millis(60_000);
    // The provider signs with the new secret before the TTL: the mismatch re-reads them.
    assert_eq!(w.send("evt_rot_1", "whsec_next").await.code(), "accepted");
    // A forgery a second later is refused without another read (and nothing is stored).
    w.clock.advance_millis(1_000);
    assert_eq!(w.send("evt_rot_2", "whsec_forged").await.status, 401);
}
