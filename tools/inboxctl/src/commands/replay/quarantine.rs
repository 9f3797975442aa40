//! `inboxctl replay --from-quarantine`: replay the messages named on the quarantine queue. Each
//! queue message naming a message (a `QuarantineNotice` or a `RetryRequest`) is deleted only once
//! nothing is left to do for it: the replay is durable, or the message is already pending,
//! retrying, being processed or processed. Otherwise it stays in the queue (visible again at the
//! end of the run). Queue messages naming no message (e.g. a DynamoDB stream's on-failure record,
//! which holds only shard and sequence numbers) are reported and kept, or deleted with
//! `--drop-unreadable`.

use super::describe;
use crate::cli::ReplayArgs;
use crate::context::Context;
use crate::error::{Context as _, Error, Result};
use crate::output::{print_json, say, spinner, table, truncate};
use inbox_core::clock::SystemClock;
use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::{QuarantineNotice, RetryRequest};
use inbox_core::ops::{self, ReplayOutcome};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoTable;
use serde::Serialize;
use std::collections::HashSet;

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

pub async fn from_quarantine(ctx: &Context, args: &ReplayArgs) -> Result<()> {
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
                        let detail = inbox_core::error::one_line(e.as_ref());
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
    store: &DynamoTable,
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
            item.detail = Some(inbox_core::error::one_line(e.as_ref()));
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
