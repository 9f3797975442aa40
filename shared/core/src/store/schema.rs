//! The table's layout: key formats and attribute names, in one place.
//!
//! One table holds everything (single-table design), keyed by `pk` (partition) and `sk` (sort):
//!
//! | item | `pk` | `sk` | notes |
//! |---|---|---|---|
//! | message | `MSG#{source}#{event_id}` | `MSG` | the body (zstd, or its S3 key), status, history; in the stream filter |
//! | repeated delivery | same as its message | `DLV#{received ms, 13 digits}#{uuid}` | journal (the first 10); expires by TTL |
//! | repeated-delivery counter | same as its message | `DLV#count` | how many; expires by TTL after the last |
//!
//! Non-terminal messages carry `open_shard` (`OPEN#0`..`OPEN#63`) and `open_due` (ms): the sparse
//! global secondary index `open-index` over them lets a scheduled reaper find pending, retrying
//! and stuck messages without scanning. Terminal transitions remove both attributes, except the
//! one to `failed` (quarantined): its entry moves to `FAILED#0`..`FAILED#15` ([`failed_shard`]),
//! `open_due` = the time it failed, where the console's Quarantine page reads the failed messages
//! newest first without scanning; the reaper reads only `OPEN#…` and never sees them. A replay
//! moves the entry back to `OPEN#…` (one write, the entry's two attributes changed).
//!
//! Every message also carries `list_shard` (`EVT#0`..`EVT#15`) and `list_at`
//! (`{received ms, 13 digits}#{source}#{event id}`), written once by its first write and never
//! changed: the global secondary index `events-index` over them lists messages newest first
//! without scanning (the console's Events page, `store/events.rs`). It projects only what never
//! changes (`source`, `event_id`, `event_type`, `provider_id`), so a transition writes nothing to
//! it: one index entry per message, written at ingest.

use crate::domain::MessageKey;
use sha2::{Digest, Sha256};

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const KIND: &str = "kind";
pub const SOURCE: &str = "source";
pub const EVENT_ID: &str = "event_id";
pub const EVENT_TYPE: &str = "event_type";
pub const STATUS: &str = "status";
pub const RECEIVED_AT: &str = "received_at";
pub const BODY: &str = "body";
pub const BODY_SHA256: &str = "body_sha256";
pub const BODY_BYTES: &str = "body_bytes";
pub const BODY_DIFFERS: &str = "body_differs";
/// How `body` is encoded: `zstd` (a zstd frame of the raw body); absent: the raw body itself
/// (items written before bodies were compressed, and bodies that compression would not shrink).
pub const BODY_ENC: &str = "body_enc";
/// The S3 key of a body kept outside the item (a claim check): `body` is then absent.
pub const BODY_REF: &str = "body_ref";
pub const HEADERS: &str = "headers";
pub const ATTEMPTS: &str = "attempts";
pub const HISTORY: &str = "history";
pub const HISTORY_TOTAL: &str = "history_total";
pub const NOTICE_PENDING: &str = "notice_pending";
/// A per-request token in a new message: an SDK retry of the same `PutItem` that finds the item
/// recognises its own write (see `DynamoTable::put_if_absent`).
pub const INGEST_TOKEN: &str = "ingest_token";
pub const OPEN_SHARD: &str = "open_shard";
pub const OPEN_DUE: &str = "open_due";
pub const EXPIRES_AT: &str = "expires_at";
pub const VERSION: &str = "version";
pub const LEASE_UNTIL: &str = "lease_until";
pub const NEXT_ATTEMPT_AT: &str = "next_attempt_at";
pub const LAST_ERROR: &str = "last_error";
pub const UPDATED_AT: &str = "updated_at";
pub const PROVIDER_ID: &str = "provider_id";
pub const IDENTITY_ERROR: &str = "identity_error";
/// A message split from a batch: where in the batch it was (`crate::batch::BatchPart`).
pub const BATCH: &str = "batch";
/// The repeated-delivery counter's value (a reserved word in expressions: always aliased).
pub const COUNT: &str = "count";

