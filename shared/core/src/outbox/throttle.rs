//! The worker's throttles: the per-destination in-flight semaphore (per worker), the hold a 429
//! puts on the destination's shared bucket, and the token from that bucket ([`super::bucket`]), waited for up to `max_wait` (or less,
//! as the invocation's deadline allows).
//!
//! Tokens are taken several at a time when the worker's demand asks for it: a lease
//! ([`super::bucket::TokenLease`]) of up to [`DeliverConfig::max_leased_tokens`] tokens for
//! [`DeliverConfig::token_lease`], one `UpdateItem` for all of them, spent locally. The lease
//! keeps the circuit the write returned: a circuit another worker opened is seen when the lease
//! ends (at most `token_lease` later); after this worker's own circuit writes the rest of the
//! lease reads the state again first, and a 429's hold ends the lease at once (its tokens are not
//! spent).
//!
//! [`DeliverConfig::max_leased_tokens`]: super::worker::DeliverConfig::max_leased_tokens
//! [`DeliverConfig::token_lease`]: super::worker::DeliverConfig::token_lease

use super::bucket::{self, Rate, Take, TokenLease};
use super::destination::DestinationId;
use super::store::{OutboxStore, TokenAnswer, WorkerState};
use super::worker::{ms, Deliverer, DeliveryPorts};
use crate::clock::Clock;
use crate::process::InfraError;
use std::sync::Arc;
use std::time::Duration;

impl<P: DeliveryPorts> Deliverer<P> {
    pub(super) fn semaphore(
        &self,
        id: &DestinationId,
        permits: u32,
    ) -> Arc<tokio::sync::Semaphore> {
        let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id.clone())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(permits.max(1) as usize)))
            .clone()
    }

    /// Holds the destination's bucket for `pause` from `now_ms` (a 429): every worker's next
    /// token waits. Best effort: the refused delivery's own retry is already scheduled.
    pub(super) async fn hold(&self, id: &DestinationId, rate: Rate, now_ms: i64, pause: Duration) {
        self.end_lease(id);
        let tat = bucket::held(rate, now_ms.saturating_add(ms(pause)).saturating_mul(1000));
        match self.store.hold_tokens(id, tat).await {
            Ok(()) => {
                if let Ok(mut g) = self.guesses.lock() {
                    let guess = g.entry(id.clone()).or_insert(tat);
                    *guess = (*guess).max(tat);
                }
            }
            Err(e) => {
                tracing::warn!(destination = %id, error = %e, "the destination's 429 could not hold its rate limit")
            }
        }
    }

    /// This worker changed `id`'s circuit: the deliveries that spend the rest of the lease read
    /// the destination's state again first (one read, on the way out of a failure only).
    pub(super) fn lease_stale(&self, id: &DestinationId) {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, stale)) = leases.get_mut(id) {
            *stale = true;
        }
    }

    /// A leased token with the destination's state: the lease's copy, or the stored state when
    /// this worker changed the circuit since (then kept for the rest of the lease).
    async fn leased_state(
        &self,
        id: &DestinationId,
        burst: u32,
        now: i64,
    ) -> Result<Result<WorkerState, u32>, InfraError> {
        let (state, stale) = match self.leased(id, burst, now) {
            Ok(found) => found,
            Err(want) => return Ok(Err(want)),
        };
        if !stale {
            return Ok(Ok(state));
        }
        let fresh = self.store.worker_state(id).await?;
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, state, stale)) = leases.get_mut(id) {
            *state = fresh;
            *stale = false;
        }
        Ok(Ok(fresh))
    }

    /// Ends this worker's lease of `id`'s tokens (a 429 held the bucket): the next delivery takes
    /// a token from the shared bucket, after the hold. The size it asks for stays.
    pub(super) fn end_lease(&self, id: &DestinationId) {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((lease, _, _)) = leases.get_mut(id) {
            lease.until_ms = i64::MIN;
        }
    }

    /// A token of this worker's lease of `id`'s tokens at `now` with the state the lease's write
    /// returned, or how many tokens the next lease asks for: never more than the destination's
    /// burst, so a destination of a small burst shared by many workers is not left idle while
    /// one worker holds tokens it cannot spend (a burst of 1 takes one token per delivery).
    fn leased(&self, id: &DestinationId, burst: u32, now: i64) -> Result<(WorkerState, bool), u32> {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        match leases.get_mut(id) {
            Some((lease, state, stale)) => {
                if lease.spend(now) {
                    Ok((*state, *stale))
                } else {
                    Err(lease.next_size(self.config.max_leased_tokens.min(burst)))
                }
            }
            None => Err(1),
        }
    }

    /// A token from the destination's bucket (or this worker's lease of its tokens), waited for
    /// up to `max_wait`: the state after taking it, or when to come back. One delivery at a time
    /// per destination asks the store (the others wait for its lease, not for a write of their
    /// own); none holds that turn while it waits for the rate.
    pub(super) async fn token(
        &self,
        id: &DestinationId,
        rate: Rate,
        max_wait: Duration,
    ) -> Result<Result<WorkerState, i64>, InfraError> {
        let started = self.clock.now_millis();
        if let Ok(state) = self.leased_state(id, rate.burst, started).await? {
            return Ok(Ok(state));
        }
        let turn = {
            let mut takers = self.takers.lock().unwrap_or_else(|p| p.into_inner());
            takers.entry(id.clone()).or_default().clone()
        };
        let mut guess = self.guesses.lock().ok().and_then(|g| g.get(id).copied());
        // Bounded by `max_wait` (every round either sleeps towards it or learns the stored value);
        // the count only guards against a store that keeps answering inconsistently.
        for _ in 0..1_000 {
            let mine = turn.lock().await;
            let now = self.clock.now_millis();
            let want = match self.leased_state(id, rate.burst, now).await? {
                Ok(state) => return Ok(Ok(state)),
                Err(want) => want,
            };
            let (take, k) = bucket::decide_many(rate, guess, now.saturating_mul(1000), want);
            match take {
                Take::Wait(w) => {
                    drop(mine);
                    let until = now + ms(w).max(1);
                    if until - started > ms(max_wait) {
                        return Ok(Err(until));
                    }
                    tokio::time::sleep(w).await;
                }
                take => match self.store.take_token(id, take).await? {
                    TokenAnswer::Granted(state) => {
                        if let (Some(tat), Ok(mut g)) = (state.tat_us, self.guesses.lock()) {
                            g.insert(id.clone(), tat);
                        }
                        let lease = TokenLease {
                            left: k.saturating_sub(1),
                            size: k,
                            until_ms: self.clock.now_millis() + ms(self.config.token_lease),
                        };
                        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
                        leases.insert(id.clone(), (lease, state, false));
                        return Ok(Ok(state));
                    }
                    TokenAnswer::Refused(seen) => guess = seen,
                },
            }
        }
        Ok(Err(self.clock.now_millis() + rate.interval_us() / 1000 + 1))
    }
}
