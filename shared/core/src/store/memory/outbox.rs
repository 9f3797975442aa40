//! The in-memory store's outbox ([`OutboxStore`]), with the DynamoDB adapter's conditions
//! (`store/dynamo/outbox.rs`): delivery items are plain items beside the fan-out's effects (the
//! same `pk`/`sk`, the same open-index attributes), saved on their `version`; the destination's
//! state item takes tokens on the stored `tat_us` and answers a refusal with it; circuit counts
//! are unconditional, opening a closed circuit and taking the probe's lease are conditional.

use super::{key_of, lock, version_of, MemoryStore};
use crate::clock::Millis;
use crate::domain::MessageKey;
use crate::outbox::breaker::window::slot_of;
use crate::outbox::breaker::{Change, Circuit, Move};
use crate::outbox::bucket::{self, Take};
use crate::outbox::delivery::{DeliveryRef, FanoutItem, OutboundDelivery};
use crate::outbox::destination::DestinationId;
use crate::outbox::schema::*;
use crate::outbox::store::{DueItem, OutboxStore, TokenAnswer, WorkerState};
use crate::store::attr::{get_n, get_s, n, s};
use crate::store::schema::{EXPIRES_AT, KIND, OPEN_DUE, OPEN_SHARD, PK, SK, VERSION};
use crate::store::{Applied, Item, StoreError};
use std::sync::atomic::Ordering;

/// An unreadable item, refused as the DynamoDB adapter refuses it.
fn corrupt(e: serde_dynamo::Error) -> StoreError {
    StoreError::Rejected(Box::new(e))
}

/// A destination's state item as the DynamoDB adapter reads it.
fn worker_state(item: Option<&Item>) -> WorkerState {
    item.map(crate::store::circuit::worker_state)
        .unwrap_or_default()
}

fn state_key(destination: &DestinationId) -> (String, String) {
    (destination_pk(destination.as_str()), STATE_SK.to_owned())
}

impl MemoryStore {
    /// Times a circuit was opened (by a failure that reached the threshold or a failed probe):
    /// tests see that concurrent workers open it once.
    pub fn circuit_openings(&self) -> usize {
        self.circuit_openings.load(Ordering::SeqCst)
    }

    /// A destination's state item, created (`pk`, `sk`, `kind`) when a write finds none: an
    /// `UpdateItem` creates the item it updates.
    fn state_item<'a>(
        items: &'a mut std::collections::BTreeMap<(String, String), Item>,
        destination: &DestinationId,
    ) -> &'a mut Item {
        let (pk, sk) = state_key(destination);
        items
            .entry((pk.clone(), sk.clone()))
            .or_insert_with(|| Item::from([(PK.to_string(), s(pk)), (SK.to_string(), s(sk))]))
    }
}

impl OutboxStore for MemoryStore {
    async fn delivery(&self, r: &DeliveryRef) -> Result<Option<OutboundDelivery>, StoreError> {
        self.up()?;
        let item = lock(&self.items)
            .get(&(r.pk(), DELIVERY_SK.to_owned()))
            .cloned();
        item.map(|i| OutboundDelivery::from_item(i).map_err(corrupt))
            .transpose()
    }

    async fn save_delivery(
        &self,
        d: &OutboundDelivery,
        expected_version: Option<u64>,
    ) -> Result<Applied, StoreError> {
        self.write()?;
        let mut item = d.to_item().map_err(corrupt)?;
        item.insert(
            VERSION.into(),
            n(expected_version.map_or(0, |v| v as i64 + 1)),
        );
        let mut items = lock(&self.items);
        let key = key_of(&item);
        // `attribute_not_exists(pk)` for a new one, `version = :v` for an update.
        let holds = match (items.get(&key), expected_version) {
            (None, None) => true,
            (Some(existing), Some(v)) => version_of(existing) == Some(v),
            _ => false,
        };
        if !holds {
            return Ok(Applied::MessageConflict);
        }
        items.insert(key, item);
        Ok(Applied::Done)
    }

    async fn ensure_delivery(&self, d: &OutboundDelivery) -> Result<(), StoreError> {
        self.write()?;
        let item = d.to_item().map_err(corrupt)?;
        let mut items = lock(&self.items);
        // `SET a = if_not_exists(a, :a)` for every attribute.
        let stored = items.entry(key_of(&item)).or_default();
        for (attr, value) in item {
            stored.entry(attr).or_insert(value);
        }
        Ok(())
    }

