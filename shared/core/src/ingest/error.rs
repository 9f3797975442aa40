//! [`IngestError`]: why a delivery was not accepted, and its HTTP mapping (status, code, extra
//! headers, the JSON [`ErrorBody`]).

use crate::signature::{HandshakeError, SignatureError};
use crate::store::StoreError;
use http::StatusCode;
use serde::Serialize;
use std::borrow::Cow;

/// Seconds a client is asked to wait after a 503.
pub const RETRY_AFTER_SECS: u32 = 5;

/// Why a delivery was not accepted. Each variant maps to one status and one JSON error code.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("method {0} is not allowed; use POST")]
    MethodNotAllowed(String),
    #[error("no webhook source named {0:?} is configured")]
    UnknownSource(String),
    #[error("no webhook source is named in the path; POST to /webhooks/{{source}}")]
    NoSource,
    #[error("the request body is flagged as base64 but is not valid base64")]
    BadBodyEncoding,
    #[error("the body is {len} bytes; the limit is {limit} bytes")]
    TooLarge { len: usize, limit: usize },
    /// A verified batch with more events than one request may become (nothing was stored).
    #[error("{0} (MAX_BATCH_EVENTS); send it in smaller batches")]
    TooManyEvents(#[from] crate::batch::TooManyEvents),
    #[error("{0}")]
    Signature(#[from] SignatureError),
    #[error("the event could not be stored; retry later")]
    Store(#[from] StoreError),
    /// A verified endpoint handshake could not be completed (nothing was stored).
    #[error("{0}")]
    Handshake(#[from] HandshakeError),
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub error: &'a str,
    pub message: Cow<'a, str>,
}

impl ErrorBody<'static> {
    /// The opaque answer to an internal error: the cause goes to the log, not to the client.
    pub fn internal() -> Self {
        Self {
            error: "internal_error",
            message: Cow::Borrowed("internal error"),
        }
    }
}

impl ErrorBody<'_> {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|_| r#"{"error":"internal_error","message":"internal error"}"#.into())
    }
}

impl IngestError {
    /// The HTTP status code.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::UnknownSource(_) | Self::NoSource => StatusCode::NOT_FOUND,
            Self::TooLarge { .. } | Self::TooManyEvents(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Signature(e) if e.is_transient() => StatusCode::SERVICE_UNAVAILABLE,
            Self::Signature(_) => StatusCode::UNAUTHORIZED,
            Self::Store(_) | Self::Handshake(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::BadBodyEncoding => StatusCode::BAD_REQUEST,
        }
    }

    /// The machine-readable error code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::UnknownSource(_) | Self::NoSource => "unknown_source",
            Self::BadBodyEncoding => "invalid_body_encoding",
            Self::TooLarge { .. } => "payload_too_large",
            Self::TooManyEvents(_) => "too_many_events",
            Self::Signature(e) => e.code(),
            Self::Store(_) => "store_unavailable",
            Self::Handshake(e) => e.code(),
        }
    }

    /// Extra response headers (`Allow` on 405, `Retry-After` on 503).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            Self::MethodNotAllowed(_) => vec![("allow", "POST".into())],
            Self::Store(_) | Self::Handshake(_) => {
                vec![("retry-after", RETRY_AFTER_SECS.to_string())]
            }
            Self::Signature(e) if e.is_transient() => {
                vec![("retry-after", RETRY_AFTER_SECS.to_string())]
            }
            _ => Vec::new(),
        }
    }

    /// The JSON error body. Messages never contain secrets, signatures or the payload.
    pub fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            error: self.code(),
            message: Cow::Owned(self.to_string()),
        }
    }
}
