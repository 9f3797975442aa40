//! The ingest path against the emulator: the real SDK code, a table created from template.yaml.

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::domain::BodyDigest;
use inbox_core::store::attr;
use integration_tests::{api_event, stripe_event, Harness};
use std::collections::HashMap;
use std::sync::Arc;

fn s<'a>(item: &'a HashMap<String, AttributeValue>, k: &str) -> &'a str {
    attr::get_s(item, k).unwrap_or_else(|| panic!("no string {k}"))
}

fn n(item: &HashMap<String, AttributeValue>, k: &str) -> i64 {
    attr::get_n(item, k).unwrap_or_else(|| panic!("no number {k}"))
}

#[tokio::test]
async fn new_event_is_accepted_and_stored_as_exactly_one_complete_item() {
    let h = Harness::new().await;
    let body = stripe_event("evt_new_1", "checkout.session.completed", 2048);
    let reply = h
        .send(&api_event(
            "POST",
            "stripe",
            &h.sign("stripe", body.as_bytes(), ""),
            Some(&body),
            false,
        ))
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.json);
    assert_eq!(
        reply.json,
        serde_json::json!({"status": "accepted", "id": "evt_new_1"})
    );

    let items = h.items().await;
    assert_eq!(items.len(), 1, "exactly one item");
    let item = &items[0];
    assert_eq!(s(item, "pk"), "MSG#stripe#evt_new_1");
    assert_eq!(s(item, "sk"), "MSG");
    assert_eq!(s(item, "kind"), "message");
    assert_eq!(s(item, "source"), "stripe");
    assert_eq!(s(item, "event_id"), "evt_new_1");
    assert_eq!(s(item, "event_type"), "checkout.session.completed");
    assert_eq!(s(item, "status"), "pending");
    assert_eq!(n(item, "attempts"), 0);
    assert_eq!(
        integration_tests::raw_body(item),
        body.as_bytes(),
        "raw body kept byte for byte"
    );
    assert_eq!(s(item, "body_enc"), "zstd", "compressed in the item");
    assert!(
        item["body"].as_b().unwrap().as_ref().len() < body.len() / 2,
        "compression pays"
    );
    assert!(
        !item.contains_key("body_sha256"),
        "the accepted path does not hash the body"
    );
    assert_eq!(n(item, "body_bytes"), body.len() as i64);
    assert!(
        s(item, "open_shard").starts_with("OPEN#"),
        "in the sparse index of open messages"
    );
    assert_eq!(
        n(item, "open_due"),
        n(item, "received_at") + inbox_core::store::schema::PENDING_GRACE_MS,
        "due for the reaper only if the stream has not delivered it by then"
    );
    assert_eq!(n(item, "version"), 0);
    let headers = item["headers"].as_m().unwrap();
    assert!(
        headers.contains_key("stripe-signature"),
        "kept to re-verify"
    );
    assert!(
        !headers.contains_key("user-agent"),
        "only the headers needed are kept"
    );
    assert_eq!(item["history"].as_l().unwrap().len(), 1);
    assert!(
        !item.contains_key("expires_at"),
        "a pending message never expires"
    );
}

#[tokio::test]
async fn new_messages_appear_in_the_open_index() {
    let h = Harness::new().await;
    let body = stripe_event("evt_idx", "invoice.paid", 512);
    h.send(&api_event(
        "POST",
        "stripe",
        &h.sign("stripe", body.as_bytes(), ""),
        Some(&body),
        false,
    ))
    .await;
    let item = &h.items_of_kind("message").await[0];
    let shard = s(item, "open_shard").to_owned();
    let found = h
        .client
        .query()
        .table_name(&h.table)
        .index_name(inbox_core::store::schema::OPEN_INDEX)
        .key_condition_expression("open_shard = :s AND open_due <= :now")
        .expression_attribute_values(":s", AttributeValue::S(shard))
        .expression_attribute_values(":now", AttributeValue::N(i64::MAX.to_string()))
        .send()
        .await
        .unwrap();
    assert_eq!(found.count, 1);
    let projected = &found.items.unwrap()[0];
    assert_eq!(s(projected, "status"), "pending");
}

#[tokio::test]
async fn repeated_delivery_is_duplicate_leaves_original_and_is_journaled() {
    let h = Harness::new().await;
    let body = stripe_event("evt_dup_1", "invoice.paid", 1024);
    let event = api_event(
        "POST",
        "stripe",
        &h.sign("stripe", body.as_bytes(), ""),
        Some(&body),
        false,
    );
    assert_eq!(h.send(&event).await.code(), "accepted");
    let original = h.items_of_kind("message").await;

    let again = h.send(&event).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.json,
        serde_json::json!({"status": "duplicate", "id": "evt_dup_1"})
    );
    assert_eq!(
        h.items_of_kind("message").await,
        original,
        "the original is unchanged"
    );
    let journal = h.items_of_kind("delivery").await;
    assert_eq!(journal.len(), 1);
    assert_eq!(s(&journal[0], "pk"), "MSG#stripe#evt_dup_1");
    assert!(s(&journal[0], "sk").starts_with("DLV#"));
    assert_eq!(journal[0]["body_differs"].as_bool().unwrap(), &false);
    assert_eq!(
        s(&journal[0], "body_sha256"),
        BodyDigest::of(body.as_bytes()).to_hex()
    );
    assert!(
        !journal[0].contains_key("body"),
        "an identical body is not stored twice"
    );
    assert!(n(&journal[0], "expires_at") > n(&journal[0], "received_at") / 1000);
}

