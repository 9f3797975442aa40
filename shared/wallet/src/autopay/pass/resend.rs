//! Whether a claimed (`Charging`) try may be sent again, and how: a charge the provider may
//! have made is never made twice. Pure.
//!
//! | the try | next |
//! |---|---|
//! | an answer named its charge (`provider_ref`) | looked up by that reference; never sent again, under any key |
//! | no charge named, claimed less than [`KEY_WINDOW`] ago | sent again with its key (the provider replays its saved answer, or runs it once) |
//! | no charge named, claimed [`KEY_WINDOW`] ago or more (the key may be pruned) | the provider's records are asked first: a charge of the attempt and try found is the answer (the attempt's own included); sent again only when they prove there is none |

use crate::autopay::attempt::Attempt;
use inbox_core::clock::Millis;
use std::time::Duration;

/// How long a try's key is sent again without asking the provider first: well within the 24
/// hours Stripe keeps an idempotency key at least ("keys can be removed from the system
/// automatically after they're at least 24 hours old, and a new request is generated if a key is
/// reused after the original is pruned": Stripe API reference, Idempotent requests).
pub const KEY_WINDOW: Duration = Duration::from_secs(12 * 3600);

/// When the current try was first claimed: recorded on the attempt; for a try claimed before it
/// was (an item written by an earlier version), its first journaled answer, else `None`.
pub fn first_claim(attempt: &Attempt) -> Option<Millis> {
    attempt.claimed_at.or_else(|| {
        attempt
            .tries
            .iter()
            .find(|t| t.try_no == attempt.try_no)
            .map(|t| t.at)
    })
}

/// What a claimed (`Charging`) try does next instead of a blind send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// An answer named the try's charge: look it up, never send it again.
    LookUp(String),
    /// Send the same key again: the provider keeps it (replays its answer or runs it once).
    Send,
    /// The key may be pruned: ask the provider's records for the try's charges first; send only
    /// if they prove there are none.
    FindFirst { since: Millis },
}

/// What a claimed try does next (the module's second table).
pub fn resend(claimed: &Attempt, now: Millis) -> Resend {
    if let Some(r) = &claimed.provider_ref {
        return Resend::LookUp(r.clone());
    }
    match first_claim(claimed) {
        Some(at) if at.plus(KEY_WINDOW) <= now => Resend::FindFirst { since: at },
        _ => Resend::Send,
    }
}
