//! The Destinations page's figures of each destination, each a bounded read (never a scan of
//! the outbox, whatever its size):
//! - its parked backlog: one `Query` of its `PARKED#<destination>` partition, at most
//!   [`BACKLOG_CAP`] counted (as `inboxctl dest show` counts it, [`parking::backlog`]);
//! - its circuit: one `GetItem` of its state item, named with the breaker's default settings
//!   (as `inboxctl stats` names it);
//! - its last deliveries: the sample its charts read ([`read`]: the newest events of the last
//!   [`ATTEMPT_HOURS`] hours through the events index, read once for every destination, then
//!   the deliveries of the newest [`DELIVERY_CAP`] of them it wants, each by its key), tallied
//!   as `inboxctl stats` tallies the whole outbox ([`tally`]): by status, the success rate of
//!   their attempts, p50/p99 processed → delivered, the oldest of them pending. The page says
//!   they are the last N (`inboxctl stats` reads every delivery).

pub use super::destination::ATTEMPT_HOURS;
use super::read;
pub use super::read::DELIVERY_CAP;
use super::HOUR;
use crate::commands::stats::outbox::{breaker, tally, DestinationStats};
use crate::error::Result;
use inbox_core::outbox::breaker::CircuitState;
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::parking::{self, Backlog};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use std::collections::BTreeMap;

/// The most parked deliveries the page counts per destination (past it: "1000 or more").
pub const BACKLOG_CAP: usize = 1_000;

/// One destination's figures on the page.
#[derive(Debug, Clone)]
pub struct Figures {
    pub backlog: Backlog,
    pub circuit: CircuitState,
    /// The tally of its last deliveries (those of the newest events it wants).
    pub recent: DestinationStats,
    /// Whether it wants more events of the window than were read (older ones not tallied).
    pub more: bool,
}

/// Each of `destinations`' figures, ordered by id, at `now`.
pub async fn figures(
    store: &DynamoTable,
    destinations: &[Destination],
    now: i64,
) -> Result<Vec<Figures>> {
    let since = now - ATTEMPT_HOURS * HOUR;
    let sample = read::events_since(store, since, None, None, |got| {
        destinations
            .iter()
            .all(|d| read::wanted(d, got).0.len() >= DELIVERY_CAP)
    })
    .await?;
    let mut read_of = BTreeMap::new();
    let mut deliveries = Vec::new();
    for d in destinations {
        let backlog = parking::backlog(store, &d.id, BACKLOG_CAP).await?;
        let state = store.worker_state(&d.id).await?;
        let circuit = state.circuit.state(&breaker(), now);
        let (refs, more) = read::wanted(d, &sample);
        deliveries.extend(read::deliveries(store, &refs).await?);
        read_of.insert(d.id.clone(), (backlog, circuit, more));
    }
    let circuit_of = |id: &DestinationId| read_of.get(id).map_or(CircuitState::Closed, |r| r.1);
    Ok(tally(destinations, &deliveries, circuit_of, now)
        .into_iter()
        .filter_map(|recent| {
            let id = DestinationId::parse(&recent.id).ok()?;
            let (backlog, circuit, more) = *read_of.get(&id)?;
            Some(Figures {
                backlog,
                circuit,
                more: more || sample.cut.is_some(),
                recent,
            })
        })
        .collect())
}