    async fn fanout(&self, key: &MessageKey) -> Result<Option<FanoutItem>, StoreError> {
        self.up()?;
        let item = lock(&self.items)
            .get(&(fanout_pk(key), FANOUT_SK.to_owned()))
            .cloned();
        item.map(|i| FanoutItem::from_item(i).map_err(corrupt))
            .transpose()
    }

    async fn close_fanout(
        &self,
        f: &FanoutItem,
        at: Millis,
        expires_at: Millis,
    ) -> Result<(), StoreError> {
        self.write()?;
        let (pk, sk) = (fanout_pk(&f.key()), FANOUT_SK.to_owned());
        let done = done_shard(&pk);
        let mut items = lock(&self.items);
        let item = items
            .entry((pk.clone(), sk.clone()))
            .or_insert_with(|| Item::from([(PK.to_string(), s(pk)), (SK.to_string(), s(sk))]));
        item.insert("expanded_at".into(), n(at.get()));
        item.insert(EXPIRES_AT.into(), n(expires_at.as_secs()));
        item.insert(OPEN_SHARD.into(), s(done));
        item.insert(OPEN_DUE.into(), n(at.get()));
        Ok(())
    }

    async fn due_work_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<DueItem>, StoreError> {
        self.up()?;
        let items = lock(&self.items);
        Ok(super::due_index::due_in(&items, shard, now, limit)
            .into_iter()
            .map(|(_, i)| DueItem::from_index(&i, now))
            .collect())
    }

    async fn postpone_due(
        &self,
        shard: &str,
        item: &DueItem,
        until: Millis,
    ) -> Result<bool, StoreError> {
        self.up()?;
        let mut items = lock(&self.items);
        let Some(stored) = items.get_mut(&(item.pk.clone(), item.sk.clone())) else {
            return Ok(false);
        };
        if get_s(stored, OPEN_SHARD) != Some(shard)
            || get_n(stored, OPEN_DUE) != Some(item.due.get())
        {
            return Ok(false);
        }
        stored.insert(OPEN_DUE.into(), n(until.get()));
        if item.sk == DELIVERY_SK && item.status == "pending" {
            stored.insert("next_attempt_at".into(), n(item.since.get()));
        }
        Ok(true)
    }

    async fn all_deliveries(&self) -> Result<Vec<OutboundDelivery>, StoreError> {
        self.up()?;
        let found: Vec<Item> = lock(&self.items)
            .values()
            .filter(|i| get_s(i, KIND) == Some(KIND_OUTBOUND))
            .cloned()
            .collect();
        found
            .into_iter()
            .map(|i| OutboundDelivery::from_item(i).map_err(corrupt))
            .collect()
    }

    async fn worker_state(&self, destination: &DestinationId) -> Result<WorkerState, StoreError> {
        self.up()?;
        Ok(worker_state(lock(&self.items).get(&state_key(destination))))
    }

    async fn take_token(
        &self,
        destination: &DestinationId,
        take: Take,
    ) -> Result<TokenAnswer, StoreError> {
        if let Take::Wait(_) = take {
            return Ok(TokenAnswer::Refused(None));
        }
        self.write()?;
        let mut items = lock(&self.items);
        let stored = items
            .get(&state_key(destination))
            .and_then(|i| get_n(i, TAT_US));
        // `attribute_not_exists(tat) OR tat <= :now` to reset, `tat > :now AND tat <= :most` to
        // advance; a refusal answers with the stored `tat`.
        let new_tat = match bucket::apply(stored, take) {
            Ok(tat) => tat,
            Err(seen) => return Ok(TokenAnswer::Refused(seen)),
        };
        let item = Self::state_item(&mut items, destination);
        item.insert(TAT_US.into(), n(new_tat));
        item.insert(KIND.into(), s(KIND_DESTINATION_STATE));
        Ok(TokenAnswer::Granted(worker_state(Some(item))))
    }

    async fn hold_tokens(
        &self,
        destination: &DestinationId,
        at_least_us: i64,
    ) -> Result<(), StoreError> {
        self.write()?;
        let mut items = lock(&self.items);
        let item = Self::state_item(&mut items, destination);
        // `attribute_not_exists(tat) OR tat < :hold`.
        if get_n(item, TAT_US).is_none_or(|tat| tat < at_least_us) {
            item.insert(TAT_US.into(), n(at_least_us));
            item.insert(KIND.into(), s(KIND_DESTINATION_STATE));
        }
        Ok(())
    }

