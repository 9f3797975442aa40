//! `inboxctl replay`: put failed or ignored messages back to `pending` and re-drive them, with
//! `inbox_core::ops::replay` (status change durable first, then a retry-queue message).
//!
//! Three modes:
//! - one message: `replay SOURCE EVENT_ID [--force]`;
//! - bulk: `replay --status failed|ignored [filters] [--yes]` (a dry run without `--yes`);
//! - the quarantine queue: `replay --from-quarantine [--max N]` (in [`quarantine`]).

mod quarantine;

use super::{parse_key, summary_row, Summary, SUMMARY_HEADER};
use crate::cli::ReplayArgs;
use crate::context::Context;
use crate::error::{failed, Result};
use crate::output::{print_json, progress, say, table, truncate};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::StoredMessage;
use inbox_core::ops::{self, ReplayOutcome};
use inbox_core::queue::sqs::SqsRetryQueue;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{ListFilter, MessageStore as _};
use quarantine::from_quarantine;
use serde::Serialize;

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
pub(crate) fn describe(outcome: &ReplayOutcome) -> (&'static str, Option<String>) {
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

/// One message handed to [`ops::replay`]: the outcome as a word and detail, and how it counts.
pub(crate) struct Replayed {
    pub outcome: &'static str,
    pub detail: Option<String>,
    /// `Some(true)`: back in the pipeline; `Some(false)`: not replayed; `None`: an error.
    pub replayed: Option<bool>,
}

/// Replays one message as `operator` (with `force`, whatever its status but `processing`):
/// status change durable first, then a retry-queue message. An infrastructure error is an
/// outcome (`error`) here, so a caller replaying several goes on with the rest.
pub(crate) async fn replay_key(
    store: &DynamoTable,
    retry: &SqsRetryQueue,
    key: &MessageKey,
    operator: &str,
    force: bool,
) -> Replayed {
    match ops::replay(store, retry, &SystemClock, key, operator, force).await {
        Ok(o) => {
            let (outcome, detail) = describe(&o);
            Replayed {
                outcome,
                detail,
                replayed: Some(o == ReplayOutcome::Replayed),
            }
        }
        Err(e) => Replayed {
            outcome: "error",
            detail: Some(inbox_core::error::one_line(&e)),
            replayed: None,
        },
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

/// One message of a bulk replay and what became of it.
#[derive(Serialize)]
pub(crate) struct BulkItem {
    #[serde(flatten)]
    pub message: Summary,
    /// `would_replay` in a dry run.
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a bulk replay did (or, as a dry run, would do).
#[derive(Serialize)]
pub(crate) struct BulkReport {
    pub dry_run: bool,
    pub matched: usize,
    pub replayed: usize,
    pub not_replayed: usize,
    pub errors: usize,
    pub messages: Vec<BulkItem>,
}

/// Replays each of `messages` in turn with [`replay_key`] (each journaled as replayed by
/// `operator`), never forced; `tick` after each one (a progress bar). An error replaying one is
/// reported with it and the rest go on.
pub(crate) async fn replay_each(
    store: &DynamoTable,
    retry: &SqsRetryQueue,
    messages: &[StoredMessage],
    operator: &str,
    mut tick: impl FnMut(),
) -> BulkReport {
    let mut items = Vec::with_capacity(messages.len());
    let (mut replayed, mut not_replayed, mut errors) = (0, 0, 0);
    for m in messages {
        let Replayed {
            outcome,
            detail,
            replayed: counted,
        } = replay_key(store, retry, &m.key(), operator, false).await;
        match counted {
            Some(true) => replayed += 1,
            Some(false) => not_replayed += 1,
            None => errors += 1,
        }
        items.push(BulkItem {
            message: Summary::from(m),
            outcome,
            detail,
        });
        tick();
    }
    BulkReport {
        dry_run: false,
        matched: messages.len(),
        replayed,
        not_replayed,
        errors,
        messages: items,
    }
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
    let report = replay_each(&store, &retry, &messages, &args.operator, || bar.inc(1)).await;
    bar.finish_and_clear();
    let (replayed, not_replayed, errors) = (report.replayed, report.not_replayed, report.errors);
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
