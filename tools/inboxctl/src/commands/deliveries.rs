//! `inboxctl deliveries …`: the outbox's deliveries: list (by destination, status, event, age),
//! show one with its attempt journal, retry one or in bulk (with a progress bar), replay an event
//! to one destination or all ([`inbox_core::outbox::resend`]).

use crate::cli::{
    DeliveriesCommand, DeliveriesListArgs, DeliveriesReplayArgs, DeliveriesRetryArgs,
    DeliveryKeyArgs, DeliveryStatusArg,
};
use crate::context::Context;
use crate::error::{failed, usage, Result};
use crate::output::{fields, or_dash, print_json, progress, say, table, truncate};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{EventId, SourceName};
use inbox_core::outbox::delivery::{DeliveryRef, DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::DestinationId;
use inbox_core::outbox::queue::SqsOutboxQueues;
use inbox_core::outbox::resend::{self, RetryOutcome};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use serde_json::json;

pub async fn run(ctx: &Context, command: DeliveriesCommand) -> Result<()> {
    match command {
        DeliveriesCommand::List(args) => list(ctx, args).await,
        DeliveriesCommand::Show(args) => show(ctx, args).await,
        DeliveriesCommand::Retry(args) => retry(ctx, args).await,
        DeliveriesCommand::Replay(args) => replay(ctx, args).await,
    }
}

fn status_of(s: DeliveryStatusArg) -> DeliveryStatus {
    match s {
        DeliveryStatusArg::Pending => DeliveryStatus::Pending,
        DeliveryStatusArg::Delivering => DeliveryStatus::Delivering,
        DeliveryStatusArg::Retrying => DeliveryStatus::Retrying,
        DeliveryStatusArg::Delivered => DeliveryStatus::Delivered,
        DeliveryStatusArg::Failed => DeliveryStatus::Failed,
    }
}

fn reference(destination: &DestinationId, source: &str, event_id: &str) -> Result<DeliveryRef> {
    Ok(DeliveryRef {
        destination: destination.clone(),
        source: SourceName::parse(source).map_err(|e| usage(format!("source {source:?} {e}")))?,
        event_id: EventId::parse(event_id)
            .map_err(|e| usage(format!("event id {event_id:?} {e}")))?,
    })
}

/// The delivery queue, when configured (only re-drives are sent through it).
pub(crate) async fn queue(ctx: &Context) -> Option<SqsOutboxQueues> {
    let url = ctx.delivery_queue_url()?.to_owned();
    Some(SqsOutboxQueues::new(ctx.sqs().await, url, String::new()))
}

/// Deliveries passing the filters, oldest first.
pub(crate) async fn select(
    store: &DynamoTable,
    dest: Option<&DestinationId>,
    status: Option<DeliveryStatus>,
    source: Option<&str>,
    event_id: Option<&str>,
    since: Option<i64>,
) -> Result<Vec<OutboundDelivery>> {
    let mut all: Vec<OutboundDelivery> = store
        .all_deliveries()
        .await?
        .into_iter()
        .filter(|d| dest.is_none_or(|x| *x == d.destination))
        .filter(|d| status.is_none_or(|s| s == d.status))
        .filter(|d| source.is_none_or(|s| s == d.source.as_str()))
        .filter(|d| event_id.is_none_or(|e| e == d.event_id.as_str()))
        .filter(|d| since.is_none_or(|t| d.created_at >= t))
        .collect();
    all.sort_by_key(|d| (d.created_at, d.destination.clone()));
    Ok(all)
}

fn summary(d: &OutboundDelivery) -> serde_json::Value {
    json!({
        "destination": d.destination, "source": d.source, "event_id": d.event_id, "event_type": d.event_type,
        "webhook_id": d.webhook_id, "status": d.status, "attempts": d.attempts,
        "created_at": when::rfc3339(d.created_at), "created_at_ms": d.created_at,
        "next_attempt_at": d.next_attempt_at.map(when::rfc3339), "delivered_at": d.delivered_at.map(when::rfc3339),
        "last_status": d.last_status, "last_error": d.last_error,
    })
}

async fn list(ctx: &Context, args: DeliveriesListArgs) -> Result<()> {
    let now = SystemClock.now_millis();
    let store = ctx.store().await?;
    let mut found = select(
        &store,
        args.destination.as_ref(),
        args.status.map(status_of),
        args.source.as_deref(),
        args.event_id.as_deref(),
        args.since.map(|w| w.resolve(now)),
    )
    .await?;
    found.truncate(args.limit as usize);
    if ctx.json() {
        return print_json(&found.iter().map(summary).collect::<Vec<_>>());
    }
    let mut t = table([
        "created (UTC)",
        "destination",
        "event",
        "status",
        "attempts",
        "last",
        "next attempt",
    ]);
    for d in &found {
        t.add_row(vec![
            when::human(d.created_at),
            d.destination.to_string(),
            format!(
                "{}/{} {}",
                d.source,
                d.event_id,
                or_dash(d.event_type.as_ref())
            ),
            d.status.as_str().to_owned(),
            d.attempts.to_string(),
            d.last_error
                .as_deref()
                .map_or_else(|| or_dash(d.last_status), |e| truncate(e, 40)),
            or_dash(d.next_attempt_at.map(when::human)),
        ]);
    }
    say(t)?;
    say(format!(
        "{} deliver{}",
        found.len(),
        if found.len() == 1 { "y" } else { "ies" }
    ))
}

async fn show(ctx: &Context, args: DeliveryKeyArgs) -> Result<()> {
    let r = reference(&args.destination, &args.source, &args.event_id)?;
    let store = ctx.store().await?;
    let d = store
        .delivery(&r)
        .await?
        .ok_or_else(|| failed(format!("no delivery {r}")))?;
    if ctx.json() {
        let mut v = summary(&d);
        v["journal"] = json!(d.journal);
        v["journal_dropped"] = json!(d.journal_dropped);
        v["notes"] = json!(d.notes);
        v["version"] = json!(d.version);
        return print_json(&v);
    }
    say(fields([
        ("destination", d.destination.to_string()),
        (
            "event",
            format!(
                "{}/{} ({})",
                d.source,
                d.event_id,
                or_dash(d.event_type.as_ref())
            ),
        ),
        ("webhook-id", d.webhook_id.clone()),
        ("status", d.status.as_str().to_owned()),
        ("attempts", d.attempts.to_string()),
        ("created", when::rfc3339(d.created_at)),
        (
            "next attempt",
            or_dash(d.next_attempt_at.map(when::rfc3339)),
        ),
        ("delivered", or_dash(d.delivered_at.map(when::rfc3339))),
        ("last error", or_dash(d.last_error.as_ref())),
    ]))?;
    let mut t = table([
        "at (UTC)",
        "#",
        "status",
        "ms",
        "outcome",
        "error",
        "response body (start)",
    ]);
    for a in &d.journal {
        t.add_row(vec![
            when::human(a.at),
            a.attempt.to_string(),
            or_dash(a.status),
            a.duration_ms.to_string(),
            a.outcome.clone(),
            or_dash(a.error.as_deref().map(|e| truncate(e, 50))),
            truncate(&a.body, 60),
        ]);
    }
    say(t)?;
    for n in &d.notes {
        say(format!("note {}: {}", when::human(n.at), n.note))?;
    }
    if d.journal_dropped > 0 {
        say(format!("({} older attempts not kept)", d.journal_dropped))?;
    }
    Ok(())
}

/// Retries each delivery in turn with [`resend::retry`] (journaled, naming `operator`; `force`:
/// whatever its status, as for one delivery the operator named), `tick` after each: each
/// delivery with what became of it.
pub(crate) async fn retry_each(
    store: &DynamoTable,
    queue: Option<&SqsOutboxQueues>,
    targets: &[DeliveryRef],
    operator: &str,
    force: bool,
    now: i64,
    mut tick: impl FnMut(),
) -> Result<Vec<(String, String)>> {
    let mut results = Vec::new();
    for r in targets {
        let o = resend::retry(store, queue, r, operator, force, now).await?;
        results.push((r.to_string(), outcome_text(&o)));
        tick();
    }
    Ok(results)
}

pub(crate) fn outcome_text(o: &RetryOutcome) -> String {
    match o {
        RetryOutcome::NotRetryable(s) => format!("not retryable ({})", s.as_str()),
        RetryOutcome::BodyGone => {
            "not resent: the event's body is gone (expired after the retention, or deleted)".into()
        }
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
    }
}

async fn retry(ctx: &Context, args: DeliveriesRetryArgs) -> Result<()> {
    let store = ctx.store().await?;
    let queue = queue(ctx).await;
    let now = SystemClock.now_millis();
    let targets: Vec<DeliveryRef> =
        match (&args.destination, &args.source, &args.event_id, args.status) {
            (Some(d), Some(s), Some(e), None) => vec![reference(d, s, e)?],
            (None, _, _, Some(status)) => select(
                &store,
                args.bulk_destination.as_ref(),
                Some(status_of(status)),
                None,
                None,
                None,
            )
            .await?
            .iter()
            .map(OutboundDelivery::reference)
            .collect(),
            _ => {
                return Err(usage(
                    "name one delivery (DESTINATION SOURCE EVENT_ID) or --status",
                ))
            }
        };
    let bulk = args.status.is_some();
    if bulk && !args.yes {
        if ctx.json() {
            return print_json(
                &json!({"dry_run": true, "would_retry": targets.iter().map(ToString::to_string).collect::<Vec<_>>()}),
            );
        }
        say(format!(
            "{} deliveries would be retried (dry run; add --yes):",
            targets.len()
        ))?;
        for t in &targets {
            say(format!("  {t}"))?;
        }
        return Ok(());
    }
    let bar = progress(targets.len() as u64, ctx.json() || !bulk, "retrying");
    let results = retry_each(
        &store,
        queue.as_ref(),
        &targets,
        &args.operator,
        !bulk,
        now,
        || bar.inc(1),
    )
    .await?;
    bar.finish_and_clear();
    if ctx.json() {
        return print_json(
            &results
                .iter()
                .map(|(r, o)| json!({"delivery": r, "outcome": o}))
                .collect::<Vec<_>>(),
        );
    }
    for (r, o) in &results {
        say(format!("{r}: {o}"))?;
    }
    if queue.is_none() {
        say("(no delivery queue configured: the deliver function's sweep sends them within a minute)")?;
    }
    Ok(())
}

async fn replay(ctx: &Context, args: DeliveriesReplayArgs) -> Result<()> {
    let key = super::parse_key(&args.source, &args.event_id)?;
    let store = ctx.store().await?;
    let queue = queue(ctx).await;
    let now = SystemClock.now_millis();
    let results = resend::replay(
        &store,
        queue.as_ref(),
        &key,
        args.destination.as_ref(),
        &args.operator,
        now,
    )
    .await?;
    if results.is_empty() {
        return Err(failed(format!(
            "nothing to replay: no message {}/{} or no destination for it",
            key.source, key.event_id
        )));
    }
    if ctx.json() {
        return print_json(
            &results
                .iter()
                .map(|(d, o)| json!({"destination": d, "outcome": outcome_text(o)}))
                .collect::<Vec<_>>(),
        );
    }
    for (d, o) in &results {
        say(format!(
            "{d} ← {}/{}: {}",
            key.source,
            key.event_id,
            outcome_text(o)
        ))?;
    }
    Ok(())
}
