//! An in-memory store with the DynamoDB adapter's semantics (conditional insert, versioned
//! transitions, the open index, effects applied all-or-nothing with their conditions): for unit
//! tests and benchmarks only (the `test-util` feature). `Raw` effects are recorded, not
//! interpreted. Repeated deliveries (journal and counters): `memory/journal.rs`; applications'
//! due items in the open index: `memory/due_index.rs`; the outbox's deliveries and destination
//! state (with the same conditions as on DynamoDB): `memory/outbox.rs`.

mod due_index;
mod events;
mod journal;
mod outbox;
mod row;

use row::Row;

use super::attr::{get_n, get_s, n, s};
use super::schema::open_shard;
use super::{
    Applied, DueMessage, Effect, Inbox, Item, ItemStore, ItemWriter, ListFilter, MessageStore,
    NewMessage, PutOutcome, Repeat, RepeatCount, RepeatRecord, StoreError, TooManyEffects,
    Transition, MAX_COMMIT_EFFECTS,
};
use crate::clock::Millis;
use crate::domain::MessageKey;
use crate::message::StoredMessage;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Messages, journal records, domain items and committed effects held in memory, with a switch
/// to simulate an outage and a count of write requests (what the DynamoDB adapter would send).
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Boxed: a row is a few hundred bytes, and growing the map then moves pointers, not rows.
    rows: Mutex<HashMap<MessageKey, Box<Row>>>,
    deliveries: Mutex<Vec<Repeat>>,
    delivery_counts: Mutex<HashMap<MessageKey, u64>>,
    effects: Mutex<Vec<(MessageKey, Effect)>>,
    items: Mutex<BTreeMap<(String, String), Item>>,
    circuit_openings: AtomicUsize,
    down: AtomicBool,
    circuit_down: AtomicBool,
    writes: AtomicUsize,
    lose_replies: AtomicUsize,
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

    /// Makes every later circuit write of the outbox fail as `Unavailable` (or succeed again):
    /// a failure between a delivery's write and the next.
    pub fn set_circuit_down(&self, down: bool) {
        self.circuit_down.store(down, Ordering::SeqCst);
    }

    /// The next `n` transitions are applied but answered as conflicts: what a lost answer looks
    /// like once the SDK retried the write and met its own version condition.
    pub fn lose_replies(&self, n: usize) {
        self.lose_replies.store(n, Ordering::SeqCst);
    }

    /// Write requests received so far (failed ones included).
    pub fn write_requests(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// A stored message, if any.
    pub fn message(&self, key: &MessageKey) -> Option<StoredMessage> {
        lock(&self.rows).get(key).map(|r| r.message().into_owned())
    }

    /// How many messages are stored.
    pub fn message_count(&self) -> usize {
        lock(&self.rows).len()
    }

    /// Effects committed with transitions, in commit order.
    pub fn effects(&self) -> Vec<(MessageKey, Effect)> {
        lock(&self.effects).clone()
    }

    /// An application's item, read synchronously (test assertions).
    pub fn item(&self, pk: &str, sk: &str) -> Option<Item> {
        lock(&self.items)
            .get(&(pk.to_owned(), sk.to_owned()))
            .cloned()
    }

    /// Puts an application's item directly (test setup: state before any event).
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
    let text = |k: &str| get_s(item, k).unwrap_or_default().to_owned();
    (text("pk"), text("sk"))
}

fn version_of(item: &Item) -> Option<u64> {
    get_n(item, "version").and_then(|v| u64::try_from(v).ok())
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
        Effect::AdjustIf { pk, sk, bounds, .. } => items
            .get(&(pk.clone(), sk.clone()))
            .is_some_and(|item| bounds.iter().all(|b| b.holds(get_n(item, b.attr())))),
        Effect::Ensure(_) | Effect::CreateIfAbsent(_) | Effect::Adjust { .. } | Effect::Raw(_) => {
            true
        }
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
            item.insert("version".into(), n(next as i64));
            items.insert(key_of(&item), item);
        }
        Effect::Adjust { pk, sk, add, set }
        | Effect::AdjustIf {
            pk, sk, add, set, ..
        } => {
            let item = items.entry((pk.clone(), sk.clone())).or_insert_with(|| {
                Item::from([("pk".to_string(), s(pk)), ("sk".to_string(), s(sk))])
            });
            for (attr, delta) in add {
                let current = get_n(item, &attr).unwrap_or(0);
                item.insert(attr, n(current + delta));
            }
            for (attr, value) in set {
                item.insert(attr, value);
            }
        }
        Effect::Ensure(item) | Effect::CreateIfAbsent(item) => {
            items.entry(key_of(&item)).or_insert(item);
        }
        Effect::Raw(_) => {}
    }
}

