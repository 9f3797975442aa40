//! Catch-up from Stripe's events API: every event Stripe lists for a window and the inbox lacks
//! is stored as if its webhook had arrived, so what Stripe gave up delivering (or delivered
//! elsewhere) is processed after all. Stripe's own remedy, "Process undelivered webhook events"
//! (https://docs.stripe.com/webhooks/process-undelivered-events): list the events of the last
//! 30 days by `types[]` (with `delivery_success=false` for the undelivered ones only), page by
//! page, and process the ones you missed.
//!
//! Each listed event is decided on alone ([`decide`]), then stored by the core's own identity
//! and conditional put ([`inbox_core::ingest::Ingestor::store_fetched`]), its origin
//! (`catch-up`, the operator, the time) kept in place of a signature: an event the inbox
//! already has, by webhook or an earlier catch-up, is a duplicate that writes nothing, so
//! catch-up can run as often as wanted and a webhook arriving late after it changes nothing.
//! A new event reaches the processor as a webhook's does, by the table's stream. A dry run
//! reads whether each event is there and writes no event.
//!
//! What is refused, with the reason: an event of the other mode than the key's (Stripe answers a
//! key with its own mode's events only, so such an event is no answer to this request), and a
//! Connect event naming a connected `account` (an account's own events carry none: another
//! account's events are that account's endpoint's business). Neither is checked by ingest,
//! which trusts what the signature vouches for; after that, a caught-up event is processed
//! exactly as a webhook is (the wallet's handler ignores an event of the mode it does not move
//! money for, `WALLET_STRIPE_MODE`).

use crate::events::{EventQuery, ListError, ListedEvent, StripeEvents};
use crate::metrics::Tally;
use crate::transport::Transport;
use inbox_core::clock::Clock;
use inbox_core::ingest::{IngestError, Ingestor, Origin, Outcome};
use inbox_core::outbox::bucket::shared::SharedBucket;
use inbox_core::store::{Inbox, MessageStore};
use std::collections::BTreeMap;

pub mod checkpoint;
pub mod scheduled;
pub mod window;

/// What catch-up does.
#[derive(Debug, Clone)]
pub struct CatchUpRequest {
    pub query: EventQuery,
    /// The inbox source Stripe's webhooks arrive as (`WALLET_STRIPE_SOURCE`, `stripe`).
    pub source: String,
    /// The mode of the key the events are listed with ([`crate::SecretKey::livemode`]).
    pub key_livemode: Option<bool>,
    /// Look, write no event.
    pub dry_run: bool,
    pub origin: Origin,
}

/// What became of one listed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The inbox lacked it: stored now (or, in a dry run, would be).
    New,
    /// The inbox had it (by webhook or an earlier catch-up): nothing written.
    AlreadyHad,
    /// Not stored, and why.
    Refused(String),
}

/// One listed event and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub id: String,
    pub event_type: String,
    pub created: i64,
    pub verdict: Verdict,
    /// The PaymentIntent the event is about (`data.object` when it is one, or the charge's
    /// `payment_intent`), when it names one: a reconciliation right after the run knows which
    /// payments the stream is crediting this moment.
    pub intent: Option<String>,
}

/// The PaymentIntent an event's body is about, if any.
pub fn intent_of(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = v.pointer("/data/object")?;
    let id = object.get("id").and_then(|i| i.as_str());
    match id {
        Some(id) if id.starts_with("pi_") => Some(id.to_owned()),
        _ => object
            .get("payment_intent")
            .and_then(|i| i.as_str())
            .filter(|i| i.starts_with("pi_"))
            .map(str::to_owned),
    }
}

/// What a run found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every listed event, oldest first, with its verdict.
    pub events: Vec<Decided>,
    /// Stripe requests made (pages, retries included), retries, 429s.
    pub requests: u32,
    pub retries: u32,
    pub rate_limited: u32,
    /// Listed but left for a later run: created after the run's `created_lte` (their webhooks may
    /// still be on their way).
    pub too_recent: usize,
    /// The run was told to stop (its deadline) before deciding on the events created at or after
    /// this time (Unix seconds); every event listed before it, oldest first, was decided on.
    pub left_from: Option<i64>,
}

impl Report {
    fn count(&self, f: impl Fn(&Verdict) -> bool) -> usize {
        self.events.iter().filter(|e| f(&e.verdict)).count()
    }
    pub fn new_events(&self) -> usize {
        self.count(|v| *v == Verdict::New)
    }
    pub fn already_had(&self) -> usize {
        self.count(|v| *v == Verdict::AlreadyHad)
    }
    pub fn refused(&self) -> usize {
        self.count(|v| matches!(v, Verdict::Refused(_)))
    }
    /// The events the inbox lacked, counted by type.
    pub fn missing_by_type(&self) -> BTreeMap<&str, usize> {
        let mut out = BTreeMap::new();
        for e in self.events.iter().filter(|e| e.verdict == Verdict::New) {
            *out.entry(e.event_type.as_str()).or_insert(0) += 1;
        }
        out
    }
    /// When the events the inbox lacked were created (Unix seconds): the oldest and the newest.
    pub fn missing_between(&self) -> Option<(i64, i64)> {
        let created = self.events.iter().filter(|e| e.verdict == Verdict::New);
        let (lo, hi) = created.fold((i64::MAX, i64::MIN), |(lo, hi), e| {
            (lo.min(e.created), hi.max(e.created))
        });
        (lo <= hi).then_some((lo, hi))
    }
}

