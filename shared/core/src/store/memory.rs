//! An in-memory store with the DynamoDB adapter's semantics (conditional insert, versioned
//! transitions, the open index, effects applied all-or-nothing with their conditions): for unit
//! tests and benchmarks only. `Raw` effects are recorded, not interpreted.

use super::schema::{open_shard, PENDING_GRACE_MS};
use super::{
    Applied, Delivery, DeliveryRecord, DueMessage, Effect, Inbox, Item, ItemStore, ListFilter,
    MessageStore, NewMessage, PutOutcome, StoreError, Transition,
};
use crate::domain::{MessageKey, Status};
use crate::message::{HistoryEntry, StoredMessage};
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

#[derive(Debug, Clone)]
struct Row {
    message: StoredMessage,
    /// `Some(due)` while in the open index.
    open_due: Option<i64>,
}

/// Messages, journal records, domain items and committed effects held in memory, with a switch
/// to simulate an outage and a count of write requests (what the DynamoDB adapter would send).
#[derive(Debug, Default)]
pub struct MemoryStore {
    rows: Mutex<HashMap<MessageKey, Row>>,
    deliveries: Mutex<Vec<Delivery>>,
    effects: Mutex<Vec<(MessageKey, Effect)>>,
    items: Mutex<BTreeMap<(String, String), Item>>,
    down: AtomicBool,
    writes: AtomicUsize,
}

/// The name the ingest path's tests and benchmarks know it by.
pub type MemoryInbox = MemoryStore;

#[derive(Debug, thiserror::Error)]
#[error("the in-memory store is switched off")]
struct SwitchedOff;

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every later request fail as `Unavailable` (or succeed again).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// Write requests received so far (failed ones included).
    pub fn write_requests(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// A stored message, if any.
    pub fn message(&self, key: &MessageKey) -> Option<StoredMessage> {
        lock(&self.rows).get(key).map(|r| r.message.clone())
    }

    /// How many messages are stored.
    pub fn message_count(&self) -> usize {
        lock(&self.rows).len()
    }

    /// All journal records, in arrival order.
    pub fn journal(&self) -> Vec<Delivery> {
        lock(&self.deliveries).clone()
    }

    /// Effects committed with transitions, in commit order.
    pub fn effects(&self) -> Vec<(MessageKey, Effect)> {
        lock(&self.effects).clone()
    }

    /// A domain item, read synchronously (test assertions).
    pub fn item(&self, pk: &str, sk: &str) -> Option<Item> {
        lock(&self.items)
            .get(&(pk.to_owned(), sk.to_owned()))
            .cloned()
    }

    /// Puts a domain item directly (test setup: an application's row before any event).
    pub fn put_item(&self, item: Item) {
        lock(&self.items).insert(key_of(&item), item);
    }

    fn up(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(Box::new(SwitchedOff)));
        }
        Ok(())
    }

    fn write(&self) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.up()
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn key_of(item: &Item) -> (String, String) {
    let text = |k: &str| {
        item.get(k)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .unwrap_or_default()
    };
    (text("pk"), text("sk"))
}

