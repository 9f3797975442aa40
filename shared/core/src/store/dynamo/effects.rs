//! Effects on DynamoDB: each [`Effect`] as a transaction element with its condition, and
//! [`ItemWriter::commit`]: one effect as one conditional write, several as one transaction. A
//! transaction cancelled only because items it creates if absent exist is sent again without
//! them ([`DynamoTable::transact`], also for a transition's effects); one cancelled only by
//! another transaction on its items at the same moment (`TransactionConflict`), or a single write
//! answered `TransactionConflictException`, is sent again unchanged after a backoff, a bounded
//! number of times (`contention`).

use super::cancel::{self, Reason};
use super::contention::{is_transaction_conflict, Conflicts};
use super::{classify, corrupt, DynamoTable};
use crate::store::attr::{n, s};
use crate::store::schema::{PK, SK, VERSION};
use crate::store::{
    Applied, Bound, Effect, ItemWriter, StoreError, TooManyEffects, MAX_COMMIT_EFFECTS,
};
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use std::collections::HashMap;

/// One effect as a transaction element on `table`.
pub(super) fn effect_item(table: &str, effect: Effect) -> Result<TransactWriteItem, StoreError> {
    let built = match effect {
        Effect::Raw(item) => *item,
        Effect::Create(item) | Effect::CreateIfAbsent(item) => TransactWriteItem::builder()
            .put(
                Put::builder()
                    .table_name(table)
                    .set_item(Some(item))
                    .condition_expression("attribute_not_exists(#pk)")
                    .expression_attribute_names("#pk", PK)
                    .build()
                    .map_err(corrupt)?,
            )
            .build(),
        Effect::Ensure(item) => TransactWriteItem::builder()
            .update(ensure_update(table, item)?)
            .build(),
        Effect::Replace {
            mut item,
            expected_version,
        } => {
            let next = expected_version.map_or(0, |v| v + 1);
            item.insert(VERSION.into(), n(next as i64));
            let put = Put::builder().table_name(table).set_item(Some(item));
            let put = match expected_version {
                None => put
                    .condition_expression("attribute_not_exists(#pk)")
                    .expression_attribute_names("#pk", PK),
                Some(v) => put
                    .condition_expression("#version = :expected")
                    .expression_attribute_names("#version", VERSION)
                    .expression_attribute_values(":expected", n(v as i64)),
            };
            TransactWriteItem::builder()
                .put(put.build().map_err(corrupt)?)
                .build()
        }
        Effect::Adjust { pk, sk, add, set } => TransactWriteItem::builder()
            .update(adjust_update(table, pk, sk, add, set, None)?)
            .build(),
        Effect::AdjustIf {
            pk,
            sk,
            add,
            set,
            bounds,
        } => TransactWriteItem::builder()
            .update(adjust_update(table, pk, sk, add, set, Some(bounds))?)
            .build(),
    };
    Ok(built)
}

/// `Effect::Adjust` (`bounds: None`: unconditional, creating a missing item) or
/// `Effect::AdjustIf` (the item must exist and satisfy every bound) as an `UpdateItem`.
fn adjust_update(
    table: &str,
    pk: String,
    sk: String,
    add: Vec<(String, i64)>,
    set: Vec<(String, AttributeValue)>,
    bounds: Option<Vec<Bound>>,
) -> Result<Update, StoreError> {
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    let mut adds = Vec::new();
    let mut sets = Vec::new();
    for (i, (attr, delta)) in add.into_iter().enumerate() {
        names.insert(format!("#a{i}"), attr);
        values.insert(format!(":a{i}"), n(delta));
        adds.push(format!("#a{i} :a{i}"));
    }
    for (i, (attr, value)) in set.into_iter().enumerate() {
        names.insert(format!("#s{i}"), attr);
        values.insert(format!(":s{i}"), value);
        sets.push(format!("#s{i} = :s{i}"));
    }
    let mut expr = String::new();
    if !adds.is_empty() {
        expr.push_str(&format!("ADD {}", adds.join(", ")));
    }
    if !sets.is_empty() {
        expr.push_str(&format!(
            "{}SET {}",
            if expr.is_empty() { "" } else { " " },
            sets.join(", ")
        ));
    }
    let condition = bounds.map(|bounds| {
        names.insert("#pk".into(), PK.into());
        let mut terms = vec!["attribute_exists(#pk)".to_string()];
        for (i, bound) in bounds.into_iter().enumerate() {
            let (attr, op, value) = match bound {
                Bound::AtLeast(attr, v) => (attr, ">=", v),
                Bound::AtMost(attr, v) => (attr, "<=", v),
            };
            names.insert(format!("#b{i}"), attr);
            values.insert(format!(":b{i}"), n(value));
            terms.push(format!("#b{i} {op} :b{i}"));
        }
        terms.join(" AND ")
    });
    Update::builder()
        .table_name(table)
        .key(PK, s(pk))
        .key(SK, s(sk))
        .update_expression(expr)
        .set_condition_expression(condition)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values((!values.is_empty()).then_some(values))
        .build()
        .map_err(corrupt)
}

