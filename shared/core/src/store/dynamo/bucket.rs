//! Token buckets on DynamoDB: one item per bucket holding its `tat_us`, taken by conditional
//! `UpdateItem`s that return the old value when their condition fails (no read first), and held by
//! one conditional `UpdateItem`. The outbox's destination state items
//! ([`crate::outbox::store::OutboxStore::take_token`]) and any [`SharedBucket`] (a payment
//! provider's account) are written by these same functions.

use super::{classify, DynamoTable};
use crate::outbox::bucket::shared::{BucketKey, SharedBucket};
use crate::outbox::bucket::Take;
use crate::outbox::schema::TAT_US;
use crate::store::attr::{get_n, n, s};
use crate::store::schema::{KIND, PK, SK};
use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};

impl DynamoTable {
    fn bucket_update(
        &self,
        key: &BucketKey,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(&key.pk))
            .key(SK, s(&key.sk))
            .expression_attribute_names("#tat", TAT_US)
            .expression_attribute_names("#kind", KIND)
            .expression_attribute_values(":kind", s(key.kind))
    }

    /// A token write on `key`'s item: `Ok(the item after it)`, or `Err(the tat stored)` when its
    /// condition failed (a [`Take::Wait`] is refused without a request).
    pub(super) async fn take_bucket_token(
        &self,
        key: &BucketKey,
        take: Take,
    ) -> Result<Result<Item, Option<i64>>, StoreError> {
        let update = self
            .bucket_update(key)
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let update = match take {
            Take::Wait(_) => return Ok(Err(None)),
            Take::Reset { now, new_tat } => update
                .update_expression("SET #tat = :new, #kind = :kind")
                .condition_expression("attribute_not_exists(#tat) OR #tat <= :now")
                .expression_attribute_values(":new", n(new_tat))
                .expression_attribute_values(":now", n(now)),
            Take::Advance { now, at_most, by } => update
                .update_expression("SET #kind = :kind ADD #tat :by")
                .condition_expression("#tat > :now AND #tat <= :most")
                .expression_attribute_values(":by", n(by))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":most", n(at_most)),
        };
        match update.send().await {
            Ok(out) => Ok(Ok(out.attributes.unwrap_or_default())),
            Err(SdkError::ServiceError(se))
                if matches!(
                    se.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                let old = match se.err() {
                    UpdateItemError::ConditionalCheckFailedException(c) => {
                        c.item().and_then(|i| get_n(i, TAT_US))
                    }
                    _ => None,
                };
                Ok(Err(old))
            }
            Err(e) => Err(classify(e)),
        }
    }

    /// Holds `key`'s bucket: `tat` becomes `at_least_us` unless it is already later.
    pub(super) async fn hold_bucket(
        &self,
        key: &BucketKey,
        at_least_us: i64,
    ) -> Result<(), StoreError> {
        let result = self
            .bucket_update(key)
            .update_expression("SET #tat = :hold, #kind = :kind")
            .condition_expression("attribute_not_exists(#tat) OR #tat < :hold")
            .expression_attribute_values(":hold", n(at_least_us))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Already held at least as long.
            Err(SdkError::ServiceError(se))
                if matches!(
                    se.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(classify(e)),
        }
    }
}

impl SharedBucket for DynamoTable {
    async fn take_token(
        &self,
        key: &BucketKey,
        take: Take,
    ) -> Result<Result<i64, Option<i64>>, StoreError> {
        Ok(self
            .take_bucket_token(key, take)
            .await?
            .map(|item| get_n(&item, TAT_US).unwrap_or_default()))
    }

    async fn hold_tokens(&self, key: &BucketKey, at_least_us: i64) -> Result<(), StoreError> {
        self.hold_bucket(key, at_least_us).await
    }
}
