//! The DynamoDB adapter of the store traits. The hot path is one conditional `PutItem`; the old
//! item of a failed condition comes back in the same response (`ALL_OLD`): a duplicate costs no read.
//! Here: the table, the ingest path ([`super::Inbox`]) and error classification; `messages`: the
//! processing side ([`super::MessageStore`]); `items`: applications' item reads ([`super::ItemStore`]);
//! `effects`: effects as conditional writes ([`super::ItemWriter`]); `events`: the events index
//! ([`super::EventIndex`]); `outbox`: deliveries and
//! destination state ([`crate::outbox::store::OutboxStore`]); `body`: how a body is stored (inline,
//! or in S3); `read`: a message and its body read back; `sealed`: secrets under KMS ([`SecretsKey`]);
//! `cancel`: what a cancelled transaction's reasons mean; `contention`: writes that met another
//! transaction sent again after a backoff, bounded and counted ([`Contention`]); `client`: the
//! client every function uses ([`fail_fast_client`]) and how a [`DynamoTable`] is built.

pub mod backfill;
pub mod body;
mod bucket;
mod cancel;
mod circuit;
mod client;
mod contention;
mod effects;
mod events;
pub mod failed;
mod items;
mod messages;
mod open_index;
mod outbox;
mod read;
mod sealed;

use super::attr::{get_n, get_s, n, s, string_map};
use super::schema::*;
use super::{Inbox, Item, NewMessage, PutOutcome, Repeat, RepeatCount, StoreError};
use crate::clock::Millis;
use crate::domain::{BodyDigest, MessageKey, Status};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
pub use body::{S3Bodies, StoredBody};
pub use client::{fail_fast_client, FAIL_FAST_OPERATION_TIMEOUT};
pub use contention::{Contention, TRANSACTION_CONFLICTS, TRANSACTION_CONFLICTS_EXHAUSTED};
pub use sealed::SecretsKey;
use std::collections::HashMap;

/// The inbox on a DynamoDB table laid out as in [`super::schema`] (large bodies in S3: `body.rs`).
#[derive(Debug, Clone)]
pub struct DynamoTable {
    client: Client,
    table: String,
    bodies: Option<S3Bodies>,
    secrets_key: Option<SecretsKey>,
    contention: Contention,
}

impl DynamoTable {
    /// How `body` of the message `key` is stored: in S3 (written now, before the item that
    /// refers to it) when it is above the inline limit and a bucket is configured, else inline.
    async fn store_body(
        &self,
        key: &MessageKey,
        body: &[u8],
        digest: Option<BodyDigest>,
    ) -> Result<StoredBody, StoreError> {
        match &self.bodies {
            Some(bodies) if bodies.takes(body.len()) => {
                let digest = digest.unwrap_or_else(|| BodyDigest::of(body));
                let s3_key = S3Bodies::key_of(key, &digest);
                bodies.put(&s3_key, body).await?;
                Ok(StoredBody::External {
                    key: s3_key,
                    digest,
                })
            }
            _ => Ok(StoredBody::inline(body)),
        }
    }

    /// Scans the items of `kind`, page by page (consistent), until the end or `page` says `false`.
    async fn scan_kind(
        &self,
        kind: &str,
        mut page: impl FnMut(Vec<Item>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("#kind = :kind")
                .expression_attribute_names("#kind", KIND)
                .expression_attribute_values(":kind", s(kind))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            let more = page(out.items.unwrap_or_default())?;
            start = out.last_evaluated_key;
            if start.is_none() || !more {
                return Ok(());
            }
        }
    }
}