/// `Effect::Ensure` as an unconditional `UpdateItem` that sets every non-key attribute with
/// `if_not_exists`: it creates a missing item and leaves an existing one unchanged.
pub(super) fn ensure_update(
    table: &str,
    mut item: crate::store::Item,
) -> Result<Update, StoreError> {
    let pk = item
        .remove(PK)
        .ok_or_else(|| corrupt("an ensured item has no pk"))?;
    let sk = item
        .remove(SK)
        .ok_or_else(|| corrupt("an ensured item has no sk"))?;
    let mut names = HashMap::new();
    let mut values = HashMap::new();
    let mut sets = Vec::new();
    let mut attrs: Vec<_> = item.into_iter().collect();
    attrs.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (attr, value)) in attrs.into_iter().enumerate() {
        names.insert(format!("#e{i}"), attr);
        values.insert(format!(":e{i}"), value);
        sets.push(format!("#e{i} = if_not_exists(#e{i}, :e{i})"));
    }
    if sets.is_empty() {
        return Err(corrupt("an ensured item has no attributes besides its key"));
    }
    Update::builder()
        .table_name(table)
        .key(PK, pk)
        .key(SK, sk)
        .update_expression(format!("SET {}", sets.join(", ")))
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .build()
        .map_err(corrupt)
}

impl ItemWriter for DynamoTable {
    async fn commit(&self, effects: Vec<Effect>) -> Result<Applied, StoreError> {
        if effects.len() > MAX_COMMIT_EFFECTS {
            return Err(StoreError::Rejected(Box::new(TooManyEffects(
                effects.len(),
            ))));
        }
        let mut effects = effects;
        for effect in &mut effects {
            if let Effect::Create(item)
            | Effect::Replace { item, .. }
            | Effect::Ensure(item)
            | Effect::CreateIfAbsent(item) = effect
            {
                self.seal_destination(item).await?;
            }
        }
        let once = creates_if_absent(&effects);
        let mut items = effects
            .into_iter()
            .map(|e| effect_item(self.table(), e))
            .collect::<Result<Vec<_>, _>>()?;
        match (items.pop(), items.is_empty()) {
            (None, _) => Ok(Applied::Done),
            (Some(one), true) => self.write_one(one, once[0]).await,
            (Some(last), false) => {
                items.push(last);
                self.transact(items, once, false).await
            }
        }
    }
}

/// Which effects create their item only if absent ([`Effect::CreateIfAbsent`]), in order.
pub(super) fn creates_if_absent(effects: &[Effect]) -> Vec<bool> {
    effects
        .iter()
        .map(|e| matches!(e, Effect::CreateIfAbsent(_)))
        .collect()
}

