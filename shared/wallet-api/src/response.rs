//! [`ApiResponse`]: what the API answers (status, headers, a JSON body), transport-neutral; the
//! function maps it to API Gateway's response. Every body is JSON, errors included
//! ([`crate::error`]).

use http::StatusCode;
use serde_json::{json, Value};
use wallet_ledger::email::holds::{Held, Released};

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

/// The 201 of a hold (stored with it).
pub(crate) fn held_answer(held: &Held) -> ApiResponse {
    ApiResponse::json(
        StatusCode::CREATED,
        &json!({
            "hold_id": held.hold_id,
            "message_id": held.message_id,
            "amount": held.amount.minor(),
            "available": held.available.minor(),
            "currency": held.amount.currency().as_str(),
            "expires_at": held.expires_at,
        }),
    )
}

/// The 200 of a release (stored with it).
pub(crate) fn released_answer(r: &Released) -> ApiResponse {
    ApiResponse::json(
        StatusCode::OK,
        &json!({
            "hold_id": r.hold_id,
            "message_id": r.message_id,
            "amount": r.amount.minor(),
            "available": r.available.minor(),
            "currency": r.amount.currency().as_str(),
            "released": true,
        }),
    )
}
