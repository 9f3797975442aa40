//! The worker's throttles: the per-destination in-flight semaphore (per worker) and the token
//! from the destination's shared bucket ([`super::bucket`]), waited for up to `max_wait` (or less,
//! as the invocation's deadline allows).

use super::bucket::{self, Rate, Take};
use super::destination::DestinationId;
use super::queue::OutboxQueues;
use super::store::{OutboxStore, TokenAnswer, WorkerState};
use super::transport::Transport;
use super::worker::{ms, Deliverer};
use crate::clock::Clock;
use crate::process::InfraError;
use crate::store::{ItemStore, ItemWriter, MessageStore};
use std::sync::Arc;
use std::time::Duration;

impl<S, T, Q, C> Deliverer<S, T, Q, C>
where
    S: OutboxStore + MessageStore + ItemStore + ItemWriter + Clone,
    T: Transport,
    Q: OutboxQueues,
    C: Clock,
{
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

    /// A token from the destination's bucket, waited for up to `max_wait`: the state after taking
    /// it, or when to come back.
    pub(super) async fn token(
        &self,
        id: &DestinationId,
        rate: Rate,
        max_wait: Duration,
    ) -> Result<Result<WorkerState, i64>, InfraError> {
        let started = self.clock.now_millis();
        let mut guess = self.guesses.lock().ok().and_then(|g| g.get(id).copied());
        // Bounded by `max_wait` (every round either sleeps towards it or learns the stored value);
        // the count only guards against a store that keeps answering inconsistently.
        for _ in 0..1_000 {
            let now = self.clock.now_millis();
            match bucket::decide(rate, guess, now.saturating_mul(1000)) {
                Take::Wait(w) => {
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
                        return Ok(Ok(state));
                    }
                    TokenAnswer::Refused(seen) => guess = seen,
                },
            }
        }
        Ok(Err(self.clock.now_millis() + rate.interval_us() / 1000 + 1))
    }
}
