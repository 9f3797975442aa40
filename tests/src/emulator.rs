//! The local AWS emulators: DynamoDB Local for DynamoDB and its stream, moto for SQS, S3 and
//! Secrets Manager. Here: their endpoints and the SDK configuration that reaches each service at
//! its own (as the functions' `aws_config::load_from_env()` does from `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` and `AWS_ENDPOINT_URL`), tables created exactly as
//! `template.yaml` declares them, and whole-table scans.

use crate::{python, root};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};
use serde_json::Value;
use std::collections::HashMap;
use std::process::Command;
use std::sync::OnceLock;

/// Where the local services answer: `dynamodb` serves DynamoDB and DynamoDB Streams (DynamoDB
/// Local), `aws` every other service (moto).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// SQS, S3, Secrets Manager (`AWS_ENDPOINT_URL`).
    pub aws: String,
    /// DynamoDB and DynamoDB Streams (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_DYNAMODB_STREAMS`).
    pub dynamodb: String,
}

impl Endpoints {
    /// Every service at one endpoint (e.g. an unreachable one).
    pub fn one(url: &str) -> Self {
        Self {
            aws: url.to_owned(),
            dynamodb: url.to_owned(),
        }
    }

    /// The variables that point the AWS SDK (Rust, boto3, the CLI) at these endpoints, for a child
    /// process's environment.
    pub fn env(&self) -> [(&'static str, String); 3] {
        [
            ("AWS_ENDPOINT_URL", self.aws.clone()),
            ("AWS_ENDPOINT_URL_DYNAMODB", self.dynamodb.clone()),
            ("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", self.dynamodb.clone()),
        ]
    }
}

/// The emulators `make test` started: `AWS_ENDPOINT_URL` (moto) and `AWS_ENDPOINT_URL_DYNAMODB`
/// (DynamoDB Local); tests cannot run without them.
pub fn endpoints() -> Endpoints {
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| {
            panic!("{name} is not set: run the tests with `make test`, which starts the emulators")
        })
    };
    Endpoints {
        aws: var("AWS_ENDPOINT_URL"),
        dynamodb: var("AWS_ENDPOINT_URL_DYNAMODB"),
    }
}

/// DynamoDB and DynamoDB Streams at one endpoint, for the SDK's service-specific endpoint lookup
/// (the one `AWS_ENDPOINT_URL_DYNAMODB` feeds when the configuration comes from the environment).
#[derive(Debug)]
struct DynamoDbAt(String);

impl LoadServiceConfig for DynamoDbAt {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        let dynamodb = matches!(key.service_id(), "DynamoDB" | "DynamoDB Streams");
        (dynamodb && key.env() == "AWS_ENDPOINT_URL").then(|| self.0.clone())
    }
}

/// SDK configuration for these emulators: each service client built from it reaches its own.
pub async fn sdk_config_for(endpoints: &Endpoints) -> aws_config::SdkConfig {
    let loaded = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodb::config::Credentials::new(
            "testing", "testing", None, None, "tests",
        ))
        .load()
        .await;
    // Set on the built configuration, not the loader: a loader's endpoint would be an explicit
    // client setting, which every service takes over its service-specific one.
    loaded
        .into_builder()
        .endpoint_url(&endpoints.aws)
        .service_config(DynamoDbAt(endpoints.dynamodb.clone()))
        .build()
}

/// SDK configuration for the running emulators.
pub async fn sdk_config() -> aws_config::SdkConfig {
    sdk_config_for(&endpoints()).await
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

/// A new bucket in the emulators at `endpoints` (moto's S3) and the S3 side of a store over it:
/// bodies above `inline_max` bytes go there.
pub async fn body_bucket(
    endpoints: &Endpoints,
    inline_max: usize,
) -> (aws_sdk_s3::Client, inbox_core::store::dynamo::S3Bodies) {
    let (client, bodies, _) = counted_body_bucket(endpoints, inline_max).await;
    (client, bodies)
}

/// [`body_bucket`], its client counting the S3 requests it sends, by operation.
pub async fn counted_body_bucket(
    endpoints: &Endpoints,
    inline_max: usize,
) -> (
    aws_sdk_s3::Client,
    inbox_core::store::dynamo::S3Bodies,
    crate::pipeline::RequestCounter,
) {
    let sdk = sdk_config_for(endpoints).await;
    let counter = crate::pipeline::RequestCounter::default();
    let conf = aws_sdk_s3::config::Builder::from(&sdk)
        .force_path_style(true)
        .interceptor(counter.clone())
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
    (client, bodies, counter)
}
