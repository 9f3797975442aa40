//! `inboxctl events reindex [--dry-run] [--from TOKEN]`: the events index's backfill for the
//! messages stored before it existed ([`DynamoTable::backfill_events_page`]): the table scanned
//! once, page by page, each message without the index's attributes given them by a conditional
//! write; counts at the end. A run that stops (throttled, interrupted) names the token to go on
//! from; running it again from the start is safe too (what is indexed is skipped by its
//! condition, and no longer listed by the scan's filter).

use crate::cli::{EventsCommand, ReindexArgs};
use crate::context::Context;
use crate::error::{failed, usage, Result};
use crate::output::{print_json, say};
use inbox_core::store::dynamo::backfill::{BackfillPage, Resume};
use serde::Serialize;

pub async fn run(ctx: &Context, command: EventsCommand) -> Result<()> {
    match command {
        EventsCommand::Reindex(args) => reindex(ctx, args).await,
    }
}

/// The messages a dry run names (the rest are counted).
const NAMED: usize = 20;

/// What a run found and did.
#[derive(Debug, Default, Serialize)]
struct Totals {
    dry_run: bool,
    pages: u64,
    scanned: u64,
    missing: u64,
    indexed: u64,
    skipped: u64,
    /// The first [`NAMED`] messages found (`source/event_id`).
    found: Vec<String>,
}

impl Totals {
    fn add(&mut self, page: &BackfillPage) {
        self.pages += 1;
        self.scanned += page.scanned;
        self.missing += page.missing.len() as u64;
        self.indexed += page.indexed;
        self.skipped += page.skipped;
        for k in &page.missing {
            if self.found.len() < NAMED {
                self.found.push(format!("{}/{}", k.source, k.event_id));
            }
        }
    }
}

async fn reindex(ctx: &Context, args: ReindexArgs) -> Result<()> {
    let store = ctx.store().await?;
    let mut from = args
        .from
        .as_deref()
        .map(Resume::parse)
        .transpose()
        .map_err(|e| usage(format!("--from: {e}")))?;
    let mut totals = Totals {
        dry_run: args.dry_run,
        ..Totals::default()
    };
    loop {
        let page = match store
            .backfill_events_page(from.as_ref(), args.dry_run)
            .await
        {
            Ok(page) => page,
            Err(e) => {
                let again = from.as_ref().map_or_else(
                    || "run it again".to_owned(),
                    |r| format!("go on with --from {r}"),
                );
                return Err(failed(format!(
                    "{} after {} page(s) ({} indexed): {again}",
                    inbox_core::error::one_line(&e),
                    totals.pages,
                    totals.indexed
                )));
            }
        };
        totals.add(&page);
        match page.next {
            Some(next) => from = Some(next),
            None => break,
        }
    }
    if ctx.json() {
        return print_json(&totals);
    }
    say(format!(
        "scanned {} item(s) in {} page(s): {} message(s) not in the events index",
        totals.scanned, totals.pages, totals.missing
    ))?;
    if totals.dry_run {
        for k in &totals.found {
            say(format!("  {k}"))?;
        }
        if totals.missing > totals.found.len() as u64 {
            say(format!(
                "  … and {} more",
                totals.missing - totals.found.len() as u64
            ))?;
        }
        return say("dry run: nothing written (run it without --dry-run to index them)");
    }
    say(format!(
        "indexed {}; skipped {} (indexed meanwhile, or purged)",
        totals.indexed, totals.skipped
    ))
}
