//! The ingest command: verify the signature on the raw bytes, identify the event, store it once.
//! [`Ingestor::receive`] (`receive.rs`, what the function runs) also answers endpoint handshakes
//! and splits batches (`batch.rs`); [`Ingestor::ingest`] is the single-event path.
//!
//! [`Ingestor::ingest`] takes a transport-neutral request (what API Gateway's HTTP API, a Lambda
//! Function URL or an ALB all deliver) and returns either an [`Acknowledgement`] or an
//! [`IngestError`] that knows its HTTP status and its JSON body. The order of checks is part of
//! the contract: method, source, body encoding and size, signature, then identity (which never
//! refuses a correctly signed request: what cannot be identified is stored as `unknown`), then
//! the one durable write. A repeated delivery is answered as a duplicate and counted (the first
//! ten journaled: `journal.rs`).
//!
//! The sources' secrets are re-read on a TTL and after a signature that matched no secret
//! ([`crate::sources::live`]); refusals and failures are counted as metrics
//! ([`Ingestor::with_metrics`]). The checks before anything is stored are in `verify.rs`, the one
//! write in `store_once.rs`, the errors and their HTTP mapping in `error.rs`, body decoding in
//! `body.rs`; signatures are the sources' schemes' business ([`crate::signature`]),
//! identity [`crate::identity`]'s. The ingest function's configuration: [`config`].

mod batch;
mod body;
pub mod config;
mod error;
mod journal;
mod receive;
mod store_once;
#[cfg(test)]
mod tests;
mod verify;

pub use batch::{BatchAcknowledgement, BATCH_CONCURRENCY};
pub use body::decode_body;
pub use config::IngestConfig;
pub use error::{ErrorBody, IngestError, RETRY_AFTER_SECS};
pub use journal::JOURNAL_BUDGET_MS;
pub use receive::Reply;
pub use store_once::{Origin, ORIGIN_HEADER};

use crate::clock::Clock;
use crate::config::SECRETS_FETCH_TIMEOUT;
use crate::domain::{EventType, MessageKey};
use crate::metrics::{Metric, MetricSink};
use crate::sources::{LiveSources, Reloader, Sources};
use crate::store::dynamo::FAIL_FAST_OPERATION_TIMEOUT;
use crate::store::Inbox;
use http::HeaderMap;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// The longest one request can wait on other services: one read of the secrets (a TTL or a
/// mismatch re-read, at most one per request) or the start of the duplicate bookkeeping
/// ([`JOURNAL_BUDGET_MS`]), whichever is later, plus one store request. The ingest function's
/// timeout must leave room above it, so a slow store ends in a 503, not a Lambda timeout
/// (`template.yaml`, checked by a test).
pub const WORST_CASE: Duration = Duration::from_millis(
    max_ms(
        SECRETS_FETCH_TIMEOUT.as_millis() as u64,
        JOURNAL_BUDGET_MS as u64,
    ) + FAIL_FAST_OPERATION_TIMEOUT.as_millis() as u64,
);

