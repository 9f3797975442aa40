//! The outbox's storage capability ([`OutboxStore`]): delivery items (read, conditional write,
//! create-if-absent), fan-out items, the open index's outbox shards, and each destination's shared
//! worker state (token bucket, held back by a 429, and circuit). Destinations themselves are plain items
//! ([`crate::store::ItemStore`] / [`crate::store::ItemWriter`], see [`super::admin`]).
//!
//! Implemented on DynamoDB in `store/dynamo/outbox.rs`, and in memory (same conditions, for unit
//! tests) in `store/memory/outbox.rs`.

use super::breaker::{Change, Circuit, Move};
use super::bucket::Take;
use super::delivery::{DeliveryRef, FanoutItem, OutboundDelivery};
use super::destination::DestinationId;
use crate::clock::Millis;
use crate::domain::MessageKey;
use crate::store::{Applied, StoreError};
use std::future::Future;

/// An item the open index says is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueItem {
    pub pk: String,
    pub sk: String,
    /// Its `open_due`: when the sweep is to look at it (next).
    pub due: Millis,
    /// Since when it has been due: a delivery's lease end or next attempt as projected, else
    /// `due`. The sweep moves `due` on when it re-drives an item
    /// ([`OutboxStore::postpone_due`]), never this: the late-delivery gauge reads it.
    pub since: Millis,
    /// A delivery's status as projected (empty for a fan-out).
    pub status: String,
    /// `source` and `event_id` (and `destination` for a delivery) as projected.
    pub source: String,
    pub event_id: String,
    /// A delivery's `next_attempt_at` as projected (a parked one's retry time).
    pub next_attempt_at: Option<Millis>,
}

impl DueItem {
    /// The open-index item as the query projects it (`now` stands in for a missing due time).
    pub fn from_index(item: &crate::store::Item, now: Millis) -> Self {
        use crate::store::attr::{get_n, get_s};
        use crate::store::schema::{EVENT_ID, OPEN_DUE, PK, SK, SOURCE, STATUS};
        let text = |k: &str| get_s(item, k).unwrap_or_default().to_owned();
        let due = get_n(item, OPEN_DUE).unwrap_or(now.get());
        let status = text(STATUS);
        let since = match status.as_str() {
            "delivering" => get_n(item, "lease_until"),
            "pending" | "retrying" => get_n(item, "next_attempt_at"),
            _ => None,
        };
        Self {
            pk: text(PK),
            sk: text(SK),
            due: Millis::new(due),
            since: Millis::new(since.unwrap_or(due).min(due)),
            status,
            source: text(SOURCE),
            event_id: text(EVENT_ID),
            next_attempt_at: get_n(item, "next_attempt_at").map(Millis::new),
        }
    }
}

/// A destination's shared worker state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerState {
    /// The token bucket's theoretical arrival time, µs.
    pub tat_us: Option<i64>,
    pub circuit: Circuit,
}

/// The answer to a token request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAnswer {
    /// Taken; the state after the write (the circuit comes along for free).
    Granted(WorkerState),
    /// The condition failed; the `tat` stored (`None`: none).
    Refused(Option<i64>),
}

/// Storage of deliveries and destination state.
pub trait OutboxStore: Send + Sync {
    /// One delivery (strongly consistent).
    fn delivery(
        &self,
        r: &DeliveryRef,
    ) -> impl Future<Output = Result<Option<OutboundDelivery>, StoreError>> + Send;

