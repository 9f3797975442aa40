//! `inboxctl events reindex [--dry-run] [--from TOKEN]`: the events index's backfill for the
//! messages stored before it existed ([`DynamoTable::backfill_events_page`]): the table scanned
//! once, page by page, each message without the index's attributes given them by a conditional
//! write; counts at the end. A run that stops (throttled, interrupted) names the token to go on
//! from; running it again from the start is safe too (what is indexed is skipped by its
//! condition, and no longer listed by the scan's filter). The same pass gives the failed messages
//! stored before failures kept an open-index entry theirs (`FAILED#…`: the Quarantine page's).

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
    /// Failed messages without their open-index entry.
    failed_missing: u64,
    failed_indexed: u64,
    failed_skipped: u64,
    /// The first [`NAMED`] of those (`source/event_id`).
    failed_found: Vec<String>,
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
        self.failed_missing += page.failed_missing.len() as u64;
        self.failed_indexed += page.failed_indexed;
        self.failed_skipped += page.failed_skipped;
        for k in &page.failed_missing {
            if self.failed_found.len() < NAMED {
                self.failed_found
                    .push(format!("{}/{}", k.source, k.event_id));
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
        "scanned {} item(s) in {} page(s): {} message(s) not in the events index, {} failed \
         message(s) not in the quarantine's index",
        totals.scanned, totals.pages, totals.missing, totals.failed_missing
    ))?;
    if totals.dry_run {
        name(&totals.found, totals.missing)?;
        if totals.failed_missing > 0 {
            say("failed, not in the quarantine's index:")?;
            name(&totals.failed_found, totals.failed_missing)?;
        }
        return say("dry run: nothing written (run it without --dry-run to index them)");
    }
    say(format!(
        "indexed {}; skipped {} (indexed meanwhile, or purged)",
        totals.indexed, totals.skipped
    ))?;
    say(format!(
        "failed messages indexed {}; skipped {} (replayed or indexed meanwhile, or purged)",
        totals.failed_indexed, totals.failed_skipped
    ))
}

/// The `named` messages of `count` found, and how many more.
fn name(named: &[String], count: u64) -> Result<()> {
    for k in named {
        say(format!("  {k}"))?;
    }
    if count > named.len() as u64 {
        say(format!("  … and {} more", count - named.len() as u64))?;
    }
    Ok(())
}
