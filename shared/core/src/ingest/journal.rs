//! Repeated deliveries: each is counted beside its message, and the first
//! [`MAX_JOURNALED_REPEATS`] are journaled (time, body hash, headers, the body when it
//! differs); later ones are only counted, so replaying a captured request can neither grow the
//! table nor the bill without limit. A new event never gets here: its path stays one `PutItem`.
//!
//! The counter moves by conditional writes ([`Inbox::count_repeat`]: the ingest function may
//! only `PutItem`), retried with the value a failed condition brings back, and only while the
//! request is younger than [`JOURNAL_BUDGET_MS`] (a slow or contended store ends the bookkeeping,
//! not the answer: the event is stored either way, and the function's timeout stays above its
//! worst case, `super::WORST_CASE`).

use super::Ingestor;
use crate::clock::{Clock, Millis};
use crate::domain::BodyDigest;
use crate::store::{Inbox, NewMessage, Repeat, RepeatCount, StoreError, MAX_JOURNALED_REPEATS};
use std::time::Duration;

/// How long after a request arrived its duplicate bookkeeping may still start a store request
/// (by default: [`Ingestor::with_journal_budget`]).
pub const JOURNAL_BUDGET_MS: i64 = 2_000;

impl<S: Inbox, C: Clock> Ingestor<S, C> {
    /// Counts a repeated delivery of `message` and journals it if it is among the first
    /// [`MAX_JOURNALED_REPEATS`]; its number (`None`: not counted in time).
    pub(super) async fn journal_repeat(
        &self,
        message: NewMessage,
        body_differs: bool,
    ) -> Result<Option<u64>, StoreError> {
        let received = message.received_at_ms;
        let in_time = || self.clock.now_millis().saturating_sub(received) <= self.journal_budget_ms;
        let expires_at = Millis::new(received)
            .plus(Duration::from_secs(u64::from(self.retention_days) * 86_400));
        let mut expected = None;
        let mut counted = None;
        // Each conflict means another delivery was counted meanwhile: past the journal's bound,
        // the exact count is worth no more tries.
        for _ in 0..=MAX_JOURNALED_REPEATS {
            if !in_time() {
                break;
            }
            match self
                .store
                .count_repeat(&message.key, expected, Millis::new(received), expires_at)
                .await?
            {
                RepeatCount::Counted(n) => {
                    counted = Some(n);
                    break;
                }
                RepeatCount::Conflict { current } => expected = current,
            }
        }
        let Some(n) = counted else {
            tracing::warn!(
                source = %message.key.source,
                event_id = %message.key.event_id,
                "repeated delivery not counted (store slow or counter contended); answered as a duplicate"
            );
            return Ok(None);
        };
        if n > MAX_JOURNALED_REPEATS {
            if n == MAX_JOURNALED_REPEATS + 1 || n % 1000 == 0 {
                tracing::warn!(
                    source = %message.key.source,
                    event_id = %message.key.event_id,
                    repeated = n,
                    "a message keeps being delivered again (provider retries or replays): only counted from now on"
                );
            }
            return Ok(Some(n));
        }
        if !in_time() {
            return Ok(Some(n));
        }
        let NewMessage {
            key,
            body,
            body_digest,
            headers,
            ..
        } = message;
        // A repeat is hashed here, off the accepted path.
        let body_digest = body_digest.unwrap_or_else(|| BodyDigest::of(&body));
        let delivery = Repeat {
            key,
            received_at_ms: received,
            body_digest,
            body_differs,
            differing_body: body_differs.then_some(body),
            headers,
            expires_at_secs: expires_at.as_secs(),
        };
        self.store.journal_repeat(&delivery).await?;
        Ok(Some(n))
    }
}
