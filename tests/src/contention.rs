//! DynamoDB's answers under contention, injected at the HTTP layer of the real SDK: DynamoDB
//! cancels a transaction that meets another on one of its items (`TransactionCanceledException`
//! with a `TransactionConflict` reason) and refuses a single-item write to an item in an ongoing
//! transaction (`TransactionConflictException`); DynamoDB Local does neither.
//!
//! [`Contended`] is an `HttpClient` wrapped around the real one: the next N requests of an
//! operation it is told of are answered as DynamoDB answers them (status 400, its JSON error
//! body) without reaching the emulator; every other request is forwarded. It counts both.

use aws_sdk_dynamodb::config::http::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The target header's prefix of every DynamoDB operation.
const TARGET_PREFIX: &str = "DynamoDB_20120810.";

#[derive(Debug, Default)]
struct Counts {
    /// Per operation (`TransactWriteItems`, `UpdateItem`, …): answers still to inject.
    pending: HashMap<String, usize>,
    injected: HashMap<String, usize>,
    forwarded: HashMap<String, usize>,
}

/// The injection's state, shared by the test and every connector of the client.
#[derive(Debug, Default)]
pub struct Contended(Mutex<Counts>);

impl Contended {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The next `n` requests of `operation` are answered with a conflict: a transaction's
    /// cancellation with a `TransactionConflict` reason for `TransactWriteItems`, else
    /// `TransactionConflictException` (replacing what was left to inject for it).
    pub fn conflict(&self, operation: &str, n: usize) {
        self.counts().pending.insert(operation.to_owned(), n);
    }

    /// Requests of `operation` answered with a conflict so far.
    pub fn injected(&self, operation: &str) -> usize {
        self.counts().injected.get(operation).copied().unwrap_or(0)
    }

    /// Requests of `operation` forwarded to the emulator so far.
    pub fn forwarded(&self, operation: &str) -> usize {
        self.counts().forwarded.get(operation).copied().unwrap_or(0)
    }

    /// A DynamoDB client like `sdk`'s whose requests go through this injection (the SDK's own
    /// retries do not take these errors: what sends them again is the store).
    pub fn client(self: &Arc<Self>, sdk: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
        let inner = sdk
            .http_client()
            .unwrap_or_else(|| inbox_core::tls::aws_http_client(false));
        let conf = aws_sdk_dynamodb::config::Builder::from(sdk)
            .http_client(Injecting {
                inner,
                state: self.clone(),
            })
            .build();
        aws_sdk_dynamodb::Client::from_conf(conf)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether this request of `operation` is to be answered with a conflict (counted either way).
    fn take(&self, operation: &str) -> bool {
        let mut c = self.counts();
        let inject = match c.pending.get_mut(operation) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        };
        let tally = if inject {
            &mut c.injected
        } else {
            &mut c.forwarded
        };
        *tally.entry(operation.to_owned()).or_default() += 1;
        inject
    }
}

/// The answer DynamoDB gives `operation` under contention; `request` is its JSON body.
fn conflict_answer(operation: &str, request: Option<&[u8]>) -> HttpResponse {
    let body = if operation == "TransactWriteItems" {
        // One reason per element, as DynamoDB gives them: the conflict on one (the second when
        // there are two or more), `None` on the others.
        let elements = request
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
            .and_then(|v| v["TransactItems"].as_array().map(Vec::len))
            .unwrap_or(1)
            .max(1);
        let conflicting = elements.min(2) - 1;
        let reasons: Vec<Value> = (0..elements)
            .map(|i| {
                if i == conflicting {
                    json!({"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"})
                } else {
                    json!({"Code": "None"})
                }
            })
            .collect();
        let codes: Vec<&str> = reasons
            .iter()
            .map(|r| r["Code"].as_str().unwrap_or_default())
            .collect();
        json!({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            "Message": format!(
                "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
                codes.join(", ")
            ),
            "CancellationReasons": reasons,
        })
    } else {
        json!({
            "__type": "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
            "message": "Transaction is ongoing for the item",
        })
    };
    let mut response = HttpResponse::new(
        StatusCode::try_from(400).expect("400 is a status"),
        body.to_string().into(),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
        .headers_mut()
        .insert("x-amzn-requestid", "injected-conflict");
    response
}

#[derive(Debug)]
struct Injecting {
    inner: SharedHttpClient,
    state: Arc<Contended>,
}

impl HttpClient for Injecting {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(InjectingConnector {
            inner: self.inner.http_connector(settings, components),
            state: self.state.clone(),
        })
    }
}

#[derive(Debug)]
struct InjectingConnector {
    inner: SharedHttpConnector,
    state: Arc<Contended>,
}

impl HttpConnector for InjectingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let operation = request
            .headers()
            .get("x-amz-target")
            .and_then(|t| t.strip_prefix(TARGET_PREFIX))
            .map(str::to_owned);
        match operation {
            Some(op) if self.state.take(&op) => {
                HttpConnectorFuture::ready(Ok(conflict_answer(&op, request.body().bytes())))
            }
            _ => self.inner.call(request),
        }
    }
}