impl Inbox for MemoryStore {
    async fn put_if_absent(&self, msg: &NewMessage) -> Result<PutOutcome, StoreError> {
        self.write()?;
        // One lookup (the key hashed once) for the check and the insert.
        match lock(&self.rows).entry(msg.key.clone()) {
            Entry::Occupied(existing) => {
                let original = super::Original::Body(existing.get().body().to_vec());
                Ok(PutOutcome::AlreadyExists { original })
            }
            Entry::Vacant(slot) => {
                slot.insert(Box::new(Row::new(msg)));
                Ok(PutOutcome::Inserted)
            }
        }
    }

    async fn journal_repeat(&self, delivery: &Repeat) -> Result<(), StoreError> {
        self.write()?;
        lock(&self.deliveries).push(delivery.clone());
        Ok(())
    }

    async fn count_repeat(
        &self,
        key: &MessageKey,
        expected: Option<u64>,
        _at: Millis,
        _expires_at: Millis,
    ) -> Result<RepeatCount, StoreError> {
        self.write()?;
        Ok(self.count_now(key, expected))
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
            .filter(|r| r.version() == expected_version)
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
        row.apply(key, t);
        lock(&self.effects).extend(effects.into_iter().map(|e| (key.clone(), e)));
        let lost = self
            .lose_replies
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        Ok(if lost {
            Applied::MessageConflict
        } else {
            Applied::Done
        })
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
                    status: r.status(),
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
            .map(|r| r.message())
            .filter(|m| filter.matches(m))
            .map(std::borrow::Cow::into_owned)
            .collect();
        found.sort_by_key(|m| m.received_at);
        found.truncate(limit);
        Ok(found)
    }

    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<RepeatRecord>, StoreError> {
        self.up()?;
        Ok(self.records_of(key))
    }

    async fn repeat_count(&self, key: &MessageKey) -> Result<u64, StoreError> {
        self.up()?;
        Ok(self.delivery_counter(key).unwrap_or(0))
    }

