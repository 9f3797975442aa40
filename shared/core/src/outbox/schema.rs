//! The outbox's table layout: key formats and attribute names, beside the inbox's
//! ([`crate::store::schema`]) in the same table.
//!
//! | item | `pk` | `sk` | notes |
//! |---|---|---|---|
//! | destination | `DESTINATIONS` | `DEST#{id}` | its configuration; all of them are one `Query` |
//! | destination journal | `DEST#{id}` | `LOG#{ms, 13 digits}#{uuid}` | every change, who made it |
//! | destination state | `DEST#{id}` | `STATE` | token bucket (`tat_us`) and circuit breaker, written by the workers |
//! | delivery | `OUT#{destination}#{source}#{event id}` | `OUT` | one per (destination, event): status, attempts, journal; in the stream filter |
//! | fan-out | `FAN#{source}#{event id}` | `FAN` | the destinations of an event that did not fit its transaction; expanded by the deliver function |
//!
//! A delivery **parked** ([`super::parking`]: its destination's circuit is open, or the
//! destination is paused) is in its destination's own partition of the same index instead,
//! `open_shard` = `PARKED#{destination}` ([`parked_shard`]) and `open_due` = its `created_at`:
//! the sweep never reads it (no message, no write while it waits), and the destination's backlog
//! is one `Query`, oldest first, when it is released.
//!
//! Deliveries and fan-outs that still have work to do carry `open_shard` (`OUTBOX#0`..`OUTBOX#63`)
//! and `open_due` (ms): the same sparse `open-index` as the inbox's open messages, in shards of
//! their own (the reaper only reads `OPEN#…`), so the deliver function's sweep finds what is due
//! without scanning. Outbox items never lose an attribute (a repeated `Ensure` must find every
//! attribute it would set already there, see [`crate::store::Effect::Ensure`]): finished ones
//! move to a done shard (`OUTBOX#DONE#0`..`OUTBOX#DONE#63`, [`done_shard`]; before there were 64, `..15`), which nothing
//! queries, and leave the table by TTL. The done shards are hashed like the open ones: every
//! finished delivery writes its index entry there, and one constant partition would cap the
//! index at one partition's write rate (about 1,000 writes/s), throttling the base-table writes
//! that record results. Items finished before the shards were hashed keep the single partition
//! [`DONE_SHARD`]: nothing reads it, so they are neither read nor migrated; delivered ones leave
//! by TTL, and a failed one moves to a hashed shard when it is retried and finishes again.

use crate::domain::MessageKey;
use sha2::{Digest, Sha256};

/// The partition of every destination's configuration.
pub const DESTINATIONS_PK: &str = "DESTINATIONS";
/// The sort-key prefix of a destination's configuration.
pub const DESTINATION_PREFIX: &str = "DEST#";
/// The sort key of a destination's shared worker state (token bucket, circuit).
pub const STATE_SK: &str = "STATE";
/// The sort-key prefix of a destination's journal.
pub const LOG_PREFIX: &str = "LOG#";
/// The sort key of a delivery item.
pub const DELIVERY_SK: &str = "OUT";
/// The sort key of a fan-out item.
pub const FANOUT_SK: &str = "FAN";
/// The prefix of the open-index partitions of finished outbox items (they never lose an
/// attribute, so that an `Ensure` repeated on them is a no-op, see
/// [`crate::store::Effect::Ensure`]); the sweep never reads them. Items finished before the
/// shards were hashed hold this value itself.
pub const DONE_SHARD: &str = "OUTBOX#DONE";
/// The prefix of a destination's parked backlog in the open index ([`parked_shard`]).
pub const PARKED_PREFIX: &str = "PARKED#";

/// The open-index partition of `destination`'s parked deliveries (sorted by their `created_at`:
/// the oldest first).
pub fn parked_shard(destination: &str) -> String {
    format!("{PARKED_PREFIX}{destination}")
}

/// The partition-key prefixes of every item the deliver function writes (deliveries, fan-outs, a
/// destination's state and journal, a destination it disables): its role may write nothing else
/// (template.yaml's `dynamodb:LeadingKeys` on `DeliverRole`, compared by tests/it/template.rs).
/// `*` ends a prefix; an entry without it is a whole key.
pub const DELIVER_WRITES: [&str; 4] = ["OUT#*", "FAN#*", "DEST#*", DESTINATIONS_PK];

/// The partition-key patterns of every item the deliver function reads in the table: deliveries
/// (`GetItem`), fan-outs, a destination's state, the destinations (`Query`, and `GetItem` of one
/// before disabling it), and the events' messages (a body: `GetItem`, or the inline bodies of a
/// batch read ahead in one `BatchGetItem`). Its role may read nothing else (template.yaml's
/// `dynamodb:LeadingKeys` on `DeliverRole`, compared by tests/it/template.rs).
pub const DELIVER_READS: [&str; 5] = ["MSG#*", "OUT#*", "FAN#*", "DEST#*", DESTINATIONS_PK];

