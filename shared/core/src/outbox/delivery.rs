//! A delivery: one event to one destination, its status and its attempt journal; the item that
//! represents it (one per (destination, event): its key is the dedupe, see [`super::schema`]),
//! and the fan-out item of an event with more destinations than fit its transaction.

use super::destination::DestinationId;
use super::schema::*;
use crate::domain::{EventId, EventType, MessageKey, SourceName};
use crate::store::attr::{n, s};
use crate::store::schema::{EXPIRES_AT, KIND, OPEN_DUE, OPEN_SHARD, PK, SK};
use crate::store::Item;
use serde::{Deserialize, Serialize};

/// How much of a response body is journaled per attempt.
pub const BODY_HEAD_BYTES: usize = 4096;
/// How many attempts the journal keeps (the oldest go first; `journal_dropped` counts them).
pub const MAX_JOURNAL: usize = 30;
/// The most bytes of response bodies the whole journal keeps: older attempts lose their body
/// first (their status, error and outcome stay). With [`BODY_HEAD_BYTES`] per attempt, a
/// receiver's answers cannot grow the item (and every write of it) beyond this.
pub const JOURNAL_BODY_BYTES: usize = 16 * 1024;

/// The journaled head of a response body: at most [`BODY_HEAD_BYTES`] bytes of UTF-8, cut on a
/// character boundary AFTER the lossy conversion (each invalid byte becomes a 3-byte U+FFFD, so
/// cutting only before it would let 4 KiB of `0xFF` become 12 KiB).
pub fn body_head(body: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(&body[..body.len().min(BODY_HEAD_BYTES)]).into_owned();
    if text.len() > BODY_HEAD_BYTES {
        let mut end = BODY_HEAD_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    /// Waiting for its first attempt (or deferred: rate, circuit, paused destination).
    Pending,
    /// A worker holds it (a lease) and is sending it.
    Delivering,
    /// An attempt failed; due again at `next_attempt_at`.
    Retrying,
    /// A 2xx answer; terminal.
    Delivered,
    /// The schedule is exhausted or the failure is permanent; terminal until retried.
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivering => "delivering",
            Self::Retrying => "retrying",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Delivered | Self::Failed)
    }

    /// Parses the stored name.
    pub fn parse(text: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
    }
}

/// One attempt, as journaled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// When it started, ms.
    pub at: i64,
    /// 1-based within the current round (an operator's retry starts a new round).
    pub attempt: u32,
    /// The HTTP status, if an answer came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The head of the response body ([`body_head`]: lossy UTF-8, at most [`BODY_HEAD_BYTES`]
    /// bytes); emptied on older attempts beyond [`JOURNAL_BODY_BYTES`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub body: String,
    /// What was decided: `delivered`, `retry in 5s`, `failed`, …
    #[serde(default)]
    pub outcome: String,
}

/// An operator's or a worker's note on a delivery that is not an attempt (deferred, retried by …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub at: i64,
    pub note: String,
}

/// A delivery item, read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboundDelivery {
    pub destination: DestinationId,
    pub source: SourceName,
    pub event_id: EventId,
    #[serde(default)]
    pub event_type: Option<EventType>,
    pub webhook_id: String,
    pub status: DeliveryStatus,
    /// Attempts in the current round.
    #[serde(default)]
    pub attempts: u32,
    /// When the event became terminal and the delivery was written, ms.
    pub created_at: i64,
    #[serde(default)]
    pub next_attempt_at: Option<i64>,
    #[serde(default)]
    pub lease_until: Option<i64>,
    #[serde(default)]
    pub delivered_at: Option<i64>,
    #[serde(default)]
    pub last_status: Option<u16>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub journal: Vec<AttemptRecord>,
    #[serde(default)]
    pub journal_dropped: u32,
    #[serde(default)]
    pub notes: Vec<Note>,
    #[serde(default)]
    pub version: u64,
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// A failed delivery whose failure notice is not yet known to be sent: it stays in the open
    /// index, due at the notice's deadline, until the notice is sent (by the worker that failed
    /// it, else by the worker the sweep re-drives it to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice_pending: Option<PendingDeliveryNotice>,
    /// Parked in its destination's backlog ([`super::parking`]): why and since when. While
    /// parked (and pending or retrying) it is in the destination's `PARKED#…` partition of the
    /// open index, not in a swept shard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<Parked>,
}

