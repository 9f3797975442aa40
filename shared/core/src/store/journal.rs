//! Repeated deliveries of a stored message: the journal record written for each of the first
//! [`MAX_JOURNALED_REPEATS`] ([`Delivery`], read back as [`RepeatRecord`]) and what counting
//! them finds ([`RepeatCount`], see [`super::Inbox::count_repeat`]).

use crate::domain::{BodyDigest, MessageKey};

/// At most this many repeated deliveries of one message are journaled with their headers (and
/// their body when it differs); later ones are only counted, so replays of a captured request
/// cannot grow storage or cost without limit.
pub const MAX_JOURNALED_REPEATS: u64 = 10;

/// What counting a repeated delivery found ([`super::Inbox::count_repeat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepeatCount {
    /// Counted: this is the message's `n`-th repeated delivery.
    Counted(u64),
    /// The counter was not at the expected value (another delivery was counted meanwhile, or it
    /// expired): nothing was written; `current` is its value now (`None`: there is none).
    Conflict { current: Option<u64> },
}

/// A repeated delivery of a message that is already stored, journaled beside it for audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    pub key: MessageKey,
    pub received_at_ms: i64,
    pub body_digest: BodyDigest,
    /// Whether this delivery's body differs from the stored message's body.
    pub body_differs: bool,
    /// The body, kept only when it differs (the original is in the message item).
    pub differing_body: Option<Vec<u8>>,
    pub headers: Vec<(String, String)>,
    /// When the journal record may be removed by TTL, seconds since the epoch.
    pub expires_at_secs: i64,
}

/// A journal record read back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RepeatRecord {
    pub received_at: i64,
    pub body_sha256: String,
    pub body_differs: bool,
}
