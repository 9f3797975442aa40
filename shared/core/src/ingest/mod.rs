//! The ingest command: verify the signature on the raw bytes, identify the event, store it once.
//!
//! [`Ingestor::ingest`] takes a transport-neutral request (what API Gateway's HTTP API, a Lambda
//! Function URL or an ALB all deliver) and returns either an [`Acknowledgement`] or an
//! [`IngestError`] that knows its HTTP status and its JSON body. The order of checks is part of
//! the contract: method, source, body encoding and size, signature, then identity (so a 400 about
//! the payload is only ever answered to a correctly signed request), then the one durable write.
//!
//! The errors and their HTTP mapping are in `error.rs`, body decoding in `body.rs`; signatures
//! are the sources' schemes' business ([`crate::signature`]), identity [`crate::identity`]'s.

mod body;
mod error;
#[cfg(test)]
mod tests;

pub use body::decode_body;
pub use error::{ErrorBody, IngestError, RETRY_AFTER_SECS};

use crate::clock::Clock;
use crate::domain::{BodyDigest, EventType, MessageKey};
use crate::identity;
use crate::signature::Request;
use crate::sources::{Source, Sources};
use crate::store::{Delivery, Inbox, NewMessage, PutOutcome};
use http::HeaderMap;
use serde::Serialize;

/// A webhook delivery as the transport hands it over.
#[derive(Debug, Clone, Copy)]
pub struct IngestRequest<'a> {
    pub method: &'a str,
    /// The `{source}` path segment.
    pub source: &'a str,
    pub headers: &'a HeaderMap,
    /// The body as the transport carries it (API Gateway: text, or base64 when `body_is_base64`).
    pub body: Option<&'a str>,
    pub body_is_base64: bool,
    /// The client's address as the transport reports it (API Gateway's `sourceIp`), for schemes
    /// with an address allow-list.
    pub source_ip: Option<std::net::IpAddr>,
}

/// What happened to an accepted delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// New event, durably stored.
    Accepted,
    /// Already stored earlier; this delivery was journaled, the original left untouched.
    Duplicate,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
        }
    }
}

/// A 200 answer: the event is durably stored (now or before).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acknowledgement {
    pub outcome: Outcome,
    pub key: MessageKey,
    pub event_type: Option<EventType>,
    /// Only for duplicates: whether the body differs from the stored original.
    pub body_differs: bool,
}

impl Acknowledgement {
    /// The JSON body: `{"status":"accepted"|"duplicate","id":"…"}`.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct Body<'a> {
            status: Outcome,
            id: &'a str,
        }
        serde_json::to_string(&Body {
            status: self.outcome,
            id: self.key.event_id.as_str(),
        })
        .unwrap_or_else(|_| format!("{{\"status\":\"{}\"}}", self.outcome.as_str()))
    }
}

/// The headers kept with a message (only those the source needs to re-verify and re-identify).
fn kept_headers(source: &Source, headers: &HeaderMap) -> Vec<(String, String)> {
    source
        .kept_headers()
        .iter()
        .filter_map(|name| {
            let joined = headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ");
            (!joined.is_empty()).then(|| (name.as_str().to_owned(), joined))
        })
        .collect()
}

/// The ingest service: configuration, a store and a clock, built once per cold start.
#[derive(Debug)]
pub struct Ingestor<S, C> {
    sources: Sources,
    store: S,
    clock: C,
    max_body_bytes: usize,
    retention_days: u32,
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    pub fn new(
        sources: Sources,
        store: S,
        clock: C,
        max_body_bytes: usize,
        retention_days: u32,
    ) -> Self {
        Self {
            sources,
            store,
            clock,
            max_body_bytes,
            retention_days,
        }
    }

    /// The store, for tests and tools.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Verifies, identifies and stores one delivery. `Ok` means durably stored (now or before).
    pub async fn ingest(&self, req: IngestRequest<'_>) -> Result<Acknowledgement, IngestError> {
        if !req.method.eq_ignore_ascii_case("POST") {
            return Err(IngestError::MethodNotAllowed(
                req.method.chars().take(16).collect(),
            ));
        }
        if req.source.is_empty() {
            return Err(IngestError::NoSource);
        }
        let source = self.sources.get(req.source).ok_or_else(|| {
            // Echo the name only when it is a plausible source name (never arbitrary input).
            let shown = crate::domain::SourceName::parse(req.source)
                .map(|s| s.to_string())
                .unwrap_or_default();
            IngestError::UnknownSource(shown)
        })?;
        let body = decode_body(req.body, req.body_is_base64, self.max_body_bytes)?;
        let now_ms = self.clock.now_millis();
        let request = Request::new(req.headers, &body, now_ms.div_euclid(1000));
        let request = match req.source_ip {
            Some(ip) => request.with_source_ip(ip),
            None => request,
        };
        source.scheme.verify(request).resolve().await?;
        let body_digest = BodyDigest::of(&body);
        let (event_id, event_type) = identity::identify(
            &source.event_id,
            source.event_type.as_ref(),
            req.headers,
            &body,
            &body_digest,
        )?;
        let key = MessageKey::new(source.name.clone(), event_id);
        let headers = kept_headers(source, req.headers);
        let message = NewMessage {
            key,
            event_type,
            received_at_ms: now_ms,
            body: body.into_owned(),
            body_digest,
            headers,
        };
        match self.store.put_if_absent(&message).await? {
            PutOutcome::Inserted => Ok(Acknowledgement {
                outcome: Outcome::Accepted,
                key: message.key,
                event_type: message.event_type,
                body_differs: false,
            }),
            PutOutcome::AlreadyExists { original_digest } => {
                let body_differs = original_digest.is_some_and(|d| d != message.body_digest);
                if body_differs {
                    tracing::warn!(
                        source = %message.key.source,
                        event_id = %message.key.event_id,
                        "repeated delivery with a different body; the original is kept, the new body is journaled"
                    );
                }
                let retention_secs = i64::from(self.retention_days) * 86_400;
                let NewMessage {
                    key,
                    event_type,
                    body,
                    headers,
                    ..
                } = message;
                let delivery = Delivery {
                    key,
                    received_at_ms: now_ms,
                    body_digest,
                    body_differs,
                    differing_body: body_differs.then_some(body),
                    headers,
                    expires_at_secs: now_ms.div_euclid(1000) + retention_secs,
                };
                self.store.journal_delivery(&delivery).await?;
                Ok(Acknowledgement {
                    outcome: Outcome::Duplicate,
                    key: delivery.key,
                    event_type,
                    body_differs,
                })
            }
        }
    }
}
