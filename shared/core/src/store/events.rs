//! Listing messages by time, a page at a time, through the events index (`events-index`,
//! [`schema::list_at`](super::schema::list_at)): what the console's Events page shows. A page
//! costs what it shows: one bounded query per index partition and one read of the rows shown,
//! whatever the size of the table (never a scan).
//!
//! What the index key serves: the order (newest first) and the time bounds (`since`, `until`,
//! and the page's cursor). What is filtered within the bounded page: `source`, `type` and the
//! search (`q`: part of an event id, or a provider id), on the attributes the index projects
//! (DynamoDB's `FilterExpression`: the entries it evaluates are read, and billed, whether they
//! match or not); the status is the caller's to filter on the rows read (the index does not
//! project it: a status changes, and an entry that changes is a write per transition).

use super::StoreError;
use crate::message::StoredMessage;
use std::future::Future;

/// A message's place in the events index: `{received ms, 13 digits}#{source}#{event id}`,
/// unique, and ordered as the messages are by time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position(String);

/// Why a text is not a position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a place in the events index: {0}")]
pub struct BadPosition(&'static str);

impl Position {
    /// The position of a stored message.
    pub fn of(m: &StoredMessage) -> Self {
        Self(super::schema::list_at(
            m.received_at,
            &crate::domain::MessageKey::new(m.source.clone(), m.event_id.clone()),
        ))
    }

    /// A position read back (from an index entry or a cursor), checked: 13 digits, a source
    /// name, an event id.
    pub fn parse(text: &str) -> Result<Self, BadPosition> {
        let (ms, rest) = text
            .split_at_checked(13)
            .ok_or(BadPosition("shorter than its time"))?;
        if !ms.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadPosition("its time is not 13 digits"));
        }
        let rest = rest.strip_prefix('#').ok_or(BadPosition("no source"))?;
        let (source, id) = rest.split_once('#').ok_or(BadPosition("no event id"))?;
        crate::domain::SourceName::parse(source).map_err(|_| BadPosition("not a source name"))?;
        crate::domain::EventId::parse(id).map_err(|_| BadPosition("not an event id"))?;
        Ok(Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key of the message at this position.
    pub fn key(&self) -> Result<crate::domain::MessageKey, BadPosition> {
        let rest = self
            .0
            .get(14..)
            .ok_or(BadPosition("shorter than its time"))?;
        let (source, id) = rest.split_once('#').ok_or(BadPosition("no event id"))?;
        Ok(crate::domain::MessageKey::new(
            crate::domain::SourceName::parse(source)
                .map_err(|_| BadPosition("not a source name"))?,
            crate::domain::EventId::parse(id).map_err(|_| BadPosition("not an event id"))?,
        ))
    }
}

/// The bound of a time, ms, as index text: before every position at that millisecond.
pub fn time_bound(ms: i64) -> String {
    format!("{:013}", ms.max(0))
}

/// The most rows a page holds (DynamoDB: its rows are one `BatchGetItem`).
pub const MAX_ROWS: usize = 100;

/// Which way a page goes from its cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Strictly older than the cursor (the next page).
    Older,
    /// Strictly newer than the cursor (the previous page).
    Newer,
}

/// What a page asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    pub source: Option<String>,
    pub event_type: Option<String>,
    /// Part of an event id, or a whole provider id.
    pub search: Option<String>,
    /// Received at or after, ms.
    pub since: Option<i64>,
    /// Received before, ms.
    pub until: Option<i64>,
    /// Where the page starts (`None`: the newest).
    pub from: Option<(Direction, Position)>,
    /// At most this many rows.
    pub rows: usize,
}

impl EventQuery {
    /// Whether `m` passes the filters the index entry answers (not the cursor, not the times).
    pub fn matches(&self, m: &StoredMessage) -> bool {
        self.source
            .as_deref()
            .is_none_or(|s| s == m.source.as_str())
            && self
                .event_type
                .as_deref()
                .is_none_or(|t| m.event_type.as_ref().is_some_and(|e| e.as_str() == t))
            && self.search.as_deref().is_none_or(|q| {
                m.event_id.as_str().contains(q) || m.provider_id.as_deref() == Some(q)
            })
    }

    /// The index's bounds for this query, as text: (at or after, before).
    pub fn bounds(&self) -> (Option<String>, Option<String>) {
        (self.since.map(time_bound), self.until.map(time_bound))
    }

    /// The sort-key range to read, inclusive at both ends (the cursor's own entry and an exact
    /// time bound are left out by [`Self::admits`]): (low, high).
    pub fn key_range(&self) -> (Option<String>, Option<String>) {
        let (mut lo, mut hi) = self.bounds();
        match &self.from {
            Some((Direction::Older, c)) => {
                hi = Some(hi.map_or(c.0.clone(), |h| h.min(c.0.clone())));
            }
            Some((Direction::Newer, c)) => {
                lo = Some(lo.map_or(c.0.clone(), |l| l.max(c.0.clone())));
            }
            None => {}
        }
        (lo, hi)
    }