fn version_of(item: &Item) -> Option<u64> {
    item.get("version")
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

/// Whether an effect's condition holds.
fn effect_applies(items: &BTreeMap<(String, String), Item>, e: &Effect) -> bool {
    match e {
        Effect::Create(item) => !items.contains_key(&key_of(item)),
        Effect::Replace {
            item,
            expected_version,
        } => match (items.get(&key_of(item)), expected_version) {
            (None, None) => true,
            (Some(existing), Some(v)) => version_of(existing) == Some(*v),
            _ => false,
        },
        Effect::Adjust { .. } | Effect::Raw(_) => true,
    }
}

fn apply_effect(items: &mut BTreeMap<(String, String), Item>, e: Effect) {
    match e {
        Effect::Create(item) => {
            items.insert(key_of(&item), item);
        }
        Effect::Replace {
            mut item,
            expected_version,
        } => {
            let next = expected_version.map_or(0, |v| v + 1);
            item.insert("version".into(), AttributeValue::N(next.to_string()));
            items.insert(key_of(&item), item);
        }
        Effect::Adjust { pk, sk, add, set } => {
            let item = items.entry((pk.clone(), sk.clone())).or_insert_with(|| {
                Item::from([
                    ("pk".to_string(), AttributeValue::S(pk)),
                    ("sk".to_string(), AttributeValue::S(sk)),
                ])
            });
            for (attr, delta) in add {
                let current: i64 = item
                    .get(&attr)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                item.insert(attr, AttributeValue::N((current + delta).to_string()));
            }
            for (attr, value) in set {
                item.insert(attr, value);
            }
        }
        Effect::Raw(_) => {}
    }
}

fn stored(msg: &NewMessage) -> StoredMessage {
    StoredMessage {
        source: msg.key.source.clone(),
        event_id: msg.key.event_id.clone(),
        event_type: msg.event_type.clone(),
        status: Status::Pending,
        received_at: msg.received_at_ms,
        body: msg.body.clone(),
        body_sha256: msg.body_digest.to_hex(),
        headers: msg.headers.iter().cloned().collect(),
        attempts: 0,
        version: 0,
        lease_until: None,
        next_attempt_at: None,
        last_error: None,
        history: vec![HistoryEntry::new(
            msg.received_at_ms,
            Status::Pending,
            "received",
        )],
        expires_at: None,
    }
}

impl Inbox for MemoryStore {
    async fn put_if_absent(&self, msg: &NewMessage) -> Result<PutOutcome, StoreError> {
        self.write()?;
        let mut rows = lock(&self.rows);
        if let Some(existing) = rows.get(&msg.key) {
            let original_digest =
                crate::domain::BodyDigest::from_hex(&existing.message.body_sha256);
            return Ok(PutOutcome::AlreadyExists { original_digest });
        }
        let row = Row {
            message: stored(msg),
            open_due: Some(msg.received_at_ms + PENDING_GRACE_MS),
        };
        rows.insert(msg.key.clone(), row);
        Ok(PutOutcome::Inserted)
    }

    async fn journal_delivery(&self, delivery: &Delivery) -> Result<(), StoreError> {
        self.write()?;
        lock(&self.deliveries).push(delivery.clone());
        Ok(())
    }
}

impl MessageStore for MemoryStore {
    async fn get(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        self.up()?;
        Ok(self.message(key))
    }

    async fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        t: &Transition,
        effects: Vec<Effect>,
    ) -> Result<Applied, StoreError> {
        self.write()?;
        let mut rows = lock(&self.rows);
        let Some(row) = rows
            .get_mut(key)
            .filter(|r| r.message.version == expected_version)
        else {
            return Ok(Applied::MessageConflict);
        };
        let mut items = lock(&self.items);
        if !effects.iter().all(|e| effect_applies(&items, e)) {
            return Ok(Applied::EffectConflict);
        }
        for e in &effects {
            apply_effect(&mut items, e.clone());
        }
        let m = &mut row.message;
        m.status = t.to;
        m.attempts = t.attempts;
        m.version += 1;
        m.lease_until = t.lease_until;
        m.next_attempt_at = t.next_attempt_at;
        m.expires_at = t.expires_at;
        if t.last_error.is_some() {
            m.last_error = t.last_error.clone();
        }
        m.history.push(t.entry.clone());
        row.open_due = t.open_due;
        lock(&self.effects).extend(effects.into_iter().map(|e| (key.clone(), e)));
        Ok(Applied::Done)
    }

    async fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> Result<Vec<DueMessage>, StoreError> {
        self.up()?;
        let mut due: Vec<DueMessage> = lock(&self.rows)
            .iter()
            .filter_map(|(k, r)| {
                let d = r.open_due?;
                (d <= now && open_shard(k) == shard).then(|| DueMessage {
                    key: k.clone(),
                    status: r.message.status,
                    due: d,
                })
            })
            .collect();
        due.sort_by_key(|d| d.due);
        due.truncate(limit);
        Ok(due)
    }

    async fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        self.up()?;
        let mut found: Vec<StoredMessage> = lock(&self.rows)
            .values()
            .map(|r| &r.message)
            .filter(|m| filter.matches(m))
            .cloned()
            .collect();
        found.sort_by_key(|m| m.received_at);
        found.truncate(limit);
        Ok(found)
    }

    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<DeliveryRecord>, StoreError> {
        self.up()?;
        Ok(lock(&self.deliveries)
            .iter()
            .filter(|d| &d.key == key)
            .map(|d| DeliveryRecord {
                received_at: d.received_at_ms,
                body_sha256: d.body_digest.to_hex(),
                body_differs: d.body_differs,
            })
            .collect())
    }

    async fn purge(&self, key: &MessageKey, expected_version: u64) -> Result<Applied, StoreError> {
        self.write()?;
        let mut rows = lock(&self.rows);
        match rows.get(key) {
            Some(r) if r.message.version == expected_version && r.message.status.is_terminal() => {
                rows.remove(key);
                lock(&self.deliveries).retain(|d| &d.key != key);
                Ok(Applied::Done)
            }
            _ => Ok(Applied::MessageConflict),
        }
    }
}

impl ItemStore for MemoryStore {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        self.up()?;
        if sk == super::schema::MESSAGE_SK {
            // Message items live in `rows`: answer with their key attributes and status.
            let rows = lock(&self.rows);
            let found = rows
                .iter()
                .find(|(k, _)| super::schema::message_pk(k) == pk);
            return Ok(found.map(|(_, r)| {
                Item::from([
                    ("pk".to_string(), AttributeValue::S(pk.to_owned())),
                    ("sk".to_string(), AttributeValue::S(sk.to_owned())),
                    ("kind".to_string(), AttributeValue::S("message".into())),
                    (
                        "status".to_string(),
                        AttributeValue::S(r.message.status.as_str().into()),
                    ),
                ])
            }));
        }
        Ok(lock(&self.items)
            .get(&(pk.to_owned(), sk.to_owned()))
            .cloned())
    }

    async fn query_items(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.up()?;
        Ok(lock(&self.items)
            .range((pk.to_owned(), sk_prefix.to_owned())..)
            .take_while(|((p, s), _)| p == pk && s.starts_with(sk_prefix))
            .map(|(_, i)| i.clone())
            .collect())
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        self.up()?;
        Ok(lock(&self.items)
            .values()
            .filter(|i| {
                i.get("kind")
                    .and_then(|v| v.as_s().ok())
                    .map(String::as_str)
                    == Some(kind)
            })
            .cloned()
            .collect())
    }
}
