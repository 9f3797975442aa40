//! `inboxctl purge`: delete terminal messages received more than N days ago.
//!
//! A dry run unless `--yes`. Deletion goes through `MessageStore::purge(key, version)`, which is
//! conditioned on the version listed and on a terminal status: a message that changed since (a
//! replay, say) is skipped, never deleted. Failed messages are purged only when named with
//! `--status failed` (they are dead letters waiting for an operator).

use super::{summary_row, Summary, SUMMARY_HEADER};
use crate::cli::PurgeArgs;
use crate::context::Context;
use crate::error::{failed, Result};
use crate::output::{print_json, progress, say, table};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::StoredMessage;
use inbox_core::store::{Applied, ListFilter, MessageStore as _};
use serde::Serialize;

const DAY_MS: i64 = 86_400_000;

#[derive(Serialize)]
struct Item {
    #[serde(flatten)]
    message: Summary,
    /// `would_purge` (dry run), `purged`, `skipped` (changed meanwhile) or `error`.
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

#[derive(Serialize)]
struct Report {
    dry_run: bool,
    older_than_days: u32,
    /// RFC 3339: messages received before this are candidates.
    cutoff: String,
    statuses: Vec<Status>,
    matched: usize,
    purged: usize,
    skipped: usize,
    errors: usize,
    messages: Vec<Item>,
}

/// The statuses to purge, deduplicated and restricted to terminal ones.
fn statuses(args: &PurgeArgs) -> Vec<Status> {
    let mut v: Vec<Status> = args.status.iter().map(|s| Status::from(*s)).collect();
    v.retain(|s| s.is_terminal());
    v.sort_by_key(|s| s.as_str());
    v.dedup();
    v
}

pub async fn run(ctx: &Context, args: PurgeArgs) -> Result<()> {
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let cutoff = now.saturating_sub(i64::from(args.older_than_days).saturating_mul(DAY_MS));
    let statuses = statuses(&args);
    let mut candidates: Vec<StoredMessage> = Vec::new();
    for status in &statuses {
        let filter = ListFilter {
            status: Some(*status),
            until: Some(cutoff),
            ..ListFilter::default()
        };
        candidates.extend(store.list(&filter, usize::MAX).await?);
    }
    candidates.sort_by_key(|m| m.received_at);

    let mut report = Report {
        dry_run: !args.yes,
        older_than_days: args.older_than_days,
        cutoff: crate::when::rfc3339(cutoff),
        statuses: statuses.clone(),
        matched: candidates.len(),
        purged: 0,
        skipped: 0,
        errors: 0,
        messages: Vec::with_capacity(candidates.len()),
    };

    if !args.yes {
        report.messages = candidates
            .iter()
            .map(|m| Item {
                message: Summary::from(m),
                outcome: "would_purge",
                detail: None,
            })
            .collect();
        if ctx.json() {
            return print_json(&report);
        }
        if !candidates.is_empty() {
            let mut t = table(SUMMARY_HEADER);
            for m in &candidates {
                t.add_row(summary_row(m));
            }
            say(t)?;
        }
        return say(format!(
            "dry run: {} message(s) ({}) received before {} would be purged; add --yes to delete them",
            candidates.len(),
            status_list(&statuses),
            report.cutoff
        ));
    }

    let bar = progress(candidates.len() as u64, ctx.json(), "purging");
    for m in &candidates {
        let (outcome, detail) = match store.purge(&m.key(), m.version).await {
            Ok(Applied::Done) => {
                report.purged += 1;
                ("purged", None)
            }
            Ok(_) => {
                report.skipped += 1;
                ("skipped", Some("changed since it was listed".to_owned()))
            }
            Err(e) => {
                report.errors += 1;
                ("error", Some(inbox_core::error::one_line(&e)))
            }
        };
        report.messages.push(Item {
            message: Summary::from(m),
            outcome,
            detail,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    if ctx.json() {
        print_json(&report)?;
    } else {
        say(format!(
            "purged {} of {} message(s) ({}) received before {}; {} skipped (changed meanwhile), {} error(s)",
            report.purged,
            report.matched,
            status_list(&statuses),
            report.cutoff,
            report.skipped,
            report.errors
        ))?;
        for i in report.messages.iter().filter(|i| i.outcome == "error") {
            eprintln!(
                "  {}/{}: {}",
                i.message.source,
                i.message.event_id,
                i.detail.as_deref().unwrap_or_default()
            );
        }
    }
    if report.errors > 0 {
        return Err(failed(format!(
            "{} message(s) could not be purged",
            report.errors
        )));
    }
    Ok(())
}

fn status_list(statuses: &[Status]) -> String {
    statuses
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::TerminalStatus;

    #[test]
    fn statuses_are_deduplicated() {
        let args = PurgeArgs {
            older_than_days: 1,
            status: vec![
                TerminalStatus::Ignored,
                TerminalStatus::Processed,
                TerminalStatus::Ignored,
            ],
            yes: false,
        };
        assert_eq!(statuses(&args), vec![Status::Ignored, Status::Processed]);
    }
}