/// How long after a delivery is due its outcome may take before the reaper counts the attempt as
/// lost and re-drives the message: a new message's stream delivery (the stream normally delivers
/// within seconds; this catches a stream that was down or past its 24 h retention, and an
/// invocation that crashed), and a scheduled retry's delivery (`open_due` = retry time + this).
pub const PENDING_GRACE_MS: i64 = 5 * 60 * 1000;

/// The sort key of a message item.
pub const MESSAGE_SK: &str = "MSG";
/// The prefix of every message's partition key ([`message_pk`]): `MSG#{source}#{event id}`.
pub const MESSAGE_PREFIX: &str = "MSG#";
/// The name of the sparse index of non-terminal messages.
pub const OPEN_INDEX: &str = "open-index";
/// How many partitions the open index spreads over (avoids one hot partition). Every new
/// message writes its shard twice (its entry added at ingest, removed when it ends): at 1,000
/// write units per partition and second, 64 shards carry 32,000 webhooks/s (16 carried 8,000,
/// the capacity table's lowest stack-wide cap; `docs/benchmarks.md`). Entries written under
/// fewer shards (`OPEN#0`..`OPEN#15`, before there were 64) are among these and keep their
/// value until their next write: the reaper, reading every shard, finds them where they are.
pub const OPEN_SHARDS: u8 = 64;

/// How many open-index partitions the failed messages spread over ([`failed_shard`]). A message
/// writes its `FAILED#` entry when it fails for good (and once more when its quarantine notice is
/// recorded sent): 16 partitions at 1,000 write units each carry 16,000 failures/s, more than the
/// stack's whole webhook target; the Quarantine page reads all 16, newest first, and merges them.
pub const FAILED_SHARDS: u8 = 16;
/// The prefix of the failed messages' open-index partitions.
pub const FAILED_SHARD_PREFIX: &str = "FAILED#";

/// The partition of a message in the events index ([`list_shard`]).
pub const LIST_SHARD: &str = "list_shard";
/// A message's place in the events index, unique and ordered by time ([`list_at`]).
pub const LIST_AT: &str = "list_at";
/// The name of the index of every message by time.
pub const EVENTS_INDEX: &str = "events-index";
/// How many partitions the events index spreads over. A message writes its entry once (at
/// ingest, under 1 KB: one write unit), so 16 partitions at 1,000 write units each carry 16,000
/// webhooks/s (the stack's target is 10,000); a page reads all 16, newest first, and merges them.
pub const LIST_SHARDS: u8 = 16;
/// The prefix of the events index's partitions.
pub const LIST_SHARD_PREFIX: &str = "EVT#";

/// `kind` values.
pub const KIND_MESSAGE: &str = "message";
pub const KIND_DELIVERY: &str = "delivery";
pub const KIND_DELIVERY_COUNT: &str = "delivery_count";

/// The partition key of a message and its journal.
pub fn message_pk(key: &MessageKey) -> String {
    format!("{MESSAGE_PREFIX}{}#{}", key.source, key.event_id)
}

/// The key attributes (`pk`, `sk`) of a message item.
pub fn message_key_attrs(
    key: &MessageKey,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    use aws_sdk_dynamodb::types::AttributeValue;
    std::collections::HashMap::from([
        (PK.to_string(), AttributeValue::S(message_pk(key))),
        (SK.to_string(), AttributeValue::S(MESSAGE_SK.to_string())),
    ])
}

/// All open-index shard names.
pub fn open_shards() -> impl Iterator<Item = String> {
    (0..OPEN_SHARDS).map(|i| format!("OPEN#{i}"))
}

/// The events-index partition of a message: stable for its whole life.
pub fn list_shard(key: &MessageKey) -> String {
    let h = Sha256::new()
        .chain_update(key.source.as_str())
        .chain_update(b"#")
        .chain_update(key.event_id.as_str())
        .finalize();
    format!("{LIST_SHARD_PREFIX}{}", h[1] % LIST_SHARDS)
}

