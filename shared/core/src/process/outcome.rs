//! The processor's configuration and what processing one message did: its [`Outcome`], why a
//! message was [`Skip`]ped, and the infrastructure errors that make a record be delivered again.

use crate::policy::{NotNow, RetryPolicy};
use crate::queue::QueueError;
use crate::store::StoreError;
use std::time::Duration;

/// How the processor behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessorConfig {
    pub policy: RetryPolicy,
    /// How long a claim holds: the function's timeout plus a margin.
    pub lease: Duration,
    /// How long processed and ignored messages are kept (TTL).
    pub retention: Duration,
    /// How many records of a batch are processed at once (messages are independent: each has
    /// its own key and version, and handlers must not depend on arrival order).
    pub concurrency: usize,
    /// How long a failing queue request (a retry's send, a failed retry's early redelivery) is
    /// retried within the invocation ([`crate::queue::patiently`]).
    pub queue_patience: Duration,
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        Self {
            policy: RetryPolicy::default(),
            lease: Duration::from_secs(60),
            retention: Duration::from_secs(30 * 86_400),
            concurrency: 10,
            queue_patience: crate::queue::QUEUE_PATIENCE,
        }
    }
}

/// Why a message was left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Already processed, ignored or failed.
    Terminal,
    /// Another invocation holds a live lease.
    Leased,
    /// A retry that is not due yet.
    NotDue,
    /// Another invocation moved it between our read and our write.
    Conflict,
}

impl From<NotNow> for Skip {
    fn from(n: NotNow) -> Self {
        match n {
            NotNow::Terminal => Self::Terminal,
            NotNow::Leased => Self::Leased,
            NotNow::NotDue => Self::NotDue,
        }
    }
}

/// What processing one message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Processed,
    Ignored,
    Retrying {
        attempt: u32,
        delay: Duration,
    },
    Failed {
        attempts: u32,
        permanent: bool,
    },
    Skipped(Skip),
    /// No such message (a stale retry request).
    Missing,
}

impl Outcome {
    /// A short name for logs and metrics.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Processed => "processed",
            Self::Ignored => "ignored",
            Self::Retrying { .. } => "retrying",
            Self::Failed { .. } => "failed",
            Self::Skipped(Skip::Terminal) => "skipped_terminal",
            Self::Skipped(Skip::Leased) => "skipped_leased",
            Self::Skipped(Skip::NotDue) => "skipped_not_due",
            Self::Skipped(Skip::Conflict) => "skipped_conflict",
            Self::Missing => "missing",
        }
    }
}

/// The store or a queue failed: the record must be delivered again (a batch item failure).
#[derive(Debug, thiserror::Error)]
pub enum InfraError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
}