/// The item of a new message (status `pending`, in the open index, first history entry), carrying
/// the `token` of the request that writes it and its body as `body` says.
pub fn message_item(
    msg: &NewMessage,
    token: &str,
    body: StoredBody,
) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::with_capacity(16);
    item.insert(PK.into(), s(message_pk(&msg.key)));
    item.insert(SK.into(), s(MESSAGE_SK));
    item.insert(KIND.into(), s(KIND_MESSAGE));
    item.insert(SOURCE.into(), s(msg.key.source.as_str()));
    item.insert(EVENT_ID.into(), s(msg.key.event_id.as_str()));
    if let Some(t) = &msg.event_type {
        item.insert(EVENT_TYPE.into(), s(t.as_str()));
    }
    item.insert(STATUS.into(), s(Status::Pending.as_str()));
    item.insert(RECEIVED_AT.into(), n(msg.received_at_ms));
    item.insert(LIST_SHARD.into(), s(list_shard(&msg.key)));
    item.insert(LIST_AT.into(), s(list_at(msg.received_at_ms, &msg.key)));
    if let (Some(d), StoredBody::Inline { .. }) = (&msg.body_digest, &body) {
        item.insert(BODY_SHA256.into(), s(d.to_hex()));
    }
    body.put_into(&mut item);
    item.insert(BODY_BYTES.into(), n(msg.body.len() as i64));
    item.insert(HEADERS.into(), string_map(&msg.headers));
    if let Some(id) = &msg.provider_id {
        item.insert(PROVIDER_ID.into(), s(id.as_str()));
    }
    if let Some(why) = &msg.unidentified {
        item.insert(IDENTITY_ERROR.into(), s(why.as_str()));
    }
    if let Some(part) = &msg.batch {
        item.insert(BATCH.into(), batch_attr(part));
    }
    item.insert(ATTEMPTS.into(), n(0));
    item.insert(OPEN_SHARD.into(), s(open_shard(&msg.key)));
    item.insert(OPEN_DUE.into(), n(msg.received_at_ms + PENDING_GRACE_MS));
    item.insert(VERSION.into(), n(0));
    item.insert(INGEST_TOKEN.into(), s(token));
    let first = HashMap::from([
        ("at".to_string(), n(msg.received_at_ms)),
        ("status".to_string(), s(Status::Pending.as_str())),
        ("note".to_string(), s("received")),
    ]);
    item.insert(
        HISTORY.into(),
        AttributeValue::L(vec![AttributeValue::M(first)]),
    );
    item
}

/// A batch part as a map attribute (read back by `StoredMessage`'s deserialization).
fn batch_attr(part: &crate::batch::BatchPart) -> AttributeValue {
    let mut map = HashMap::from([
        ("sha256".to_string(), s(&part.sha256)),
        ("index".to_string(), n(i64::from(part.index))),
        ("count".to_string(), n(i64::from(part.count))),
        ("before".to_string(), s(&part.before)),
    ]);
    if let Some(after) = &part.after {
        map.insert("after".to_string(), s(after));
    }
    AttributeValue::M(map)
}

fn repeat_item(d: &Repeat, differing: Option<StoredBody>) -> HashMap<String, AttributeValue> {
    let mut item = HashMap::with_capacity(10);
    item.insert(PK.into(), s(message_pk(&d.key)));
    item.insert(
        SK.into(),
        s(delivery_sk(d.received_at_ms, &uuid::Uuid::new_v4())),
    );
    item.insert(KIND.into(), s(KIND_DELIVERY));
    item.insert(RECEIVED_AT.into(), n(d.received_at_ms));
    item.insert(BODY_SHA256.into(), s(d.body_digest.to_hex()));
    item.insert(BODY_DIFFERS.into(), AttributeValue::Bool(d.body_differs));
    if let Some(body) = differing {
        body.put_into(&mut item);
    }
    item.insert(HEADERS.into(), string_map(&d.headers));
    item.insert(EXPIRES_AT.into(), n(d.expires_at_secs));
    item
}

/// The repeated-delivery counter of `key` at `count`.
fn delivery_count_item(
    key: &MessageKey,
    count: u64,
    at_ms: i64,
    expires_at_secs: i64,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PK.to_string(), s(message_pk(key))),
        (SK.to_string(), s(DELIVERY_COUNT_SK)),
        (KIND.to_string(), s(KIND_DELIVERY_COUNT)),
        (
            COUNT.to_string(),
            n(i64::try_from(count).unwrap_or(i64::MAX)),
        ),
        (RECEIVED_AT.to_string(), n(at_ms)),
        (EXPIRES_AT.to_string(), n(expires_at_secs)),
    ])
}