    async fn change_circuit(
        &self,
        destination: &DestinationId,
        change: Change,
        now: Millis,
    ) -> Result<Option<Circuit>, StoreError> {
        let Change::Count {
            up,
            probe,
            bucket,
            roll,
            reopen,
        } = change
        else {
            return Ok(None);
        };
        self.write()?;
        if self.circuit_down.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable(Box::new(super::SwitchedOff)));
        }
        let after = {
            let mut items = lock(&self.items);
            let item = Self::state_item(&mut items, destination);
            item.insert(KIND.into(), s(KIND_DESTINATION_STATE));
            // The slot: added to when it holds the bucket (or a newer one), else rolled over; on
            // DynamoDB the one expected (`roll`) is tried first, the other after its condition
            // failed: one more request.
            let [at, requests, failures] = WINDOW_SLOTS[slot_of(bucket)];
            let rolls = get_n(item, at).is_none_or(|held| held < bucket);
            if rolls != roll {
                self.writes.fetch_add(1, Ordering::SeqCst);
            }
            if get_n(item, at).is_none_or(|held| held < bucket) {
                item.insert(at.into(), n(bucket));
                item.insert(requests.into(), n(0));
                item.insert(failures.into(), n(0));
            }
            let add = |item: &mut Item, k: &str, by: i64| {
                let v = get_n(item, k).unwrap_or(0);
                item.insert(k.into(), n(v + by));
            };
            add(item, requests, 1);
            add(item, failures, i64::from(!up));
            if up {
                item.insert(FAILURES.into(), n(0));
                item.remove(FAILING_SINCE);
            } else {
                add(item, FAILURES, 1);
                item.entry(FAILING_SINCE.into())
                    .or_insert_with(|| n(now.get()));
            }
            let reopens = reopen.is_some() && get_n(item, OPENED_AT) == reopen;
            if reopen.is_some() && !reopens {
                // The folded re-open's condition failed: one more request.
                self.writes.fetch_add(1, Ordering::SeqCst);
            }
            if reopens {
                item.insert(OPENED_AT.into(), n(now.get()));
                for gone in [PROBE_UNTIL, PROBES, PROBES_UP, PROBES_DOWN] {
                    item.remove(gone);
                }
                self.circuit_openings.fetch_add(1, Ordering::SeqCst);
            } else if probe {
                add(item, if up { PROBES_UP } else { PROBES_DOWN }, 1);
                if up {
                    item.remove(PROBE_UNTIL);
                }
            }
            worker_state(Some(item)).circuit
        };
        // The answer comes back over the network on DynamoDB: other workers' writes may land
        // before this one acts on it.
        tokio::task::yield_now().await;
        Ok(Some(after))
    }

    async fn move_circuit(
        &self,
        destination: &DestinationId,
        to: Move,
        now: Millis,
    ) -> Result<bool, StoreError> {
        if to == Move::Stay {
            return Ok(false);
        }
        self.write()?;
        let mut items = lock(&self.items);
        let item = Self::state_item(&mut items, destination);
        let opened = get_n(item, OPENED_AT);
        let holds = match to {
            Move::Stay => false,
            Move::Open => opened.is_none(),
            Move::Reopen { from } | Move::Close { from } => opened == Some(from),
        };
        if !holds {
            return Ok(false);
        }
        item.insert(KIND.into(), s(KIND_DESTINATION_STATE));
        for gone in [PROBE_UNTIL, PROBES, PROBES_UP, PROBES_DOWN] {
            item.remove(gone);
        }
        if let Move::Close { .. } = to {
            item.remove(OPENED_AT);
            for gone in WINDOW_SLOTS.iter().flatten() {
                item.remove(*gone);
            }
        } else {
            item.insert(OPENED_AT.into(), n(now.get()));
            self.circuit_openings.fetch_add(1, Ordering::SeqCst);
        }
        Ok(true)
    }

    async fn claim_probe(
        &self,
        destination: &DestinationId,
        opened_at: Millis,
        until: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.write()?;
        let mut items = lock(&self.items);
        // `opened_at = :opened AND (attribute_not_exists(probe_until) OR probe_until <= :now)`
        // (never true of a missing item, which then stays missing).
        let Some(item) = items.get_mut(&state_key(destination)) else {
            return Ok(false);
        };
        let probes = get_n(item, PROBES).unwrap_or(0);
        let holds = get_n(item, OPENED_AT) == Some(opened_at.get())
            && get_n(item, PROBE_UNTIL).is_none_or(|p| p <= now.get());
        if holds {
            item.insert(PROBE_UNTIL.into(), n(until.get()));
            item.insert(PROBES.into(), n(probes + 1));
        }
        Ok(holds)
    }
}

#[cfg(test)]
mod tests;
