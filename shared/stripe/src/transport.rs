//! The capability the client sends requests through ([`Transport`]): a request in Stripe's terms
//! (method, path, idempotency key, form body) and what came back, either an [`Answer`] (with the
//! headers the client reads: `Stripe-Should-Retry`, `Idempotent-Replayed`, `Request-Id`) or a
//! [`Failure`]. The HTTP one is [`crate::http::HttpTransport`]; tests script answers.

use std::future::Future;

/// One request to Stripe (authentication and the API version are the transport's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: http::Method,
    /// The path and query (`/v1/payment_intents`).
    pub path: String,
    pub idempotency_key: Option<String>,
    /// The form body (empty for a `GET`).
    pub body: String,
}

impl Request {
    /// A `POST` with an idempotency key.
    pub fn post(path: &str, idempotency_key: &str, body: String) -> Self {
        Self {
            method: http::Method::POST,
            path: path.to_owned(),
            idempotency_key: Some(idempotency_key.to_owned()),
            body,
        }
    }

    /// A `GET` (always safe to repeat).
    pub fn get(path: &str) -> Self {
        Self {
            method: http::Method::GET,
            path: path.to_owned(),
            idempotency_key: None,
            body: String::new(),
        }
    }
}

/// An answer, whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// `Stripe-Should-Retry`, when sent.
    pub should_retry: Option<bool>,
    /// `Idempotent-Replayed: true`: Stripe's saved answer for the key.
    pub replayed: bool,
    pub request_id: Option<String>,
    pub body: Vec<u8>,
}

/// No answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// Not connected, or the connection broke (reset) before the whole answer came.
    #[error("connection failed: {0}")]
    Broken(String),
    #[error("no answer within the timeout")]
    TimedOut,
}

/// Sends requests to Stripe.
pub trait Transport: Send + Sync {
    fn send(&self, request: &Request) -> impl Future<Output = Result<Answer, Failure>> + Send;
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn send(&self, request: &Request) -> impl Future<Output = Result<Answer, Failure>> + Send {
        (**self).send(request)
    }
}
