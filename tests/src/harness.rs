//! The ingest harness: a fresh table in DynamoDB Local with an ingest service writing to it, signing
//! with the local secrets, and the handler's responses with their JSON bodies parsed.

use crate::{create_table, endpoints, local_sources, scan_all, sdk_config_for, Endpoints};
use aws_lambda_events::apigw::{ApiGatewayV2httpRequest, ApiGatewayV2httpResponse};
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::SystemClock;
/// The body limit of [`Harness::new`].
pub const TEST_MAX_BODY_BYTES: usize = 256 * 1024;
use inbox_core::ingest::Ingestor;
use inbox_core::signature::Unsigned;
use inbox_core::sources::Sources;
use inbox_core::store::dynamo::{fail_fast_client, DynamoTable};
use serde_json::Value;
use std::collections::HashMap;

/// A fresh table in the emulator and an ingest service writing to it.
pub struct Harness {
    /// The emulators this harness talks to.
    pub endpoints: Endpoints,
    pub table: String,
    pub client: aws_sdk_dynamodb::Client,
    pub service: Ingestor<DynamoTable, SystemClock>,
    pub sources: Sources,
}

impl Harness {
    /// A harness on a new, uniquely named table.
    /// The tests' body limit: 256 KiB (the limit without a body bucket once was), so the
    /// oversized-body cases stay well below what an item holds.
    pub async fn new() -> Self {
        Self::with_max_body(TEST_MAX_BODY_BYTES).await
    }

    pub async fn with_max_body(max_body: usize) -> Self {
        Self::on(&endpoints(), max_body).await
    }

    /// A harness on a new table in the emulators at `endpoints` (a fault test's own emulators).
    pub async fn on(endpoints: &Endpoints, max_body: usize) -> Self {
        Self::with_sources(endpoints, max_body, local_sources()).await
    }

    /// A harness on a new table in the emulators at `endpoints`, with these sources.
    pub async fn with_sources(endpoints: &Endpoints, max_body: usize, sources: Sources) -> Self {
        let sdk = sdk_config_for(endpoints).await;
        let client = fail_fast_client(&sdk);
        let table = format!("inbox-test-{}", uuid::Uuid::new_v4().simple());
        // Created without the hot path's 5 s budget: DynamoDB Local's first CreateTable after
        // its start takes seconds on a busy machine.
        create_table(&aws_sdk_dynamodb::Client::new(&sdk), &table).await;
        let service = Ingestor::new(
            sources.clone(),
            DynamoTable::new(client.clone(), table.clone()),
            SystemClock,
            max_body,
            30,
        );
        Self {
            endpoints: endpoints.clone(),
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
            .expect("the local secret signs")
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

    /// Headers and body signed at `timestamp` with `source`'s first local secret: the body is the
    /// one given, or the one the scheme signed instead (SNS, Mailgun sign inside the body).
    pub fn sign_message(
        &self,
        source: &str,
        body: &[u8],
        msg_id: &str,
        timestamp: i64,
    ) -> (Vec<(String, String)>, String) {
        let signed = self
            .sources
            .get(source)
            .expect("configured source")
            .scheme
            .sign(&Unsigned::new(body, timestamp, msg_id))
            .expect("the local secret signs");
        let headers = signed
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    v.to_str().expect("ascii header").to_owned(),
                )
            })
            .collect();
        let body = signed.body.unwrap_or_else(|| body.to_vec());
        (headers, String::from_utf8(body).expect("a text body"))
    }

    /// Sends one event through the ingest function's handler.
    pub async fn send(&self, event: &ApiGatewayV2httpRequest) -> Reply {
        Reply::from(ingest_function::respond(&self.service, event).await)
    }

    /// POSTs `body` with `headers` to `source` through the ingest function's handler.
    pub async fn post(&self, source: &str, headers: &[(String, String)], body: &str) -> Reply {
        self.send(&crate::api_event(
            "POST",
            source,
            headers,
            Some(body),
            false,
        ))
        .await
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

/// The raw body of a message or journal item as stored (compressed bodies decompressed, as the
/// store reads them).
pub fn raw_body(item: &HashMap<String, AttributeValue>) -> Vec<u8> {
    let mut item = item.clone();
    inbox_core::store::dynamo::body::decode_item(&mut item).expect("a readable body");
    item["body"]
        .as_b()
        .expect("an inline body")
        .as_ref()
        .to_vec()
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
        // An empty body (a 204: Discord's webhook PING) reads as null.
        let json = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|_| panic!("response body is not JSON: {text:?}"))
        };
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