/// The open-index partitions the deliver function queries: the outbox's open shards
/// ([`outbox_shards`]), as IAM patterns where `?` is one character (`OUTBOX#?`, `OUTBOX#??` for
/// 64 shards), so that its role reads neither the done shards (`OUTBOX#DONE#…`) nor another
/// application's shards of the index; and the destinations' parked backlogs (`PARKED#*`).
pub fn deliver_index_reads() -> Vec<String> {
    let digits = (OUTBOX_SHARDS.saturating_sub(1)).to_string().len();
    (1..=digits)
        .map(|n| format!("OUTBOX#{}", "?".repeat(n)))
        .chain([format!("{PARKED_PREFIX}*")])
        .collect()
}

/// How many open-index shards the outbox spreads over (its open and its done partitions alike).
/// A delivery writes its open shard's index up to three times (the fan-out's put, the claim, the
/// record that leaves the shard): at 1,000 write units per partition and second, 64 shards carry
/// about 21,000 webhooks/s (16 carried 5,333, the capacity table's lowest stack-wide cap;
/// `docs/benchmarks.md`). Items filed under fewer shards (`OUTBOX#0`..`OUTBOX#15`, before there
/// were 64) are among these and keep their value until their next write: the sweep and the
/// resend, reading every shard, find them where they are; a finished item keeps its
/// `OUTBOX#DONE#0`..`15` (an `Ensure` repeated on it sets nothing it has).
pub const OUTBOX_SHARDS: u8 = 64;

/// `kind` values.
pub const KIND_DESTINATION: &str = "destination";
pub const KIND_DESTINATION_LOG: &str = "destination_log";
pub const KIND_DESTINATION_STATE: &str = "destination_state";
pub const KIND_OUTBOUND: &str = "outbound";
pub const KIND_FANOUT: &str = "fanout";

// Attributes of the state item.
pub const TAT_US: &str = "tat_us";
pub const FAILURES: &str = "failures";
pub const FAILING_SINCE: &str = "failing_since";
pub const OPENED_AT: &str = "opened_at";
pub const PROBE_UNTIL: &str = "probe_until";
pub const PROBES: &str = "probes";
pub const PROBES_UP: &str = "probes_up";
pub const PROBES_DOWN: &str = "probes_down";
/// The breaker window's two slots ([`crate::outbox::breaker::window`]): each a bucket's index,
/// its requests and its failures.
pub const WINDOW_SLOTS: [[&str; 3]; 2] = [["w0_at", "w0_n", "w0_f"], ["w1_at", "w1_n", "w1_f"]];
// Attributes of delivery items beyond the inbox's names.
pub const DESTINATION: &str = "destination";
pub const WEBHOOK_ID: &str = "webhook_id";
pub const CREATED_AT: &str = "created_at";
pub const DESTINATIONS_ATTR: &str = "destinations";

/// The sort key of a destination's configuration.
pub fn destination_sk(id: &str) -> String {
    format!("{DESTINATION_PREFIX}{id}")
}

/// The partition of a destination's journal and state.
pub fn destination_pk(id: &str) -> String {
    format!("{DESTINATION_PREFIX}{id}")
}

/// The sort key of a journal entry.
pub fn log_sk(at_ms: i64, unique: &uuid::Uuid) -> String {
    format!("{LOG_PREFIX}{:013}#{}", at_ms.max(0), unique.as_simple())
}

/// The partition key of the delivery of `key` to `destination`: the dedupe key of the outbox.
pub fn delivery_pk(destination: &str, key: &MessageKey) -> String {
    format!("OUT#{destination}#{}#{}", key.source, key.event_id)
}

/// The partition key of an event's fan-out item.
pub fn fanout_pk(key: &MessageKey) -> String {
    format!("FAN#{}#{}", key.source, key.event_id)
}

/// The open-index shard of a delivery or fan-out item (by its partition key): stable for its life.
pub fn outbox_shard(pk: &str) -> String {
    let h = Sha256::digest(pk.as_bytes());
    format!("OUTBOX#{}", h[0] % OUTBOX_SHARDS)
}

/// The open-index partition of a finished delivery or fan-out item (by its partition key):
/// `OUTBOX#DONE#0`..`OUTBOX#DONE#63`, spread like [`outbox_shard`].
pub fn done_shard(pk: &str) -> String {
    let h = Sha256::digest(pk.as_bytes());
    format!("{DONE_SHARD}#{}", h[0] % OUTBOX_SHARDS)
}

/// Every outbox open-index shard.
pub fn outbox_shards() -> impl Iterator<Item = String> {
    (0..OUTBOX_SHARDS).map(|i| format!("OUTBOX#{i}"))
}