const fn max_ms(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The CloudWatch namespace of the ingest function's metrics.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/Ingest";

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
    /// Only for duplicates: which repeated delivery of the message this is (`None`: it could not
    /// be counted in time); only the first [`crate::store::MAX_JOURNALED_REPEATS`] are
    /// journaled.
    pub repeated: Option<u64>,
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

/// The ingest service: sources, a store and a clock, built once per cold start.
pub struct Ingestor<S, C> {
    sources: LiveSources,
    store: S,
    clock: C,
    max_body_bytes: usize,
    max_batch_events: usize,
    retention_days: u32,
    journal_budget_ms: i64,
    metrics: Option<Arc<dyn MetricSink>>,
}

impl<S: std::fmt::Debug, C: std::fmt::Debug> std::fmt::Debug for Ingestor<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingestor")
            .field("sources", &self.sources)
            .field("store", &self.store)
            .field("clock", &self.clock)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_batch_events", &self.max_batch_events)
            .field("retention_days", &self.retention_days)
            .finish_non_exhaustive()
    }
}

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// An ingestor whose sources never change.
    pub fn new(
        sources: Sources,
        store: S,
        clock: C,
        max_body_bytes: usize,
        retention_days: u32,
    ) -> Self {
        Self {
            sources: LiveSources::fixed(sources),
            store,
            clock,
            max_body_bytes,
            max_batch_events: crate::config::DEFAULT_MAX_BATCH_EVENTS,
            retention_days,
            journal_budget_ms: JOURNAL_BUDGET_MS,
            metrics: None,
        }
    }

    /// Gives the duplicate bookkeeping `budget` after a request's arrival instead of
    /// [`JOURNAL_BUDGET_MS`] (tests that load a serializing emulator; [`WORST_CASE`] assumes the
    /// default).
    pub fn with_journal_budget(mut self, budget: Duration) -> Self {
        self.journal_budget_ms = i64::try_from(budget.as_millis()).unwrap_or(i64::MAX);
        self
    }

    /// Splits a batch into at most `max` events ([`crate::config::DEFAULT_MAX_BATCH_EVENTS`]
    /// unless set; `MAX_BATCH_EVENTS` in the function): a verified array of more elements is
    /// refused whole, 413 `too_many_events`, nothing stored.
    pub fn with_max_batch_events(mut self, max: usize) -> Self {
        self.max_batch_events = max;
        self
    }

    /// Re-reads the sources' secrets with `reloader` once `ttl` has passed (and after a signature
    /// that matched no secret, at most once a minute): see [`crate::sources::live`].
    pub fn with_reload(mut self, reloader: Reloader, ttl: Duration) -> Self {
        let current = Sources::clone(&self.sources.current());
        self.sources = LiveSources::reloading(current, reloader, ttl, self.clock.now_millis());
        self
    }

    /// Counts refusals and failures in `sink` ([`METRICS_NAMESPACE`]: `Unauthorized` for every
    /// 401, `ServerErrors` for every 5xx; the source and error code as properties).
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = Some(sink);
        self
    }

    /// The store, for tests and tools.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The sources in use now.
    pub fn sources(&self) -> Arc<Sources> {
        self.sources.current()
    }

    /// Verifies, identifies and stores one delivery as ONE event: the single-event path, which
    /// answers no handshake and splits no batch. What the function runs is
    /// [`Ingestor::receive`], which falls back to this path for everything else. `Ok` means
    /// durably stored (now or before).
    pub async fn ingest(&self, req: IngestRequest<'_>) -> Result<Acknowledgement, IngestError> {
        let result = self.ingest_unmetered(req).await;
        if let Err(e) = &result {
            self.count_refusal(req.source, e);
        }
        result
    }

    /// Counts a refusal (401) or failure (5xx) in the metric sink, if there is one.
    fn count_refusal(&self, source: &str, e: &IngestError) {
        let Some(sink) = &self.metrics else {
            return;
        };
        let name = match e.status() {
            http::StatusCode::UNAUTHORIZED => "Unauthorized",
            s if s.is_server_error() => "ServerErrors",
            _ => return,
        };
        let source = crate::domain::SourceName::parse(source)
            .map(|s| s.to_string())
            .unwrap_or_default();
        let metric = Metric::count(METRICS_NAMESPACE, name, 1)
            .with_property("Source", source)
            .with_property("Error", e.code());
        sink.emit(self.clock.now_millis(), &[metric]);
    }

    async fn ingest_unmetered(
        &self,
        req: IngestRequest<'_>,
    ) -> Result<Acknowledgement, IngestError> {
        let (sources, body, now_ms) = self.verified(&req).await?;
        let source = verify::source_of(&sources, req.source)?;
        self.store_verified(source, req.headers, body.into_owned(), now_ms, None)
            .await
    }
}
