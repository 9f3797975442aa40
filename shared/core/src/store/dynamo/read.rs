//! Reading a message's item back, and its body: decompressed from the item or fetched from S3
//! ([`S3Bodies::get`]), or renewed in S3 ([`S3Bodies::renew`]) for a replay. What cannot be read
//! back (an object that is gone, a damaged frame) is [`StoreError::Unreadable`].

use super::body::{decode_item, S3Bodies};
use super::{classify, DynamoTable};
use crate::domain::MessageKey;
use crate::store::attr::get_s;
use crate::store::schema::{
    message_key_attrs, message_pk, BODY, BODY_REF, FAILED_SHARD_PREFIX, OPEN_DUE, OPEN_SHARD,
};
use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

/// Takes a failed message's `FAILED#…` entry time out of `item`, so that the message read back
/// has an `open_due` only while it is due in its `OPEN#` shard (what [`StoredMessage::open_due`]
/// means, as the transition and the in-memory store have it).
///
/// [`StoredMessage::open_due`]: crate::message::StoredMessage::open_due
pub(super) fn due_only(item: &mut Item) {
    if get_s(item, OPEN_SHARD).is_some_and(|s| s.starts_with(FAILED_SHARD_PREFIX)) {
        item.remove(OPEN_DUE);
    }
}

impl DynamoTable {
    /// A message's item as stored (strongly consistent).
    pub(super) async fn message_item(&self, key: &MessageKey) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(message_key_attrs(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.item.map(|mut item| {
            due_only(&mut item);
            item
        }))
    }

    /// The raw body of a message's item, taken out of it: decompressed, or fetched from S3. A
    /// damaged frame or an object that is gone is [`StoreError::Unreadable`].
    pub(super) async fn take_body(
        &self,
        key: &MessageKey,
        item: &mut Item,
    ) -> Result<bytes::Bytes, StoreError> {
        if let Some(s3_key) = get_s(item, BODY_REF).map(str::to_owned) {
            return self.s3_of(key, &s3_key)?.get(&s3_key).await;
        }
        decode_item(item).map_err(|e| StoreError::Unreadable(e.into()))?;
        Ok(match item.remove(BODY) {
            Some(AttributeValue::B(body)) => bytes::Bytes::from(body.into_inner()),
            _ => bytes::Bytes::new(),
        })
    }

    /// The inline bodies of `keys`' messages in one consistent `BatchGetItem` per 100 keys (the
    /// keys it leaves unprocessed are asked once more): `Some(None)` for a message that is not
    /// there, `None` for one not read here (its body in S3, a damaged frame, still unprocessed),
    /// which [`Self::take_body`] then reads on its own.
    pub(super) async fn inline_bodies(
        &self,
        keys: &[MessageKey],
    ) -> Result<Vec<Option<Option<bytes::Bytes>>>, StoreError> {
        use aws_sdk_dynamodb::types::KeysAndAttributes;
        use std::collections::HashMap;
        let mut found: HashMap<String, Item> = HashMap::new();
        let mut answered: std::collections::HashSet<String> = Default::default();
        for chunk in keys.chunks(100) {
            let mut asked: Vec<_> = chunk.iter().map(message_key_attrs).collect();
            asked.dedup();
            for _round in 0..2 {
                if asked.is_empty() {
                    break;
                }
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(asked.clone()))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| super::corrupt(e.to_string()))?;
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(classify)?;
                let unprocessed: Vec<_> = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|k| k.keys)
                    .unwrap_or_default();
                for key in &asked {
                    if !unprocessed.contains(key) {
                        answered.extend(get_s(key, crate::store::schema::PK).map(str::to_owned));
                    }
                }
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    if let Some(pk) = get_s(&item, crate::store::schema::PK).map(str::to_owned) {
                        found.insert(pk, item);
                    }
                }
                asked = unprocessed;
            }
        }
        Ok(keys
            .iter()
            .map(|key| {
                let pk = message_pk(key);
                match found.get(&pk) {
                    None if answered.contains(&pk) => Some(None),
                    None => None,
                    Some(item) if item.contains_key(BODY_REF) => None,
                    Some(item) => {
                        let mut item = item.clone();
                        decode_item(&mut item).ok()?;
                        Some(Some(match item.remove(BODY) {
                            Some(AttributeValue::B(body)) => bytes::Bytes::from(body.into_inner()),
                            _ => bytes::Bytes::new(),
                        }))
                    }
                }
            })
            .collect())
    }

    /// Renews a message's body kept in S3 ([`S3Bodies::renew`]); one kept in the item lives
    /// with it.
    pub(super) async fn renew_message_body(&self, key: &MessageKey) -> Result<(), StoreError> {
        let Some(item) = self.message_item(key).await? else {
            return Ok(());
        };
        match get_s(&item, BODY_REF) {
            Some(s3_key) => self.s3_of(key, s3_key)?.renew(s3_key).await,
            None => Ok(()),
        }
    }

    /// The bucket a body in S3 is read from: without one the store is misconfigured.
    fn s3_of(&self, key: &MessageKey, s3_key: &str) -> Result<&S3Bodies, StoreError> {
        self.bodies.as_ref().ok_or_else(|| {
            super::corrupt(format!(
                "the body of {} is in S3 ({s3_key}) but no BODY_BUCKET is configured",
                message_pk(key)
            ))
        })
    }
}
