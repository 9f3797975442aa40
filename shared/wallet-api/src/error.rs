//! [`ApiError`]: why a request was not carried out, and its HTTP mapping (status, code, extra
//! headers, the JSON body `{error, message}`, with `param` naming the field of a bad input).
//! Internal failures answer an opaque 500 (or 503 when the table is unavailable): their cause
//! chain goes to the log, never to the caller, as in `inbox_core::ingest::IngestError`.

use crate::response::ApiResponse;
use http::StatusCode;
use inbox_core::store::StoreError;
use serde_json::{json, Map, Value};

/// Seconds a client is asked to wait after a 503 or a 409 (a request still in flight).
pub const RETRY_AFTER_SECS: u32 = 1;

/// Why a request was not carried out. Each variant maps to one status and one JSON code.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("no route for {method} {path}")]
    NotFound { method: String, path: String },
    #[error("method {method} is not allowed here; use {allow}")]
    MethodNotAllowed { method: String, allow: &'static str },
    /// A bad input: `param` names the field (a body field, a path segment or a header).
    #[error("{message}")]
    Invalid { param: String, message: String },
    #[error("the body is {len} bytes; the limit is {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    #[error("no wallet for tenant {0:?}")]
    NoWallet(String),
    /// The key was first used for another request (method, path or body).
    #[error(
        "the Idempotency-Key was already used for a different request; use a new key for a new request"
    )]
    KeyReused,
    /// The first request with this key is still being carried out.
    #[error("a request with this Idempotency-Key is still in progress; retry later")]
    InFlight,
    /// The wallet kept changing under the hold past the bounded retries.
    #[error("the wallet is busy; retry later")]
    Busy,
    /// The payment provider could not be asked (its message goes to the log).
    #[error("the payment provider is unavailable; retry later")]
    ProviderUnavailable(String),
    /// The table could not be reached, or throttled: nothing was done.
    #[error("the wallet could not be reached; retry later")]
    Unavailable(#[source] StoreError),
    /// Anything else that is the service's fault (an unreadable item, a rejected request).
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// A bad input naming its field.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            param: param.into(),
            message: message.into(),
        }
    }

    /// A failure of the store: transient kinds are a 503, the others internal.
    pub fn store(e: StoreError) -> Self {
        match e {
            StoreError::Throttled(_) | StoreError::Unavailable(_) => Self::Unavailable(e),
            other => Self::Internal(Box::new(other)),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound { .. } | Self::NoWallet(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Invalid { .. } => StatusCode::BAD_REQUEST,
            Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::KeyReused => StatusCode::UNPROCESSABLE_ENTITY,
            Self::InFlight => StatusCode::CONFLICT,
            Self::Busy | Self::ProviderUnavailable(_) | Self::Unavailable(_) => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::Invalid { .. } => "invalid_request",
            Self::TooLarge { .. } => "payload_too_large",
            Self::NoWallet(_) => "wallet_not_found",
            Self::KeyReused => "idempotency_key_reused",
            Self::InFlight => "idempotency_request_in_progress",
            Self::Busy => "wallet_busy",
            Self::ProviderUnavailable(_) => "payment_provider_unavailable",
            Self::Unavailable(_) => "store_unavailable",
            Self::Internal(_) => "internal_error",
        }
    }

    /// Whether the cause is the service's (logged as an error, with its cause chain).
    pub fn is_internal(&self) -> bool {
        self.status().is_server_error()
    }

    /// The answer: `{error, message}` (and `param` for a bad input), `Allow` on 405,
    /// `Retry-After` on 503 and 409.
    pub fn response(&self) -> ApiResponse {
        let mut body = Map::new();
        body.insert("error".into(), json!(self.code()));
        body.insert("message".into(), json!(self.to_string()));
        if let Self::Invalid { param, .. } = self {
            body.insert("param".into(), json!(param));
        }
        let response = ApiResponse::json(self.status(), &Value::Object(body));
        match self {
            Self::MethodNotAllowed { allow, .. } => response.with_header("allow", *allow),
            Self::InFlight | Self::Busy | Self::ProviderUnavailable(_) | Self::Unavailable(_) => {
                response.with_header("retry-after", RETRY_AFTER_SECS.to_string())
            }
            _ => response,
        }
    }
}

/// An error answer that is an outcome of the action (402, a hold already there, …): `{error,
/// message}` and the outcome's own fields. Stored with the idempotency key like a success.
pub fn outcome(status: StatusCode, code: &str, message: &str, extra: Value) -> ApiResponse {
    let mut body = Map::new();
    body.insert("error".into(), json!(code));
    body.insert("message".into(), json!(message));
    if let Value::Object(fields) = extra {
        body.extend(fields);
    }
    ApiResponse::json(status, &Value::Object(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_is_json_with_its_code_and_message() {
        let cases = [
            (
                ApiError::NotFound {
                    method: "GET".into(),
                    path: "/x".into(),
                },
                404,
                "not_found",
                None,
            ),
            (
                ApiError::MethodNotAllowed {
                    method: "PUT".into(),
                    allow: "POST",
                },
                405,
                "method_not_allowed",
                Some(("allow", "POST")),
            ),
            (
                ApiError::invalid("amount", "amount must be a whole number"),
                400,
                "invalid_request",
                None,
            ),
            (ApiError::KeyReused, 422, "idempotency_key_reused", None),
            (
                ApiError::InFlight,
                409,
                "idempotency_request_in_progress",
                Some(("retry-after", "1")),
            ),
            (
                ApiError::Busy,
                503,
                "wallet_busy",
                Some(("retry-after", "1")),
            ),
            (
                ApiError::Internal("secret detail".into()),
                500,
                "internal_error",
                None,
            ),
        ];
        for (e, status, code, header) in cases {
            let r = e.response();
            assert_eq!(r.status.as_u16(), status, "{e:?}");
            let body = r.body_json();
            assert_eq!(body["error"], code);
            assert!(body["message"].is_string());
            if let Some((name, value)) = header {
                assert_eq!(r.header(name), Some(value), "{e:?}");
            }
        }
        let bad = ApiError::invalid("amount", "amount must be a whole number").response();
        assert_eq!(bad.body_json()["param"], "amount");
        let internal = ApiError::Internal("secret detail".into()).response();
        assert!(!internal.body.contains("secret"), "{}", internal.body);
    }
}
