//! `inboxctl replay`: put failed or ignored messages back to `pending` and re-drive them, with
//! `inbox_core::ops::replay` (status change durable first, then a retry-queue message).
//!
//! Three modes:
//! - one message: `replay SOURCE EVENT_ID [--force]`;
//! - bulk: `replay --status failed|ignored [filters] [--yes]` (a dry run without `--yes`);
//! - the quarantine queue: `replay --from-quarantine [--max N]`. Each queue message naming a
//!   message (a `QuarantineNotice` or a `RetryRequest`) is deleted only once nothing is left to do
//!   for it: the replay is durable, or the message is already pending, retrying, being processed
//!   or processed. Otherwise it stays in the queue (visible again at the end of the run). Queue
//!   messages naming no message (e.g. a DynamoDB stream's on-failure record, which holds only
//!   shard and sequence numbers) are reported and kept, or deleted with `--drop-unreadable`.

use super::{parse_key, summary_row, Summary, SUMMARY_HEADER};
use crate::cli::ReplayArgs;
use crate::context::Context;
use crate::error::{failed, Context as _, Error, Result};
use crate::output::{print_json, progress, say, spinner, table, truncate};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::{QuarantineNotice, RetryRequest};
use inbox_core::ops::{self, ReplayOutcome};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoInbox;
use inbox_core::store::{ListFilter, MessageStore as _};
use serde::Serialize;
use std::collections::HashSet;

pub async fn run(ctx: &Context, args: ReplayArgs) -> Result<()> {
    if args.from_quarantine {
        return from_quarantine(ctx, &args).await;
    }
    if args.status.is_some() {
        return bulk(ctx, &args).await;
    }
    match (&args.key_source, &args.event_id) {
        (Some(source), Some(id)) => one(ctx, &args, &parse_key(source, id)?).await,
        // clap's argument group makes this unreachable.
        _ => Err(crate::error::usage(
            "name a message (SOURCE EVENT_ID), --status or --from-quarantine",
        )),
    }
}

/// An outcome as a short word and an optional detail, for tables and JSON.
fn describe(outcome: &ReplayOutcome) -> (&'static str, Option<String>) {
    match outcome {
        ReplayOutcome::Replayed => ("replayed", None),
        ReplayOutcome::Missing => ("missing", Some("no such message in the table".into())),
        ReplayOutcome::NotReplayable(s) => ("not_replayable", Some(format!("status is {s}"))),
        ReplayOutcome::Conflict => (
            "conflict",
            Some("the message changed meanwhile; try again".into()),
        ),
    }
}

#[derive(Serialize)]
struct OneResult<'a> {
    source: &'a str,
    event_id: &'a str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

async fn one(ctx: &Context, args: &ReplayArgs, key: &MessageKey) -> Result<()> {
    let store = ctx.store().await?;
    let retry = ctx.retry_queue().await?;
    let outcome = ops::replay(
        &store,
        &retry,
        &SystemClock,
        key,
        &args.operator,
        args.force,
    )
    .await?;
    let (word, detail) = describe(&outcome);
    if ctx.json() {
        print_json(&OneResult {
            source: key.source.as_str(),
            event_id: key.event_id.as_str(),
            outcome: word,
            detail: detail.clone(),
        })?;
    }
    match outcome {
        ReplayOutcome::Replayed => {
            if !ctx.json() {
                say(format!(
                    "replayed {}/{}: pending again, re-driven through the retry queue",
                    key.source, key.event_id
                ))?;
            }
            Ok(())
        }
        ReplayOutcome::NotReplayable(status) if !args.force && status != Status::Processing => {
            Err(failed(format!(
                "{}/{} is {status}: only failed and ignored messages are replayed (--force replays it anyway)",
                key.source, key.event_id
            )))
        }
        _ => Err(failed(format!(
            "{}/{} not replayed: {}",
            key.source,
            key.event_id,
            detail.unwrap_or_default()
        ))),
    }
}

