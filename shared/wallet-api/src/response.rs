//! [`ApiResponse`]: what the API answers (status, headers, a JSON body), transport-neutral; the
//! function maps it to API Gateway's response. Every body is JSON, errors included
//! ([`crate::error`]).

use http::StatusCode;
use serde_json::Value;

/// The header a replayed answer carries (`true`), as Stripe's API names it.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// An answer: status, extra headers (lower-case names), a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiResponse {
    pub status: StatusCode,
    /// Headers besides `content-type: application/json` (which every answer has).
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
}

impl ApiResponse {
    /// `status` with `body` as JSON.
    pub fn json(status: StatusCode, body: &Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// The same answer with one more header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The value of a header it carries.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed (tests and logs; every body is JSON).
    pub fn body_json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}