impl DynamoTable {
    /// One element as a plain conditional `PutItem` or `UpdateItem` (a transaction of one costs
    /// twice the capacity); anything else as a transaction. A failed condition is an effect
    /// conflict, except for an item created only if absent (`once`): it exists, so that is done.
    /// Answered `TransactionConflictException` (its item is in another transaction): sent again
    /// after a backoff, bounded; still conflicting after that, an effect conflict (nothing
    /// written: the caller decides again).
    async fn write_one(&self, item: TransactWriteItem, once: bool) -> Result<Applied, StoreError> {
        let failed_condition = if once {
            Applied::Done
        } else {
            Applied::EffectConflict
        };
        match item {
            TransactWriteItem {
                put: Some(put),
                update: None,
                delete: None,
                condition_check: None,
                ..
            } => {
                let request = self
                    .client
                    .put_item()
                    .table_name(put.table_name)
                    .set_item(Some(put.item))
                    .set_condition_expression(put.condition_expression)
                    .set_expression_attribute_names(put.expression_attribute_names)
                    .set_expression_attribute_values(put.expression_attribute_values);
                let result = self
                    .contention
                    .single("PutItem", || request.clone().send())
                    .await;
                match result {
                    Ok(_) => Ok(Applied::Done),
                    Err(SdkError::ServiceError(se))
                        if matches!(se.err(), PutItemError::ConditionalCheckFailedException(_)) =>
                    {
                        Ok(failed_condition)
                    }
                    Err(e) if is_transaction_conflict(&e) => Ok(Applied::EffectConflict),
                    Err(e) => Err(classify(e)),
                }
            }
            TransactWriteItem {
                put: None,
                update: Some(update),
                delete: None,
                condition_check: None,
                ..
            } => {
                let request = self
                    .client
                    .update_item()
                    .table_name(update.table_name)
                    .set_key(Some(update.key))
                    .update_expression(update.update_expression)
                    .set_condition_expression(update.condition_expression)
                    .set_expression_attribute_names(update.expression_attribute_names)
                    .set_expression_attribute_values(update.expression_attribute_values);
                let result = self
                    .contention
                    .single("UpdateItem", || request.clone().send())
                    .await;
                match result {
                    Ok(_) => Ok(Applied::Done),
                    Err(SdkError::ServiceError(se))
                        if matches!(
                            se.err(),
                            UpdateItemError::ConditionalCheckFailedException(_)
                        ) =>
                    {
                        Ok(failed_condition)
                    }
                    Err(e) if is_transaction_conflict(&e) => Ok(Applied::EffectConflict),
                    Err(e) => Err(classify(e)),
                }
            }
            other => self.transact(vec![other], vec![once], false).await,
        }
    }

    /// The elements as one transaction. Cancelled only because elements that create their item
    /// if absent (`once[i]`) found it existing: sent again without them (each round drops one at
    /// least, so this ends). Cancelled only by another transaction on its items
    /// ([`cancel::conflict_only`]): sent again unchanged after a backoff, a bounded number of
    /// times, counted (`contention`). Otherwise, or once those retries are exhausted, as
    /// [`cancel::classify`] says: a failed condition or a conflicting transaction on an element
    /// is an effect conflict (nothing written), the message's own condition (the last element
    /// when `message_last`) a message conflict, other reasons as it says.
    pub(super) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
        once: Vec<bool>,
        message_last: bool,
    ) -> Result<Applied, StoreError> {
        let mut tries = self.contention.tries("TransactWriteItems");
        let applied = self
            .transact_tries(items, once, message_last, &mut tries)
            .await;
        tries.report();
        applied
    }

    async fn transact_tries(
        &self,
        mut items: Vec<TransactWriteItem>,
        mut once: Vec<bool>,
        message_last: bool,
        tries: &mut Conflicts<'_>,
    ) -> Result<Applied, StoreError> {
        loop {
            if items.is_empty() {
                return Ok(Applied::Done);
            }
            let count = items.len();
            // Kept for another round: one may follow (an existing item left out, a conflict).
            let result = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let reasons: Vec<Reason> = match result {
                Ok(_) => return Ok(Applied::Done),
                Err(SdkError::ServiceError(se)) => match se.err() {
                    TransactWriteItemsError::TransactionCanceledException(c) => {
                        c.cancellation_reasons().iter().map(Reason::from).collect()
                    }
                    _ => {
                        return Err(classify(
                            SdkError::<TransactWriteItemsError, _>::ServiceError(se),
                        ))
                    }
                },
                Err(e) => return Err(classify(e)),
            };
            if let Some(existing) = cancel::existing_only(&reasons, &once) {
                for i in existing.into_iter().rev() {
                    items.remove(i);
                    once.remove(i);
                }
                continue;
            }
            if cancel::conflict_only(&reasons) && tries.again().await {
                continue;
            }
            return cancel::classify(&reasons, message_last.then(|| count - 1));
        }
    }
}
