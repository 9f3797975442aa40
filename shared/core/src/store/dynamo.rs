//! The DynamoDB adapter of the store traits.
//!
//! The hot path is one conditional `PutItem`; the old item of a failed condition comes back in
//! the same response (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so a duplicate costs no read.
//! The `effects` submodule turns effects into conditional writes and implements
//! [`ItemWriter`](super::ItemWriter).

mod effects;

use super::attr::{get_n, get_s, n, s, string_map};
use super::schema::*;
use super::{
    Applied, Delivery, DeliveryRecord, DueMessage, Effect, Inbox, Item, ItemStore, ListFilter,
    MessageStore, NewMessage, PutOutcome, StoreError, Transition,
};
use crate::domain::{BodyDigest, EventId, MessageKey, SourceName, Status};
use crate::message::StoredMessage;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use effects::{effect_item, is_condition_failure};
use std::collections::HashMap;
use std::time::Duration;

/// Builds a DynamoDB client for a request/response path: short timeouts and few retries, so an
/// outage turns into a fast 503 (the provider retries) rather than a Lambda timeout.
pub fn client_for_hot_path(sdk: &aws_config::SdkConfig) -> Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_millis(1_000))
                .operation_attempt_timeout(Duration::from_millis(2_000))
                .operation_timeout(Duration::from_millis(5_000))
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .build();
    Client::from_conf(config)
}

/// The inbox on a DynamoDB table laid out as in [`super::schema`].
#[derive(Debug, Clone)]
pub struct DynamoInbox {
    client: Client,
    table: String,
}

impl DynamoInbox {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The table this store writes to.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Scans the items whose `kind` is `kind`, page by page (strongly consistent), until the table
    /// ends or `page` answers `false`.
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

/// The item of a new message (status `pending`, in the open index, first history entry).
pub fn message_item(msg: &NewMessage) -> HashMap<String, AttributeValue> {
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
    item.insert(BODY.into(), AttributeValue::B(Blob::new(msg.body.clone())));
    item.insert(BODY_SHA256.into(), s(msg.body_digest.to_hex()));
    item.insert(BODY_BYTES.into(), n(msg.body.len() as i64));
    item.insert(HEADERS.into(), string_map(&msg.headers));
    item.insert(ATTEMPTS.into(), n(0));
    item.insert(OPEN_SHARD.into(), s(open_shard(&msg.key)));
    item.insert(OPEN_DUE.into(), n(msg.received_at_ms + PENDING_GRACE_MS));
    item.insert(VERSION.into(), n(0));
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

fn delivery_item(d: &Delivery) -> HashMap<String, AttributeValue> {
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
    if let Some(body) = &d.differing_body {
        item.insert(BODY.into(), AttributeValue::B(Blob::new(body.clone())));
    }
    item.insert(HEADERS.into(), string_map(&d.headers));
    item.insert(EXPIRES_AT.into(), n(d.expires_at_secs));
    item
}

/// Sorts an SDK error into the store's kinds. Throttling and transport problems are transient;
/// anything the service refuses for other reasons is `Rejected`.
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
            | "RequestLimitExceeded",
        ) => StoreError::Throttled(boxed),
        Some("InternalServerError" | "ServiceUnavailable" | "ServiceUnavailableException")
        | None => StoreError::Unavailable(boxed),
        Some(_) => StoreError::Rejected(boxed),
    }
}

impl Inbox for DynamoInbox {
    async fn put_if_absent(&self, msg: &NewMessage) -> Result<PutOutcome, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(message_item(msg)))
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
                let original_digest = match se.err() {
                    PutItemError::ConditionalCheckFailedException(c) => c
                        .item()
                        .and_then(|item| get_s(item, BODY_SHA256))
                        .and_then(BodyDigest::from_hex),
                    _ => None,
                };
                Ok(PutOutcome::AlreadyExists { original_digest })
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn journal_delivery(&self, delivery: &Delivery) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(delivery_item(delivery)))
            // The sort key holds a fresh UUID: the condition only guards against the impossible.
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("a stored item could not be read: {0}")]
struct Corrupt(String);

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Rejected(Box::new(Corrupt(e.to_string())))
}