    /// Writes `d` if the stored delivery is still at `expected_version` (`None`: there is none),
    /// with `version` set to `expected_version + 1` (0 for a new one). A failed condition is
    /// [`Applied::MessageConflict`].
    fn save_delivery(
        &self,
        d: &OutboundDelivery,
        expected_version: Option<u64>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send;

    /// Creates `d` unless a delivery of that (destination, event) exists (then nothing changes).
    fn ensure_delivery(
        &self,
        d: &OutboundDelivery,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// An event's fan-out item.
    fn fanout(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<FanoutItem>, StoreError>> + Send;

    /// Marks a fan-out item expanded at `at` (it leaves the open index and expires at `expires_at`).
    fn close_fanout(
        &self,
        f: &FanoutItem,
        at: Millis,
        expires_at: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Items of one outbox shard of the open index due at or before `now`, oldest first.
    fn due_work_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DueItem>, StoreError>> + Send;

    /// Moves a due open-index item's due time to `until`, only if it is still in `shard` and
    /// still due at `item.due` (a worker that wrote it since wins): whether it moved. The sweep
    /// takes an item this way before it re-drives it, so that it sends one message per
    /// [`super::sweep::REDRIVE_AFTER`], not one per sweep while a backlog is worked off.
    fn postpone_due(
        &self,
        shard: &str,
        item: &DueItem,
        until: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Every delivery item (a scan: for operators).
    fn all_deliveries(
        &self,
    ) -> impl Future<Output = Result<Vec<OutboundDelivery>, StoreError>> + Send;

    /// A destination's worker state (absent: the default).
    fn worker_state(
        &self,
        destination: &DestinationId,
    ) -> impl Future<Output = Result<WorkerState, StoreError>> + Send;

    /// Attempts a token write ([`Take::Reset`] or [`Take::Advance`]; a [`Take::Wait`] is refused
    /// without a request).
    fn take_token(
        &self,
        destination: &DestinationId,
        take: Take,
    ) -> impl Future<Output = Result<TokenAnswer, StoreError>> + Send;

    /// Holds the destination's bucket: `tat` becomes `at_least_us` unless it is already later
    /// (conditional: a concurrent take or hold that went further wins). See [`super::bucket::held`].
    fn hold_tokens(
        &self,
        destination: &DestinationId,
        at_least_us: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Counts an attempt's result ([`Change::Count`]) at `now`, without losing a concurrent
    /// worker's count: added to its window bucket's slot (conditional on the slot holding that
    /// bucket), else the slot rolled over to it (conditional on it holding an older one), else
    /// added anyway (a newer one: this worker's clock is behind); a success ends the run of
    /// failures, a failure starts one; a probe's result is added to the probes' (one up also frees
    /// the probe's lease for the next). The circuit after
    /// it (`None` for [`Change::None`], which writes nothing).
    fn change_circuit(
        &self,
        destination: &DestinationId,
        change: Change,
        now: Millis,
    ) -> impl Future<Output = Result<Option<Circuit>, StoreError>> + Send;

    /// Moves the circuit at `now` ([`Move::Open`]: conditional on it being closed;
    /// [`Move::Reopen`], [`Move::Close`]: on it being the one opened at `from`), so that of
    /// workers deciding at once one moves it. Opening forgets the probes; closing forgets the
    /// probes and the window. Whether it moved.
    fn move_circuit(
        &self,
        destination: &DestinationId,
        to: Move,
        now: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Takes the half-open circuit's probe lease until `until` (and counts the probe), if the
    /// circuit is still the one opened at `opened_at` and no probe holds the lease at `now`.
    fn claim_probe(
        &self,
        destination: &DestinationId,
        opened_at: Millis,
        until: Millis,
        now: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

impl<T: OutboxStore> OutboxStore for std::sync::Arc<T> {
    fn delivery(
        &self,
        r: &DeliveryRef,
    ) -> impl Future<Output = Result<Option<OutboundDelivery>, StoreError>> + Send {
        (**self).delivery(r)
    }

    fn save_delivery(
        &self,
        d: &OutboundDelivery,
        expected_version: Option<u64>,
    ) -> impl Future<Output = Result<Applied, StoreError>> + Send {
        (**self).save_delivery(d, expected_version)
    }

    fn ensure_delivery(
        &self,
        d: &OutboundDelivery,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).ensure_delivery(d)
    }

    fn fanout(
        &self,
        key: &MessageKey,
    ) -> impl Future<Output = Result<Option<FanoutItem>, StoreError>> + Send {
        (**self).fanout(key)
    }

    fn close_fanout(
        &self,
        f: &FanoutItem,
        at: Millis,
        expires_at: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).close_fanout(f, at, expires_at)
    }

    fn due_work_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DueItem>, StoreError>> + Send {
        (**self).due_work_items(shard, now, limit)
    }

    fn postpone_due(
        &self,
        shard: &str,
        item: &DueItem,
        until: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).postpone_due(shard, item, until)
    }

    fn all_deliveries(
        &self,
    ) -> impl Future<Output = Result<Vec<OutboundDelivery>, StoreError>> + Send {
        (**self).all_deliveries()
    }

    fn worker_state(
        &self,
        destination: &DestinationId,
    ) -> impl Future<Output = Result<WorkerState, StoreError>> + Send {
        (**self).worker_state(destination)
    }

    fn take_token(
        &self,
        destination: &DestinationId,
        take: Take,
    ) -> impl Future<Output = Result<TokenAnswer, StoreError>> + Send {
        (**self).take_token(destination, take)
    }

    fn hold_tokens(
        &self,
        destination: &DestinationId,
        at_least_us: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).hold_tokens(destination, at_least_us)
    }

    fn change_circuit(
        &self,
        destination: &DestinationId,
        change: Change,
        now: Millis,
    ) -> impl Future<Output = Result<Option<Circuit>, StoreError>> + Send {
        (**self).change_circuit(destination, change, now)
    }

    fn move_circuit(
        &self,
        destination: &DestinationId,
        to: Move,
        now: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).move_circuit(destination, to, now)
    }

    fn claim_probe(
        &self,
        destination: &DestinationId,
        opened_at: Millis,
        until: Millis,
        now: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        (**self).claim_probe(destination, opened_at, until, now)
    }
}
