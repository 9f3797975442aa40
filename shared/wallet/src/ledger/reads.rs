//! The partition keys each reader of the ledger reads in the table, as `dynamodb:LeadingKeys`
//! patterns (`*` ends a prefix; an entry without it is a whole key): the roles of the functions
//! that run them may read nothing else (template.yaml, compared by tests/it/template.rs).

use crate::autopay::items::{method_index_key, ATTEMPT_SHARD_PREFIX};
use crate::balance::items::{payment_index_key, wallet_pk, REGISTRY_PK};
use crate::payments::unmatched::items::UNMATCHED_SHARD;
use inbox_core::store::schema::MESSAGE_PREFIX;

fn prefix(key: &str) -> String {
    format!("{key}*")
}

/// What the [`crate::WalletHandler`] reads (the processor runs it): the wallets' partitions (the
/// wallet and its shards, its emails, holds, payments, autopay and attempts), a payment's index
/// and unmatched item (`PAYMENT#…`), a payment method's index (`PAYMENT_METHOD#…`). Never the
/// registry, the open index or a message (its type has no `DueIndex` or `MessageStore`).
pub fn handler_reads() -> Vec<String> {
    vec![
        prefix(&wallet_pk("")),
        prefix(&payment_index_key("").0),
        prefix(&method_index_key("").0),
    ]
}

/// What the wallet API reads through the ledger: the wallets' partitions only (the wallet and its
/// shards, a hold, an email's row, autopay's saved customer, and the API's idempotency records,
/// kept there too).
pub fn api_reads() -> Vec<String> {
    vec![prefix(&wallet_pk(""))]
}

/// What the reconciliation reads in the table: the wallet registry (`WALLETS`: its completion
/// mark and a `Query` of its tenants), the wallets' partitions (the wallet, its shards, entries,
/// emails and holds), the unmatched payments' items (`PAYMENT#…`) and the messages the entries
/// name (whether the inbox still holds them). Besides these, a `Scan` until the registry is
/// complete ([`crate::Ledger::tenants`]).
pub fn reconcile_reads() -> Vec<String> {
    vec![
        prefix(&wallet_pk("")),
        REGISTRY_PK.to_owned(),
        prefix(&payment_index_key("").0),
        prefix(MESSAGE_PREFIX),
    ]
}

/// What the reconciliation against Stripe reads ([`crate::reconcile::provider::pass`], run by
/// the catch-up function): the wallet registry (never a scan), the wallets' partitions (the
/// wallet, its payment rows) and the payments' index items (a payment's tenant).
pub fn stripe_reconcile_reads() -> Vec<String> {
    vec![
        prefix(&wallet_pk("")),
        REGISTRY_PK.to_owned(),
        prefix(&payment_index_key("").0),
    ]
}

/// The open-index partitions the reconciliation queries: the unmatched payments' one shard and
/// the autopay attempts' shards (the overdue ones: [`crate::autopay::overdue`]).
pub fn reconcile_index_reads() -> Vec<String> {
    vec![UNMATCHED_SHARD.to_owned(), prefix(ATTEMPT_SHARD_PREFIX)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::items::shards::shard_key;
    use crate::payments::unmatched::items::unmatched_key;

    fn reads(patterns: &[String], pk: &str) -> bool {
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => pk.starts_with(prefix),
            None => pk == p,
        })
    }

    #[test]
    fn each_reader_reads_the_keys_it_uses_and_not_the_others() {
        let handler = handler_reads();
        for pk in [
            wallet_pk("acme"),
            shard_key("acme", 3).0,
            payment_index_key("pi_1").0,
            unmatched_key("pi_1").0,
            method_index_key("pm_1").0,
        ] {
            assert!(reads(&handler, &pk), "{pk}");
        }
        for pk in [
            REGISTRY_PK,
            "MSG#stripe#evt_1",
            "DESTINATIONS",
            "PROVIDER#stripe",
        ] {
            assert!(!reads(&handler, pk), "{pk}");
        }
        let api = api_reads();
        assert!(reads(&api, &shard_key("acme", 2).0));
        assert!(!reads(&api, &payment_index_key("pi_1").0));
        assert!(!reads(&api, REGISTRY_PK), "WALLETS is not under WALLET#");
        let reconcile = reconcile_reads();
        for pk in [
            wallet_pk("acme"),
            REGISTRY_PK.to_owned(),
            unmatched_key("pi_1").0,
            "MSG#stripe#evt_1".to_owned(),
        ] {
            assert!(reads(&reconcile, &pk), "{pk}");
        }
        assert!(!reads(&reconcile, &method_index_key("pm_1").0));
        let reconcile_index = reconcile_index_reads();
        for shard in crate::autopay::items::shards(ATTEMPT_SHARD_PREFIX) {
            assert!(reads(&reconcile_index, &shard), "{shard}");
        }
        for shard in [
            "AUTOPAY#RECURRING#0",
            "WALLET#HOLDS#0",
            "OUTBOX#0",
            "OPEN#0",
        ] {
            assert!(!reads(&reconcile_index, shard), "{shard}");
        }
        assert!(!reads(&reconcile, "DESTINATIONS"));
    }
}
