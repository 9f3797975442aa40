//! The Quarantine page: the failed messages (`inboxctl list --status failed` with the Events
//! page's filters), each with why it failed; replay one (the event's own replay), or every match
//! of the filter (`inboxctl replay --status failed … --yes`: the same [`replay_each`]), after a
//! confirmation page naming the count, in steps with a progress bar ([`bulk`]). If the count changed by the time it is confirmed, the
//! confirmation is asked again with the new count.

use super::bulk::{self, Step};
use super::events::{event_link, list_filter, searched};
use super::http::{Params, Reply};
use super::layout::{self, csrf, opt, time};
use super::{Console, Session};
use crate::commands::replay::replay_each;
use crate::commands::stats::queue_depth;
use crate::error::Result;
use crate::output::truncate;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::StoredMessage;
use inbox_core::store::{ListFilter, MessageStore as _};
use maud::{html, Markup};

/// The filter fields the page keeps in its query string and forms.
const FIELDS: [&str; 5] = ["source", "type", "since", "until", "q"];

/// The failed messages the filter matches, oldest first (the order a bulk replay takes).
async fn failed_matches(console: &Console<'_>, params: &Params) -> Result<Vec<StoredMessage>> {
    let filter = ListFilter {
        status: Some(Status::Failed),
        ..list_filter(params, SystemClock.now_millis())?
    };
    let mut found = console.store.list(&filter, usize::MAX).await?;
    found.retain(|m| searched(m, params.get("q")));
    Ok(found)
}

/// Why a message failed: its last error and the note of its failing transition.
fn reason(m: &StoredMessage) -> String {
    let note = m
        .history
        .iter()
        .rev()
        .find(|h| h.status == Status::Failed)
        .map(|h| h.note.clone());
    match (note, &m.last_error) {
        (Some(n), Some(e)) => format!("{n}: {e}"),
        (Some(n), None) => n,
        (None, Some(e)) => e.clone(),
        (None, None) => String::new(),
    }
}

/// Hidden fields carrying the filter into a form.
fn filter_fields(params: &Params) -> Markup {
    html! {
        @for f in FIELDS {
            @if let Some(v) = params.get(f) { input type="hidden" name=(f) value=(v); }
        }
    }
}