/// All events-index partition names.
pub fn list_shards() -> impl Iterator<Item = String> {
    (0..LIST_SHARDS).map(|i| format!("{LIST_SHARD_PREFIX}{i}"))
}

/// The events-index sort key of a message received at `received_at_ms`: time first (13 digits,
/// so the text sorts as the number), then the key, so that no two messages share a place.
pub fn list_at(received_at_ms: i64, key: &MessageKey) -> String {
    format!(
        "{:013}#{}#{}",
        received_at_ms.max(0),
        key.source,
        key.event_id
    )
}

/// The sort-key prefix of journal records.
pub const DELIVERY_PREFIX: &str = "DLV#";

/// The sort key of a message's repeated-delivery counter (under [`DELIVERY_PREFIX`], so it goes
/// with the journal when a message is purged).
pub const DELIVERY_COUNT_SK: &str = "DLV#count";

/// The sort key of a journal record.
pub fn delivery_sk(received_at_ms: i64, unique: &uuid::Uuid) -> String {
    format!(
        "{DELIVERY_PREFIX}{:013}#{}",
        received_at_ms.max(0),
        unique.as_simple()
    )
}

/// The open-index shard of a message: stable for its whole life.
pub fn open_shard(key: &MessageKey) -> String {
    let h = Sha256::new()
        .chain_update(key.source.as_str())
        .chain_update(b"#")
        .chain_update(key.event_id.as_str())
        .finalize();
    format!("OPEN#{}", h[0] % OPEN_SHARDS)
}

/// The open-index partition of a failed message: stable for its whole life.
pub fn failed_shard(key: &MessageKey) -> String {
    let h = Sha256::new()
        .chain_update(key.source.as_str())
        .chain_update(b"#")
        .chain_update(key.event_id.as_str())
        .finalize();
    format!("{FAILED_SHARD_PREFIX}{}", h[0] % FAILED_SHARDS)
}

/// All the failed messages' open-index partitions.
pub fn failed_shards() -> impl Iterator<Item = String> {
    (0..FAILED_SHARDS).map(|i| format!("{FAILED_SHARD_PREFIX}{i}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventId, SourceName};

    fn key(id: &str) -> MessageKey {
        MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(id).unwrap(),
        )
    }

    #[test]
    fn keys_are_stable_and_prefixed() {
        assert_eq!(message_pk(&key("evt_1")), "MSG#stripe#evt_1");
        let u = uuid::Uuid::nil();
        assert_eq!(
            delivery_sk(1_700_000_000_123, &u),
            format!("DLV#1700000000123#{}", "0".repeat(32))
        );
        assert!(delivery_sk(5, &u).starts_with("DLV#0000000000005#"));
        assert_eq!(open_shard(&key("evt_1")), open_shard(&key("evt_1")));
    }

    #[test]
    fn shards_spread() {
        let shards: std::collections::HashSet<_> = (0..2000)
            .map(|i| open_shard(&key(&format!("evt_{i}"))))
            .collect();
        assert_eq!(shards.len(), OPEN_SHARDS as usize);
        assert!(shards.iter().all(|s| s.starts_with("OPEN#")));
        let all: std::collections::HashSet<_> = open_shards().collect();
        assert_eq!(shards, all, "every shard is one the reaper reads");
        let failed: std::collections::HashSet<_> = (0..2000)
            .map(|i| failed_shard(&key(&format!("evt_{i}"))))
            .collect();
        assert_eq!(failed, failed_shards().collect());
        assert!(
            failed.iter().all(|f| !all.contains(f)),
            "the reaper reads no failed partition"
        );
        for old in 0..16 {
            assert!(
                all.contains(&format!("OPEN#{old}")),
                "an entry of the 16 former shards is read"
            );
        }
    }
}
