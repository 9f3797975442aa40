//! The breaker's sliding window: two buckets of half the window each, kept on the destination's
//! state item (the slot of bucket `i` is `i mod 2`, so a bucket is rolled over by the first count
//! of its successor's successor). The window's figures at `now` are those of the current bucket
//! and the one before it: the last half window to the last whole window of attempts, a
//! two-bucket version of resilience4j's time-based sliding window (its buckets are one second
//! each) and of Polly's sampling duration (split into buckets too).

use std::time::Duration;

/// Attempts counted in one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Its index: `now / (window / 2)`.
    pub at: i64,
    pub requests: u32,
    pub failures: u32,
}

/// The two slots (`None`: never written, or forgotten when the circuit closed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    pub slots: [Option<Bucket>; 2],
}

/// Requests and failures in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recent {
    pub requests: u32,
    pub failures: u32,
}

impl Recent {
    /// Whether `failures / requests >= percent / 100` with at least `min_requests` requests.
    pub fn trips(&self, min_requests: u32, percent: u32) -> bool {
        self.requests >= min_requests.max(1)
            && u64::from(self.failures) * 100 >= u64::from(percent) * u64::from(self.requests)
    }

    /// The failure rate in percent (`None` without a request).
    pub fn percent(&self) -> Option<u32> {
        (self.requests > 0).then(|| {
            let p = u64::from(self.failures) * 100 / u64::from(self.requests);
            u32::try_from(p).unwrap_or(100)
        })
    }
}

/// The index of the bucket `now` falls in (a bucket is half the window, at least 1 ms).
pub fn bucket_of(window: Duration, now: i64) -> i64 {
    let half = i64::try_from(window.as_millis() / 2)
        .unwrap_or(i64::MAX)
        .max(1);
    now.div_euclid(half)
}

/// The slot bucket `at` is kept in.
pub fn slot_of(at: i64) -> usize {
    usize::from(at.rem_euclid(2) == 1)
}

impl Window {
    /// The requests and failures of the current bucket and the one before it.
    pub fn recent(&self, window: Duration, now: i64) -> Recent {
        let current = bucket_of(window, now);
        self.slots
            .iter()
            .flatten()
            .filter(|b| b.at == current || b.at == current - 1)
            .fold(Recent::default(), |r, b| Recent {
                requests: r.requests.saturating_add(b.requests),
                failures: r.failures.saturating_add(b.failures),
            })
    }

    /// Counts one attempt in bucket `at` the way the store does: added to its slot when the slot
    /// holds `at`, the slot rolled over to `at` when it holds an older bucket (or none), added
    /// anyway when it holds a newer one (a worker whose clock is behind).
    pub fn count(&mut self, at: i64, failed: bool) {
        let slot = &mut self.slots[slot_of(at)];
        let bucket = match slot {
            Some(b) if b.at >= at => b,
            _ => slot.insert(Bucket {
                at,
                ..Bucket::default()
            }),
        };
        bucket.requests = bucket.requests.saturating_add(1);
        bucket.failures = bucket.failures.saturating_add(u32::from(failed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const W: Duration = Duration::from_secs(60);

    #[test]
    fn the_window_is_the_current_bucket_and_the_one_before() {
        let mut w = Window::default();
        // (now, failed) counted in order, then what the window says at `now`.
        let steps: &[(i64, bool, u32, u32, &str)] = &[
            (0, true, 1, 1, "first"),
            (29_999, false, 2, 1, "same bucket"),
            (30_000, true, 3, 2, "next bucket: both count"),
            (60_000, false, 2, 1, "the first bucket rolled over"),
            (200_000, true, 1, 1, "long after: only its own"),
        ];
        for (now, failed, requests, failures, why) in steps {
            w.count(bucket_of(W, *now), *failed);
            assert_eq!(
                w.recent(W, *now),
                Recent {
                    requests: *requests,
                    failures: *failures
                },
                "{why}"
            );
        }
        assert_eq!(w.recent(W, 400_000), Recent::default(), "all forgotten");
        // A late count from an older bucket goes into the newer one that holds its slot.
        let mut late = Window::default();
        late.count(4, false);
        late.count(2, true);
        assert_eq!(late.slots[0].map(|b| (b.at, b.requests)), Some((4, 2)));
    }

    #[test]
    fn it_trips_at_the_rate_with_enough_requests() {
        // (requests, failures, min, percent, trips)
        let cases = [
            (9, 9, 10, 50, false),
            (10, 5, 10, 50, true),
            (10, 4, 10, 50, false),
            (3, 2, 3, 67, false),
            (3, 3, 3, 67, true),
            (0, 0, 0, 50, false),
            (1, 0, 1, 0, true),
        ];
        for (requests, failures, min, percent, trips) in cases {
            let r = Recent { requests, failures };
            assert_eq!(r.trips(min, percent), trips, "{r:?} {min} {percent}");
        }
        assert_eq!(Recent::default().percent(), None);
        let r = Recent {
            requests: 3,
            failures: 2,
        };
        assert_eq!(r.percent(), Some(66));
    }

    proptest! {
        /// Counted in any order within two buckets, nothing is lost.
        #[test]
        fn counts_within_the_window_are_kept(
            outcomes in prop::collection::vec((0i64..2, any::<bool>()), 0..50)
        ) {
            let mut w = Window::default();
            let mut sorted = outcomes.clone();
            sorted.sort_by_key(|(b, _)| *b);
            for (b, failed) in &sorted {
                w.count(10 + b, *failed);
            }
            let r = w.recent(W, 11 * 30_000);
            prop_assert_eq!(r.requests as usize, outcomes.len());
            prop_assert_eq!(r.failures as usize, outcomes.iter().filter(|(_, f)| *f).count());
        }
    }
}