/// Sorts an SDK error into the store's kinds. Throttling and transport problems are transient; a
/// request whose content is refused (`ValidationException`) is `Invalid`; anything the service
/// refuses for other reasons (a missing table, access denied) is `Rejected`.
pub fn classify<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = err.code().map(str::to_owned);
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err);
    match code.as_deref() {
        Some(
            "ProvisionedThroughputExceededException"
            | "ThrottlingException"
            | "SlowDown"
            | "RequestLimitExceeded",
        ) => StoreError::Throttled(boxed),
        Some(
            "InternalServerError"
            | "ServiceUnavailable"
            | "ServiceUnavailableException"
            | "TransactionConflictException",
        )
        | None => StoreError::Unavailable(boxed),
        Some("ValidationException") => StoreError::Invalid(boxed),
        Some(_) => StoreError::Rejected(boxed),
    }
}

impl Inbox for DynamoTable {
    /// One conditional `PutItem`. The item carries a token made for this call: when an attempt's
    /// write lands but its answer is lost (a timeout) and the SDK's retry finds the item, the
    /// token in the old image says it is this request's own write, and the answer is `Inserted`
    /// (not a duplicate that never happened).
    async fn put_if_absent(&self, msg: &NewMessage) -> Result<PutOutcome, StoreError> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        // A large body is durable in S3 before the item that refers to it is written.
        let body = self
            .store_body(&msg.key, &msg.body, msg.body_digest)
            .await?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(message_item(msg, &token, body)))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(PutOutcome::Inserted),
            Err(SdkError::ServiceError(se))
                if matches!(se.err(), PutItemError::ConditionalCheckFailedException(_)) =>
            {
                let old = match se.err() {
                    PutItemError::ConditionalCheckFailedException(c) => c.item(),
                    _ => None,
                };
                if old.and_then(|item| get_s(item, INGEST_TOKEN)) == Some(token.as_str()) {
                    return Ok(PutOutcome::Inserted);
                }
                Ok(PutOutcome::AlreadyExists {
                    original: body::original_of(old),
                })
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn journal_repeat(&self, delivery: &Repeat) -> Result<(), StoreError> {
        let differing = match &delivery.differing_body {
            Some(b) => Some(
                self.store_body(&delivery.key, b, Some(delivery.body_digest))
                    .await?,
            ),
            None => None,
        };
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(repeat_item(delivery, differing)))
            // The sort key holds a UUID made for this call: only an SDK retry of this very request
            // (its first attempt landed, the answer was lost) can find it, so that is success.
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(SdkError::ServiceError(se))
                if matches!(se.err(), PutItemError::ConditionalCheckFailedException(_)) =>
            {
                Ok(())
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn count_repeat(
        &self,
        key: &MessageKey,
        expected: Option<u64>,
        at: Millis,
        expires_at: Millis,
    ) -> Result<RepeatCount, StoreError> {
        let next = expected.map_or(1, |c| c.saturating_add(1));
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(delivery_count_item(
                key,
                next,
                at.get(),
                expires_at.as_secs(),
            )))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let request = match expected {
            None => request
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK),
            Some(c) => request
                .condition_expression("#count = :expected")
                .expression_attribute_names("#count", COUNT)
                .expression_attribute_values(":expected", n(i64::try_from(c).unwrap_or(i64::MAX))),
        };
        match request.send().await {
            Ok(_) => Ok(RepeatCount::Counted(next)),
            Err(SdkError::ServiceError(se))
                if matches!(se.err(), PutItemError::ConditionalCheckFailedException(_)) =>
            {
                let current = match se.err() {
                    PutItemError::ConditionalCheckFailedException(c) => c
                        .item()
                        .and_then(|item| get_n(item, COUNT))
                        .and_then(|v| u64::try_from(v).ok()),
                    _ => None,
                };
                Ok(RepeatCount::Conflict { current })
            }
            Err(e) => Err(classify(e)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("a stored item could not be read: {0}")]
struct Corrupt(String);

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Rejected(Box::new(Corrupt(e.to_string())))
}
