//! Integration-test support: the local AWS emulator (moto), tables created from `template.yaml`,
//! real-shaped API Gateway HTTP API (payload 2.0) events, and signing with the local secrets.
//!
//! Tests expect `AWS_ENDPOINT_URL` to point at a running moto server and `INBOX_VENV` at the
//! project's Python venv: `make test` (scripts/test.sh) provides both.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: a failed setup is a failed test

pub mod config_docs;
pub mod pipeline;

use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use inbox_core::clock::SystemClock;
use inbox_core::config::DEFAULT_MAX_BODY_BYTES;
use inbox_core::ingest::Ingestor;
use inbox_core::signature::Unsigned;
use inbox_core::sources::{parse_secrets, Sources};
use inbox_core::store::dynamo::{client_for_hot_path, DynamoInbox};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The project's Python venv (`INBOX_VENV`, else `.venv` in the workspace).
pub fn venv() -> PathBuf {
    std::env::var_os("INBOX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv"))
}

/// The venv's Python interpreter.
pub fn python() -> PathBuf {
    venv().join("bin").join("python")
}

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

/// The local sources and secrets (`local/*.json`), the same ones `make dev` serves.
pub fn local_sources() -> Sources {
    let read =
        |f: &str| std::fs::read_to_string(root().join("local").join(f)).expect("read local config");
    let secrets = parse_secrets(&read("secrets.json"), "WEBHOOK_SECRETS").expect("local secrets");
    Sources::from_json(&read("sources.json"), &secrets).expect("local sources")
}

/// A fresh table in the emulator and an ingest service writing to it.
pub struct Harness {
    pub table: String,
    pub client: aws_sdk_dynamodb::Client,
    pub service: Ingestor<DynamoInbox, SystemClock>,
    pub sources: Sources,
}

impl Harness {
    /// A harness on a new, uniquely named table.
    pub async fn new() -> Self {
        Self::with_max_body(DEFAULT_MAX_BODY_BYTES).await
    }

    pub async fn with_max_body(max_body: usize) -> Self {
        let sdk = sdk_config().await;
        let client = client_for_hot_path(&sdk);
        let table = format!("inbox-test-{}", uuid::Uuid::new_v4().simple());
        create_table(&client, &table).await;
        let sources = local_sources();
        let service = Ingestor::new(
            sources.clone(),
            DynamoInbox::new(client.clone(), table.clone()),
            SystemClock,
            max_body,
            30,
        );
        Self {
            table,
            client,
            service,
            sources,
        }
    }

    /// Headers signed now with `source`'s first local secret.
    pub fn sign(&self, source: &str, body: &[u8], msg_id: &str) -> Vec<(String, String)> {
        let now = inbox_core::clock::Clock::now_secs(&SystemClock);
        self.sign_at(source, body, msg_id, now)
    }

    /// Headers signed at `timestamp` with `source`'s first local secret.
    pub fn sign_at(
        &self,
        source: &str,
        body: &[u8],
        msg_id: &str,
        timestamp: i64,
    ) -> Vec<(String, String)> {
        self.sources
            .get(source)
            .expect("configured source")
            .scheme
            .sign(&Unsigned::new(body, timestamp, msg_id))
            .expect("HMAC schemes sign")
            .headers
            .into_iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().expect("ascii header").to_owned(),
                )
            })
            .collect()
    }

    /// Sends one event through the ingest function's handler.
    pub async fn send(&self, event: &ApiGatewayV2httpRequest) -> Reply {
        Reply::from(ingest_function::respond(&self.service, event).await)
    }

    /// Every item in the table.
    pub async fn items(&self) -> Vec<HashMap<String, AttributeValue>> {
        scan_all(&self.client, &self.table).await
    }

    /// Items of one `kind` (`message` or `delivery`).
    pub async fn items_of_kind(&self, kind: &str) -> Vec<HashMap<String, AttributeValue>> {
        self.items()
            .await
            .into_iter()
            .filter(|i| {
                i.get("kind")
                    .and_then(|k| k.as_s().ok())
                    .map(String::as_str)
                    == Some(kind)
            })
            .collect()
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

/// A response, with its JSON body parsed.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: i64,
    pub headers: http::HeaderMap,
    pub json: Value,
}

impl From<ApiGatewayV2httpResponse> for Reply {
    fn from(r: ApiGatewayV2httpResponse) -> Self {
        let text = match r.body {
            Some(aws_lambda_events::encodings::Body::Text(t)) => t,
            Some(aws_lambda_events::encodings::Body::Binary(b)) => {
                String::from_utf8_lossy(&b).into_owned()
            }
            _ => String::new(),
        };
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("response body is not JSON: {text:?}"));
        Self {
            status: r.status_code,
            headers: r.headers,
            json,
        }
    }
}

