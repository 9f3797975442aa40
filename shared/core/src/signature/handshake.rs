//! Endpoint handshakes: requests by which a provider checks that an endpoint is its receiver (a
//! URL verification, a ping, a subscription confirmation) rather than events. A scheme recognizes
//! its provider's handshake ([`super::Scheme::handshake`]) in a request whose signature already
//! verified; ingest answers it with the [`HandshakeReply`] and stores nothing (one log line
//! records it). What each scheme answers is in the table of handshakes in `docs/sources.md`.
//!
//! A reply is decided at once ([`Handshake::Ready`]: echo a challenge, sign a token, answer a
//! ping) or after I/O ([`Handshake::Pending`]: SNS's subscription is confirmed by visiting its
//! `SubscribeURL`). A handshake that could not be completed is a [`HandshakeError`]: nothing was
//! decided, the provider is asked to retry (503).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// The answer to a handshake: what the provider expects back.
#[derive(Clone, PartialEq, Eq)]
pub struct HandshakeReply {
    /// What was answered, for the log line (`slack url_verification`, `discord ping`, …).
    pub kind: &'static str,
    /// The HTTP status (200, or 204 for an empty answer).
    pub status: u16,
    /// The body's media type; `None` with an empty body.
    pub content_type: Option<&'static str>,
    pub body: String,
    /// A detail worth the log line (the SNS topic confirmed); never a secret or a token.
    pub note: Option<String>,
}

impl HandshakeReply {
    /// A `200` JSON answer.
    pub fn json(kind: &'static str, body: &serde_json::Value) -> Self {
        Self {
            kind,
            status: 200,
            content_type: Some("application/json"),
            body: body.to_string(),
            note: None,
        }
    }

    /// A `204` answer without a body.
    pub fn no_content(kind: &'static str) -> Self {
        Self {
            kind,
            status: 204,
            content_type: None,
            body: String::new(),
            note: None,
        }
    }

    /// The same, with a note for the log line.
    pub fn with_note(self, note: impl Into<String>) -> Self {
        Self {
            note: Some(note.into()),
            ..self
        }
    }
}

/// The kind, status and body length: a body may carry a challenge or a signed token.
impl fmt::Debug for HandshakeReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandshakeReply")
            .field("kind", &self.kind)
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("body_len", &self.body.len())
            .field("note", &self.note)
            .finish()
    }
}

/// Why a recognized handshake could not be completed (nothing was stored; the provider retries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The subscription could not be confirmed (the confirmation URL did not answer 200 in time).
    #[error("the {what} could not be confirmed: {reason}; retry later")]
    Unconfirmed {
        what: &'static str,
        reason: &'static str,
    },
}

impl HandshakeError {
    /// The machine-readable code of the 503 answer.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unconfirmed { .. } => "handshake_failed",
        }
    }
}

/// A handshake answer that needs I/O first.
pub type PendingHandshake<'a> =
    Pin<Box<dyn Future<Output = Result<HandshakeReply, HandshakeError>> + Send + 'a>>;

/// What [`super::Scheme::handshake`] recognized: the answer now, or after I/O.
#[must_use]
pub enum Handshake<'a> {
    Ready(Result<HandshakeReply, HandshakeError>),
    Pending(PendingHandshake<'a>),
}

impl Handshake<'_> {
    /// The answer, awaiting the I/O if there is any.
    pub async fn resolve(self) -> Result<HandshakeReply, HandshakeError> {
        match self {
            Self::Ready(result) => result,
            Self::Pending(future) => future.await,
        }
    }
}

impl From<HandshakeReply> for Handshake<'_> {
    fn from(reply: HandshakeReply) -> Self {
        Self::Ready(Ok(reply))
    }
}

impl fmt::Debug for Handshake<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ready(result) => f.debug_tuple("Ready").field(result).finish(),
            Self::Pending(_) => f.write_str("Pending"),
        }
    }
}

/// The top-level members of a JSON object body, for recognizing handshakes; `None` when the body
/// is not a JSON object or does not contain `marker` at all (a cheap test that spares most event
/// bodies the parse).
pub(super) fn object_containing(
    body: &[u8],
    marker: &[u8],
) -> Option<serde_json::Map<String, serde_json::Value>> {
    if !marker.is_empty() && !body.windows(marker.len()).any(|w| w == marker) {
        return None;
    }
    match serde_json::from_slice(body) {
        Ok(serde_json::Value::Object(map)) => Some(map),
        _ => None,
    }
}
