//! `inboxctl stripe catch-up`: Stripe's events since a time, listed through the Stripe module's
//! client (the account's token bucket and retries), and every one the inbox lacks stored through
//! ingest's own identity and conditional write ([`stripe_charges::catch_up`]), recorded as
//! `catch-up` by the operator. Prints the counts by outcome and what was missing; exit 1 when
//! an event was refused or the store failed midway (a run again doubles nothing).

use crate::cli::{CatchUpArgs, StripeCommand};
use crate::context::Context;
use crate::error::{failed, usage, Result};
use crate::output::{self, print_json, say};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::config::DEFAULT_RETENTION_DAYS;
use inbox_core::ingest::{config::read_max_body, Ingestor, Origin};
use inbox_core::store::dynamo::body::BodyConfig;
use serde::Serialize;
use std::collections::BTreeMap;
use stripe_charges::catch_up::{catch_up, CatchUpError, CatchUpRequest, Report, Verdict};
use stripe_charges::events::{EventQuery, StripeEvents, MAX_TYPES, RETENTION_SECS};
use stripe_charges::{StripeClient, StripeConfig};

/// How many of the missing events are named one by one.
const SHOWN: usize = 20;

pub async fn run(ctx: &Context, command: StripeCommand) -> Result<()> {
    match command {
        StripeCommand::CatchUp(args) => catch_up_command(ctx, args).await,
    }
}

/// The events to list: the window (at most Stripe's 30 days) and the types (the wallet's by
/// default, at most 20, each once).
pub(crate) fn query_of(args: &CatchUpArgs, now_ms: i64) -> Result<EventQuery> {
    let since_ms = args.since.resolve(now_ms);
    if now_ms.saturating_sub(since_ms) > RETENTION_SECS * 1000 {
        return Err(usage(
            "--since reaches back further than 30 days: Stripe keeps no older event \
             (https://docs.stripe.com/api/events/list)",
        ));
    }
    let mut types: Vec<String> = if args.types.is_empty() {
        wallet_ledger::STRIPE_TYPES
            .iter()
            .map(|t| (*t).to_owned())
            .collect()
    } else {
        args.types.iter().map(|t| t.trim().to_owned()).collect()
    };
    if let Some(bad) = types.iter().find(|t| {
        t.is_empty()
            || !t
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._".contains(c))
    }) {
        return Err(usage(format!(
            "--types: {bad:?} is not a Stripe event type"
        )));
    }
    types.sort();
    types.dedup();
    if types.len() > MAX_TYPES {
        return Err(usage(format!(
            "--types: {} types; Stripe's list takes at most {MAX_TYPES}",
            types.len()
        )));
    }
    Ok(EventQuery {
        types,
        created_gte: since_ms.div_euclid(1000),
        created_lte: None,
        delivery_success: args.undelivered_only.then_some(false),
    })
}

async fn catch_up_command(ctx: &Context, args: CatchUpArgs) -> Result<()> {
    let now_ms = SystemClock.now_millis();
    let query = query_of(&args, now_ms)?;
    let source = match &args.source {
        Some(s) => s.clone(),
        None => ctx
            .env()
            .parse(&wallet_ledger::config::WALLET_STRIPE_SOURCE)
            .map_err(|e| usage(e.to_string()))?,
    };
    let sources =
        super::send::load_sources(ctx.env(), args.sources.as_deref(), args.secrets.as_deref())?;
    if sources.get(&source).is_none() {
        return Err(usage(format!(
            "no source {source:?} is configured (sources: {}): pass --source",
            sources.names().join(", ")
        )));
    }
    let bodies = BodyConfig::read(ctx.env())?;
    let max_body = read_max_body(ctx.env(), &bodies)?;
    let store = ctx.store().await?;
    let ingestor = Ingestor::new(
        sources,
        store.clone(),
        SystemClock,
        max_body,
        DEFAULT_RETENTION_DAYS,
    );
    let config = StripeConfig::read(ctx.env(), ctx.sdk().await).await?;
    let events = StripeEvents::on(StripeClient::from_config(&config, store)?);
    let request = CatchUpRequest {
        query,
        source,
        key_livemode: config.key.livemode(),
        dry_run: args.dry_run,
        origin: Origin {
            how: "catch-up",
            operator: args.operator.clone(),
            at_ms: now_ms,
        },
    };
    let spinner = output::spinner(ctx.json(), "listing Stripe's events");
    let listed = |n: usize| spinner.set_message(format!("listed {n} of Stripe's events"));
    let result = catch_up(&events, &ingestor, &request, listed).await;
    spinner.finish_and_clear();
    match result {
        Ok(report) => {
            print(ctx, &request, &report)?;
            match report.refused() {
                0 => Ok(()),
                n => Err(failed(format!("{n} events refused (listed above)"))),
            }
        }
        Err(CatchUpError::Store {
            event,
            error,
            so_far,
        }) => {
            print(ctx, &request, &so_far)?;
            Err(failed(format!(
                "the store failed on {event}: {error}; nothing after it was stored: run again \
                 (what is stored stays once)"
            )))
        }
        Err(e) => Err(failed(e)),
    }
}

