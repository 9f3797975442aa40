//! Handlers and the registry that picks one by `(source, event type)`.
//!
//! A handler looks at a stored message and says what to do: commit DynamoDB writes together with
//! the `processed` transition (one transaction) and emit metrics once they committed, report that
//! an external effect was made (with [`StoredMessage::idempotency_key`]), decline it (`ignored`,
//! with the reason), ask for a retry, or fail permanently. The registry is assembled once, in the process function's composition root.

use crate::message::StoredMessage;
use crate::metrics::Metric;
use crate::store::Effect;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What a handler wants done once it decided: writes, and the metrics that report them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Commit {
    /// Committed in ONE transaction with the transition to `processed`, conditioned on the
    /// message's version (empty: just mark it processed).
    pub effects: Vec<Effect>,
    /// Emitted (their notes logged) only after that transaction committed: never for an outcome
    /// discarded by a conflict, so a re-run or a losing racer counts nothing.
    pub metrics: Vec<Metric>,
}

impl Commit {
    /// These writes, no metrics.
    pub fn new(effects: Vec<Effect>) -> Self {
        Self {
            effects,
            metrics: Vec::new(),
        }
    }

    /// Adds metrics to emit once the writes committed.
    pub fn with_metrics(mut self, metrics: impl IntoIterator<Item = Metric>) -> Self {
        self.metrics.extend(metrics);
        self
    }
}

impl From<Vec<Effect>> for Commit {
    fn from(effects: Vec<Effect>) -> Self {
        Self::new(effects)
    }
}

/// What a handler decided.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// Done: commit these writes with the transition to `processed`, then emit the metrics.
    Commit(Commit),
    /// Done after an external effect made with the message's idempotency key.
    Done,
    /// Not this handler's business (e.g. an event of another tenant or mode): the message becomes
    /// `ignored` — kept, listable, replayable, no alarm — with this reason in its history.
    Ignore(String),
    /// A transient failure: retry later with backoff.
    Retry(String),
    /// A failure that will not heal by itself: quarantine now.
    Permanent(String),
    /// A message refused as untrustworthy (e.g. an internal event its records contradict): a
    /// [`Self::Permanent`] failure, quarantined now with `reason`, whose `metrics` (the alarm)
    /// are emitted once that failure is recorded — never for a racer whose transition lost.
    Refused {
        reason: String,
        metrics: Vec<Metric>,
    },
}

impl HandlerOutcome {
    /// Commit these writes (no metrics).
    pub fn commit(effects: Vec<Effect>) -> Self {
        Self::Commit(Commit::new(effects))
    }
}

/// A boxed future, so handlers can live in a registry as trait objects.
pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = HandlerOutcome> + Send + 'a>>;

/// Something that handles one kind of event.
pub trait Handler: Send + Sync {
    /// A short name for logs and the history.
    fn name(&self) -> &str;

    /// Handlers with effects outside DynamoDB claim the message first (status `processing` with a
    /// lease) so two invocations never run the external effect at once. Handlers whose effects are
    /// only DynamoDB writes need no claim: their commit is conditioned on the message's version.
    fn needs_claim(&self) -> bool {
        false
    }

    /// Handles the message. Must not have side effects except through the returned outcome (or,
    /// for claiming handlers, external calls carrying the message's idempotency key): no metrics
    /// and no warnings of its own — the outcome carries them ([`Commit::metrics`]).
    fn handle<'a>(&'a self, message: &'a StoredMessage) -> HandlerFuture<'a>;
}

/// Handlers by `(source, event type)`, with optional per-source fallbacks.
#[derive(Default, Clone)]
pub struct Registry {
    exact: HashMap<(String, String), Arc<dyn Handler>>,
    any_type: HashMap<String, Arc<dyn Handler>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut routes: Vec<String> = self.exact.keys().map(|(s, t)| format!("{s}/{t}")).collect();
        routes.extend(self.any_type.keys().map(|s| format!("{s}/*")));
        routes.sort();
        f.debug_struct("Registry").field("routes", &routes).finish()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes `source`'s events of `event_type` to `handler`.
    pub fn on(mut self, source: &str, event_type: &str, handler: Arc<dyn Handler>) -> Self {
        self.exact
            .insert((source.to_owned(), event_type.to_owned()), handler);
        self
    }

    /// Routes every other event of `source` to `handler`.
    pub fn on_any(mut self, source: &str, handler: Arc<dyn Handler>) -> Self {
        self.any_type.insert(source.to_owned(), handler);
        self
    }

    /// The handler for a message, if any. A message whose type is `unknown` (signed, but its
    /// type or id could not be read) has none, even where the source has a fallback.
    pub fn get(&self, message: &StoredMessage) -> Option<&Arc<dyn Handler>> {
        if message.event_type.as_ref().is_some_and(|t| t.is_unknown()) {
            return None;
        }
        let source = message.source.as_str();
        message
            .event_type
            .as_ref()
            .and_then(|t| self.exact.get(&(source.to_owned(), t.as_str().to_owned())))
            .or_else(|| self.any_type.get(source))
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.exact.len() + self.any_type.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Noop;

    impl Handler for Noop {
        fn name(&self) -> &str {
            "noop"
        }

        fn handle<'a>(&'a self, _message: &'a StoredMessage) -> HandlerFuture<'a> {
            Box::pin(async { HandlerOutcome::Done })
        }
    }

    fn message(event_type: &str) -> StoredMessage {
        serde_json::from_value(serde_json::json!({
            "source": "mailer", "event_id": "e1", "event_type": event_type, "status": "pending",
            "received_at": 0, "body": [], "body_sha256": ""
        }))
        .unwrap()
    }

    #[test]
    fn a_message_of_unknown_type_has_no_handler_even_with_a_fallback() {
        let h: Arc<dyn Handler> = Arc::new(Noop);
        let r = Registry::new()
            .on_any("mailer", h.clone())
            .on("mailer", "unknown", h);
        assert!(r.get(&message("unknown")).is_none(), "so it is ignored");
        assert!(r.get(&message("message.sent")).is_some());
    }
}
