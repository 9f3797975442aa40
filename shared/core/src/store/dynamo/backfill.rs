//! Backfilling the events index (`events-index`, [`super::super::events`]) for messages stored
//! before it existed: they lack `list_shard` and `list_at`, so no page of the index lists them.
//! `inboxctl events reindex` calls [`DynamoTable::backfill_events_page`] until the scan ends:
//! one `Scan` page (its filter keeps the message items without `list_at`; DynamoDB bills what
//! the page evaluated, up to 1 MB) and, unless it is a dry run, one conditional `UpdateItem` per
//! message found, setting the two attributes exactly as the ingest writes them
//! ([`list_shard`], [`list_at`] of its key and `received_at`). The condition
//! (`attribute_exists(pk) AND attribute_not_exists(list_at)`) makes it safe to run twice, beside
//! the live functions, or after a message was purged: such a one is counted, never written. The
//! page's [`Resume`] token names where the next page starts, so a run stopped midway resumes.
//!
//! Once: the index is written with the message at ingest from then on, and no transition
//! removes it, so a finished backfill is never needed again.
//!
//! The same scan gives the failed messages their open-index entry: a message that failed before
//! failures kept one (`FAILED#0..15`, [`failed_shard`]) has neither `open_shard` nor `open_due`,
//! so the Quarantine page does not list it. The filter also keeps the failed message items
//! without `open_shard`; a conditional write (still `failed`, still without one) gives each its
//! entry, `open_due` = its `updated_at` (its last write: its failure, or the record of its
//! quarantine notice sent, moments later). A message replayed meanwhile is skipped.

use super::{classify, DynamoTable};
use crate::domain::{EventId, MessageKey, SourceName};
use crate::store::attr::{get_n, get_s, n, s};
use crate::store::schema::{
    failed_shard, list_at, list_shard, EVENT_ID, KIND, KIND_MESSAGE, LIST_AT, LIST_SHARD, OPEN_DUE,
    OPEN_SHARD, PK, RECEIVED_AT, SK, SOURCE, STATUS, UPDATED_AT,
};
use crate::store::Item;
use crate::store::StoreError;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use std::collections::HashMap;

/// Where a backfill's scan goes on: the primary key of the last item a page evaluated, as
/// text (`pk` and `sk` hex-encoded, joined by `.`: safe to print and paste into a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pk: String,
    sk: String,
}

/// A resume token that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a resume token of `events reindex` (two hex fields joined by '.')")]
pub struct BadResume;

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Result<String, BadResume> {
    if !text.len().is_multiple_of(2) {
        return Err(BadResume);
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or(BadResume)?;
    String::from_utf8(bytes).map_err(|_| BadResume)
}

impl Resume {
    pub fn parse(text: &str) -> Result<Self, BadResume> {
        let (pk, sk) = text.split_once('.').ok_or(BadResume)?;
        Ok(Self {
            pk: unhex(pk)?,
            sk: unhex(sk)?,
        })
    }
}

impl std::fmt::Display for Resume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", hex(&self.pk), hex(&self.sk))
    }
}

/// What one page of the backfill found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackfillPage {
    /// Items the scan page evaluated (every kind; what it was billed for).
    pub scanned: u64,
    /// Messages without the events index's attributes on this page.
    pub missing: Vec<MessageKey>,
    /// Of those, written now (none in a dry run).
    pub indexed: u64,
    /// Of those, not written: indexed meanwhile, or purged (the condition failed).
    pub skipped: u64,
    /// Failed messages without their open-index entry (`FAILED#…`) on this page.
    pub failed_missing: Vec<MessageKey>,
    /// Of those, written now (none in a dry run).
    pub failed_indexed: u64,
    /// Of those, not written: replayed or indexed meanwhile, or purged (the condition failed).
    pub failed_skipped: u64,
    /// Where the next page starts; `None` once the scan has reached the end.
    pub next: Option<Resume>,
}

/// `failed`, as the item's `status` holds it.
const FAILED: &str = "failed";

