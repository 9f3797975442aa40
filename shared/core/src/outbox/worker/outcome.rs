//! What one delivery did ([`DeliveryOutcome`]) and why one was left alone ([`Skip`]): the
//! worker's answers, named as logs and batch summaries count them.

use std::time::Duration;

/// What one delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    Delivered,
    Retrying {
        attempt: u32,
        delay: Duration,
    },
    Failed {
        attempts: u32,
    },
    /// Not attempted now (rate, no time left); due again at `until`.
    Deferred {
        until: i64,
        why: &'static str,
    },
    /// Parked in its destination's backlog (circuit open, destination paused): no message, due
    /// again when released ([`crate::outbox::parking`]).
    Parked {
        why: &'static str,
    },
    /// Left alone: see [`Skip`].
    Skipped(Skip),
    /// No such delivery.
    Missing,
    /// A fan-out item expanded into this many deliveries.
    Expanded(usize),
    /// A failed delivery's pending failure notice, sent (past its deadline).
    NoticeSent,
    /// A failed delivery's pending failure notice, still not sent (the queue failed).
    NoticePending,
}

impl DeliveryOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Retrying { .. } => "retrying",
            Self::Failed { .. } => "failed",
            Self::Deferred { .. } => "deferred",
            Self::Parked { .. } => "parked",
            Self::Skipped(why) => why.as_str(),
            Self::Missing => "missing",
            Self::Expanded(_) => "expanded",
            Self::NoticeSent => "notice_sent",
            Self::NoticePending => "notice_pending",
        }
    }
}

/// Why a delivery was left alone (as [`crate::process::Skip`] is for messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Skip {
    /// Delivered or failed.
    Terminal,
    /// Another worker holds a live lease.
    Leased,
    /// A retry or a deferral that is not due yet.
    NotDue,
    /// The worker is shutting down (its in-flight limit was closed).
    Closed,
    /// Another worker moved it between our read and our write.
    Conflict,
    /// Already parked for the reason it would be parked for (no write).
    Parked,
}

impl Skip {
    /// The name logs and batch summaries count it under.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Terminal => "skipped_terminal",
            Self::Leased => "skipped_leased",
            Self::NotDue => "skipped_not_due",
            Self::Closed => "skipped_closed",
            Self::Conflict => "skipped_conflict",
            Self::Parked => "skipped_parked",
        }
    }
}