/// The `webhook-id` of the delivery of `key` to `destination`: the same for every attempt, retry
/// and replay of that pair, different for every other pair (the receiver's idempotency key).
pub fn webhook_id(destination: &str, key: &MessageKey) -> String {
    let h = Sha256::new()
        .chain_update(destination.as_bytes())
        .chain_update(b"\n")
        .chain_update(key.source.as_str().as_bytes())
        .chain_update(b"\n")
        .chain_update(key.event_id.as_str().as_bytes())
        .finalize();
    format!("msg_{}", &hex::encode(h)[..32])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventId, SourceName};

    fn deliver_may_write(pk: &str) -> bool {
        DELIVER_WRITES.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => pk.starts_with(prefix),
            None => pk == *p,
        })
    }

    /// Whether `key` matches one of `patterns` as IAM's `StringLike` does (`*`: any run, `?`: one
    /// character).
    fn like(patterns: &[String], key: &str) -> bool {
        fn matches(p: &[char], k: &[char]) -> bool {
            match (p.first(), k.first()) {
                (None, None) => true,
                (Some('*'), _) => matches(&p[1..], k) || (!k.is_empty() && matches(p, &k[1..])),
                (Some('?'), Some(_)) => matches(&p[1..], &k[1..]),
                (Some(a), Some(b)) if a == b => matches(&p[1..], &k[1..]),
                _ => false,
            }
        }
        let k: Vec<char> = key.chars().collect();
        patterns
            .iter()
            .any(|p| matches(&p.chars().collect::<Vec<_>>(), &k))
    }

    #[test]
    fn the_deliverer_reads_its_keys_and_the_open_outbox_shards_only() {
        let k = key("stripe", "evt_1");
        let reads: Vec<String> = DELIVER_READS.iter().map(|p| (*p).to_owned()).collect();
        for pk in [
            delivery_pk("dest_1", &k),
            fanout_pk(&k),
            destination_pk("dest_1"),
            DESTINATIONS_PK.to_owned(),
            crate::store::schema::message_pk(&k),
        ] {
            assert!(like(&reads, &pk), "{pk}");
        }
        for pk in [
            "ACCOUNT#acct_1",
            "DESTINATIONS2",
            "PAYMENT#pi_1",
            "PROVIDER#stripe",
        ] {
            assert!(!like(&reads, pk), "{pk}");
        }
        let index = deliver_index_reads();
        assert!(outbox_shards().all(|s| like(&index, &s)), "{index:?}");
        for i in 0..3000 {
            let done = done_shard(&format!("OUT#d#s#{i}"));
            assert!(!like(&index, &done), "{done}");
        }
        assert!(like(&index, &parked_shard("crm")));
        for other in [DONE_SHARD, "OPEN#1", "AUTOPAY#ATTEMPT#1", "UNMATCHED"] {
            assert!(!like(&index, other), "{other}");
        }
    }

    #[test]
    fn every_key_the_deliverer_writes_is_under_its_prefixes_and_no_inbox_key_is() {
        let k = key("stripe", "evt_1");
        for pk in [
            delivery_pk("dest_1", &k),
            fanout_pk(&k),
            destination_pk("dest_1"),
            DESTINATIONS_PK.to_owned(),
        ] {
            assert!(deliver_may_write(&pk), "{pk}");
        }
        for pk in [
            crate::store::schema::message_pk(&k),
            "ACCOUNT#acct_1".to_owned(),
            "DESTINATIONS2".to_owned(),
            "EFFECT#evt_1".to_owned(),
        ] {
            assert!(!deliver_may_write(&pk), "{pk}");
        }
    }

    fn key(source: &str, id: &str) -> MessageKey {
        MessageKey::new(
            SourceName::parse(source).unwrap(),
            EventId::parse(id).unwrap(),
        )
    }

    #[test]
    fn keys_and_ids_are_stable_and_distinct() {
        let k = key("stripe", "evt_1");
        assert_eq!(delivery_pk("crm", &k), "OUT#crm#stripe#evt_1");
        assert_eq!(fanout_pk(&k), "FAN#stripe#evt_1");
        assert_eq!(destination_sk("crm"), "DEST#crm");
        assert_eq!(webhook_id("crm", &k), webhook_id("crm", &k));
        assert!(webhook_id("crm", &k).starts_with("msg_"));
        assert_eq!(webhook_id("crm", &k).len(), 36);
        assert_ne!(webhook_id("crm", &k), webhook_id("analytics", &k));
        assert_ne!(
            webhook_id("crm", &k),
            webhook_id("crm", &key("stripe", "evt_2"))
        );
        assert_ne!(
            webhook_id("crm", &k),
            webhook_id("crm", &key("mailer", "evt_1"))
        );
        assert!(log_sk(5, &uuid::Uuid::nil()).starts_with("LOG#0000000000005#"));
        let shards: std::collections::HashSet<_> = (0..3000)
            .map(|i| outbox_shard(&format!("OUT#d#s#{i}")))
            .collect();
        assert_eq!(shards.len(), usize::from(OUTBOX_SHARDS));
        assert!(outbox_shards().all(|s| shards.contains(&s)));
        let done: std::collections::HashSet<_> = (0..3000)
            .map(|i| done_shard(&format!("OUT#d#s#{i}")))
            .collect();
        assert_eq!(
            done.len(),
            usize::from(OUTBOX_SHARDS),
            "finished items spread over as many partitions as open ones"
        );
        assert!(done.iter().all(|d| d.starts_with("OUTBOX#DONE#")
            && !shards.contains(d)
            && d.as_str() != DONE_SHARD));
    }
}
