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
use inbox_core::outbox::store::OutboxStore;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::events::{Direction, EventQuery, Position, MAX_ROWS};
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
    /// When the read stopped at its cap with older events of the window unread: the time of
    /// the place it stopped at (every event from then on was read; a filter that matched none
    /// of the entries read still stops somewhere).
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
        let Some(older) = page.older else {
            return Ok(sample);
        };
        // Until the next page is read, everything older than its cursor is unread.
        sample.cut = Some(time_of(&older));
        query.from = Some((Direction::Older, older));
        if enough(&sample) {
            break;
        }
    }
    Ok(sample)
}

/// The time of a place in the events index (its first 13 digits, ms).
pub fn time_of(place: &Position) -> i64 {
    place
        .as_str()
        .get(..13)
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(0)
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
pub async fn deliveries<S: OutboxStore>(
    store: &S,
    refs: &[DeliveryRef],
) -> Result<Vec<OutboundDelivery>> {
    let mut found = Vec::with_capacity(refs.len());
    for chunk in refs.chunks(DELIVERY_READS) {
        found.extend(try_join_all(chunk.iter().map(|r| store.delivery(r))).await?);
    }
    Ok(found.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::domain::{EventId, EventType, SourceName, Status};
    use inbox_core::outbox::destination::DestinationId;
    use inbox_core::outbox::pattern::Pattern;

    fn message(id: &str, kind: &str) -> StoredMessage {
        StoredMessage {
            source: SourceName::parse("stripe").unwrap(),
            event_id: EventId::parse(id).unwrap(),
            event_type: Some(EventType::parse(kind).unwrap()),
            status: Status::Processed,
            received_at: 0,
            body: Vec::new(),
            body_sha256: String::new(),
            headers: Default::default(),
            attempts: 0,
            version: 0,
            lease_until: None,
            next_attempt_at: None,
            last_error: None,
            history: Vec::new(),
            history_total: 0,
            expires_at: None,
            provider_id: None,
            identity_error: None,
            batch: None,
            open_due: None,
            notice_pending: None,
        }
    }

    #[test]
    fn a_destination_reads_the_deliveries_of_the_newest_events_it_wants_up_to_its_cap() {
        let d = Destination::new(
            &DestinationId::parse("crm").unwrap(),
            "https://crm.example/h",
            vec![Pattern::parse("stripe:invoice.*").unwrap()],
            None,
            0,
        );
        let mut sample = Sample::default();
        for i in 0..(DELIVERY_CAP + 5) {
            sample
                .messages
                .push(message(&format!("evt_{i:03}"), "invoice.paid"));
            sample
                .messages
                .push(message(&format!("evt_c{i:03}"), "charge.failed"));
        }
        let (refs, more) = wanted(&d, &sample);
        assert_eq!(refs.len(), DELIVERY_CAP);
        assert!(more);
        assert_eq!(
            refs[0].event_id.as_str(),
            "evt_000",
            "newest first, as read"
        );
        assert!(refs.iter().all(|r| r.destination.as_str() == "crm"));
        assert!(refs
            .iter()
            .all(|r| !r.event_id.as_str().starts_with("evt_c")));
        sample.messages.truncate(4);
        assert_eq!(wanted(&d, &sample).0.len(), 2);
        assert!(!wanted(&d, &sample).1);
    }

    #[test]
    fn a_cursor_names_its_time() {
        let place = Position::parse("1796032800123#stripe#evt_1").unwrap();
        assert_eq!(time_of(&place), 1_796_032_800_123);
    }
}