#[tokio::test]
async fn same_id_with_a_different_body_is_flagged_in_the_journal() {
    let h = Harness::new().await;
    let first = stripe_event("evt_changed", "invoice.paid", 600);
    let second = stripe_event("evt_changed", "invoice.payment_failed", 600);
    h.send(&api_event(
        "POST",
        "stripe",
        &h.sign("stripe", first.as_bytes(), ""),
        Some(&first),
        false,
    ))
    .await;
    let reply = h
        .send(&api_event(
            "POST",
            "stripe",
            &h.sign("stripe", second.as_bytes(), ""),
            Some(&second),
            false,
        ))
        .await;
    assert_eq!(reply.code(), "duplicate");
    let message = &h.items_of_kind("message").await[0];
    assert_eq!(
        s(message, "event_type"),
        "invoice.paid",
        "never overwritten"
    );
    assert_eq!(integration_tests::raw_body(message), first.as_bytes());
    let journal = &h.items_of_kind("delivery").await[0];
    assert_eq!(journal["body_differs"].as_bool().unwrap(), &true);
    assert_eq!(
        integration_tests::raw_body(journal),
        second.as_bytes(),
        "the differing body is kept for audit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_concurrent_deliveries_of_twenty_ids() {
    let mut h = Harness::new().await;
    // 200 requests at once queue for seconds in the emulator on a busy machine, past the hot
    // path's 2 s attempt timeout and the bookkeeping's 2 s budget for a repeated delivery (AWS's
    // DynamoDB serves them in parallel). Given the time, every repeat is counted and journaled
    // however the counters' conditional writes race.
    let patient =
        aws_sdk_dynamodb::Client::new(&integration_tests::sdk_config_for(&h.endpoints).await);
    h.service = inbox_core::ingest::Ingestor::new(
        h.sources.clone(),
        inbox_core::store::dynamo::DynamoTable::new(patient, h.table.clone()),
        inbox_core::clock::SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    )
    .with_journal_budget(std::time::Duration::from_secs(120));
    let h = Arc::new(h);
    let events: Vec<_> = (0..20)
        .map(|i| {
            let body = stripe_event(&format!("evt_conc_{i:02}"), "invoice.paid", 1500);
            api_event(
                "POST",
                "stripe",
                &h.sign("stripe", body.as_bytes(), ""),
                Some(&body),
                false,
            )
        })
        .collect();
    let tasks: Vec<_> = (0..200)
        .map(|n| {
            let h = Arc::clone(&h);
            let event = events[n % 20].clone();
            tokio::spawn(async move { h.send(&event).await })
        })
        .collect();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        let reply = t.await.unwrap();
        assert_eq!(reply.status, 200, "{:?}", reply.json);
        *counts.entry(reply.code().to_owned()).or_default() += 1;
    }
    assert_eq!(counts.get("accepted"), Some(&20), "{counts:?}");
    assert_eq!(counts.get("duplicate"), Some(&180), "{counts:?}");
    assert_eq!(h.items_of_kind("message").await.len(), 20);
    assert_eq!(h.items_of_kind("delivery").await.len(), 180);
    let counters = h.items_of_kind("delivery_count").await;
    assert_eq!(counters.len(), 20);
    for c in &counters {
        assert_eq!(n(c, "count"), 9, "{c:?}");
    }
}

