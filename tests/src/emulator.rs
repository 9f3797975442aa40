//! The local AWS emulator (moto): its endpoint and SDK configuration, tables created exactly as
//! `template.yaml` declares them, and whole-table scans.

use crate::{python, root};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;

/// The emulator's endpoint; tests cannot run without one.
pub fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "AWS_ENDPOINT_URL is not set: run the tests with `make test`, which starts the emulator",
    )
}

/// SDK configuration for the emulator (or for any endpoint, e.g. an unreachable one).
pub async fn sdk_config_for(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await
}

/// SDK configuration for the running emulator.
pub async fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_for(&endpoint()).await
}

/// The table definition derived from `template.yaml` by `scripts/table_from_template.py`, the one
/// derivation shared with `make dev`.
pub fn table_definition() -> &'static Value {
    static DEF: OnceLock<Value> = OnceLock::new();
    DEF.get_or_init(|| {
        let out = Command::new(python())
            .arg(root().join("scripts/table_from_template.py"))
            .arg("--template")
            .arg(root().join("template.yaml"))
            .arg("print")
            .output()
            .expect("run scripts/table_from_template.py with the venv's python");
        assert!(
            out.status.success(),
            "table_from_template.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("table_from_template.py prints JSON")
    })
}

fn key_schema(v: &Value) -> Vec<KeySchemaElement> {
    v.as_array()
        .expect("KeySchema is a list")
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(k["AttributeName"].as_str().expect("AttributeName"))
                .key_type(KeyType::from(k["KeyType"].as_str().expect("KeyType")))
                .build()
                .expect("key schema element")
        })
        .collect()
}

/// Creates a table named `name` exactly as `template.yaml` declares it (keys, index, stream, TTL).
pub async fn create_table(client: &aws_sdk_dynamodb::Client, name: &str) {
    let def = table_definition();
    let attrs = def["AttributeDefinitions"]
        .as_array()
        .expect("AttributeDefinitions")
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(a["AttributeName"].as_str().expect("AttributeName"))
                .attribute_type(ScalarAttributeType::from(
                    a["AttributeType"].as_str().expect("AttributeType"),
                ))
                .build()
                .expect("attribute definition")
        });
    let indexes = def["GlobalSecondaryIndexes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|g| {
            let p = &g["Projection"];
            let projection = Projection::builder()
                .projection_type(ProjectionType::from(
                    p["ProjectionType"].as_str().expect("ProjectionType"),
                ))
                .set_non_key_attributes(p["NonKeyAttributes"].as_array().map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                }))
                .build();
            GlobalSecondaryIndex::builder()
                .index_name(g["IndexName"].as_str().expect("IndexName"))
                .set_key_schema(Some(key_schema(&g["KeySchema"])))
                .projection(projection)
                .build()
                .expect("index")
        });
    let stream = &def["StreamSpecification"];
    client
        .create_table()
        .table_name(name)
        .set_key_schema(Some(key_schema(&def["KeySchema"])))
        .set_attribute_definitions(Some(attrs.collect()))
        .billing_mode(BillingMode::from(
            def["BillingMode"].as_str().expect("BillingMode"),
        ))
        .set_global_secondary_indexes(Some(indexes.collect()))
        .stream_specification(
            StreamSpecification::builder()
                .stream_enabled(stream["StreamEnabled"].as_bool().unwrap_or(false))
                .stream_view_type(StreamViewType::from(
                    stream["StreamViewType"].as_str().unwrap_or("NEW_IMAGE"),
                ))
                .build()
                .expect("stream specification"),
        )
        .send()
        .await
        .expect("create table in the emulator");
    if let Some(ttl) = def["TimeToLiveAttribute"].as_str() {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(ttl)
                    .build()
                    .expect("ttl"),
            )
            .send()
            .await
            .expect("enable TTL");
    }
}

/// Scans a whole table (all pages).
pub async fn scan_all(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Vec<HashMap<String, AttributeValue>> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        items.extend(page.items.unwrap_or_default());
        start = page.last_evaluated_key;
        if start.is_none() {
            return items;
        }
    }
}

/// A new bucket in the emulator at `endpoint` and the S3 side of a store over it: bodies above
/// `inline_max` bytes go there.
pub async fn body_bucket(
    endpoint: &str,
    inline_max: usize,
) -> (aws_sdk_s3::Client, inbox_core::store::dynamo::S3Bodies) {
    let sdk = sdk_config_for(endpoint).await;
    let conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(true)
        .build();
    let client = aws_sdk_s3::Client::from_conf(conf);
    let name = format!("bodies-{}", uuid::Uuid::new_v4().simple());
    client
        .create_bucket()
        .bucket(&name)
        .send()
        .await
        .expect("create a bucket in the emulator");
    let bodies = inbox_core::store::dynamo::S3Bodies::new(client.clone(), name, inline_max);
    (client, bodies)
}