impl Reply {
    /// The `error` code of an error body, or the `status` of a success body.
    pub fn code(&self) -> &str {
        self.json["error"]
            .as_str()
            .or_else(|| self.json["status"].as_str())
            .unwrap_or_default()
    }
}

/// A real-shaped API Gateway HTTP API (payload 2.0) event for `POST /webhooks/{source}`.
pub fn api_event(
    method: &str,
    source: &str,
    headers: &[(String, String)],
    body: Option<&str>,
    base64: bool,
) -> ApiGatewayV2httpRequest {
    let mut hdrs = serde_json::Map::new();
    hdrs.insert("content-type".into(), json!("application/json"));
    hdrs.insert(
        "host".into(),
        json!("abc123.execute-api.us-east-1.amazonaws.com"),
    );
    hdrs.insert(
        "user-agent".into(),
        json!("Stripe/1.0 (+https://stripe.com/docs/webhooks)"),
    );
    for (k, v) in headers {
        // API Gateway joins repeated headers with a comma, as here.
        let k = k.to_ascii_lowercase();
        let joined = match hdrs.get(&k).and_then(Value::as_str) {
            Some(prev) if k != "content-type" && k != "user-agent" => format!("{prev},{v}"),
            _ => v.clone(),
        };
        hdrs.insert(k, json!(joined));
    }
    let path = format!("/webhooks/{source}");
    let mut event = json!({
        "version": "2.0",
        "routeKey": "POST /webhooks/{source}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "192.0.2.10", "userAgent": "Stripe/1.0"},
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "POST /webhooks/{source}",
            "stage": "$default",
            "time": "30/Nov/2026:10:00:00 +0000",
            "timeEpoch": 1_795_000_000_000_i64
        },
        "pathParameters": {"source": source},
        "isBase64Encoded": base64
    });
    if source.is_empty() {
        event["pathParameters"] = Value::Null;
    }
    if let Some(b) = body {
        event["body"] = json!(b);
    }
    serde_json::from_value(event).expect("a valid API Gateway v2 event")
}

/// A realistic Stripe event of about `size` bytes (padded in `data.object.metadata`).
pub fn stripe_event(id: &str, kind: &str, size: usize) -> String {
    let mut event = json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_795_000_000,
        "data": {"object": {
            "id": "cs_test_a1b2c3", "object": "checkout.session", "amount_total": 2000, "currency": "usd",
            "customer": "cus_123", "mode": "payment", "payment_intent": "pi_123", "payment_status": "paid",
            "metadata": {"tenant": "acme"}
        }},
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": kind
    });
    let base = event.to_string().len();
    if size > base + 16 {
        event["data"]["object"]["metadata"]["padding"] = json!("x".repeat(size - base - 16));
    }
    event.to_string()
}

/// The first secret of `source` in `local/secrets.json`, as written there (e.g. `whsec_…`), for
/// handing to a provider's own library.
pub fn local_secret(source: &str) -> String {
    let text = std::fs::read_to_string(root().join("local/secrets.json"))
        .expect("read local/secrets.json");
    // Read as plain JSON: `parse_secrets` yields redacted `Secret`s, on purpose unreadable here.
    let secrets: HashMap<String, Vec<String>> =
        serde_json::from_str(&text).expect("local secrets: source → list of secrets");
    secrets
        .get(source)
        .and_then(|s| s.first())
        .cloned()
        .unwrap_or_else(|| panic!("no local secret for source {source:?}"))
}

/// Runs `script` with the venv's Python (`python -c script`), writes `input` as JSON to its stdin
/// and returns the JSON it prints on stdout. Nothing is interpolated into the script or a shell:
/// the script reads its data with `json.load(sys.stdin)`. Panics with Python's stderr if it fails.
pub fn run_python(script: &str, input: &Value) -> Value {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(python())
        .arg("-c")
        .arg(script)
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): run the tests with `make test`, which sets INBOX_VENV",
                python().display()
            )
        });
    let mut stdin = child.stdin.take().expect("python's stdin");
    let data = serde_json::to_vec(input).expect("JSON input");
    // Written from a thread so that a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().expect("wait for python");
    let written = writer.join().expect("stdin writer thread");
    assert!(
        out.status.success(),
        "python failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    written.expect("write python's stdin");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "python did not print JSON ({e}): {:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