/// Why a delivery waits in its destination's backlog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParkReason {
    /// The destination's circuit is open: released when a probe closes it.
    Circuit,
    /// The destination is paused: released when it is resumed.
    Paused,
}

impl ParkReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Circuit => "circuit open",
            Self::Paused => "destination paused",
        }
    }
}

/// A delivery's parking: the reason (stored, not inferred from its notes) and since when, ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parked {
    pub reason: ParkReason,
    pub since: i64,
}

/// The failure notice a failed delivery waits to have sent: when it failed (the notice says it)
/// and until when its sender has it (then the sweep hands it to another worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingDeliveryNotice {
    /// ms since the epoch.
    pub failed_at: i64,
    /// ms since the epoch.
    pub deadline: i64,
}

/// Which delivery: the queue message body and the identity of a delivery.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeliveryRef {
    pub destination: DestinationId,
    pub source: SourceName,
    pub event_id: EventId,
}

impl DeliveryRef {
    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }

    pub fn pk(&self) -> String {
        delivery_pk(self.destination.as_str(), &self.key())
    }
}

impl std::fmt::Display for DeliveryRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ← {}/{}",
            self.destination, self.source, self.event_id
        )
    }
}

impl OutboundDelivery {
    /// A new delivery of `key` (of `event_type`) to `destination`, created at `now`.
    pub fn new(
        destination: &DestinationId,
        key: &MessageKey,
        event_type: Option<EventType>,
        now: i64,
    ) -> Self {
        Self {
            destination: destination.clone(),
            source: key.source.clone(),
            event_id: key.event_id.clone(),
            event_type,
            webhook_id: webhook_id(destination.as_str(), key),
            status: DeliveryStatus::Pending,
            attempts: 0,
            created_at: now,
            next_attempt_at: None,
            lease_until: None,
            delivered_at: None,
            last_status: None,
            last_error: None,
            journal: Vec::new(),
            journal_dropped: 0,
            notes: Vec::new(),
            version: 0,
            expires_at: None,
            notice_pending: None,
            parked: None,
        }
    }

    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }

    pub fn reference(&self) -> DeliveryRef {
        DeliveryRef {
            destination: self.destination.clone(),
            source: self.source.clone(),
            event_id: self.event_id.clone(),
        }
    }

    /// When it wants a worker next: `None` when terminal (a failed one whose notice is pending:
    /// the notice's deadline).
    pub fn due_at(&self) -> Option<i64> {
        match self.status {
            DeliveryStatus::Failed => self.notice_pending.map(|p| p.deadline),
            DeliveryStatus::Delivered => None,
            DeliveryStatus::Delivering => self.lease_until,
            DeliveryStatus::Pending | DeliveryStatus::Retrying => {
                Some(self.next_attempt_at.unwrap_or(self.created_at))
            }
        }
    }

    /// Appends an attempt, dropping the oldest beyond [`MAX_JOURNAL`] and the bodies of the
    /// oldest beyond [`JOURNAL_BODY_BYTES`].
    pub fn journal_attempt(&mut self, record: AttemptRecord) {
        self.journal.push(record);
        while self.journal.len() > MAX_JOURNAL {
            self.journal.remove(0);
            self.journal_dropped = self.journal_dropped.saturating_add(1);
        }
        let mut kept = 0usize;
        for a in self.journal.iter_mut().rev() {
            kept = kept.saturating_add(a.body.len());
            if kept > JOURNAL_BODY_BYTES {
                a.body.clear();
            }
        }
    }

    /// Adds a note (the last 20 are kept).
    pub fn note(&mut self, at: i64, note: impl Into<String>) {
        self.notes.push(Note {
            at,
            note: note.into(),
        });
        if self.notes.len() > 20 {
            self.notes.remove(0);
        }
    }

    /// Whether it waits in its destination's backlog (parked, and pending or retrying).
    pub fn is_parked(&self) -> bool {
        self.parked.is_some()
            && matches!(
                self.status,
                DeliveryStatus::Pending | DeliveryStatus::Retrying
            )
    }

    /// The item: every field, the keys, and the open-index attributes while not terminal (a
    /// parked one in its destination's backlog, ordered by its creation).
    pub fn to_item(&self) -> Result<Item, serde_dynamo::Error> {
        let mut item: Item = serde_dynamo::to_item(self)?;
        let pk = delivery_pk(self.destination.as_str(), &self.key());
        match self.due_at() {
            Some(_) if self.is_parked() => {
                item.insert(
                    OPEN_SHARD.into(),
                    s(parked_shard(self.destination.as_str())),
                );
                item.insert(OPEN_DUE.into(), n(self.created_at));
            }
            Some(due) => {
                item.insert(OPEN_SHARD.into(), s(outbox_shard(&pk)));
                item.insert(OPEN_DUE.into(), n(due));
            }
            None => {
                item.insert(OPEN_SHARD.into(), s(done_shard(&pk)));
                item.insert(
                    OPEN_DUE.into(),
                    n(self.delivered_at.unwrap_or(self.created_at)),
                );
            }
        }
        if self.expires_at.is_none() {
            item.remove(EXPIRES_AT);
        }
        item.insert(PK.into(), s(pk));
        item.insert(SK.into(), s(DELIVERY_SK));
        item.insert(KIND.into(), s(KIND_OUTBOUND));
        Ok(item)
    }

    /// Reads a delivery item.
    pub fn from_item(item: Item) -> Result<Self, serde_dynamo::Error> {
        serde_dynamo::from_item(item)
    }
}

