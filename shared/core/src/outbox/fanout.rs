//! Fan-out in the same transaction: the processor's hook ([`Fanout`]) and the outbox's
//! implementation ([`Outbox`]).
//!
//! When a message becomes terminal (`processed` or `ignored`), the processor asks the hook for the
//! writes to add to the transaction of that transition: one delivery item per matching active
//! destination, each an [`Effect::Ensure`] keyed by (destination, event). `Ensure` creates the item
//! or leaves an existing one untouched, so a replayed or re-driven message never creates a second
//! delivery for the same pair, and never makes the transaction conflict (no endless re-run).
//!
//! One transaction holds at most 100 items: the message and the handler's effects come first.
//! When the matching destinations do not fit the room left, ONE fan-out item is written instead
//! (also `Ensure`d), naming every matched destination; the deliver function expands it into the
//! delivery items (each `Ensure`d, so an expansion repeated after a crash is harmless). Only when
//! the handler's effects leave no room at all (99 effects) does the transition fail, permanently,
//! saying so.

use super::cache::DestinationCache;
use super::delivery::{FanoutItem, OutboundDelivery};
use super::destination::{DestinationId, DestinationState};
use crate::domain::Status;
use crate::message::StoredMessage;
use crate::store::{Effect, ItemStore, StoreError};
use std::future::Future;
use std::pin::Pin;

/// Why no fan-out writes could be made.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    /// The destinations could not be read: the record is retried.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Not even the fan-out item fits the transaction.
    #[error("the handler's {effects} writes leave no room in the transaction for the outbox's fan-out item ({matched} destinations match)")]
    NoRoom { effects: usize, matched: usize },
    /// An item could not be built (a bug).
    #[error("an outbox item could not be built: {0}")]
    Build(String),
}

/// A boxed future for the hook (it lives in the processor as a trait object).
pub type FanoutFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<Effect>, FanoutError>> + Send + 'a>>;

/// The processor's hook at the terminal transitions.
pub trait Fanout: Send + Sync {
    /// The writes to commit with `message`'s transition to `terminal` at `now` (ms); `room` is how
    /// many more items the transaction holds.
    fn effects<'a>(
        &'a self,
        message: &'a StoredMessage,
        terminal: Status,
        room: usize,
        now: i64,
    ) -> FanoutFuture<'a>;
}

/// The outbox: destinations from the table (cached), delivery items as `Ensure` effects.
#[derive(Debug)]
pub struct Outbox<S> {
    destinations: DestinationCache<S>,
}

impl<S: ItemStore> Outbox<S> {
    pub fn new(destinations: DestinationCache<S>) -> Self {
        Self { destinations }
    }
}

/// The fan-out writes for `message` given the active destinations that want it (pure).
pub fn plan(
    message: &StoredMessage,
    matched: Vec<DestinationId>,
    room: usize,
    now: i64,
) -> Result<Vec<Effect>, FanoutError> {
    if matched.is_empty() {
        return Ok(Vec::new());
    }
    let key = message.key();
    let build = |e: serde_dynamo::Error| FanoutError::Build(e.to_string());
    if matched.len() <= room {
        return matched
            .iter()
            .map(|id| {
                OutboundDelivery::new(id, &key, message.event_type.clone(), now)
                    .to_item()
                    .map(Effect::Ensure)
                    .map_err(build)
            })
            .collect();
    }
    if room == 0 {
        return Err(FanoutError::NoRoom {
            effects: crate::store::MAX_EFFECTS,
            matched: matched.len(),
        });
    }
    let fanout = FanoutItem {
        source: key.source.clone(),
        event_id: key.event_id.clone(),
        event_type: message.event_type.clone(),
        destinations: matched,
        created_at: now,
        expanded_at: None,
    };
    Ok(vec![Effect::Ensure(fanout.to_item().map_err(build)?)])
}

impl<S: ItemStore> Fanout for Outbox<S> {
    fn effects<'a>(
        &'a self,
        message: &'a StoredMessage,
        terminal: Status,
        room: usize,
        now: i64,
    ) -> FanoutFuture<'a> {
        Box::pin(async move {
            if !matches!(terminal, Status::Processed | Status::Ignored) {
                return Ok(Vec::new());
            }
            let snapshot = self.destinations.snapshot(now).await?;
            let event_type = message.event_type.as_ref().map(|t| t.as_str());
            let matched: Vec<DestinationId> = snapshot
                .destinations
                .iter()
                .map(|l| &l.destination)
                .filter(|d| {
                    d.state == DestinationState::Active
                        && d.wants(message.source.as_str(), event_type)
                })
                .map(|d| d.id.clone())
                .collect();
            plan(message, matched, room, now)
        })
    }
}

#[cfg(test)]
mod tests;