/// Why a run stopped before deciding on every event (what it decided so far is in the error).
#[derive(Debug, thiserror::Error)]
pub enum CatchUpError {
    #[error("listing Stripe's events: {0}")]
    List(#[from] ListError),
    /// The store failed: nothing after this event was decided; run again (nothing is doubled).
    #[error("storing event {event}: {error}")]
    Store {
        event: String,
        error: IngestError,
        so_far: Box<Report>,
    },
}

/// Whether a listed event may be stored at all: `Some(reason)` when not.
pub fn decide(event: &ListedEvent, key_livemode: Option<bool>) -> Option<String> {
    let mode = |live: bool| if live { "live" } else { "test" };
    if let Some(account) = &event.account {
        return Some(format!(
            "a connected account's event (account {account}): the account's own events name none"
        ));
    }
    match (event.livemode, key_livemode) {
        (Some(of), Some(key)) if of != key => Some(format!(
            "a {} mode event listed with a {} mode key",
            mode(of),
            mode(key)
        )),
        _ => None,
    }
}

/// Lists the events of `request.query` through `events` and stores each the inbox lacks through
/// `ingestor` (oldest first); `progress` is told how many were listed after each page.
pub async fn catch_up<T, B, S, C>(
    events: &StripeEvents<T, B>,
    ingestor: &Ingestor<S, C>,
    request: &CatchUpRequest,
    progress: impl FnMut(usize),
) -> Result<Report, CatchUpError>
where
    T: Transport,
    B: SharedBucket,
    S: Inbox + MessageStore,
    C: Clock,
{
    catch_up_within(events, ingestor, request, None, progress, || false).await
}

/// [`catch_up`] bounded, as the scheduled run does it: events created after `created_lte` (Unix
/// seconds) are listed but left alone ([`Report::too_recent`]), and `stop` is asked before each
/// event is decided: once it says so, the rest is left ([`Report::left_from`] says from when),
/// for a later run to take (what was stored stays once).
pub async fn catch_up_within<T, B, S, C>(
    events: &StripeEvents<T, B>,
    ingestor: &Ingestor<S, C>,
    request: &CatchUpRequest,
    created_lte: Option<i64>,
    progress: impl FnMut(usize),
    mut stop: impl FnMut() -> bool,
) -> Result<Report, CatchUpError>
where
    T: Transport,
    B: SharedBucket,
    S: Inbox + MessageStore,
    C: Clock,
{
    let mut tally = Tally::default();
    let mut listed = events.all(&request.query, &mut tally, progress).await?;
    let before = listed.len();
    if let Some(lte) = created_lte {
        listed.retain(|e| e.created <= lte);
    }
    let mut report = Report {
        events: Vec::with_capacity(listed.len()),
        requests: tally.requests,
        retries: tally.retries,
        rate_limited: tally.rate_limited,
        too_recent: before - listed.len(),
        left_from: None,
    };
    // Stripe lists newest first; stored oldest first, as they happened.
    for event in listed.into_iter().rev() {
        if stop() {
            report.left_from = Some(event.created);
            break;
        }
        let verdict = match decide(&event, request.key_livemode) {
            Some(reason) => Verdict::Refused(reason),
            None => match store(ingestor, request, &event).await {
                Ok(v) => v,
                Err(error) => {
                    report.left_from = Some(event.created);
                    return Err(CatchUpError::Store {
                        event: event.id,
                        error,
                        so_far: Box::new(report),
                    });
                }
            },
        };
        let intent = intent_of(&event.body);
        report.events.push(Decided {
            intent,
            id: event.id,
            event_type: event.event_type,
            created: event.created,
            verdict,
        });
    }
    Ok(report)
}

/// One event stored (or, in a dry run, looked up): a refusal of the body's own (too large, no
/// such source) is a verdict; the store's failure is the caller's.
async fn store<S: Inbox + MessageStore, C: Clock>(
    ingestor: &Ingestor<S, C>,
    request: &CatchUpRequest,
    event: &ListedEvent,
) -> Result<Verdict, IngestError> {
    let refused = |e: IngestError| match e {
        IngestError::Store(_) => Err(e),
        other => Ok(Verdict::Refused(other.to_string())),
    };
    if request.dry_run {
        let key = match ingestor.fetched_key(&request.source, &event.body) {
            Ok(key) => key,
            Err(e) => return refused(e),
        };
        return Ok(match ingestor.store().get_head(&key).await? {
            Some(_) => Verdict::AlreadyHad,
            None => Verdict::New,
        });
    }
    match ingestor
        .store_fetched(&request.source, event.body.clone(), &request.origin)
        .await
    {
        Ok(ack) if ack.outcome == Outcome::Accepted => Ok(Verdict::New),
        Ok(_) => Ok(Verdict::AlreadyHad),
        Err(e) => refused(e),
    }
}

#[cfg(test)]
mod tests;
