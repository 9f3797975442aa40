//! Reading a message's item back, and its body: decompressed from the item or fetched from S3
//! ([`S3Bodies::get`]), or renewed in S3 ([`S3Bodies::renew`]) for a replay. What cannot be read
//! back (an object that is gone, a damaged frame) is [`StoreError::Unreadable`].

use super::body::{decode_item, S3Bodies};
use super::{classify, DynamoTable};
use crate::domain::MessageKey;
use crate::store::attr::get_s;
use crate::store::schema::{message_key_attrs, message_pk, BODY, BODY_REF};
use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

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
        Ok(out.item)
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