#[tokio::test]
async fn unreachable_store_is_503_and_nothing_is_accepted() {
    let h = Harness::new().await;
    // Same service shape, pointed at a port where nothing listens.
    let sdk =
        integration_tests::sdk_config_for(&integration_tests::Endpoints::one("http://127.0.0.1:9"))
            .await;
    let down = inbox_core::ingest::Ingestor::new(
        integration_tests::local_sources(),
        inbox_core::store::dynamo::DynamoTable::new(
            inbox_core::store::dynamo::fail_fast_client(&sdk),
            h.table.clone(),
        ),
        inbox_core::clock::SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let body = stripe_event("evt_down", "invoice.paid", 500);
    let event = api_event(
        "POST",
        "stripe",
        &h.sign("stripe", body.as_bytes(), ""),
        Some(&body),
        false,
    );
    let reply = integration_tests::Reply::from(ingest_function::respond(&down, &event).await);
    assert_eq!(reply.status, 503);
    assert_eq!(reply.code(), "store_unavailable");
    assert_eq!(
        reply
            .headers
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("5")
    );
    assert!(
        !reply.json["message"]
            .as_str()
            .unwrap()
            .contains("127.0.0.1"),
        "internals stay in the log"
    );
    assert!(h.items().await.is_empty());

    // The provider's retry, once the store is back, is accepted.
    assert_eq!(h.send(&event).await.code(), "accepted");
}

#[tokio::test]
async fn missing_table_is_503_not_a_silent_success() {
    let h = Harness::new().await;
    let sdk = integration_tests::sdk_config().await;
    let wrong = inbox_core::ingest::Ingestor::new(
        integration_tests::local_sources(),
        inbox_core::store::dynamo::DynamoTable::new(
            inbox_core::store::dynamo::fail_fast_client(&sdk),
            "no-such-table",
        ),
        inbox_core::clock::SystemClock,
        inbox_core::config::DEFAULT_MAX_BODY_BYTES,
        30,
    );
    let body = stripe_event("evt_notable", "invoice.paid", 500);
    let event = api_event(
        "POST",
        "stripe",
        &h.sign("stripe", body.as_bytes(), ""),
        Some(&body),
        false,
    );
    let reply = integration_tests::Reply::from(ingest_function::respond(&wrong, &event).await);
    assert_eq!((reply.status, reply.code()), (503, "store_unavailable"));
}

#[tokio::test]
async fn every_local_source_accepts_its_own_signature() {
    let h = Harness::new().await;
    for (source, body, id) in [
        ("stripe", stripe_event("evt_all", "invoice.paid", 300), ""),
        (
            "mailer",
            r#"{"type":"message.sent","data":{"message_id":"m1"}}"#.to_string(),
            "msg_2kq",
        ),
        (
            "github",
            r#"{"zen":"Design for failure."}"#.to_string(),
            "9f8e7d6c-0000-11e3-81ab-4c9367dc0958",
        ),
        (
            "shopify",
            r#"{"id":820982911946154508}"#.to_string(),
            "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
        ),
        (
            "slack",
            "token=x&team_id=T1&command=%2Fweather".to_string(),
            "",
        ),
        ("custom", r#"{"id":"c-1"}"#.to_string(), ""),
    ] {
        let mut headers = h.sign(source, body.as_bytes(), id);
        headers.push(("x-github-event".into(), "ping".into()));
        headers.push(("x-shopify-topic".into(), "orders/create".into()));
        headers.push(("x-event-type".into(), "thing.happened".into()));
        let reply = h
            .send(&api_event("POST", source, &headers, Some(&body), false))
            .await;
        assert_eq!(
            (reply.status, reply.code()),
            (200, "accepted"),
            "{source}: {:?}",
            reply.json
        );
    }
    assert_eq!(h.items_of_kind("message").await.len(), 6);
}

#[test]
fn the_template_table_matches_the_code_schema() {
    let def = integration_tests::table_definition();
    let keys: Vec<_> = def["KeySchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["AttributeName"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        vec![inbox_core::store::schema::PK, inbox_core::store::schema::SK]
    );
    assert_eq!(
        def["TimeToLiveAttribute"],
        inbox_core::store::schema::EXPIRES_AT
    );
    assert_eq!(def["StreamSpecification"]["StreamViewType"], "NEW_IMAGE");
    let index = &def["GlobalSecondaryIndexes"][0];
    assert_eq!(index["IndexName"], inbox_core::store::schema::OPEN_INDEX);
    let index_keys: Vec<_> = index["KeySchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["AttributeName"].as_str().unwrap())
        .collect();
    assert_eq!(
        index_keys,
        vec![
            inbox_core::store::schema::OPEN_SHARD,
            inbox_core::store::schema::OPEN_DUE
        ]
    );
}

#[tokio::test]
async fn secrets_come_from_secrets_manager_in_the_cloud() {
    let sdk = integration_tests::sdk_config().await;
    let client = aws_sdk_secretsmanager::Client::new(&sdk);
    let name = format!("webhook-secrets-{}", uuid::Uuid::new_v4().simple());
    let created = client
        .create_secret()
        .name(&name)
        .secret_string(r#"{"stripe": ["whsec_from_secrets_manager"]}"#)
        .send()
        .await
        .unwrap();
    let json = inbox_core::sources::fetch_secret(&sdk, created.arn().unwrap())
        .await
        .unwrap();
    let secrets = inbox_core::sources::parse_secrets(&json, "WEBHOOK_SECRETS_ARN").unwrap();
    assert_eq!(
        secrets["stripe"],
        vec![inbox_core::signature::Secret::from(
            "whsec_from_secrets_manager"
        )]
    );

    let missing = inbox_core::sources::fetch_secret(
        &sdk,
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope",
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(missing.contains("WEBHOOK_SECRETS_ARN"), "{missing}");
    assert!(!missing.contains("whsec_"), "{missing}");
}
