//! The outbox's storage on DynamoDB ([`OutboxStore`]): delivery items as whole-item conditional
//! `PutItem`s (conditioned on `version`), `Ensure`d creations, the outbox shards of the open index,
//! and each destination's state item: the token bucket's `tat_us` (written by `bucket.rs`, the
//! functions of every shared bucket) and the circuit (`circuit.rs`).

use super::effects::ensure_update;
use super::{classify, corrupt, DynamoTable};
use crate::clock::Millis;
use crate::domain::MessageKey;
use crate::outbox::breaker::{Change, Circuit, Move};
use crate::outbox::bucket::shared::BucketKey;
use crate::outbox::bucket::Take;
use crate::outbox::delivery::{DeliveryRef, FanoutItem, OutboundDelivery};
use crate::outbox::destination::DestinationId;
use crate::outbox::schema::*;
use crate::outbox::store::{DueItem, OutboxStore, TokenAnswer, WorkerState};
use crate::store::attr::{n, s};
use crate::store::circuit::worker_state;
use crate::store::schema::{EXPIRES_AT, OPEN_DUE, OPEN_SHARD, PK, SK, VERSION};
use crate::store::{Applied, StoreError};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

/// The destination's state item, as a bucket ([`super::bucket`] writes its `tat_us`).
fn state_key(destination: &DestinationId) -> BucketKey {
    BucketKey {
        pk: destination_pk(destination.as_str()),
        sk: STATE_SK.to_owned(),
        kind: KIND_DESTINATION_STATE,
    }
}

impl OutboxStore for DynamoTable {
    async fn delivery(&self, r: &DeliveryRef) -> Result<Option<OutboundDelivery>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(r.pk()))
            .key(SK, s(DELIVERY_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        out.item
            .map(|i| OutboundDelivery::from_item(i).map_err(corrupt))
            .transpose()
    }

    async fn save_delivery(
        &self,
        d: &OutboundDelivery,
        expected_version: Option<u64>,
    ) -> Result<Applied, StoreError> {
        let mut item = d.to_item().map_err(corrupt)?;
        item.insert(
            VERSION.into(),
            n(expected_version.map_or(0, |v| v as i64 + 1)),
        );
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let put = match expected_version {
            None => put
                .condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK),
            Some(v) => put
                .condition_expression("#version = :v")
                .expression_attribute_names("#version", VERSION)
                .expression_attribute_values(":v", n(v as i64)),
        };
        match put.send().await {
            Ok(_) => Ok(Applied::Done),
            Err(SdkError::ServiceError(se))
                if matches!(se.err(), PutItemError::ConditionalCheckFailedException(_)) =>
            {
                Ok(Applied::MessageConflict)
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn ensure_delivery(&self, d: &OutboundDelivery) -> Result<(), StoreError> {
        let u = ensure_update(&self.table, d.to_item().map_err(corrupt)?)?;
        self.client
            .update_item()
            .table_name(u.table_name)
            .set_key(Some(u.key))
            .update_expression(u.update_expression)
            .set_expression_attribute_names(u.expression_attribute_names)
            .set_expression_attribute_values(u.expression_attribute_values)
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn fanout(&self, key: &MessageKey) -> Result<Option<FanoutItem>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(fanout_pk(key)))
            .key(SK, s(FANOUT_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        out.item
            .map(|i| FanoutItem::from_item(i).map_err(corrupt))
            .transpose()
    }

    async fn close_fanout(
        &self,
        f: &FanoutItem,
        at: Millis,
        expires_at: Millis,
    ) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(fanout_pk(&f.key())))
            .key(SK, s(FANOUT_SK))
            .update_expression("SET #x = :at, #exp = :exp, #shard = :done, #due = :at")
            .expression_attribute_values(":done", s(done_shard(&fanout_pk(&f.key()))))
            .expression_attribute_names("#x", "expanded_at")
            .expression_attribute_names("#exp", EXPIRES_AT)
            .expression_attribute_names("#shard", OPEN_SHARD)
            .expression_attribute_names("#due", OPEN_DUE)
            .expression_attribute_values(":at", n(at.get()))
            .expression_attribute_values(":exp", n(expires_at.as_secs()))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn due_work_items(
        &self,
        shard: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<DueItem>, StoreError> {
        self.due_in_shard(shard, now.get(), limit, |item| {
            Ok(Some(DueItem::from_index(item, now)))
        })
        .await
    }

    async fn postpone_due(
        &self,
        shard: &str,
        item: &DueItem,
        until: Millis,
    ) -> Result<bool, StoreError> {
        // A first attempt's wait keeps its start where the gauge reads it (`since`).
        let first = item.sk == DELIVERY_SK && item.status == "pending";
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(&item.pk))
            .key(SK, s(&item.sk))
            .update_expression(if first {
                "SET #due = :until, #next = :since"
            } else {
                "SET #due = :until"
            })
            .set_expression_attribute_names(
                first.then(|| [("#next".to_owned(), "next_attempt_at".to_owned())].into()),
            )
            .set_expression_attribute_values(
                first.then(|| [(":since".to_owned(), n(item.since.get()))].into()),
            )
            .condition_expression("#shard = :shard AND #due = :seen")
            .expression_attribute_names("#due", OPEN_DUE)
            .expression_attribute_names("#shard", OPEN_SHARD)
            .expression_attribute_values(":until", n(until.get()))
            .expression_attribute_values(":seen", n(item.due.get()))
            .expression_attribute_values(":shard", s(shard))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            // Written since (claimed, recorded or finished): its writer has it.
            Err(SdkError::ServiceError(se))
                if matches!(
                    se.err(),
                    UpdateItemError::ConditionalCheckFailedException(_)
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn all_deliveries(&self) -> Result<Vec<OutboundDelivery>, StoreError> {
        let mut found = Vec::new();
        self.scan_kind(KIND_OUTBOUND, |page| {
            for item in page {
                found.push(OutboundDelivery::from_item(item).map_err(corrupt)?);
            }
            Ok(true)
        })
        .await?;
        Ok(found)
    }

    async fn worker_state(&self, destination: &DestinationId) -> Result<WorkerState, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(destination_pk(destination.as_str())))
            .key(SK, s(STATE_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        Ok(out.item.as_ref().map(worker_state).unwrap_or_default())
    }

    async fn take_token(
        &self,
        destination: &DestinationId,
        take: Take,
    ) -> Result<TokenAnswer, StoreError> {
        Ok(
            match self
                .take_bucket_token(&state_key(destination), take)
                .await?
            {
                Ok(item) => TokenAnswer::Granted(worker_state(&item)),
                Err(old) => TokenAnswer::Refused(old),
            },
        )
    }

    async fn hold_tokens(
        &self,
        destination: &DestinationId,
        at_least_us: i64,
    ) -> Result<(), StoreError> {
        self.hold_bucket(&state_key(destination), at_least_us).await
    }

    async fn change_circuit(
        &self,
        destination: &DestinationId,
        change: Change,
        now: Millis,
    ) -> Result<Option<Circuit>, StoreError> {
        self.count_circuit(destination, change, now).await
    }

    async fn move_circuit(
        &self,
        destination: &DestinationId,
        to: Move,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.move_circuit_on(destination, to, now).await
    }

    async fn claim_probe(
        &self,
        destination: &DestinationId,
        opened_at: Millis,
        until: Millis,
        now: Millis,
    ) -> Result<bool, StoreError> {
        self.claim_probe_on(destination, (opened_at, until, now))
            .await
    }
}