#[derive(Serialize)]
struct BulkItem {
    #[serde(flatten)]
    message: Summary,
    /// `would_replay` in a dry run.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

#[derive(Serialize)]
struct BulkReport {
    dry_run: bool,
    matched: usize,
    replayed: usize,
    not_replayed: usize,
    errors: usize,
    messages: Vec<BulkItem>,
}

async fn bulk(ctx: &Context, args: &ReplayArgs) -> Result<()> {
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let filter = ListFilter {
        status: args.status.map(Into::into),
        source: args.source.clone(),
        event_type: args.event_type.clone(),
        since: args.since.map(|w| w.resolve(now)),
        until: args.until.map(|w| w.resolve(now)),
    };
    let messages = store
        .list(&filter, args.limit.unwrap_or(usize::MAX))
        .await?;
    if !args.yes {
        if ctx.json() {
            return print_json(&BulkReport {
                dry_run: true,
                matched: messages.len(),
                replayed: 0,
                not_replayed: 0,
                errors: 0,
                messages: messages
                    .iter()
                    .map(|m| BulkItem {
                        message: Summary::from(m),
                        outcome: "would_replay",
                        detail: None,
                    })
                    .collect(),
            });
        }
        if messages.is_empty() {
            return say("no messages match; nothing to replay");
        }
        let mut t = table(SUMMARY_HEADER);
        for m in &messages {
            t.add_row(summary_row(m));
        }
        say(t)?;
        return say(format!(
            "dry run: {} message(s) would be replayed; add --yes to replay them",
            messages.len()
        ));
    }

    let retry = ctx.retry_queue().await?;
    let bar = progress(messages.len() as u64, ctx.json(), "replaying");
    let mut items = Vec::with_capacity(messages.len());
    let (mut replayed, mut not_replayed, mut errors) = (0, 0, 0);
    for m in &messages {
        let key = m.key();
        let (outcome, detail) =
            match ops::replay(&store, &retry, &SystemClock, &key, &args.operator, false).await {
                Ok(o) => {
                    let (word, detail) = describe(&o);
                    if o == ReplayOutcome::Replayed {
                        replayed += 1;
                    } else {
                        not_replayed += 1;
                    }
                    (word, detail)
                }
                Err(e) => {
                    errors += 1;
                    ("error", Some(format!("{:#}", anyhow::Error::new(e))))
                }
            };
        items.push(BulkItem {
            message: Summary::from(m),
            outcome,
            detail,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = BulkReport {
        dry_run: false,
        matched: messages.len(),
        replayed,
        not_replayed,
        errors,
        messages: items,
    };
    if ctx.json() {
        print_json(&report)?;
    } else {
        let mut t = table(["source", "event id", "outcome", "detail"]);
        for i in &report.messages {
            t.add_row(vec![
                i.message.source.clone(),
                i.message.event_id.clone(),
                i.outcome.to_owned(),
                i.detail
                    .as_deref()
                    .map_or_else(|| "-".into(), |d| truncate(d, 80)),
            ]);
        }
        if !report.messages.is_empty() {
            say(t)?;
        }
        say(format!(
            "replayed {replayed} of {} message(s); {not_replayed} not replayed, {errors} error(s)",
            report.matched
        ))?;
    }
    if errors > 0 || not_replayed > 0 {
        return Err(failed(format!(
            "{} message(s) were not replayed",
            errors + not_replayed
        )));
    }
    Ok(())
}

/// What a quarantine-queue message names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueBody {
    Notice(QuarantineNotice),
    Retry(RetryRequest),
    /// Neither: e.g. a stream event source mapping's on-failure record.
    Unreadable(String),
}

impl QueueBody {
    /// Parses a queue message body: a quarantine notice, else a retry request.
    pub fn parse(body: &str) -> Self {
        if let Ok(n) = serde_json::from_str::<QuarantineNotice>(body) {
            return Self::Notice(n);
        }
        if let Ok(r) = serde_json::from_str::<RetryRequest>(body) {
            return Self::Retry(r);
        }
        let what = match serde_json::from_str::<serde_json::Value>(body) {
            Ok(v) if v.get("DDBStreamBatchInfo").is_some() => {
                "a DynamoDB stream on-failure record (shard and sequence numbers only; find the message with `inboxctl list --status failed`)".to_owned()
            }
            Ok(serde_json::Value::Object(o)) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                format!(
                    "JSON naming no message (fields: {})",
                    truncate(
                        &keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", "),
                        80
                    )
                )
            }
            Ok(_) => "JSON that is not an object".to_owned(),
            Err(_) => "not JSON".to_owned(),
        };
        Self::Unreadable(what)
    }

    fn key(&self) -> Option<MessageKey> {
        match self {
            Self::Notice(n) => Some(n.key()),
            Self::Retry(r) => Some(r.key()),
            Self::Unreadable(_) => None,
        }
    }
}

/// Whether the queue message may go: the replay is durable, or nothing is left to do.
pub fn done_with(outcome: &ReplayOutcome) -> bool {
    match outcome {
        ReplayOutcome::Replayed => true,
        // Already back in the pipeline (pending, retrying, being processed) or done (processed):
        // the notice is stale. Failed and ignored messages are always replayable, so never here.
        ReplayOutcome::NotReplayable(
            Status::Pending | Status::Retrying | Status::Processing | Status::Processed,
        ) => true,
        ReplayOutcome::NotReplayable(Status::Failed | Status::Ignored) => false,
        // Not in this table (a wrong --table?) or changed meanwhile: keep it for another look.
        ReplayOutcome::Missing | ReplayOutcome::Conflict => false,
    }
}

#[derive(Serialize)]
struct QueueItem {
    message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// `replayed`, `not_replayable`, `missing`, `conflict`, `unreadable`, `error`.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// `deleted` or `kept`.
    action: &'static str,
}

#[derive(Serialize)]
struct QueueReport {
    received: usize,
    replayed: usize,
    deleted: usize,
    kept: usize,
    errors: usize,
    messages: Vec<QueueItem>,
}

/// How long a received message stays invisible while we work on it.
const VISIBILITY_SECS: i32 = 120;

async fn from_quarantine(ctx: &Context, args: &ReplayArgs) -> Result<()> {
    let url = ctx
        .quarantine_url()
        .ok_or_else(|| {
            crate::error::usage(
                "--from-quarantine needs the quarantine queue: pass --quarantine-queue-url URL or set QUARANTINE_QUEUE_URL",
            )
        })?
        .to_owned();
    let store = ctx.store().await?;
    let retry = ctx.retry_queue().await?;
    let sqs = ctx.sqs().await;
    let max = args.max.unwrap_or(usize::MAX);
    let bar = spinner(ctx.json(), "draining the quarantine queue");

    let mut items = Vec::new();
    let mut kept_handles = Vec::new();
    let mut seen = HashSet::new();
    let mut infra_error = None;
    'receive: while items.len() < max {
        let batch = i32::try_from((max - items.len()).min(10)).unwrap_or(10);
        let out = sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(batch)
            .wait_time_seconds(args.wait_secs)
            .visibility_timeout(VISIBILITY_SECS)
            .send()
            .await
            .context("receiving from the quarantine queue")?;
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            break;
        }
        for msg in messages {
            let id = msg.message_id.clone().unwrap_or_default();
            let handle = msg.receipt_handle.clone().unwrap_or_default();
            if !seen.insert(id.clone()) {
                // Came back after its visibility timeout: the queue has been gone through.
                break 'receive;
            }
            let body = QueueBody::parse(msg.body().unwrap_or_default());
            let (item, delete) =
                handle_one(&store, &retry, args, id, &body, &mut infra_error).await;
            let item = if delete {
                match sqs
                    .delete_message()
                    .queue_url(&url)
                    .receipt_handle(&handle)
                    .send()
                    .await
                {
                    Ok(_) => QueueItem {
                        action: "deleted",
                        ..item
                    },
                    Err(e) => {
                        let e = anyhow::Error::new(e).context("deleting the queue message");
                        let detail = format!("{e:#}");
                        infra_error.get_or_insert(e);
                        QueueItem {
                            action: "kept",
                            detail: Some(detail),
                            ..item
                        }
                    }
                }
            } else {
                kept_handles.push(handle);
                item
            };
            items.push(item);
            bar.set_message(format!("{} queue message(s) handled", items.len()));
            if infra_error.is_some() || items.len() >= max {
                break 'receive;
            }
        }
    }
    bar.finish_and_clear();
    // What we keep becomes visible again now, for the next run or another operator.
    for handle in kept_handles {
        let _ = sqs
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
            .await;
    }

    let count = |f: &dyn Fn(&QueueItem) -> bool| items.iter().filter(|i| f(i)).count();
    let report = QueueReport {
        received: items.len(),
        replayed: count(&|i| i.outcome == "replayed"),
        deleted: count(&|i| i.action == "deleted"),
        kept: count(&|i| i.action == "kept"),
        errors: count(&|i| i.outcome == "error"),
        messages: items,
    };
    if ctx.json() {
        print_json(&report)?;
    } else {
        if !report.messages.is_empty() {
            let mut t = table(["queue message", "message", "outcome", "action", "detail"]);
            for i in &report.messages {
                let key = match (&i.source, &i.event_id) {
                    (Some(s), Some(e)) => format!("{s}/{e}"),
                    _ => "-".to_owned(),
                };
                t.add_row(vec![
                    i.message_id.clone(),
                    key,
                    i.outcome.to_owned(),
                    i.action.to_owned(),
                    i.detail
                        .as_deref()
                        .map_or_else(|| "-".into(), |d| truncate(d, 80)),
                ]);
            }
            say(t)?;
        }
        say(format!(
            "{} queue message(s): {} replayed, {} deleted, {} kept",
            report.received, report.replayed, report.deleted, report.kept
        ))?;
    }
    match infra_error {
        Some(e) => Err(Error::Failed(e)),
        None => Ok(()),
    }
}