/// The fan-out of one event to destinations that did not fit its transaction: expanded into
/// delivery items by the deliver function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FanoutItem {
    pub source: SourceName,
    pub event_id: EventId,
    #[serde(default)]
    pub event_type: Option<EventType>,
    /// The destination ids matched when the event became terminal.
    pub destinations: Vec<DestinationId>,
    pub created_at: i64,
    /// Set once every delivery exists.
    #[serde(default)]
    pub expanded_at: Option<i64>,
}

impl FanoutItem {
    pub fn key(&self) -> MessageKey {
        MessageKey::new(self.source.clone(), self.event_id.clone())
    }

    /// The item (in the open index until expanded, due a minute after creation: the sweep
    /// re-drives an expansion whose stream record was lost).
    pub fn to_item(&self) -> Result<Item, serde_dynamo::Error> {
        let mut item: Item = serde_dynamo::to_item(self)?;
        let pk = fanout_pk(&self.key());
        match self.expanded_at {
            None => {
                item.insert(OPEN_SHARD.into(), s(outbox_shard(&pk)));
                item.insert(OPEN_DUE.into(), n(self.created_at + 60_000));
            }
            Some(at) => {
                item.insert(OPEN_SHARD.into(), s(done_shard(&pk)));
                item.insert(OPEN_DUE.into(), n(at));
            }
        }
        item.insert(PK.into(), s(pk));
        item.insert(SK.into(), s(FANOUT_SK));
        item.insert(KIND.into(), s(KIND_FANOUT));
        Ok(item)
    }

