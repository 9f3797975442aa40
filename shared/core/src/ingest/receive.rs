//! [`Ingestor::receive`]: what the ingest function runs for every request. After the same checks
//! as the single-event path (method, source, body, signature), a verified request is, in this
//! order:
//!
//! 1. an **endpoint handshake** its scheme recognizes (`Scheme::handshake`; unless the source says
//!    `"handshake": false`): answered with the provider's expected reply, stored as nothing
//!    (the function's log line records it) — [`Reply::Handshake`];
//! 2. a **batch** (a JSON array, for a source whose scheme posts several events at once or that
//!    says `"batch": true`): each event stored as its own message (`batch.rs`) —
//!    [`Reply::Batch`]; an array of more elements than the ingestor's limit
//!    ([`Ingestor::with_max_batch_events`]) is refused whole, nothing stored;
//! 3. else **one event**, exactly as [`Ingestor::ingest`] stores it — [`Reply::Event`].

use super::batch::BatchAcknowledgement;
use super::verify::{scheme_request, source_of};
use super::{Acknowledgement, IngestError, IngestRequest, Ingestor};
use crate::clock::Clock;
use crate::signature::HandshakeReply;
use crate::store::Inbox;
use http::StatusCode;

/// What a request was answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// One event, durably stored (now or before).
    Event(Acknowledgement),
    /// A batch: every one of its events durably stored (now or before).
    Batch(BatchAcknowledgement),
    /// An endpoint handshake, answered; nothing stored.
    Handshake(HandshakeReply),
}

impl Reply {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Event(_) | Self::Batch(_) => StatusCode::OK,
            // A handshake's reply is built as 200 or 204 only (`HandshakeReply::json`,
            // `HandshakeReply::no_content`), so it is always a valid status.
            Self::Handshake(h) => StatusCode::from_u16(h.status).unwrap_or(StatusCode::OK),
        }
    }

    /// The body's media type (`None`: no body).
    pub fn content_type(&self) -> Option<&'static str> {
        match self {
            Self::Event(_) | Self::Batch(_) => Some("application/json"),
            Self::Handshake(h) => h.content_type,
        }
    }

    /// The body.
    pub fn body(&self) -> String {
        match self {
            Self::Event(ack) => ack.to_json(),
            Self::Batch(batch) => batch.to_json(),
            Self::Handshake(h) => h.body.clone(),
        }
    }
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// Verifies a delivery, then answers its handshake, stores each event of its batch, or
    /// stores it as one event (see the module docs). `Ok` means answered: whatever was to be
    /// stored is durably stored.
    pub async fn receive(&self, req: IngestRequest<'_>) -> Result<Reply, IngestError> {
        let result = self.receive_unmetered(req).await;
        if let Err(e) = &result {
            self.count_refusal(req.source, e);
        }
        result
    }

    async fn receive_unmetered(&self, req: IngestRequest<'_>) -> Result<Reply, IngestError> {
        let (sources, body, now_ms) = self.verified(&req).await?;
        let source = source_of(&sources, req.source)?;
        if source.handshakes {
            let request = scheme_request(&req, &body, now_ms.div_euclid(1000));
            if let Some(handshake) = source.scheme.handshake(request) {
                return Ok(Reply::Handshake(handshake.resolve().await?));
            }
        }
        if source.batches {
            if let Some(events) = crate::batch::split_at_most(&body, self.max_batch_events)? {
                return self
                    .store_batch(source, req.headers, events, now_ms)
                    .await
                    .map(Reply::Batch);
            }
        }
        self.store_verified(source, req.headers, body.into_owned(), now_ms, None)
            .await
            .map(Reply::Event)
    }
}
