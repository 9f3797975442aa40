//! `inboxctl list`: messages matching a filter, oldest first (`MessageStore::list`).

use super::{summary_row, Summary, SUMMARY_HEADER};
use crate::cli::ListArgs;
use crate::context::Context;
use crate::error::Result;
use crate::output::{print_json, say, table};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::store::{ListFilter, MessageStore as _};
use serde::Serialize;

#[derive(Serialize)]
struct Listing {
    count: usize,
    limit: u32,
    /// Whether the limit cut the listing short (there may be more).
    truncated: bool,
    messages: Vec<Summary>,
}

pub async fn run(ctx: &Context, args: ListArgs) -> Result<()> {
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let filter = ListFilter {
        status: args.status.map(Into::into),
        source: args.source,
        event_type: args.event_type,
        since: args.since.map(|w| w.resolve(now)),
        until: args.until.map(|w| w.resolve(now)),
    };
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let messages = store.list(&filter, limit).await?;
    let truncated = messages.len() >= limit;
    if ctx.json() {
        return print_json(&Listing {
            count: messages.len(),
            limit: args.limit,
            truncated,
            messages: messages.iter().map(Summary::from).collect(),
        });
    }
    if messages.is_empty() {
        return say("no messages match");
    }
    let mut t = table(SUMMARY_HEADER);
    for m in &messages {
        t.add_row(summary_row(m));
    }
    say(t)?;
    if truncated {
        eprintln!(
            "showing the first {} matches; there may be more (--limit)",
            messages.len()
        );
    }
    Ok(())
}