#[derive(Debug, Serialize)]
struct Printed<'a> {
    since: String,
    types: &'a [String],
    undelivered_only: bool,
    dry_run: bool,
    listed: usize,
    new: usize,
    already_had: usize,
    refused: Vec<RefusedEvent<'a>>,
    missing: Missing<'a>,
    stripe_requests: u32,
    stripe_retries: u32,
    stripe_rate_limited: u32,
}

#[derive(Debug, Serialize)]
struct RefusedEvent<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    event_type: &'a str,
    reason: &'a str,
}

#[derive(Debug, Serialize)]
struct Missing<'a> {
    by_type: BTreeMap<&'a str, usize>,
    /// When the oldest and the newest of them were created (RFC 3339).
    oldest: Option<String>,
    newest: Option<String>,
    /// Their ids, oldest first.
    ids: Vec<&'a str>,
}

fn printed<'a>(request: &'a CatchUpRequest, report: &'a Report) -> Printed<'a> {
    let between = report.missing_between();
    Printed {
        since: when::rfc3339(request.query.created_gte * 1000),
        types: &request.query.types,
        undelivered_only: request.query.delivery_success == Some(false),
        dry_run: request.dry_run,
        listed: report.events.len(),
        new: report.new_events(),
        already_had: report.already_had(),
        refused: report
            .events
            .iter()
            .filter_map(|e| match &e.verdict {
                Verdict::Refused(reason) => Some(RefusedEvent {
                    id: &e.id,
                    event_type: &e.event_type,
                    reason,
                }),
                _ => None,
            })
            .collect(),
        missing: Missing {
            by_type: report.missing_by_type(),
            oldest: between.map(|(lo, _)| when::rfc3339(lo * 1000)),
            newest: between.map(|(_, hi)| when::rfc3339(hi * 1000)),
            ids: report
                .events
                .iter()
                .filter(|e| e.verdict == Verdict::New)
                .map(|e| e.id.as_str())
                .collect(),
        },
        stripe_requests: report.requests,
        stripe_retries: report.retries,
        stripe_rate_limited: report.rate_limited,
    }
}

fn print(ctx: &Context, request: &CatchUpRequest, report: &Report) -> Result<()> {
    let p = printed(request, report);
    if ctx.json() {
        return print_json(&p);
    }
    say(format!(
        "Stripe's events since {} ({} types{}): {} listed; Stripe requests: {} ({} retries, {} rate-limited)",
        p.since,
        p.types.len(),
        if p.undelivered_only { ", undelivered only" } else { "" },
        p.listed,
        p.stripe_requests,
        p.stripe_retries,
        p.stripe_rate_limited
    ))?;
    let new = if p.dry_run {
        "new (dry run: not stored)"
    } else {
        "new (stored now)"
    };
    let mut t = output::table(["outcome", "events"]);
    t.add_row(vec![new.to_owned(), p.new.to_string()]);
    t.add_row(vec!["already had".to_owned(), p.already_had.to_string()]);
    t.add_row(vec!["refused".to_owned(), p.refused.len().to_string()]);
    say(t)?;
    match (&p.missing.oldest, &p.missing.newest) {
        (Some(oldest), Some(newest)) => {
            let types: Vec<String> = p
                .missing
                .by_type
                .iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect();
            say(format!(
                "missing from the inbox: {} ({}), created {oldest} to {newest}",
                p.new,
                types.join(", ")
            ))?;
            for id in p.missing.ids.iter().take(SHOWN) {
                say(format!("  {id}"))?;
            }
            if p.missing.ids.len() > SHOWN {
                say(format!(
                    "  … and {} more (--json lists all)",
                    p.missing.ids.len() - SHOWN
                ))?;
            }
        }
        _ => say("nothing was missing from the inbox")?,
    }
    for r in &p.refused {
        say(format!("refused {} ({}): {}", r.id, r.event_type, r.reason))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