    /// Whether a position is within the times and strictly past the cursor.
    pub fn admits(&self, p: &Position) -> bool {
        let (lo, hi) = self.bounds();
        lo.is_none_or(|l| p.0 >= l)
            && hi.is_none_or(|h| p.0 < h)
            && match &self.from {
                None => true,
                Some((Direction::Older, c)) => p < c,
                Some((Direction::Newer, c)) => p > c,
            }
    }

    /// The direction the index is read in.
    pub fn direction(&self) -> Direction {
        self.from.as_ref().map_or(Direction::Older, |(d, _)| *d)
    }

    /// The same filters, from the newest.
    pub fn first_page(&self) -> Self {
        Self {
            from: None,
            ..self.clone()
        }
    }
}

/// One page: the messages (without their bodies), newest first, and where the pages beside it
/// start.
#[derive(Debug, Clone, Default)]
pub struct EventPage {
    pub messages: Vec<StoredMessage>,
    /// The next page's cursor (older than it); `None`: nothing older matches.
    pub older: Option<Position>,
    /// The previous page's cursor (newer than it); `None`: this is the newest page.
    pub newer: Option<Position>,
    /// What DynamoDB says the page consumed, read capacity units (0 in memory).
    pub read_units: f64,
    /// Requests sent for it.
    pub requests: usize,
}

/// What one index partition answered: the matching entries it returned, and, when it has more,
/// the last entry it evaluated (everything beyond is unseen).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardRead {
    pub found: Vec<Position>,
    pub frontier: Option<Position>,
}

/// What the partitions' answers make one page: the positions shown (in `dir`'s order), and
/// where the page after them starts (`None`: every partition is exhausted past them).
///
/// An entry is known in order only if no partition may still hold one before it: past the
/// furthest frontier (in `dir`), nothing is unseen. Positions are unique, so the frontier's own
/// entry is complete and may be shown.
pub fn merge(
    reads: Vec<ShardRead>,
    dir: Direction,
    rows: usize,
) -> (Vec<Position>, Option<Position>) {
    let horizon = match dir {
        Direction::Older => reads.iter().filter_map(|r| r.frontier.clone()).max(),
        Direction::Newer => reads.iter().filter_map(|r| r.frontier.clone()).min(),
    };
    let mut known: Vec<Position> = reads
        .into_iter()
        .flat_map(|r| r.found)
        .filter(|p| match (&horizon, dir) {
            (None, _) => true,
            (Some(h), Direction::Older) => p >= h,
            (Some(h), Direction::Newer) => p <= h,
        })
        .collect();
    known.sort();
    if dir == Direction::Older {
        known.reverse();
    }
    let more = known.len() > rows;
    known.truncate(rows);
    let next = if more { known.last().cloned() } else { horizon };
    (known, next)
}

/// A page's positions, newest first, and the cursors beside it: (shown, older, newer). `None`
/// when a page going newer reached the newest entries: the caller shows the first page instead
/// (a full one, with no newer page).
pub type Arranged = (Vec<Position>, Option<Position>, Option<Position>);

/// Arranges the partitions' answers to `query` into its page ([`merge`], then the cursors).
pub fn arrange(query: &EventQuery, reads: Vec<ShardRead>) -> Option<Arranged> {
    let rows = query.rows.max(1);
    match &query.from {
        None => {
            let (shown, older) = merge(reads, Direction::Older, rows);
            Some((shown, older, None))
        }
        Some((Direction::Older, from)) => {
            let (shown, older) = merge(reads, Direction::Older, rows);
            let newer = shown.first().cloned().unwrap_or_else(|| from.clone());
            Some((shown, older, Some(newer)))
        }
        Some((Direction::Newer, from)) => {
            let (mut shown, newer) = merge(reads, Direction::Newer, rows);
            newer.as_ref()?;
            let older = shown.first().cloned().unwrap_or_else(|| from.clone());
            shown.reverse();
            Some((shown, Some(older), newer))
        }
    }
}

/// The events index.
pub trait EventIndex: Send + Sync {
    /// One page of messages by `query`, newest first.
    fn page(
        &self,
        query: &EventQuery,
    ) -> impl Future<Output = Result<EventPage, StoreError>> + Send;

    /// How many messages the index holds, as the store last counted it (DynamoDB: its
    /// `DescribeTable` figure, updated about every six hours; no read of the index).
    fn estimate(&self) -> impl Future<Output = Result<Option<u64>, StoreError>> + Send;
}

#[cfg(test)]
mod tests;
