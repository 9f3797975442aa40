//! The clock: every rule that depends on time takes a [`Clock`], so tests can pin it; and
//! [`Millis`], the one unit of a point in time at the storage boundary (stored times are
//! milliseconds since the epoch; DynamoDB's TTL attributes, in seconds, are derived from it).
//! A backoff's wait and its jitter's draw are injected the same way: [`Pause`] (tokio's sleep
//! where deployed, [`sleeping`]) and [`Draw`].

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Waits for a duration (tokio's sleep where deployed; tests record the wait and return at once).
pub type Pause = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;
/// A uniform draw in `[0, 1)` (a backoff's jitter).
pub type Draw = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The real wait: tokio's sleep.
pub fn sleeping() -> Pause {
    Arc::new(|d| Box::pin(tokio::time::sleep(d)))
}

/// A point in time: milliseconds since the Unix epoch. A number on the wire and in the table (the
/// same one the plain `i64`s it replaces held); seconds only where a TTL is written ([`Self::as_secs`]).
///
/// Not `jiff::Timestamp`: that one counts nanoseconds and serializes as text, while every stored
/// time here is an integer of milliseconds compared by DynamoDB conditions; this wraps exactly that.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Millis(i64);

impl Millis {
    /// `ms` milliseconds since the epoch.
    pub const fn new(ms: i64) -> Self {
        Self(ms)
    }

    /// `secs` whole seconds since the epoch.
    pub const fn from_secs(secs: i64) -> Self {
        Self(secs.saturating_mul(1000))
    }

    /// Milliseconds since the epoch.
    pub const fn get(self) -> i64 {
        self.0
    }

    /// Whole seconds since the epoch, rounded down (also before it): a TTL attribute's value.
    pub const fn as_secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// `d` later (saturating).
    pub fn plus(self, d: Duration) -> Self {
        Self(
            self.0
                .saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    }
}

impl From<i64> for Millis {
    fn from(ms: i64) -> Self {
        Self(ms)
    }
}

impl std::fmt::Display for Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

/// A source of the current time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> i64;

    /// Whole seconds since the Unix epoch (rounded down).
    fn now_secs(&self) -> i64 {
        self.now_millis().div_euclid(1000)
    }

    /// Now, as a [`Millis`].
    fn now(&self) -> Millis {
        Millis(self.now_millis())
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
    fn millis_convert_to_seconds_and_serialize_as_the_number() {
        let t = Millis::new(1_700_000_001_999);
        assert_eq!((t.get(), t.as_secs()), (1_700_000_001_999, 1_700_000_001));
        assert_eq!(
            Millis::new(-1).as_secs(),
            -1,
            "rounded down before the epoch too"
        );
        assert_eq!(Millis::from_secs(2), Millis::new(2_000));
        assert_eq!(
            t.plus(Duration::from_millis(1)),
            Millis::new(1_700_000_002_000)
        );
        assert_eq!(
            Millis::new(i64::MAX - 1).plus(Duration::MAX),
            Millis::new(i64::MAX)
        );
        assert!(Millis::new(1) < Millis::new(2));
        assert_eq!(serde_json::to_string(&t).unwrap(), "1700000001999");
        assert_eq!(serde_json::from_str::<Millis>("5").unwrap(), Millis::new(5));
        assert_eq!(ManualClock::at_millis(7).now(), Millis::new(7));
        assert_eq!(t.to_string(), "1700000001999 ms");
    }

    #[test]
    fn system_clock_is_after_2020() {
        assert!(SystemClock.now_secs() > 1_577_836_800);
    }
}
