//! The scheduled catch-up: what the catch-up function runs every 15 minutes. One run reads the
//! [`checkpoint`](super::checkpoint), lists Stripe's events of the [`window`](super::window)
//! (the wallet's types, every delivery: an endpoint whose URL was mis-set looks delivered to
//! Stripe), stores each the inbox lacks by [`catch_up_within`] (the same put as ingest's and
//! `inboxctl stripe catch-up`'s: a repeat writes nothing) until the invocation's deadline, then
//! writes the next checkpoint. Its [`Run::metrics`] are counted from what was written.

use super::checkpoint::{self, Stored};
use super::window::{after_run, window, Ended, Window};
use super::{catch_up_within, CatchUpError, CatchUpRequest, Report};
use crate::events::{EventQuery, StripeEvents};
use crate::transport::Transport;
use inbox_core::clock::Clock;
use inbox_core::ingest::{Ingestor, Origin};
use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::SharedBucket;
use inbox_core::store::schema::MESSAGE_PREFIX;
use inbox_core::store::{Inbox, ItemStore, ItemWriter, MessageStore, StoreError};

/// The CloudWatch namespace of the scheduled catch-up's counts.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/CatchUp";
/// The metric of events the inbox lacked and a run stored: webhooks that never came.
pub const CAUGHT_UP: &str = "CaughtUp";
/// A run stops deciding this long before the invocation's deadline (one store, the checkpoint).
pub const STOP_BEFORE_DEADLINE_MS: i64 = 10_000;
/// Who a scheduled run's events name as their operator (`inbox-origin`).
pub const OPERATOR: &str = "schedule";

/// The partition-key prefixes a run writes, storing events as `source`: their messages (one
/// conditional put each), and the Stripe account's items (its token bucket, the checkpoint).
/// `template.yaml`'s CatchUpRole grants exactly these (`tests/it/template.rs`).
pub fn table_writes(source: &str) -> Vec<String> {
    vec![
        format!("{MESSAGE_PREFIX}{source}#*"),
        checkpoint::CHECKPOINT_PK.to_owned(),
    ]
}

/// The partition keys a run reads: its checkpoint only (a put never reads a message first).
pub fn table_reads() -> Vec<String> {
    vec![checkpoint::CHECKPOINT_PK.to_owned()]
}

/// What the scheduled run works with.
#[derive(Debug)]
pub struct Scheduled<T, B, S, C> {
    pub events: StripeEvents<T, B>,
    /// Ingest's identity and put on the table (also where the checkpoint is kept).
    pub ingestor: Ingestor<S, C>,
    /// The event types listed (the wallet's).
    pub types: Vec<String>,
    /// The inbox source Stripe's webhooks arrive as.
    pub source: String,
    /// The mode of the key ([`crate::SecretKey::livemode`]).
    pub key_livemode: Option<bool>,
}

/// What one run did.
#[derive(Debug)]
pub struct Run {
    pub window: Window,
    /// What was listed and decided (so far, when it stopped).
    pub report: Report,
    /// Why the run stopped before the end of its window, if it failed.
    pub failed: Option<String>,
    /// Whether the checkpoint was written (`false`: unchanged, or another run moved it).
    pub checkpoint_written: bool,
}

impl Run {
    /// The counts by outcome, for after the writes that make them true.
    pub fn metrics(&self) -> Vec<Metric> {
        let r = &self.report;
        let count = |name: &str, v: usize| {
            Metric::count(
                METRICS_NAMESPACE,
                name,
                i64::try_from(v).unwrap_or(i64::MAX),
            )
        };
        let mut caught_up = count(CAUGHT_UP, r.new_events());
        if r.new_events() > 0 {
            caught_up = caught_up.with_note(format!(
                "{} Stripe events the inbox never received were caught up ({:?}): their webhooks \
                 were lost",
                r.new_events(),
                r.missing_by_type()
            ));
        }
        vec![
            caught_up,
            count("AlreadyHad", r.already_had()),
            count("Refused", r.refused()),
            count("LeftForNextRun", usize::from(r.left_from.is_some())),
            count("StripeRequests", r.requests as usize),
            count("StripeRateLimited", r.rate_limited as usize),
        ]
    }
}

impl<T, B, S, C> Scheduled<T, B, S, C>
where
    T: Transport,
    B: SharedBucket,
    S: Inbox + MessageStore + ItemStore + ItemWriter,
    C: Clock,
{
    /// One run at `clock`'s time, stopping [`STOP_BEFORE_DEADLINE_MS`] before `deadline_ms`.
    /// `Err` only when the checkpoint could not be read or written (no run, or a run whose next
    /// one repeats it: what was stored stays once).
    pub async fn run(
        &self,
        clock: &impl Clock,
        deadline_ms: Option<i64>,
    ) -> Result<Run, StoreError> {
        let store = self.ingestor.store();
        let read: Stored = checkpoint::load(store, &self.source).await?;
        let started_ms = clock.now_millis();
        let window = window(&read.checkpoint, started_ms.div_euclid(1000));
        let request = CatchUpRequest {
            query: EventQuery {
                types: self.types.clone(),
                created_gte: window.created_gte,
                created_lte: Some(window.created_lte),
                delivery_success: None,
            },
            source: self.source.clone(),
            key_livemode: self.key_livemode,
            dry_run: false,
            origin: Origin {
                how: "catch-up",
                operator: OPERATOR.to_owned(),
                at_ms: started_ms,
            },
        };
        let stop =
            || deadline_ms.is_some_and(|d| clock.now_millis() >= d - STOP_BEFORE_DEADLINE_MS);
        let result = catch_up_within(
            &self.events,
            &self.ingestor,
            &request,
            Some(window.created_lte),
            |_| {},
            stop,
        )
        .await;
        let (report, ended, failed) = match result {
            Ok(report) => {
                let ended = report.left_from.map_or(Ended::Complete, Ended::StoppedAt);
                (report, ended, None)
            }
            Err(CatchUpError::Store {
                event,
                error,
                so_far,
            }) => {
                let ended = so_far.left_from.map_or(Ended::Nothing, Ended::StoppedAt);
                (
                    *so_far,
                    ended,
                    Some(format!("storing event {event}: {error}")),
                )
            }
            Err(e @ CatchUpError::List(_)) => {
                (Report::default(), Ended::Nothing, Some(e.to_string()))
            }
        };
        let checkpoint_written = match after_run(&read.checkpoint, &window, ended) {
            Some(next) => {
                checkpoint::save(store, &self.source, &read, &next, clock.now_millis()).await?
            }
            None => false,
        };
        Ok(Run {
            window,
            report,
            failed,
            checkpoint_written,
        })
    }
}

#[cfg(test)]
mod tests;
