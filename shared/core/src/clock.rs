//! The clock: every rule that depends on time takes a [`Clock`], so tests can pin it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of the current time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;

    /// Whole seconds since the Unix epoch (rounded down).
    fn now_secs(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }
}

/// The real wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            // A clock set before 1970 is a broken host; report it as negative time.
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// A clock that only moves when told to: for tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock standing at `millis` since the epoch.
    pub fn at_millis(millis: i64) -> Self {
        Self(AtomicI64::new(millis))
    }

    /// A clock standing at `secs` since the epoch.
    pub fn at_secs(secs: i64) -> Self {
        Self::at_millis(secs.saturating_mul(1000))
    }

    /// Moves the clock to `millis`.
    pub fn set_millis(&self, millis: i64) {
        self.0.store(millis, Ordering::SeqCst);
    }

    /// Moves the clock forward by `millis`.
    pub fn advance_millis(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_millis(&self) -> i64 {
        (**self).now_millis()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::at_secs(1_700_000_000);
        assert_eq!(c.now_secs(), 1_700_000_000);
        c.advance_millis(1_500);
        assert_eq!(c.now_millis(), 1_700_000_001_500);
        assert_eq!(c.now_secs(), 1_700_000_001);
        c.set_millis(-1);
        assert_eq!(
            c.now_secs(),
            -1,
            "seconds round down, also before the epoch"
        );
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_secs() > 1_577_836_800);
    }
}
