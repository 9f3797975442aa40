//! What the pass writes outside its records, in the ledger's item layout: the wallet item's
//! `autopay_suspended` flag, and the partition keys the charging function's role may write.

use super::super::attempt::Attempt;
use crate::balance::items::{wallet_pk, WALLET_SK};
use inbox_core::store::{attr, Effect};

/// The wallet item's flag set when autopay suspends itself (a boolean, beside `overdrawn` and
/// `review`), written with an `Effect::Adjust` in the transaction that suspends it.
pub const AUTOPAY_SUSPENDED_ATTR: &str = "autopay_suspended";

/// The partition-key patterns the pass writes (`dynamodb:LeadingKeys` of the charging function's
/// role in `template.yaml`, compared by its test): the wallets' partitions (autopay, attempts, the
/// wallet's flag) and the messages of the wallet's own events.
pub fn charge_writes() -> Vec<String> {
    vec![
        format!("{}*", wallet_pk("")),
        format!("MSG#{}#*", crate::balance::events::SOURCE),
    ]
}

/// The write that flags `attempt`'s wallet `autopay_suspended`.
pub fn suspended_flag(attempt: &Attempt) -> Effect {
    Effect::Adjust {
        pk: wallet_pk(attempt.tenant.as_str()),
        sk: WALLET_SK.to_owned(),
        add: Vec::new(),
        set: vec![(AUTOPAY_SUSPENDED_ATTR.to_owned(), attr::bool(true))],
    }
}
