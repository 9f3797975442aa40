//! The processing side on DynamoDB: versioned transitions (one `UpdateItem`, or one
//! `TransactWriteItems` with a handler's effects; either sent again when it met another
//! transaction on its items, bounded: `contention`), the open index, listing and purging.

use super::effects::effect_item;
use super::{body, classify, corrupt, DynamoTable};
use crate::domain::{EventId, MessageKey, SourceName, Status};
use crate::message::StoredMessage;
use crate::store::attr::{get_n, get_s, n, s};
use crate::store::schema::*;
use crate::store::{
    Applied, DueMessage, Effect, ItemStore, ListFilter, MessageStore, RepeatRecord, StoreError,
    Transition,
};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, TransactWriteItem, Update};
use std::collections::HashMap;

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
        HISTORY_TOTAL,
        UPDATED_AT,
        LEASE_UNTIL,
        NEXT_ATTEMPT_AT,
        OPEN_SHARD,
        OPEN_DUE,
        EXPIRES_AT,
        LAST_ERROR,
        NOTICE_PENDING,
    ]
    .iter()
    .map(|a| (format!("#{a}"), (*a).to_string()))
    .collect();
    // The whole bounded history, computed from the version read: the condition on that version
    // makes sure it replaces exactly the list it was computed from.
    let history = serde_dynamo::to_attribute_value(&t.history).map_err(corrupt)?;
    let mut values = HashMap::from([
        (":to".to_string(), s(t.to.as_str())),
        (":attempts".to_string(), n(i64::from(t.attempts))),
        (":expected".to_string(), n(expected_version as i64)),
        (":next_version".to_string(), n(expected_version as i64 + 1)),
        (":history".to_string(), history),
        (
            ":history_total".to_string(),
            n(i64::try_from(t.history_total).unwrap_or(i64::MAX)),
        ),
        (":now".to_string(), n(now_ms)),
    ]);
    let mut set = vec![
        "#status = :to".to_string(),
        "#attempts = :attempts".into(),
        "#version = :next_version".into(),
        "#history = :history".into(),
        "#history_total = :history_total".into(),
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
    // One entry, moved: due in `OPEN#…`, a failed message's in `FAILED#…`, or none.
    let entry = t.index_entry(key);
    optional(OPEN_DUE, ":due", entry.as_ref().map(|(_, at)| n(*at)));
    optional(OPEN_SHARD, ":shard", entry.map(|(shard, _)| s(shard)));
    optional(EXPIRES_AT, ":expires", t.expires_at.map(n));
    let notice = t
        .notice
        .as_ref()
        .map(serde_dynamo::to_attribute_value)
        .transpose()
        .map_err(corrupt)?;
    optional(NOTICE_PENDING, ":notice", notice);
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

impl MessageStore for DynamoTable {
    async fn get(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        let Some(mut item) = self.message_item(key).await? else {
            return Ok(None);
        };
        let body = self.take_body(key, &mut item).await?;
        item.insert(BODY.into(), AttributeValue::B(Blob::new(Vec::from(body))));
        serde_dynamo::from_item(item).map(Some).map_err(corrupt)
    }

    async fn get_head(&self, key: &MessageKey) -> Result<Option<StoredMessage>, StoreError> {
        let Some(mut item) = self.message_item(key).await? else {
            return Ok(None);
        };
        item.remove(BODY);
        item.remove(BODY_ENC);
        serde_dynamo::from_item(item).map(Some).map_err(corrupt)
    }

    async fn read_body(&self, key: &MessageKey) -> Result<Option<bytes::Bytes>, StoreError> {
        let Some(mut item) = self.message_item(key).await? else {
            return Ok(None);
        };
        self.take_body(key, &mut item).await.map(Some)
    }

    async fn read_bodies_ahead(
        &self,
        keys: &[MessageKey],
    ) -> Result<Vec<Option<Option<bytes::Bytes>>>, StoreError> {
        self.inline_bodies(keys).await
    }

    async fn renew_body(&self, key: &MessageKey) -> Result<(), StoreError> {
        self.renew_message_body(key).await
    }

    async fn transition(
        &self,
        key: &MessageKey,
        expected_version: u64,
        transition: &Transition,
        effects: Vec<Effect>,
    ) -> Result<Applied, StoreError> {
        let parts = transition_update(key, expected_version, transition, transition.at)?;
        if effects.is_empty() {
            // A message that fails keeps its body: one in S3 is exempted from expiry.
            let failing = transition.to == Status::Failed && self.bodies.is_some();
            let request = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(message_key_attrs(key)))
                .update_expression(parts.update)
                .condition_expression(parts.condition)
                .set_expression_attribute_names(Some(parts.names))
                .set_expression_attribute_values(Some(parts.values))
                .set_return_values(failing.then_some(ReturnValue::AllNew));
            // Its item in another transaction (a racing commit): sent again after a backoff,
            // bounded; still conflicting, an infrastructure error as before (the record is
            // delivered again).
            let result = self
                .contention
                .single("UpdateItem", || request.clone().send())
                .await;
            return match result {
                Ok(out) => {
                    if let Some(s3_key) = out.attributes.as_ref().and_then(|a| get_s(a, BODY_REF)) {
                        self.keep_body(key, s3_key).await;
                    }
                    Ok(Applied::Done)
                }
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
        let mut once = super::effects::creates_if_absent(&effects);
        once.push(false);
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
        // The message's update is the last element.
        items.push(TransactWriteItem::builder().update(message_update).build());
        self.transact(items, once, true).await
    }

    async fn due(
        &self,
        shard: &str,
        now: i64,
        limit: usize,
    ) -> Result<Vec<DueMessage>, StoreError> {
        self.due_in_shard(shard, now, limit, |item| {
            let text = |k: &str| get_s(item, k).unwrap_or_default();
            let (Ok(source), Ok(event_id)) = (
                SourceName::parse(text(SOURCE)),
                EventId::parse(text(EVENT_ID)),
            ) else {
                return Ok(None);
            };
            let status: Status =
                serde_json::from_value(serde_json::Value::String(text(STATUS).to_owned()))
                    .map_err(corrupt)?;
            Ok(Some(DueMessage {
                key: MessageKey::new(source, event_id),
                status,
                due: get_n(item, OPEN_DUE).unwrap_or(now),
            }))
        })
        .await
    }

    async fn list(
        &self,
        filter: &ListFilter,
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let mut found = Vec::new();
        self.scan_kind(KIND_MESSAGE, |page| {
            for mut item in page {
                // Listing decompresses inline bodies; a body in S3 is not fetched (left empty).
                body::decode_item(&mut item).map_err(corrupt)?;
                super::read::due_only(&mut item);
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

    async fn deliveries(&self, key: &MessageKey) -> Result<Vec<RepeatRecord>, StoreError> {
        let journal = ItemStore::query_items(self, &message_pk(key), DELIVERY_PREFIX).await?;
        journal
            .into_iter()
            .filter(|i| get_s(i, KIND) == Some(KIND_DELIVERY))
            .map(|i| serde_dynamo::from_item(i).map_err(corrupt))
            .collect()
    }

    async fn repeat_count(&self, key: &MessageKey) -> Result<u64, StoreError> {
        let counter = ItemStore::get_item(self, &message_pk(key), DELIVERY_COUNT_SK).await?;
        Ok(counter
            .and_then(|i| get_n(&i, COUNT))
            .and_then(|c| u64::try_from(c).ok())
            .unwrap_or(0))
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
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => {
                if let Some(s3_key) = out.attributes.as_ref().and_then(|a| get_s(a, BODY_REF)) {
                    self.delete_body(key, s3_key).await;
                }
            }
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

impl DynamoTable {
    /// Exempts a failed message's S3 body from expiry; a failure is logged for the operator (the
    /// message is failed either way; its body would otherwise expire after the retention).
    async fn keep_body(&self, key: &MessageKey, s3_key: &str) {
        let Some(bodies) = &self.bodies else { return };
        if let Err(e) = bodies.keep(s3_key).await {
            tracing::error!(
                source = %key.source,
                event_id = %key.event_id,
                bucket = bodies.bucket(),
                s3_key,
                error = %e.chain(),
                "the failed message's body could not be exempted from expiry: remove its `inbox-expiry` tag by hand"
            );
        }
    }

    /// Deletes a purged message's S3 body (best effort: the lifecycle rule expires it anyway).
    async fn delete_body(&self, key: &MessageKey, s3_key: &str) {
        let Some(bodies) = &self.bodies else { return };
        if let Err(e) = bodies.delete(s3_key).await {
            tracing::warn!(
                source = %key.source,
                event_id = %key.event_id,
                s3_key,
                error = %e.chain(),
                "a purged message's body could not be deleted from S3 (it expires by the bucket's lifecycle unless its message had failed)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::HistoryEntry;

    #[test]
    fn a_failure_moves_the_index_entry_to_its_failed_partition_in_the_same_update() {
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse("evt_1").unwrap(),
        );
        let mut t = Transition {
            to: Status::Failed,
            at: 50,
            attempts: 5,
            lease_until: None,
            next_attempt_at: None,
            open_due: None,
            expires_at: None,
            last_error: None,
            notice: None,
            history: vec![HistoryEntry::new(42, Status::Failed, "permanent")],
            history_total: 1,
        };
        let parts = transition_update(&key, 3, &t, 50).unwrap();
        assert_eq!(parts.values.get(":shard"), Some(&s(failed_shard(&key))));
        assert_eq!(parts.values.get(":due"), Some(&n(42)));
        assert_eq!(parts.condition, "#version = :expected");
        assert!(
            !parts.update.contains("REMOVE #open_shard"),
            "{}",
            parts.update
        );
        t.to = Status::Pending;
        t.open_due = Some(77);
        let back = transition_update(&key, 4, &t, 60).unwrap();
        assert_eq!(back.values.get(":shard"), Some(&s(open_shard(&key))));
        t.to = Status::Processed;
        t.open_due = None;
        let gone = transition_update(&key, 5, &t, 70).unwrap();
        assert!(gone.update.contains("#open_shard"), "{}", gone.update);
        assert!(!gone.values.contains_key(":shard"));
    }
}