    async fn purge(&self, key: &MessageKey, expected_version: u64) -> Result<Applied, StoreError> {
        self.write()?;
        let mut rows = lock(&self.rows);
        match rows.get(key) {
            Some(r) if r.version() == expected_version && r.status().is_terminal() => {
                rows.remove(key);
                lock(&self.deliveries).retain(|d| &d.key != key);
                lock(&self.delivery_counts).remove(key);
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
            if let Some((_, r)) = found {
                return Ok(Some(Item::from([
                    ("pk".to_string(), s(pk)),
                    ("sk".to_string(), s(sk)),
                    ("kind".to_string(), s("message")),
                    ("status".to_string(), s(r.status().as_str())),
                ])));
            }
            // A message an application's transaction created (an effect): kept as an item.
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
            .filter(|i| get_s(i, "kind") == Some(kind))
            .cloned()
            .collect())
    }
}

impl ItemWriter for MemoryStore {
    async fn commit(&self, effects: Vec<Effect>) -> Result<Applied, StoreError> {
        if effects.is_empty() {
            return Ok(Applied::Done);
        }
        self.write()?;
        if effects.len() > MAX_COMMIT_EFFECTS {
            return Err(StoreError::Rejected(Box::new(TooManyEffects(
                effects.len(),
            ))));
        }
        let mut items = lock(&self.items);
        if !effects.iter().all(|e| effect_applies(&items, e)) {
            return Ok(Applied::EffectConflict);
        }
        for e in effects {
            apply_effect(&mut items, e);
        }
        Ok(Applied::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Bound;
    use super::*;

    fn item(pk: &str) -> Item {
        Item::from([("pk".to_string(), s(pk)), ("sk".to_string(), s("X"))])
    }

    #[tokio::test]
    async fn a_commit_applies_every_effect_or_none() {
        let store = MemoryStore::new();
        store.put_item(item("taken"));
        let add = |pk: &str| Effect::Adjust {
            pk: pk.into(),
            sk: "X".into(),
            add: vec![("n".into(), 2)],
            set: Vec::new(),
        };
        let applied = store
            .commit(vec![
                Effect::Create(item("new")),
                add("counter"),
                Effect::Create(item("taken")),
            ])
            .await
            .unwrap();
        assert_eq!(applied, Applied::EffectConflict);
        assert_eq!(
            (store.item("new", "X"), store.item("counter", "X")),
            (None, None)
        );
        let applied = store
            .commit(vec![
                Effect::Create(item("new")),
                add("counter"),
                add("counter"),
            ])
            .await
            .unwrap();
        assert_eq!(applied, Applied::Done);
        assert!(store.item("new", "X").is_some());
        assert_eq!(
            store.item("counter", "X").and_then(|i| get_n(&i, "n")),
            Some(4)
        );
        let replace = |v| Effect::Replace {
            item: item("row"),
            expected_version: v,
        };
        assert_eq!(
            store.commit(vec![replace(Some(0))]).await.unwrap(),
            Applied::EffectConflict
        );
        assert_eq!(
            store.commit(vec![replace(None)]).await.unwrap(),
            Applied::Done
        );
        assert_eq!(
            store.commit(vec![replace(None)]).await.unwrap(),
            Applied::EffectConflict
        );
        assert_eq!(
            store.commit(vec![replace(Some(0))]).await.unwrap(),
            Applied::Done
        );
        assert_eq!(
            store.item("row", "X").and_then(|i| get_n(&i, "version")),
            Some(1)
        );
        let writes = store.write_requests();
        assert_eq!(store.commit(Vec::new()).await.unwrap(), Applied::Done);
        assert_eq!(
            store.write_requests(),
            writes,
            "nothing to write, no request"
        );
        let too_many = (0..=MAX_COMMIT_EFFECTS)
            .map(|i| add(&format!("c{i}")))
            .collect();
        assert!(matches!(
            store.commit(too_many).await,
            Err(StoreError::Rejected(_))
        ));
        assert!(
            store.effects().is_empty(),
            "no message transitions were involved"
        );
    }

    #[tokio::test]
    async fn a_bounded_adjustment_applies_only_while_its_bounds_hold() {
        let store = MemoryStore::new();
        let adjust = |held: i64, bounds: Vec<Bound>| Effect::AdjustIf {
            pk: "w".into(),
            sk: "X".into(),
            add: vec![("held".into(), held)],
            set: vec![("seen".into(), s("yes"))],
            bounds,
        };
        let at_most = |v| {
            vec![
                Bound::AtLeast("balance".into(), 10),
                Bound::AtMost("held".into(), v),
            ]
        };
        assert_eq!(
            store.commit(vec![adjust(1, at_most(5))]).await.unwrap(),
            Applied::EffectConflict,
            "the item must exist"
        );
        let mut account = item("w");
        account.insert("balance".into(), n(10));
        store.put_item(account);
        assert_eq!(
            store.commit(vec![adjust(1, at_most(5))]).await.unwrap(),
            Applied::EffectConflict,
            "an absent attribute fails its bound"
        );
        store
            .commit(vec![Effect::Adjust {
                pk: "w".into(),
                sk: "X".into(),
                add: vec![("held".into(), 0)],
                set: Vec::new(),
            }])
            .await
            .unwrap();
        for _ in 0..3 {
            assert_eq!(
                store.commit(vec![adjust(2, at_most(4))]).await.unwrap(),
                Applied::Done
            );
        }
        assert_eq!(
            store.commit(vec![adjust(2, at_most(4))]).await.unwrap(),
            Applied::EffectConflict,
            "held is 6 now: above the bound"
        );
        assert_eq!(
            store
                .commit(vec![
                    Effect::Create(item("other")),
                    adjust(1, vec![Bound::AtLeast("balance".into(), 11)])
                ])
                .await
                .unwrap(),
            Applied::EffectConflict,
            "a failed bound writes nothing"
        );
        assert!(store.item("other", "X").is_none());
        let w = store.item("w", "X").unwrap();
        assert_eq!(
            (get_n(&w, "held"), get_n(&w, "balance")),
            (Some(6), Some(10))
        );
        assert_eq!(get_s(&w, "seen"), Some("yes"));
    }
}
