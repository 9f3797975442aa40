//! What a wallet's movements announce besides the money: `wallet.low_balance` when `available`
//! crosses down to the floor (once per crossing), `wallet.review_threshold_reached` when a
//! month's debits pass the review threshold (once per month), both through the outbox in the
//! transaction of the movement, and the wallet attributes that remember them.
//!
//! INTERFACE STUB: the webhook-driven movements (`handler`) and the API's holds (`holds`) both
//! call [`notices`]; the body is written by the notices work.

use crate::model::Wallet;
use crate::money::Overflow;
use crate::rules::Movement;
use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::metrics::Metric;
use inbox_core::store::Effect;

/// The effects, wallet attributes and metrics a movement's notices add to its commit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notices {
    /// Written in the movement's transaction (the events: `Effect::CreateIfAbsent` messages).
    pub effects: Vec<Effect>,
    /// Set on the wallet item by the movement's own wallet write.
    pub set: Vec<(String, AttributeValue)>,
    /// Emitted once the commit is made.
    pub metrics: Vec<Metric>,
}

/// The notices of `moves` applied to `wallet` (as read) by an event or request at `at_ms`.
pub fn notices(wallet: &Wallet, moves: &[Movement], at_ms: i64) -> Result<Notices, Overflow> {
    let _ = (wallet, moves, at_ms);
    Ok(Notices::default())
}
