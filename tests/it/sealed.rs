//! Destinations' signing secrets at rest, on DynamoDB Local with moto's KMS: written through a
//! store with a key ([`SecretsKey`]) the item holds only ciphertext (`kms:…`, no `whsec_` anywhere:
//! not in a scan, a backup or the stream's image), and reads give the secret back; an item written
//! in plaintext before still reads, and is sealed at its next change; a store without the key
//! reads the sealed text, never a plaintext secret; a ciphertext moved to another destination
//! does not open (the encryption context names the destination).

use inbox_core::clock::{Clock, SystemClock};
use inbox_core::outbox::admin;
use inbox_core::outbox::destination::{Destination, DestinationId, SecretText};
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::schema::{destination_sk, DESTINATIONS_PK};
use inbox_core::store::dynamo::{DynamoTable, SecretsKey};
use inbox_core::store::{Effect, ItemStore, ItemWriter};
use integration_tests::{sdk_config_for, Harness};
use std::time::Duration;

async fn key(h: &Harness) -> SecretsKey {
    let kms = aws_sdk_kms::Client::new(&sdk_config_for(&h.endpoints).await);
    let arn = kms
        .create_key()
        .description("destination secrets (test)")
        .send()
        .await
        .expect("create a KMS key in moto")
        .key_metadata
        .and_then(|m| m.arn)
        .expect("the key's ARN");
    SecretsKey::new(kms, arn)
}

/// The destination's item as DynamoDB holds it (no store in between), as text.
async fn raw(h: &Harness, id: &str) -> String {
    let item = h
        .client
        .get_item()
        .table_name(&h.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(DESTINATIONS_PK.into()),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S(destination_sk(id)),
        )
        .send()
        .await
        .expect("GetItem")
        .item
        .expect("the destination item");
    format!("{item:?}")
}

fn destination(id: &str, secret: Option<SecretText>) -> Destination {
    Destination::new(
        &DestinationId::parse(id).unwrap(),
        "https://example.com/hooks",
        vec![Pattern::parse("*").unwrap()],
        secret,
        SystemClock.now_millis(),
    )
}

#[tokio::test]
async fn a_destination_secret_is_only_ciphertext_in_the_table_and_reads_back() {
    let h = Harness::new().await;
    let key = key(&h).await;
    let sealed = DynamoTable::new(h.client.clone(), h.table.clone()).with_secrets_key(Some(key));
    let plain = DynamoTable::new(h.client.clone(), h.table.clone());

    let d = destination("dest-sealed", None);
    let secret = d.secrets[0].secret.expose().to_owned();
    admin::add(&sealed, &d, "test", false).await.unwrap();
    let stored = raw(&h, "dest-sealed").await;
    assert!(
        !stored.contains("whsec_"),
        "plaintext in the item: {stored}"
    );
    assert!(stored.contains("kms:"), "{stored}");
    let id = DestinationId::parse("dest-sealed").unwrap();
    let read = admin::get(&sealed, &id).await.unwrap().unwrap();
    assert_eq!(read.secrets[0].secret.expose(), secret, "opened on read");
    assert_eq!(
        admin::list(&sealed).await.unwrap()[0].secrets[0]
            .secret
            .expose(),
        secret,
        "a Query opens them too (the destination cache's read)"
    );
    let without_key = admin::get(&plain, &id).await.unwrap().unwrap();
    assert!(
        without_key.secrets[0].secret.expose().starts_with("kms:"),
        "without the key: sealed, never plaintext"
    );
}

#[tokio::test]
async fn a_plaintext_secret_written_before_still_reads_and_is_sealed_at_the_next_change() {
    let h = Harness::new().await;
    let key = key(&h).await;
    let sealed = DynamoTable::new(h.client.clone(), h.table.clone()).with_secrets_key(Some(key));
    let plain = DynamoTable::new(h.client.clone(), h.table.clone());

    let old = SecretText::generate();
    let d = destination("dest-old", Some(old.clone()));
    admin::add(&plain, &d, "before", false).await.unwrap();
    assert!(raw(&h, "dest-old").await.contains(old.expose()));
    let id = DestinationId::parse("dest-old").unwrap();
    let read = admin::get(&sealed, &id).await.unwrap().unwrap();
    assert_eq!(read.secrets[0].secret.expose(), old.expose());

    let new = SecretText::generate();
    let now = SystemClock.now_millis();
    let rotated = admin::update(&sealed, &id, "test", "secret-rotated", now, |d| {
        d.rotate(new.clone(), Duration::from_secs(3600), now);
        Ok("rotated".into())
    })
    .await
    .unwrap();
    assert_eq!(rotated.secrets.len(), 2);
    let stored = raw(&h, "dest-old").await;
    assert!(!stored.contains("whsec_"), "both sealed now: {stored}");
    let read = admin::get(&sealed, &id).await.unwrap().unwrap();
    let texts: Vec<&str> = read.secrets.iter().map(|s| s.secret.expose()).collect();
    assert_eq!(texts, [new.expose(), old.expose()]);
}

#[tokio::test]
async fn a_sealed_secret_moved_to_another_destination_does_not_open() {
    let h = Harness::new().await;
    let key = key(&h).await;
    let sealed = DynamoTable::new(h.client.clone(), h.table.clone()).with_secrets_key(Some(key));
    let plain = DynamoTable::new(h.client.clone(), h.table.clone());
    admin::add(&sealed, &destination("dest-a", None), "test", false)
        .await
        .unwrap();
    let mut item = plain
        .get_item(DESTINATIONS_PK, &destination_sk("dest-a"))
        .await
        .unwrap()
        .unwrap();
    // The same item under another id: its ciphertext's context names dest-a.
    item.insert(
        "id".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("dest-b".into()),
    );
    item.insert(
        "sk".into(),
        aws_sdk_dynamodb::types::AttributeValue::S(destination_sk("dest-b")),
    );
    plain.commit(vec![Effect::Create(item)]).await.unwrap();
    let moved = admin::get(&sealed, &DestinationId::parse("dest-b").unwrap()).await;
    assert!(moved.is_err(), "{moved:?}");
}
