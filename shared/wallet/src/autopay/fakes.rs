//! Fakes of the charging pass's two boundaries, for tests (this crate's, and the charging
//! function's with the `fakes` feature): [`MemoryAttempts`], an [`AttemptStore`] in memory with
//! versioned writes, a racing writer and a lost write to inject; and [`ScriptedCharger`], a
//! [`Charger`] answering from a script with the provider's idempotency (the same key gets the
//! saved answer, replayed, for 24 hours as Stripe keeps a key) and counting the distinct keys it
//! charged.

mod charger;

pub use charger::{ScriptedCharger, Step};

use super::attempt::{Attempt, AttemptState, AttemptStore, Autopay, Listed, Written};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::attr::get_s;
use inbox_core::store::{Effect, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

type Key = (String, String);
type Racer = Box<dyn FnOnce(&mut Tables) + Send>;
type Matcher = Box<dyn Fn(&Attempt) -> bool + Send>;

/// What the fake table holds.
#[derive(Debug, Default)]
pub struct Tables {
    pub attempts: BTreeMap<Key, Attempt>,
    pub autopays: BTreeMap<String, Autopay>,
    /// The events published (`Ensure`d message items): (event id, event type), once each.
    pub events: Vec<(String, String)>,
    /// Wallets flagged `autopay_suspended`.
    pub flagged: BTreeSet<String>,
    /// Writes that committed.
    pub writes: usize,
}

fn bump(version: Option<u64>) -> Option<u64> {
    Some(version.map_or(0, |v| v + 1))
}

/// An [`AttemptStore`] in memory.
#[derive(Default)]
pub struct MemoryAttempts {
    tables: Mutex<Tables>,
    /// Before the first write whose attempt matches: another writer's change.
    racers: Mutex<Vec<(Matcher, Racer)>>,
    /// The first write whose attempt matches fails (its answer lost: a crash).
    failing: Mutex<Vec<Matcher>>,
}

impl std::fmt::Debug for MemoryAttempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryAttempts").finish_non_exhaustive()
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl MemoryAttempts {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn tables(&self) -> MutexGuard<'_, Tables> {
        lock(&self.tables)
    }

    /// Stores `autopay` as it is (versioned).
    pub fn put_autopay(&self, mut autopay: Autopay) {
        autopay.version = bump(autopay.version);
        let tenant = autopay.tenant.as_str().to_owned();
        self.tables().autopays.insert(tenant, autopay);
    }

    /// Stores `attempt` as it is (versioned).
    pub fn put_attempt(&self, mut attempt: Attempt) {
        attempt.version = bump(attempt.version);
        let key = (attempt.tenant.as_str().to_owned(), attempt.id.clone());
        self.tables().attempts.insert(key, attempt);
    }

    pub fn get_attempt(&self, tenant: &str, id: &str) -> Option<Attempt> {
        self.tables()
            .attempts
            .get(&(tenant.to_owned(), id.to_owned()))
            .cloned()
    }

    pub fn get_autopay(&self, tenant: &str) -> Option<Autopay> {
        self.tables().autopays.get(tenant).cloned()
    }

    /// The ledger's credit from the payment's webhook: the attempt `Credited`, the wallet's open
    /// attempt cleared, in one write.
    pub fn credit(&self, tenant: &str, id: &str) {
        credit(&mut self.tables(), tenant, id);
    }

    /// Before the first write of an attempt matching `when`, `racer` changes the table (another
    /// writer got there first): the write then meets the versions it left.
    pub fn race(
        &self,
        when: impl Fn(&Attempt) -> bool + Send + 'static,
        racer: impl FnOnce(&mut Tables) + Send + 'static,
    ) {
        lock(&self.racers).push((Box::new(when), Box::new(racer)));
    }

    /// The first write of an attempt matching `when` fails as a crash would leave it: not
    /// written, an error.
    pub fn fail_write(&self, when: impl Fn(&Attempt) -> bool + Send + 'static) {
        lock(&self.failing).push(Box::new(when));
    }

    /// The types of the events published, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.tables()
            .events
            .iter()
            .map(|(_, t)| t.clone())
            .collect()
    }
}

