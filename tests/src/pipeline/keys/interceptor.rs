//! The SDK interceptor of [`KeyMeter`]: before a request is sent, the keys its input names
//! (every element of a transaction or batch, the partition a `Query` reads) and whether it reads
//! strongly consistently; after its response, the read units sized from the items it returned,
//! recorded into the meter.

use super::{key_of, KeyMeter, Touch};
use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::{
    batch_get_item::{BatchGetItemInput, BatchGetItemOutput},
    batch_write_item::BatchWriteItemInput,
    delete_item::DeleteItemInput,
    get_item::{GetItemInput, GetItemOutput},
    put_item::PutItemInput,
    query::{QueryInput, QueryOutput},
    transact_get_items::{TransactGetItemsInput, TransactGetItemsOutput},
    transact_write_items::TransactWriteItemsInput,
    update_item::UpdateItemInput,
};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use inbox_core::store::size::{item_size, strong_read_half_units};
use inbox_core::store::Item;
use std::collections::HashMap;

/// The touches of the request in flight, from its input to its output.
#[derive(Debug, Clone, Default)]
struct Pending(Vec<Touch>);

impl Storable for Pending {
    type Storer = StoreReplace<Self>;
}

fn write(key: Option<&HashMap<String, AttributeValue>>, transactional: bool) -> Option<Touch> {
    let (pk, sk) = key_of(key?);
    Some(Touch::Write {
        pk,
        sk,
        transactional,
    })
}

/// The partition value of a `Query`'s key condition (`pk = :v`, `#a = :v`, `open_shard = :v`).
fn query_partition(q: &QueryInput) -> String {
    let names = q.expression_attribute_names.clone().unwrap_or_default();
    let values = q.expression_attribute_values.clone().unwrap_or_default();
    let wanted = if q.index_name.is_some() {
        "open_shard"
    } else {
        "pk"
    };
    for part in q
        .key_condition_expression()
        .unwrap_or_default()
        .split(" AND ")
    {
        let Some((left, right)) = part.split_once('=') else {
            continue;
        };
        let left = left.trim().trim_start_matches('(');
        let left = names.get(left).map_or(left, String::as_str);
        let right = right.trim().trim_end_matches(')');
        if left == wanted {
            if let Some(v) = values.get(right).and_then(|v| v.as_s().ok()) {
                return v.clone();
            }
        }
    }
    String::from("?")
}

