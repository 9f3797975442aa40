//! A token bucket shared by every worker of one account, not only the outbox's destinations: the
//! same GCRA state ([`super`]'s `tat`) kept in one item of the table, taken and held through
//! [`SharedBucket`] (conditional writes on DynamoDB, see `store/dynamo/bucket.rs`; in memory,
//! [`LocalBucket`]), waited for by [`acquire`]. A payment provider's client keeps its account's
//! rate with it; the outbox keeps each destination's through [`crate::outbox::store::OutboxStore`],
//! on the same storage functions.

use super::{apply, decide, held, Rate, Take};
use crate::clock::Clock;
use crate::store::StoreError;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

/// The item holding one bucket: its partition and sort key, and its `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketKey {
    pub pk: String,
    pub sk: String,
    pub kind: &'static str,
}

/// Storage of a shared bucket's `tat` (µs).
pub trait SharedBucket: Send + Sync {
    /// Attempts a token write ([`Take::Reset`] or [`Take::Advance`]; a [`Take::Wait`] is refused
    /// without a request): `Ok(new tat)`, or `Err(the tat stored)` when the condition failed.
    fn take_token(
        &self,
        key: &BucketKey,
        take: Take,
    ) -> impl Future<Output = Result<Result<i64, Option<i64>>, StoreError>> + Send;

    /// Holds the bucket: `tat` becomes `at_least_us` unless it is already later.
    fn hold_tokens(
        &self,
        key: &BucketKey,
        at_least_us: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

impl<T: SharedBucket + ?Sized> SharedBucket for std::sync::Arc<T> {
    fn take_token(
        &self,
        key: &BucketKey,
        take: Take,
    ) -> impl Future<Output = Result<Result<i64, Option<i64>>, StoreError>> + Send {
        (**self).take_token(key, take)
    }

    fn hold_tokens(
        &self,
        key: &BucketKey,
        at_least_us: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).hold_tokens(key, at_least_us)
    }
}

/// A token of `key` at `rate`: waits (through `sleep`) while the bucket is over its rate, at most
/// `max_wait` in all. `guess` is the last `tat` seen (updated). `Ok(None)`: taken; `Ok(Some(w))`:
/// not within `max_wait`, a token frees up after `w`.
pub async fn acquire<B, C, S, F>(
    bucket: &B,
    key: &BucketKey,
    rate: Rate,
    guess: &mut Option<i64>,
    clock: &C,
    max_wait: Duration,
    sleep: S,
) -> Result<Option<Duration>, StoreError>
where
    B: SharedBucket + ?Sized,
    C: Clock + ?Sized,
    S: Fn(Duration) -> F,
    F: Future<Output = ()>,
{
    let mut waited = Duration::ZERO;
    // Every round sleeps towards `max_wait` or learns the stored value; the count only guards
    // against a store that keeps answering inconsistently.
    for _ in 0..1_000 {
        let now_us = clock.now_millis().saturating_mul(1000);
        match decide(rate, *guess, now_us) {
            Take::Wait(w) => {
                let w = w.max(Duration::from_millis(1));
                if waited + w > max_wait {
                    return Ok(Some(w));
                }
                sleep(w).await;
                waited += w;
            }
            take => match bucket.take_token(key, take).await? {
                Ok(tat) => {
                    *guess = Some(tat);
                    return Ok(None);
                }
                Err(seen) => *guess = seen,
            },
        }
    }
    Ok(Some(Duration::from_micros(
        u64::try_from(rate.interval_us()).unwrap_or(1),
    )))
}

/// Holds `key` until `until_ms` (the provider said to slow down): no worker's token conforms
/// before then, and `guess` moves there too.
pub async fn hold<B: SharedBucket + ?Sized>(
    bucket: &B,
    key: &BucketKey,
    rate: Rate,
    guess: &mut Option<i64>,
    until_ms: i64,
) -> Result<(), StoreError> {
    let tat = held(rate, until_ms.saturating_mul(1000));
    bucket.hold_tokens(key, tat).await?;
    *guess = Some(guess.map_or(tat, |g| g.max(tat)));
    Ok(())
}

/// A bucket in this process only (tests; one process's workers), with the store's conditions.
#[derive(Debug, Default)]
pub struct LocalBucket(Mutex<Option<i64>>);

impl LocalBucket {
    /// The `tat` stored.
    pub fn tat(&self) -> Option<i64> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SharedBucket for LocalBucket {
    async fn take_token(
        &self,
        _: &BucketKey,
        take: Take,
    ) -> Result<Result<i64, Option<i64>>, StoreError> {
        let mut tat = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Ok(apply(*tat, take).inspect(|new| *tat = Some(*new)))
    }

    async fn hold_tokens(&self, _: &BucketKey, at_least_us: i64) -> Result<(), StoreError> {
        let mut tat = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if tat.is_none_or(|t| t < at_least_us) {
            *tat = Some(at_least_us);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::Arc;

    fn key() -> BucketKey {
        BucketKey {
            pk: "P".into(),
            sk: "S".into(),
            kind: "k",
        }
    }

    #[tokio::test]
    async fn workers_sharing_a_bucket_keep_its_rate_and_waits_are_slept_not_spun() {
        let rate = Rate {
            per_sec: 10.0,
            burst: 2,
        };
        let bucket = LocalBucket::default();
        let clock = Arc::new(ManualClock::at_millis(1_000_000));
        let slept = Arc::new(Mutex::new(Vec::new()));
        let sleep = |d: Duration| {
            let (clock, slept) = (clock.clone(), slept.clone());
            async move {
                slept.lock().unwrap().push(d);
                clock.advance_millis(d.as_millis() as i64);
            }
        };
        let mut guesses = [None, None, None];
        for round in 0..10 {
            let g = &mut guesses[round % 3];
            let r = acquire(
                &bucket,
                &key(),
                rate,
                g,
                &*clock,
                Duration::from_secs(5),
                sleep,
            )
            .await;
            assert_eq!(r.unwrap(), None);
        }
        // 10 tokens at 10/s with a burst of 2: the last at least 0.8 s after the first.
        assert!(
            clock.now_millis() - 1_000_000 >= 700,
            "{}",
            clock.now_millis()
        );
        assert!(!slept.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn over_max_wait_comes_back_and_a_hold_stops_everyone() {
        let rate = Rate {
            per_sec: 1.0,
            burst: 1,
        };
        let bucket = LocalBucket::default();
        let clock = ManualClock::at_millis(0);
        let never = |_: Duration| async { panic!("no sleep beyond max_wait") };
        let mut guess = None;
        hold(&bucket, &key(), rate, &mut guess, 10_000)
            .await
            .unwrap();
        let k = key();
        let r = acquire(
            &bucket,
            &k,
            rate,
            &mut guess,
            &clock,
            Duration::from_secs(1),
            never,
        );
        assert_eq!(r.await.unwrap(), Some(Duration::from_secs(10)));
        let mut other = None;
        let r = acquire(&bucket, &k, rate, &mut other, &clock, Duration::ZERO, never);
        assert!(r.await.unwrap().is_some(), "another worker is held too");
    }
}