/// See [`MemoryAttempts::credit`].
pub fn credit(tables: &mut Tables, tenant: &str, id: &str) {
    if let Some(a) = tables.attempts.get_mut(&(tenant.to_owned(), id.to_owned())) {
        a.state = AttemptState::Credited;
        a.version = bump(a.version);
    }
    if let Some(w) = tables.autopays.get_mut(tenant) {
        if w.open_attempt.as_deref() == Some(id) {
            w.open_attempt = None;
            w.version = bump(w.version);
        }
    }
}

impl AttemptStore for MemoryAttempts {
    async fn due_attempts(&self, now: Millis, limit: usize) -> Result<Listed<Attempt>, StoreError> {
        let t = self.tables();
        let mut due: Vec<Attempt> = t
            .attempts
            .values()
            .filter(|a| !a.state.is_terminal() && a.due <= now)
            .cloned()
            .collect();
        due.sort_by_key(|a| a.due);
        due.truncate(limit);
        Ok(Listed::of(due))
    }

    async fn due_recurring(
        &self,
        now: Millis,
        limit: usize,
    ) -> Result<Listed<Autopay>, StoreError> {
        let t = self.tables();
        Ok(Listed::of(
            t.autopays
                .values()
                .filter(|a| {
                    a.recurring
                        .as_ref()
                        .and_then(|r| r.schedule.due_at(r.next))
                        .is_some_and(|due| due <= now)
                })
                .take(limit)
                .cloned()
                .collect(),
        ))
    }

    async fn autopay(&self, tenant: &TenantId) -> Result<Option<Autopay>, StoreError> {
        Ok(self.get_autopay(tenant.as_str()))
    }

    async fn attempt(&self, tenant: &TenantId, id: &str) -> Result<Option<Attempt>, StoreError> {
        Ok(self.get_attempt(tenant.as_str(), id))
    }

    async fn write(
        &self,
        attempt: &Attempt,
        autopay: Option<&Autopay>,
        also: Vec<Effect>,
    ) -> Result<Written, StoreError> {
        let fails = {
            let mut failing = lock(&self.failing);
            let at = failing.iter().position(|m| m(attempt));
            at.map(|i| failing.remove(i)).is_some()
        };
        if fails {
            return Err(StoreError::Unavailable(
                "the write's answer was lost".into(),
            ));
        }
        let racer = {
            let mut racers = lock(&self.racers);
            let at = racers.iter().position(|(m, _)| m(attempt));
            at.map(|i| racers.remove(i).1)
        };
        let mut t = self.tables();
        if let Some(racer) = racer {
            racer(&mut t);
        }
        let key = (attempt.tenant.as_str().to_owned(), attempt.id.clone());
        if t.attempts.get(&key).and_then(|a| a.version) != attempt.version {
            return Ok(Written::Conflict);
        }
        if let Some(w) = autopay {
            if t.autopays.get(w.tenant.as_str()).and_then(|a| a.version) != w.version {
                return Ok(Written::Conflict);
            }
        }
        let mut stored = attempt.clone();
        stored.version = bump(attempt.version);
        t.attempts.insert(key, stored);
        if let Some(w) = autopay {
            let mut stored = w.clone();
            stored.version = bump(w.version);
            t.autopays.insert(w.tenant.as_str().to_owned(), stored);
        }
        for effect in also {
            match effect {
                Effect::Ensure(item) | Effect::CreateIfAbsent(item) => {
                    let id = get_s(&item, "event_id").unwrap_or_default().to_owned();
                    let kind = get_s(&item, "event_type").unwrap_or_default().to_owned();
                    if !t.events.iter().any(|(e, _)| *e == id) {
                        t.events.push((id, kind));
                    }
                }
                Effect::Adjust { pk, set, .. } => {
                    let flagged = set.iter().any(|(k, v)| {
                        k == super::pass::AUTOPAY_SUSPENDED_ATTR && v.as_bool().ok() == Some(&true)
                    });
                    if flagged {
                        t.flagged.insert(pk);
                    }
                }
                _ => {}
            }
        }
        t.writes += 1;
        Ok(Written::Done)
    }
}