impl DynamoTable {
    /// One page of the backfill from `from` (the start without it): the message items without
    /// `list_at`, and the failed ones without `open_shard`, each given what it lacks; a
    /// `dry_run` writes nothing.
    pub async fn backfill_events_page(
        &self,
        from: Option<&Resume>,
        dry_run: bool,
    ) -> Result<BackfillPage, StoreError> {
        let start =
            from.map(|r| HashMap::from([(PK.to_owned(), s(&r.pk)), (SK.to_owned(), s(&r.sk))]));
        let out = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression(
                "#kind = :kind AND (attribute_not_exists(#at) OR \
                 (#status = :failed AND attribute_not_exists(#shard)))",
            )
            .projection_expression(
                "#pk, #sk, #source, #id, #received, #at, #status, #shard, #updated",
            )
            .expression_attribute_names("#kind", KIND)
            .expression_attribute_names("#at", LIST_AT)
            .expression_attribute_names("#status", STATUS)
            .expression_attribute_names("#shard", OPEN_SHARD)
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#source", SOURCE)
            .expression_attribute_names("#id", EVENT_ID)
            .expression_attribute_names("#received", RECEIVED_AT)
            .expression_attribute_names("#updated", UPDATED_AT)
            .expression_attribute_values(":kind", s(KIND_MESSAGE))
            .expression_attribute_values(":failed", s(FAILED))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(classify)?;
        let mut page = BackfillPage {
            scanned: u64::try_from(out.scanned_count).unwrap_or(0),
            next: resume_of(out.last_evaluated_key.as_ref()),
            ..BackfillPage::default()
        };
        for item in out.items.unwrap_or_default() {
            let key = key_of(&item)?;
            if !item.contains_key(LIST_AT) {
                let received = get_n(&item, RECEIVED_AT)
                    .ok_or_else(|| super::corrupt("a message item without received_at"))?;
                if !dry_run {
                    let written = self
                        .set_if(
                            &item,
                            "SET #shard = :shard, #at = :at",
                            "attribute_exists(#pk) AND attribute_not_exists(#at)",
                            &[("#shard", LIST_SHARD), ("#at", LIST_AT)],
                            &[
                                (":shard", s(list_shard(&key))),
                                (":at", s(list_at(received, &key))),
                            ],
                        )
                        .await?;
                    *if written {
                        &mut page.indexed
                    } else {
                        &mut page.skipped
                    } += 1;
                }
                page.missing.push(key.clone());
            }
            if get_s(&item, STATUS) == Some(FAILED) && !item.contains_key(OPEN_SHARD) {
                let failed_at = get_n(&item, UPDATED_AT)
                    .ok_or_else(|| super::corrupt("a failed message item without updated_at"))?;
                if !dry_run {
                    let written = self
                        .set_if(
                            &item,
                            "SET #shard = :shard, #due = :due",
                            "attribute_exists(#pk) AND #status = :failed \
                             AND attribute_not_exists(#shard)",
                            &[
                                ("#shard", OPEN_SHARD),
                                ("#due", OPEN_DUE),
                                ("#status", STATUS),
                            ],
                            &[
                                (":shard", s(failed_shard(&key))),
                                (":due", n(failed_at)),
                                (":failed", s(FAILED)),
                            ],
                        )
                        .await?;
                    *if written {
                        &mut page.failed_indexed
                    } else {
                        &mut page.failed_skipped
                    } += 1;
                }
                page.failed_missing.push(key);
            }
        }
        Ok(page)
    }

    /// Applies `update` to the message `item` names if `condition` holds; whether it did.
    async fn set_if(
        &self,
        item: &Item,
        update: &str,
        condition: &str,
        names: &[(&str, &str)],
        values: &[(&str, aws_sdk_dynamodb::types::AttributeValue)],
    ) -> Result<bool, StoreError> {
        let (Some(pk), Some(sk)) = (item.get(PK), item.get(SK)) else {
            return Err(super::corrupt("a message item without its key"));
        };
        let mut request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, pk.clone())
            .key(SK, sk.clone())
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#pk", PK);
        for (k, v) in names {
            request = request.expression_attribute_names(*k, *v);
        }
        for (k, v) in values {
            request = request.expression_attribute_values(*k, v.clone());
        }
        match request.send().await {
            Ok(_) => Ok(true),
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
}

/// Where the next page starts, from a scan page's last evaluated key.
fn resume_of(last: Option<&Item>) -> Option<Resume> {
    last.and_then(|k| {
        Some(Resume {
            pk: get_s(k, PK)?.to_owned(),
            sk: get_s(k, SK)?.to_owned(),
        })
    })
}

/// The key of a scanned message item (its `source` and `event_id`).
fn key_of(item: &Item) -> Result<MessageKey, StoreError> {
    let corrupt = |what: &str| super::corrupt(format!("a message item {what}"));
    let source = get_s(item, SOURCE).ok_or_else(|| corrupt("without its source"))?;
    let id = get_s(item, EVENT_ID).ok_or_else(|| corrupt("without its event id"))?;
    Ok(MessageKey::new(
        SourceName::parse(source).map_err(|_| corrupt("with a bad source"))?,
        EventId::parse(id).map_err(|_| corrupt("with a bad event id"))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_token_comes_back_as_it_was_printed() {
        let r = Resume {
            pk: "MSG#stripe#evt_1".into(),
            sk: "MSG".into(),
        };
        let text = r.to_string();
        assert!(
            text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.'),
            "{text}"
        );
        assert_eq!(Resume::parse(&text), Ok(r));
        for bad in ["", "abc", "zz.00", "4d5347", "4d5.47", "ff.00"] {
            assert_eq!(Resume::parse(bad), Err(BadResume), "{bad:?}");
        }
    }
}
