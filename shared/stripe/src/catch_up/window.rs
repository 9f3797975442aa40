//! The scheduled catch-up's window and checkpoint, as a decision table (pure: the time is the
//! caller's clock's).
//!
//! Each run lists the events created from [`Window::created_gte`] up to [`Window::created_lte`]:
//! [`SETTLE_SECS`] before now, or [`MAX_SPAN_SECS`] after the start when that is earlier (a long
//! backlog is taken 3 days per run, so a run's events fit its memory). A younger event's webhook may still
//! be on its way (Stripe sends it within seconds; it retries a failed one later), and storing it
//! first would count a webhook as lost that only came a moment late. Where the window starts:
//!
//! | checkpoint                                | `created_gte`                                   | why          |
//! |-------------------------------------------|-------------------------------------------------|--------------|
//! | none (the first run)                      | now − [`FIRST_WINDOW_SECS`] (72 h)              | `First`      |
//! | a run was cut short at `resume_from`      | `resume_from`                                   | `Resume`     |
//! | the last completed run covered `until`    | `until` − [`OVERLAP_SECS`]                      | `AfterLast`  |
//! | any of these older than Stripe keeps      | now − 30 days + [`RETENTION_SLACK_SECS`]        | `Capped`     |
//!
//! and never after `created_lte` (a clock that went back). After the run ([`after_run`]):
//! complete, the checkpoint covers up to `created_lte` (never less than it did) and forgets any
//! resume point; cut short by its deadline or a store failure at the event created at `c`, it
//! keeps what it covered and resumes from `c` (every event before `c` was decided on, oldest
//! first; those at `c` are listed again, and a repeat writes nothing); a listing that failed
//! changes nothing. So the checkpoint only advances after a run completes, and a long backlog is
//! worked through over several runs, each starting where the last stopped.

use crate::events::RETENTION_SECS;

/// The first run's window: Stripe's live-mode retries last 3 days.
pub const FIRST_WINDOW_SECS: i64 = 72 * 3600;
/// How far each window reaches back over what the last completed run covered: an event Stripe
/// lists a little after the second it says it was created is not missed between two runs.
pub const OVERLAP_SECS: i64 = 10 * 60;
/// Events younger than this are left for a later run (their webhooks may still be on the way).
pub const SETTLE_SECS: i64 = 10 * 60;
/// How far inside Stripe's 30 days a capped window starts (clocks differ; a run takes time).
pub const RETENTION_SLACK_SECS: i64 = 10 * 60;
/// The longest window one run takes: a run holds its window's events in memory, and a long
/// backlog (30 days) is worked through 3 days per run, oldest first.
pub const MAX_SPAN_SECS: i64 = 72 * 3600;

/// What the table keeps between runs (one small item).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Every event created up to this time (Unix seconds) was decided on by a completed run.
    pub covered_until: Option<i64>,
    /// A run was cut short here: the next one starts at this time (Unix seconds).
    pub resume_from: Option<i64>,
}

/// Why a window starts where it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    First,
    Resume,
    AfterLast,
    /// What the checkpoint asked for is older than Stripe keeps events.
    Capped,
}

impl Start {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Resume => "resume",
            Self::AfterLast => "after_last",
            Self::Capped => "capped",
        }
    }
}

/// One run's window (Unix seconds, both ends included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub created_gte: i64,
    pub created_lte: i64,
    pub start: Start,
}

/// The window of a run at `now_s` after `checkpoint`.
pub fn window(checkpoint: &Checkpoint, now_s: i64) -> Window {
    let settled = now_s - SETTLE_SECS;
    let (wanted, start) = match (checkpoint.resume_from, checkpoint.covered_until) {
        (Some(resume), _) => (resume, Start::Resume),
        (None, Some(until)) => (until - OVERLAP_SECS, Start::AfterLast),
        (None, None) => (now_s - FIRST_WINDOW_SECS, Start::First),
    };
    let oldest = now_s - RETENTION_SECS + RETENTION_SLACK_SECS;
    let (created_gte, start) = if wanted < oldest {
        (oldest, Start::Capped)
    } else {
        (wanted, start)
    };
    let created_gte = created_gte.min(settled);
    Window {
        created_gte,
        created_lte: settled.min(created_gte + MAX_SPAN_SECS),
        start,
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every event of the window decided on.
    Complete,
    /// Stopped (the deadline, a store failure) before the events created at or after this time.
    StoppedAt(i64),
    /// Nothing decided (Stripe's list failed).
    Nothing,
}

/// The checkpoint after a run of `window` that ended as `ended`: `None` when it stays as it was
/// (nothing to write).
pub fn after_run(checkpoint: &Checkpoint, window: &Window, ended: Ended) -> Option<Checkpoint> {
    match ended {
        Ended::Complete => Some(Checkpoint {
            covered_until: Some(
                checkpoint
                    .covered_until
                    .map_or(window.created_lte, |c| c.max(window.created_lte)),
            ),
            resume_from: None,
        }),
        Ended::StoppedAt(at) => Some(Checkpoint {
            covered_until: checkpoint.covered_until,
            resume_from: Some(at.max(window.created_gte)),
        }),
        Ended::Nothing => None,
    }
    .filter(|next| next != checkpoint)
}

#[cfg(test)]
mod tests;