pub async fn page(console: &Console<'_>, session: &Session, params: &Params) -> Result<Reply> {
    let found = failed_matches(console, params).await?;
    let queue = match console.ctx.quarantine_url() {
        Some(url) => Some(queue_depth(console.ctx, url).await?),
        None => None,
    };
    let value = |name: &str| params.get(name).unwrap_or("").to_owned();
    let body = html! {
        h1 { "Quarantine" }
        p { "Messages that failed for good (every attempt used, or a permanent failure). A replay puts one back to pending and re-drives it through the retry queue, journaled as replayed by you." }
        p #queue-depth {
            @match &queue {
                Some(q) => { "The quarantine queue holds " (q.visible) " notice(s) (" (q.in_flight) " in flight); replaying here leaves them, " code { "inboxctl replay --from-quarantine" } " drains them." },
                None => { "No quarantine queue configured (QUARANTINE_QUEUE_URL)." },
            }
        }
        form.filters method="get" action="/quarantine" {
            label { "source" input name="source" value=(value("source")); }
            label { "type" input name="type" value=(value("type")); }
            label { "since" input name="since" value=(value("since")); }
            label { "until" input name="until" value=(value("until")); }
            label { "event or provider id" input name="q" value=(value("q")); }
            button type="submit" { "Filter" }
            a href="/quarantine" { "clear" }
        }
        @if found.is_empty() {
            p.none { "No failed messages match." }
        } @else {
            form.actions method="post" action="/quarantine/replay" {
                (csrf(&session.csrf))
                (filter_fields(params))
                button.danger type="submit" #replay-all { "Replay all " (found.len()) " matching…" }
            }
            table #quarantine {
                thead { tr { th { "received (UTC)" } th { "event" } th { "type" } th.num { "attempts" } th { "why" } th {} } }
                tbody {
                    @for m in &found {
                        tr data-event=(m.event_id.as_str()) {
                            td { (time(m.received_at)) }
                            td { a href=(event_link(m)) { code { (m.source.as_str()) "/" (m.event_id.as_str()) } } }
                            td { (opt(m.event_type.as_ref())) }
                            td.num { (m.attempts) }
                            td { (truncate(&reason(m), 160)) }
                            td {
                                form.inline method="post" action="/event/replay" {
                                    (csrf(&session.csrf))
                                    input type="hidden" name="source" value=(m.source.as_str());
                                    input type="hidden" name="id" value=(m.event_id.as_str());
                                    button type="submit" { "Replay" }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/quarantine", "Quarantine", body),
    ))
}

/// One step of a confirmed bulk replay ([`bulk`]): the next [`bulk::STEP`] matches replayed.
async fn step(
    console: &Console<'_>,
    session: &Session,
    form: &Params,
    found: &[StoredMessage],
) -> Result<Reply> {
    let at = Step::read(form);
    let batch: Vec<StoredMessage> = found
        .iter()
        .skip(at.skip())
        .take(bulk::STEP)
        .cloned()
        .collect();
    let retry = console.ctx.retry_queue().await?;
    let report = replay_each(&console.store, &retry, &batch, &console.operator, || {}).await;
    let (step, more) = at.after(batch.len(), report.replayed);
    let progress = bulk::Progress {
        action: "/quarantine/replay",
        verb: "Replayed",
        csrf: &session.csrf,
        step,
        more,
        problems: report
            .messages
            .iter()
            .filter(|i| i.outcome != "replayed")
            .map(|i| {
                format!(
                    "{}/{}: {} {}",
                    i.message.source,
                    i.message.event_id,
                    i.outcome,
                    i.detail.as_deref().unwrap_or("")
                )
            })
            .collect(),
        carry: FIELDS
            .iter()
            .filter_map(|f| form.get(f).map(|v| (*f, v.to_owned())))
            .collect(),
        back: ("/quarantine", "Back to the quarantine"),
    };
    Ok(Reply::html(200, bulk::progress(&progress)))
}

/// `POST /quarantine/replay`: without `confirm` equal to the current count, the confirmation
/// page; with it, every match replayed and each outcome listed.
pub async fn replay_all(console: &Console<'_>, session: &Session, form: &Params) -> Result<Reply> {
    let found = failed_matches(console, form).await?;
    if form.get("step").is_some() {
        return step(console, session, form, &found).await;
    }
    let confirmed = form
        .get("confirm")
        .and_then(|c| c.parse::<usize>().ok())
        .is_some_and(|n| n == found.len());
    let frame = console.frame();
    if !confirmed || found.is_empty() {
        let body = html! {
            h1 { "Replay " (found.len()) " failed message(s)?" }
            @if form.get("confirm").is_some() && !found.is_empty() {
                (layout::notice("The matches changed since you asked; here is the new count."))
            }
            p { "Each one goes back to pending and is re-driven through the retry queue, journaled as replayed by " code { (console.operator) } "." }
            @if !found.is_empty() {
                (bulk::confirm_form(
                    "/quarantine/replay",
                    &session.csrf,
                    found.len(),
                    filter_fields(form),
                    &format!("Yes, replay {}", found.len()),
                    &format!("/quarantine?{}", form.without("csrf").without("confirm").encode()),
                ))
                ul { @for m in &found { li { code { (m.source.as_str()) "/" (m.event_id.as_str()) } } } }
            }
        };
        return Ok(Reply::html(
            200,
            layout::page(&frame, "/quarantine", "Confirm replay", body),
        ));
    }
    let retry = console.ctx.retry_queue().await?;
    let report = replay_each(&console.store, &retry, &found, &console.operator, || {}).await;
    let body = html! {
        h1 { "Replayed " (report.replayed) " of " (report.matched) }
        @if report.not_replayed + report.errors > 0 {
            (layout::error_box(&format!("{} not replayed, {} error(s): see each below", report.not_replayed, report.errors)))
        }
        table #replayed {
            thead { tr { th { "event" } th { "outcome" } th { "detail" } } }
            tbody {
                @for i in &report.messages {
                    tr {
                        td { code { (i.message.source) "/" (i.message.event_id) } }
                        td { (i.outcome) }
                        td { (opt(i.detail.as_ref())) }
                    }
                }
            }
        }
        p { a href="/quarantine" { "Back to the quarantine" } }
    };
    Ok(Reply::html(
        200,
        layout::page(&frame, "/quarantine", "Replayed", body),
    ))
}