    pub fn from_item(item: Item) -> Result<Self, serde_dynamo::Error> {
        serde_dynamo::from_item(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::destination::did;
    use crate::store::attr::{get_n, get_s};

    fn key() -> MessageKey {
        MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse("evt_1").unwrap(),
        )
    }

    #[test]
    fn items_carry_keys_and_the_open_index_while_open() {
        let mut d = OutboundDelivery::new(&did("crm"), &key(), None, 1_000);
        let item = d.to_item().unwrap();
        assert_eq!(get_s(&item, "pk"), Some("OUT#crm#stripe#evt_1"));
        assert_eq!(get_s(&item, "sk"), Some("OUT"));
        assert_eq!(get_s(&item, "kind"), Some("outbound"));
        assert_eq!(get_s(&item, "status"), Some("pending"));
        assert_eq!(get_n(&item, "open_due"), Some(1_000));
        assert!(get_s(&item, "open_shard").unwrap().starts_with("OUTBOX#"));
        assert_eq!(OutboundDelivery::from_item(item).unwrap(), d);
        d.status = DeliveryStatus::Retrying;
        d.next_attempt_at = Some(9_000);
        assert_eq!(get_n(&d.to_item().unwrap(), "open_due"), Some(9_000));
        d.status = DeliveryStatus::Delivering;
        d.lease_until = Some(7_000);
        assert_eq!(get_n(&d.to_item().unwrap(), "open_due"), Some(7_000));
        d.status = DeliveryStatus::Delivered;
        d.expires_at = Some(42);
        d.delivered_at = Some(8_000);
        let done = d.to_item().unwrap();
        assert_eq!(
            get_s(&done, "open_shard"),
            Some(done_shard("OUT#crm#stripe#evt_1").as_str()),
            "finished: out of the swept shards"
        );
        assert!(get_s(&done, "open_shard")
            .unwrap()
            .starts_with("OUTBOX#DONE#"));
        assert_eq!(get_n(&done, "open_due"), Some(8_000));
        // Every attribute of a new delivery is still there once it is done: an `Ensure` of the
        // new one would change nothing.
        let fresh = OutboundDelivery::new(&did("crm"), &key(), None, 1_000)
            .to_item()
            .unwrap();
        assert!(
            fresh.keys().all(|k| done.contains_key(k)),
            "{:?}",
            fresh
                .keys()
                .filter(|k| !done.contains_key(*k))
                .collect::<Vec<_>>()
        );
        assert_eq!(get_n(&done, "expires_at"), Some(42));
        assert_eq!(
            DeliveryStatus::parse("delivered"),
            Some(DeliveryStatus::Delivered)
        );
        assert_eq!(DeliveryStatus::parse("nope"), None);
    }

    #[test]
    fn a_failed_delivery_stays_open_until_its_notice_is_sent() {
        let mut d = OutboundDelivery::new(&did("crm"), &key(), None, 1_000);
        d.status = DeliveryStatus::Failed;
        d.notice_pending = Some(PendingDeliveryNotice {
            failed_at: 2_000,
            deadline: 32_000,
        });
        let item = d.to_item().unwrap();
        let open = get_s(&item, "open_shard").unwrap();
        assert!(
            open.starts_with("OUTBOX#") && !open.starts_with(DONE_SHARD),
            "{open}"
        );
        assert_eq!(get_n(&item, "open_due"), Some(32_000));
        assert_eq!(OutboundDelivery::from_item(item).unwrap(), d);
        d.notice_pending = None;
        let sent = d.to_item().unwrap();
        assert!(get_s(&sent, "open_shard")
            .unwrap()
            .starts_with(&format!("{DONE_SHARD}#")));
        assert!(!sent.contains_key("notice_pending"));
    }

    #[test]
    fn a_parked_delivery_is_in_its_destinations_backlog_ordered_by_creation() {
        let mut d = OutboundDelivery::new(&did("crm"), &key(), None, 1_000);
        d.status = DeliveryStatus::Retrying;
        d.attempts = 2;
        d.next_attempt_at = Some(9_000);
        d.parked = Some(Parked {
            reason: ParkReason::Circuit,
            since: 5_000,
        });
        let item = d.to_item().unwrap();
        assert_eq!(get_s(&item, "open_shard"), Some("PARKED#crm"));
        assert_eq!(get_n(&item, "open_due"), Some(1_000), "oldest first");
        assert_eq!(
            get_n(&item, "next_attempt_at"),
            Some(9_000),
            "the schedule kept"
        );
        assert_eq!(OutboundDelivery::from_item(item).unwrap(), d);
        // Claimed or finished: the parking no longer places it.
        d.status = DeliveryStatus::Delivering;
        d.lease_until = Some(7_000);
        let claimed = d.to_item().unwrap();
        assert!(get_s(&claimed, "open_shard")
            .unwrap()
            .starts_with("OUTBOX#"));
        assert_eq!(get_n(&claimed, "open_due"), Some(7_000));
        d.parked = None;
        d.status = DeliveryStatus::Pending;
        assert!(!d.to_item().unwrap().contains_key("parked"));
    }

    #[test]
    fn the_journal_is_bounded() {
        let mut d = OutboundDelivery::new(&did("crm"), &key(), None, 0);
        for i in 0..(MAX_JOURNAL as u32 + 5) {
            d.journal_attempt(AttemptRecord {
                at: i64::from(i),
                attempt: i + 1,
                status: Some(500),
                duration_ms: 1,
                error: None,
                body: String::new(),
                outcome: "retry".into(),
            });
        }
        assert_eq!((d.journal.len(), d.journal_dropped), (MAX_JOURNAL, 5));
        assert_eq!(d.journal[0].attempt, 6);
    }

    #[test]
    fn response_heads_are_bounded_in_bytes() {
        // 4 KiB of 0xFF: each byte is a U+FFFD (3 bytes) after the conversion; the head is cut
        // after it, on a character boundary.
        let head = body_head(&[0xFF; 4096]);
        assert!(head.len() <= BODY_HEAD_BYTES, "{} bytes", head.len());
        assert_eq!(head, "\u{FFFD}".repeat(BODY_HEAD_BYTES / 3));
        assert_eq!(body_head(b"ok"), "ok");
        let long = "é".repeat(5000);
        assert_eq!(body_head(long.as_bytes()), "é".repeat(BODY_HEAD_BYTES / 2));
        assert_eq!(body_head(&[b'a'; 9000]).len(), BODY_HEAD_BYTES);
        // Thirty such answers: the journal keeps the newest bodies up to its budget.
        let mut d = OutboundDelivery::new(&did("crm"), &key(), None, 0);
        for i in 0..MAX_JOURNAL as u32 {
            d.journal_attempt(AttemptRecord {
                at: i64::from(i),
                attempt: i + 1,
                status: Some(500),
                duration_ms: 1,
                error: None,
                body: body_head(&[0xFF; 4096]),
                outcome: "retry".into(),
            });
        }
        let bytes: usize = d.journal.iter().map(|a| a.body.len()).sum();
        assert!(bytes <= JOURNAL_BODY_BYTES, "{bytes} bytes of bodies");
        assert!(
            !d.journal.last().unwrap().body.is_empty(),
            "the newest keeps its body"
        );
        assert!(d.journal[0].body.is_empty(), "the oldest lost theirs");
        assert_eq!(d.journal.len(), MAX_JOURNAL, "but not their attempts");
    }

    #[test]
    fn fanout_items() {
        let f = FanoutItem {
            source: key().source,
            event_id: key().event_id,
            event_type: None,
            destinations: vec![did("a"), did("b")],
            created_at: 1_000,
            expanded_at: None,
        };
        let item = f.to_item().unwrap();
        assert_eq!(get_s(&item, "pk"), Some("FAN#stripe#evt_1"));
        assert_eq!(get_s(&item, "sk"), Some("FAN"));
        assert_eq!(get_n(&item, "open_due"), Some(61_000));
        assert_eq!(FanoutItem::from_item(item).unwrap(), f);
    }
}
