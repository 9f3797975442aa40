//! What the charts read, each a bounded read whatever the table's size (never a scan):
//! - the events of the window: pages of the events index ([`EventIndex::page`], 100 rows each,
//!   newest first, since the window's start), at most [`EVENT_PAGES`] of them: at most
//!   [`EVENT_CAP`] events; past the cap the chart says where it stopped;
//! - a destination's deliveries: those of the newest [`DELIVERY_CAP`] events of that read which
//!   its patterns want, each read by its key (`OUT#{destination}#{source}#{event id}`: a
//!   `GetItem`, [`DELIVERY_READS`] at once); a delivery's attempts are in its journal;
//! - a wallet's balance: nothing more (the wallet page's own read of its entries).

use crate::error::Result;
use futures_util::future::try_join_all;
use inbox_core::message::StoredMessage;
use inbox_core::outbox::delivery::{DeliveryRef, OutboundDelivery};
use inbox_core::outbox::destination::Destination;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::events::{Direction, EventQuery, MAX_ROWS};
use inbox_core::store::EventIndex as _;

/// The most index pages the events chart reads (each one query per index partition and one
/// `BatchGetItem` of its rows).
pub const EVENT_PAGES: usize = 5;
/// The most events the events chart reads: [`EVENT_PAGES`] pages of [`MAX_ROWS`].
pub const EVENT_CAP: usize = EVENT_PAGES * MAX_ROWS;
/// The most deliveries a destination's charts read (the newest events it wants).
pub const DELIVERY_CAP: usize = 100;
/// How many of a destination's deliveries are read at once.
pub const DELIVERY_READS: usize = 16;

/// The events of a window, newest first.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    pub messages: Vec<StoredMessage>,
    /// When the read stopped at its cap with older events of the window unread: the oldest
    /// event read's time (the chart is complete from there on).
    pub cut: Option<i64>,
    /// DynamoDB's read units for it (0 in memory), and its requests.
    pub read_units: f64,
    pub requests: usize,
}

/// The events received since `since` (and, when named, of that source and type), newest first,
/// at most [`EVENT_CAP`]; `enough` stops the read early, after a page (the sample is then cut
/// as at the cap).
pub async fn events_since(
    store: &DynamoTable,
    since: i64,
    source: Option<&str>,
    event_type: Option<&str>,
    enough: impl Fn(&Sample) -> bool,
) -> Result<Sample> {
    let mut query = EventQuery {
        source: source.map(str::to_owned),
        event_type: event_type.map(str::to_owned),
        since: Some(since),
        rows: MAX_ROWS,
        ..EventQuery::default()
    };
    let mut sample = Sample::default();
    for _ in 0..EVENT_PAGES {
        let page = store.page(&query).await?;
        sample.read_units += page.read_units;
        sample.requests += page.requests;
        sample.messages.extend(page.messages);
        match page.older {
            Some(older) => query.from = Some((Direction::Older, older)),
            None => return Ok(sample),
        }
        if enough(&sample) {
            break;
        }
    }
    // The cap (or enough): the pages read stop short of the window's start.
    sample.cut = sample.messages.iter().map(|m| m.received_at).min();
    Ok(sample)
}

/// The references of `destination`'s deliveries of the newest [`DELIVERY_CAP`] events of
/// `sample` it wants (by its patterns), and whether more were left out.
pub fn wanted(destination: &Destination, sample: &Sample) -> (Vec<DeliveryRef>, bool) {
    let mut refs: Vec<DeliveryRef> = sample
        .messages
        .iter()
        .filter(|m| destination.wants(m.source.as_str(), m.event_type.as_ref().map(|t| t.as_str())))
        .map(|m| DeliveryRef {
            destination: destination.id.clone(),
            source: m.source.clone(),
            event_id: m.event_id.clone(),
        })
        .collect();
    let more = refs.len() > DELIVERY_CAP;
    refs.truncate(DELIVERY_CAP);
    (refs, more)
}

/// The deliveries at `refs` (those that exist: an event it wants may have none yet), each read
/// by its key, [`DELIVERY_READS`] at once.
pub async fn deliveries(
    store: &DynamoTable,
    refs: &[DeliveryRef],
) -> Result<Vec<OutboundDelivery>> {
    let mut found = Vec::with_capacity(refs.len());
    for chunk in refs.chunks(DELIVERY_READS) {
        found.extend(try_join_all(chunk.iter().map(|r| store.delivery(r))).await?);
    }
    Ok(found.into_iter().flatten().collect())
}