/// The pieces of a conditional `UpdateItem` that applies a [`Transition`].
struct UpdateParts {
    update: String,
    condition: String,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

fn transition_update(
    key: &MessageKey,
    expected_version: u64,
    t: &Transition,
    now_ms: i64,
) -> Result<UpdateParts, StoreError> {
    let names: HashMap<String, String> = [
        STATUS,
        ATTEMPTS,
        VERSION,
        HISTORY,
        UPDATED_AT,
        LEASE_UNTIL,
        NEXT_ATTEMPT_AT,
        OPEN_SHARD,
        OPEN_DUE,
        EXPIRES_AT,
        LAST_ERROR,
    ]
    .iter()
    .map(|a| (format!("#{a}"), (*a).to_string()))
    .collect();
    let entry = serde_dynamo::to_attribute_value(&t.entry).map_err(corrupt)?;
    let mut values = HashMap::from([
        (":to".to_string(), s(t.to.as_str())),
        (":attempts".to_string(), n(i64::from(t.attempts))),
        (":expected".to_string(), n(expected_version as i64)),
        (":next_version".to_string(), n(expected_version as i64 + 1)),
        (":entry".to_string(), AttributeValue::L(vec![entry])),
        (":empty".to_string(), AttributeValue::L(vec![])),
        (":now".to_string(), n(now_ms)),
    ]);
    let mut set = vec![
        "#status = :to".to_string(),
        "#attempts = :attempts".into(),
        "#version = :next_version".into(),
        "#history = list_append(if_not_exists(#history, :empty), :entry)".into(),
        "#updated_at = :now".into(),
    ];
    let mut remove = Vec::new();
    let mut optional = |attr: &str, placeholder: &str, value: Option<AttributeValue>| match value {
        Some(v) => {
            set.push(format!("#{attr} = {placeholder}"));
            values.insert(placeholder.to_string(), v);
        }
        None => remove.push(format!("#{attr}")),
    };
    optional(LEASE_UNTIL, ":lease", t.lease_until.map(n));
    optional(NEXT_ATTEMPT_AT, ":next_at", t.next_attempt_at.map(n));
    optional(OPEN_DUE, ":due", t.open_due.map(n));
    optional(OPEN_SHARD, ":shard", t.open_due.map(|_| s(open_shard(key))));
    optional(EXPIRES_AT, ":expires", t.expires_at.map(n));
    if let Some(err) = &t.last_error {
        set.push(format!("#{LAST_ERROR} = :err"));
        values.insert(":err".into(), s(err.clone()));
    }
    let mut update = format!("SET {}", set.join(", "));
    if !remove.is_empty() {
        update.push_str(&format!(" REMOVE {}", remove.join(", ")));
    }
    // Only the names the expressions use may be sent (DynamoDB rejects unused ones).
    let used = |k: &String| update.contains(k.as_str()) || k == "#version";
    let names = names.into_iter().filter(|(k, _)| used(k)).collect();
    Ok(UpdateParts {
        update,
        condition: "#version = :expected".into(),
        names,
        values,
    })
}

impl MessageStore for DynamoInbox {
    async fn get(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(message_key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        out.item
            .map(|item| serde_dynamo::from_item(item).map_err(corrupt))
            .transpose()
    }

    async fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        transition: &Transition,
        effects: Vec<Effect>,
    ) -> Result<Applied, StoreError> {
        let parts = transition_update(key, expected_version, transition, transition.entry.at)?;
        if effects.is_empty() {
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(message_key_attrs(key)))
                .update_expression(parts.update)
                .condition_expression(parts.condition)
                .set_expression_attribute_names(Some(parts.names))
                .set_expression_attribute_values(Some(parts.values))
                .send()
                .await;
            return match result {
                Ok(_) => Ok(Applied::Done),
                Err(SdkError::ServiceError(se))
                    if matches!(
                        se.err(),
                        UpdateItemError::ConditionalCheckFailedException(_)
                    ) =>
                {
                    Ok(Applied::MessageConflict)
                }
                Err(e) => Err(classify(e)),
            };
        }
        let effect_count = effects.len();
        let message_update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(message_key_attrs(key)))
            .update_expression(parts.update)
            .condition_expression(parts.condition)
            .set_expression_attribute_names(Some(parts.names))
            .set_expression_attribute_values(Some(parts.values))
            .build()
            .map_err(corrupt)?;
        let mut items = effects
            .into_iter()
            .map(|e| effect_item(&self.table, e))
            .collect::<Result<Vec<_>, _>>()?;
        items.push(TransactWriteItem::builder().update(message_update).build());
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Applied::Done),
            Err(SdkError::ServiceError(se))
                if matches!(
                    se.err(),
                    TransactWriteItemsError::TransactionCanceledException(_)
                ) =>
            {
                let reasons = match se.err() {
                    TransactWriteItemsError::TransactionCanceledException(c) => {
                        c.cancellation_reasons().to_vec()
                    }
                    _ => Vec::new(),
                };
                let code = |i: usize| reasons.get(i).and_then(|r| r.code());
                if is_condition_failure(code(effect_count)) {
                    Ok(Applied::MessageConflict)
                } else if (0..effect_count).any(|i| is_condition_failure(code(i)))
                    || (0..=effect_count).any(|i| code(i) == Some("TransactionConflict"))
                {
                    // A condition on an effect failed, or another transaction held one of the items
                    // (DynamoDB serializes transactions per item): re-run on fresh state.
                    Ok(Applied::EffectConflict)
                } else {
                    // TransactionConflict, throttling, …: transient; the caller retries.
                    Err(classify(
                        SdkError::<TransactWriteItemsError, _>::ServiceError(se),
                    ))
                }
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> Result<Vec<DueMessage>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(OPEN_INDEX)
                .key_condition_expression("#shard = :shard AND #due <= :now")
                .expression_attribute_names("#shard", OPEN_SHARD)
                .expression_attribute_names("#due", OPEN_DUE)
                .expression_attribute_values(":shard", s(shard))
                .expression_attribute_values(":now", n(now))
                .limit(
                    i32::try_from(limit.saturating_sub(found.len()).clamp(1, 1000)).unwrap_or(1000),
                )
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in page.items.unwrap_or_default() {
                let text = |k: &str| get_s(&item, k).unwrap_or_default();
                let (Ok(source), Ok(event_id)) = (
                    SourceName::parse(text(SOURCE)),
                    EventId::parse(text(EVENT_ID)),
                ) else {
                    continue;
                };
                let status: Status =
                    serde_json::from_value(serde_json::Value::String(text(STATUS).to_owned()))
                        .map_err(corrupt)?;
                let due = get_n(&item, OPEN_DUE).unwrap_or(now);
                found.push(DueMessage {
                    key: MessageKey::new(source, event_id),
                    status,
                    due,
                });
            }
            start = page.last_evaluated_key;
            if start.is_none() || found.len() >= limit {
                found.truncate(limit);
                return Ok(found);
            }
        }
    }

    async fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let mut found = Vec::new();
        self.scan_kind(KIND_MESSAGE, |page| {
            for item in page {
                let m: StoredMessage = serde_dynamo::from_item(item).map_err(corrupt)?;
                if filter.matches(&m) {
                    found.push(m);
                }
            }
            Ok(found.len() < limit)
        })
        .await?;
        found.sort_by_key(|m| m.received_at);
        found.truncate(limit);
        Ok(found)
    }

    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<DeliveryRecord>, StoreError> {
        let journal = ItemStore::query_items(self, &message_pk(key), DELIVERY_PREFIX).await?;
        journal
            .into_iter()
            .map(|i| serde_dynamo::from_item(i).map_err(corrupt))
            .collect()
    }

    async fn purge(&self, key: &MessageKey, expected_version: u64) -> Result<Applied, StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(message_key_attrs(key)))
            .condition_expression("#version = :v AND #status IN (:processed, :ignored, :failed)")
            .expression_attribute_names("#version", VERSION)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_values(":v", n(expected_version as i64))
            .expression_attribute_values(":processed", s(Status::Processed.as_str()))
            .expression_attribute_values(":ignored", s(Status::Ignored.as_str()))
            .expression_attribute_values(":failed", s(Status::Failed.as_str()))
            .send()
            .await;
        match result {
            Ok(_) => {}
            Err(SdkError::ServiceError(se))
                if matches!(
                    se.err(),
                    aws_sdk_dynamodb::operation::delete_item::DeleteItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                return Ok(Applied::MessageConflict)
            }
            Err(e) => return Err(classify(e)),
        }
        // The journal goes with its message (best effort: it also expires by TTL).
        for item in ItemStore::query_items(self, &message_pk(key), DELIVERY_PREFIX).await? {
            let keys = item
                .into_iter()
                .filter(|(k, _)| k == PK || k == SK)
                .collect();
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(keys))
                .send()
                .await
                .map_err(classify)?;
        }
        Ok(Applied::Done)
    }
}

impl ItemStore for DynamoInbox {
    async fn get_item(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.item)
    }

    async fn query_items(&self, pk: &str, sk_prefix: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":prefix", s(sk_prefix))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            items.extend(page.items.unwrap_or_default());
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    async fn items_of_kind(&self, kind: &str) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        self.scan_kind(kind, |page| {
            items.extend(page);
            Ok(true)
        })
        .await?;
        Ok(items)
    }
}