/// Replays what one queue message names; returns the report line and whether to delete it.
async fn handle_one(
    store: &DynamoInbox,
    retry: &SqsRetryQueue,
    args: &ReplayArgs,
    message_id: String,
    body: &QueueBody,
    infra_error: &mut Option<anyhow::Error>,
) -> (QueueItem, bool) {
    let key = body.key();
    let mut item = QueueItem {
        message_id,
        source: key.as_ref().map(|k| k.source.to_string()),
        event_id: key.as_ref().map(|k| k.event_id.to_string()),
        reason: match body {
            QueueBody::Notice(n) => Some(format!(
                "{} after {} attempt(s): {}",
                n.reason, n.attempts, n.last_error
            )),
            _ => None,
        },
        outcome: "unreadable",
        detail: None,
        action: "kept",
    };
    let Some(key) = key else {
        if let QueueBody::Unreadable(what) = body {
            item.detail = Some(what.clone());
        }
        return (item, args.drop_unreadable);
    };
    match ops::replay(store, retry, &SystemClock, &key, &args.operator, args.force).await {
        Ok(outcome) => {
            let (word, detail) = describe(&outcome);
            item.outcome = word;
            item.detail = detail;
            (item, done_with(&outcome))
        }
        Err(e) => {
            let e = anyhow::Error::new(e);
            item.outcome = "error";
            item.detail = Some(format!("{e:#}"));
            infra_error.get_or_insert(e);
            (item, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_bodies() {
        let notice = r#"{"source":"stripe","event_id":"evt_1","event_type":"x.y","attempts":5,
            "last_error":"boom","reason":"exhausted","failed_at":1}"#;
        assert!(matches!(QueueBody::parse(notice), QueueBody::Notice(n) if n.attempts == 5));
        let retry = r#"{"source":"stripe","event_id":"evt_2"}"#;
        assert!(
            matches!(QueueBody::parse(retry), QueueBody::Retry(r) if r.event_id.as_str() == "evt_2")
        );
        let on_failure = r#"{"requestContext":{"requestId":"x","functionArn":"arn","condition":"RetryAttemptsExhausted","approximateInvokeCount":3},
            "responseContext":{"statusCode":200},"version":"1.0","timestamp":"2026-11-30T10:00:00Z",
            "DDBStreamBatchInfo":{"shardId":"shardId-1","startSequenceNumber":"1","endSequenceNumber":"2",
            "approximateArrivalOfFirstRecord":"2026-11-30T10:00:00Z","approximateArrivalOfLastRecord":"2026-11-30T10:00:00Z",
            "batchSize":1,"streamArn":"arn:aws:dynamodb:us-east-1:1:table/t/stream/x"}}"#;
        assert!(
            matches!(QueueBody::parse(on_failure), QueueBody::Unreadable(w) if w.contains("on-failure"))
        );
        assert!(matches!(
            QueueBody::parse("hello"),
            QueueBody::Unreadable(_)
        ));
        assert!(
            matches!(
                QueueBody::parse(r#"{"source":"Bad Name","event_id":"e"}"#),
                QueueBody::Unreadable(_)
            ),
            "an invalid key is unreadable, not a replay of something else"
        );
    }

    #[test]
    fn queue_messages_go_only_when_nothing_is_left_to_do() {
        use Status::*;
        assert!(done_with(&ReplayOutcome::Replayed));
        for s in [Pending, Retrying, Processing, Processed] {
            assert!(done_with(&ReplayOutcome::NotReplayable(s)), "{s}");
        }
        for s in [Failed, Ignored] {
            assert!(!done_with(&ReplayOutcome::NotReplayable(s)), "{s}");
        }
        assert!(!done_with(&ReplayOutcome::Missing));
        assert!(!done_with(&ReplayOutcome::Conflict));
    }
}
