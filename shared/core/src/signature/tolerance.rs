//! The symmetric timestamp tolerance of the timestamped schemes ([`Tolerance`]): too old and in
//! the future are checked alike, and only after the signature matched (see the module docs of
//! `signature`).

use std::fmt;
use std::time::Duration;

use super::SignatureError;

/// The symmetric timestamp tolerance of a timestamped scheme.
#[derive(Clone, Copy)]
pub(super) struct Tolerance {
    secs: i64,
}

impl Tolerance {
    pub(super) fn new(tolerance: Duration) -> Self {
        Self {
            secs: i64::try_from(tolerance.as_secs()).unwrap_or(i64::MAX),
        }
    }

    /// Applies the tolerance to an (already authenticated) timestamp.
    pub(super) fn check(self, timestamp: i64, now_unix: i64) -> Result<(), SignatureError> {
        check_tolerance(timestamp, now_unix, self.secs)
    }
}

impl fmt::Debug for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.secs)
    }
}

pub(super) fn check_tolerance(
    timestamp: i64,
    now_unix: i64,
    tolerance_secs: i64,
) -> Result<(), SignatureError> {
    let age = now_unix.saturating_sub(timestamp);
    if age > tolerance_secs {
        return Err(SignatureError::TimestampTooOld {
            age_secs: age,
            tolerance_secs,
        });
    }
    let ahead = timestamp.saturating_sub(now_unix);
    if ahead > tolerance_secs {
        return Err(SignatureError::TimestampInFuture {
            ahead_secs: ahead,
            tolerance_secs,
        });
    }
    Ok(())
}
