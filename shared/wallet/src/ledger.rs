//! The operator's facade: [`Ledger`] and what its methods answer, gathered from the slices that
//! implement them: [`crate::balance::ledger`] (the type, creating and reading a wallet, its rows,
//! limits and shards, the registry), [`crate::autopay::ledger`] (autopay's settings, attempts and
//! journal) and [`crate::payments::ledger`] (the unmatched payments, listed and bound); and
//! [`reads`]: the partition keys each reader of the ledger reads (its role's read list).

pub mod reads;

pub use crate::autopay::ledger::{pause, resume, AutopayError};
pub use crate::balance::ledger::{
    CreateOutcome, Entries, Ledger, LedgerError, LimitsChange, LimitsSet, Reindexed, Rows,
    ShardsError, ShardsSet, Tenants,
};
pub use crate::payments::ledger::{BindError, Bound, DismissError, LIST_LIMIT};