/// What a request's input names (reads are sized later, from its output).
fn touches_of(input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> Vec<Touch> {
    let read = |partition: String, sk: Option<String>, index: bool| Touch::Read {
        partition,
        sk,
        index,
        half_units: 0,
    };
    if let Some(i) = input.downcast_ref::<PutItemInput>() {
        return write(i.item.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<UpdateItemInput>() {
        return write(i.key.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<DeleteItemInput>() {
        return write(i.key.as_ref(), false).into_iter().collect();
    }
    if let Some(i) = input.downcast_ref::<TransactWriteItemsInput>() {
        return i
            .transact_items()
            .iter()
            .filter_map(|t| {
                let key = t
                    .put
                    .as_ref()
                    .map(|p| &p.item)
                    .or(t.update.as_ref().map(|u| &u.key))
                    .or(t.delete.as_ref().map(|d| &d.key))
                    .or(t.condition_check.as_ref().map(|c| &c.key));
                write(key, true)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<BatchWriteItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values().flatten())
            .filter_map(|r| {
                write(
                    r.put_request
                        .as_ref()
                        .map(|p| &p.item)
                        .or(r.delete_request.as_ref().map(|d| &d.key)),
                    false,
                )
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        let (pk, sk) = key_of(i.key.as_ref().unwrap_or(&HashMap::new()));
        return vec![read(pk, Some(sk), false)];
    }
    if let Some(i) = input.downcast_ref::<TransactGetItemsInput>() {
        return i
            .transact_items()
            .iter()
            .filter_map(|t| t.get.as_ref())
            .map(|g| {
                let (pk, sk) = key_of(&g.key);
                read(pk, Some(sk), false)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values())
            .flat_map(|k| k.keys.iter())
            .map(|k| {
                let (pk, sk) = key_of(k);
                read(pk, Some(sk), false)
            })
            .collect();
    }
    if let Some(i) = input.downcast_ref::<QueryInput>() {
        return vec![read(query_partition(i), None, i.index_name.is_some())];
    }
    Vec::new()
}

/// Sizes the reads of `pending` from the request's output.
fn size_reads(
    pending: &mut [Touch],
    output: &aws_smithy_runtime_api::client::interceptors::context::Output,
) {
    let sized = |items: &[Item]| items.iter().map(item_size).sum::<usize>();
    let mut set = |i: usize, half: u64| {
        if let Some(Touch::Read { half_units, .. }) = pending.get_mut(i) {
            *half_units = half;
        }
    };
    if let Some(o) = output.downcast_ref::<GetItemOutput>() {
        let bytes = o.item.as_ref().map_or(0, item_size);
        set(0, strong_read_half_units(bytes));
    } else if let Some(o) = output.downcast_ref::<QueryOutput>() {
        set(0, strong_read_half_units(sized(o.items())));
    } else if let Some(o) = output.downcast_ref::<TransactGetItemsOutput>() {
        for (i, r) in o.responses().iter().enumerate() {
            set(
                i,
                2 * strong_read_half_units(r.item.as_ref().map_or(0, item_size)),
            );
        }
    } else if let Some(o) = output.downcast_ref::<BatchGetItemOutput>() {
        let items: Vec<&Item> = o
            .responses
            .iter()
            .flat_map(|m| m.values().flatten())
            .collect();
        for (i, item) in items.iter().enumerate() {
            set(i, strong_read_half_units(item_size(item)));
        }
    }
}

/// The consistency each read asked for, halving an eventually consistent read's units.
fn consistency(input: &aws_smithy_runtime_api::client::interceptors::context::Input) -> bool {
    if let Some(i) = input.downcast_ref::<GetItemInput>() {
        return i.consistent_read == Some(true);
    }
    if let Some(i) = input.downcast_ref::<QueryInput>() {
        return i.consistent_read == Some(true);
    }
    if let Some(i) = input.downcast_ref::<BatchGetItemInput>() {
        return i
            .request_items
            .iter()
            .flat_map(|m| m.values())
            .all(|k| k.consistent_read == Some(true));
    }
    true
}

/// Whether `pending` came from a strongly consistent request.
#[derive(Debug, Clone, Copy)]
struct Consistent(bool);

impl Storable for Consistent {
    type Storer = StoreReplace<Self>;
}

impl Intercept for KeyMeter {
    fn name(&self) -> &'static str {
        "KeyMeter"
    }

    fn read_before_execution(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input();
        cfg.interceptor_state()
            .store_put(Pending(touches_of(input)));
        cfg.interceptor_state()
            .store_put(Consistent(consistency(input)));
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(mut pending) = cfg.load::<Pending>().cloned() else {
            return Ok(());
        };
        let consistent = cfg.load::<Consistent>().is_none_or(|c| c.0);
        if let Ok(output) = context.output_or_error() {
            size_reads(&mut pending.0, output);
        } else {
            // A failed request: a write whose condition failed still costs its item's units;
            // a failed read costs its minimum.
            for t in &mut pending.0 {
                if let Touch::Read { half_units, .. } = t {
                    *half_units = 2;
                }
            }
        }
        if !consistent {
            for t in &mut pending.0 {
                if let Touch::Read { half_units, .. } = t {
                    *half_units = (*half_units).div_ceil(2);
                }
            }
        }
        if let Ok(mut all) = self.0.lock() {
            all.extend(pending.0);
        }
        Ok(())
    }
}
