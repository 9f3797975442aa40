//! The Quarantine page: the failed messages (`inboxctl list --status failed` with the Events
//! page's filters), each with why it failed; replay one (the event's own replay), or every match
//! of the filter (`inboxctl replay --status failed … --yes`: the same [`replay_each`]), after a
//! confirmation page naming the count, in steps with a progress bar ([`bulk`]): each of the
//! messages that page named (its snapshot) replayed once, whatever fails meanwhile. If the
//! matches changed by the time it is confirmed, nothing is replayed and the confirmation is
//! asked again with the new count.
//!
//! It reads the failed messages' open-index partitions (`FAILED#0..15`: one `Query` each, newest
//! first) and the items of the newest [`SHOWN`], no scan; a bulk replay reads every entry.

use super::bulk::{self, Claim, Step};
use super::events::{event_link, list_filter, searched};
use super::http::{Params, Reply};
use super::layout::{self, csrf, local_time, local_time_ago, opt};
use super::{Console, Session};
use crate::commands::replay::replay_each;
use crate::commands::stats::queue_depth;
use crate::error::Result;
use crate::output::truncate;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::StoredMessage;
use inbox_core::store::{ListFilter, MessageStore as _};
use maud::{html, Markup};
use std::time::Instant;

/// The filter fields the page keeps in its query string and forms.
const FIELDS: [&str; 5] = ["source", "type", "since", "until", "q"];

/// How many failed messages the page reads at most, newest first; past them, "more…" (a bulk
/// replay reads them all).
const SHOWN: usize = 200;

/// The failed messages the filter matches among the newest `limit` failed ones, newest first,
/// each with when it failed; and whether there were more failed ones than `limit`. Read from
/// the failed messages' open-index partitions (`FAILED#0..15`, one `Query` each) and each
/// message's item without its body: no scan.
struct Failed {
    found: Vec<(StoredMessage, i64)>,
    more: bool,
}

async fn failed_matches(console: &Console<'_>, params: &Params, limit: usize) -> Result<Failed> {
    let filter = ListFilter {
        status: Some(Status::Failed),
        ..list_filter(params, SystemClock.now_millis())?
    };
    let page = console.store.failed_newest(limit).await?;
    let mut found = Vec::new();
    for entry in page.entries {
        if let Some(m) = console.store.get_head(&entry.key).await? {
            if filter.matches(&m) && searched(&m, params.get("q")) {
                found.push((m, entry.failed_at));
            }
        }
    }
    Ok(Failed {
        found,
        more: page.more,
    })
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
    let Failed { found, more } = failed_matches(console, params, SHOWN).await?;
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
        @if found.is_empty() && !more {
            p.none { "No failed messages match." }
        } @else {
            form.actions method="post" action="/quarantine/replay" {
                (csrf(&session.csrf))
                (filter_fields(params))
                @if more {
                    button.danger type="submit" #replay-all { "Replay all matching…" }
                } @else {
                    button.danger type="submit" #replay-all { "Replay all " (found.len()) " matching…" }
                }
            }
            table #quarantine {
                thead { tr { th { "failed" } th { "received" } th { "event" } th { "type" } th.num { "attempts" } th { "why" } th {} } }
                tbody {
                    @for (m, failed_at) in &found {
                        tr data-event=(m.event_id.as_str()) {
                            td { (local_time_ago(*failed_at)) }
                            td { (local_time(m.received_at)) }
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
            @if more {
                p #more { "more… Only the newest " (SHOWN) " failed messages are read here (the filter applies to them); " code { "inboxctl list --status failed" } " lists them all, and a replay of all matching replays every failed message that matches." }
            }
        }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/quarantine", "Quarantine", body),
    ))
}

/// The confirmation of a bulk replay of `found` (its snapshot held), `again` saying why it is
/// asked again when it is: the `#progress` block ([`bulk::confirm`]).
fn confirmation(
    console: &Console<'_>,
    session: &Session,
    form: &Params,
    found: &[StoredMessage],
    again: Option<&str>,
) -> Markup {
    let snapshot = if found.is_empty() {
        String::new()
    } else {
        let keys = found.iter().map(StoredMessage::key).collect();
        console.replays.hold(keys, Instant::now())
    };
    bulk::confirm(&bulk::Confirm {
        action: "/quarantine/replay",
        csrf: &session.csrf,
        snapshot: &snapshot,
        total: found.len(),
        question: format!("Replay {} failed message(s)?", found.len()),
        again,
        explain: html! {
            p { "Each one goes back to pending and is re-driven through the retry queue, journaled as replayed by " code { (console.operator) } ", each once: those listed here, whatever fails meanwhile." }
        },
        fields: filter_fields(form),
        label: format!("Yes, replay {}", found.len()),
        cancel: format!(
            "/quarantine?{}",
            form.without("csrf")
                .without("confirm")
                .without("snapshot")
                .without("step")
                .without("done")
                .without("problems")
                .encode()
        ),
        list: html! {
            ul { @for m in found { li { code { (m.source.as_str()) "/" (m.event_id.as_str()) } } } }
        },
    })
}

/// The messages of `keys` as they are now (those gone listed as problems).
async fn current(
    console: &Console<'_>,
    keys: &[MessageKey],
) -> Result<(Vec<StoredMessage>, Vec<String>)> {
    let (mut found, mut gone) = (Vec::new(), Vec::new());
    for k in keys {
        match console.store.get(k).await? {
            Some(m) => found.push(m),
            None => gone.push(format!("{}/{}: gone", k.source, k.event_id)),
        }
    }
    Ok((found, gone))
}

/// One step of a confirmed bulk replay ([`bulk`]): the snapshot's next ids (`batch`), replayed.
async fn step(
    console: &Console<'_>,
    session: &Session,
    form: &Params,
    batch: &[MessageKey],
    total: usize,
    more: bool,
) -> Result<Reply> {
    let at = Step::read(form, total);
    let (messages, mut problems) = current(console, batch).await?;
    let retry = console.ctx.retry_queue().await?;
    let report = replay_each(&console.store, &retry, &messages, &console.operator, || {}).await;
    let step = at.after(batch.len(), report.replayed);
    problems.extend(
        report
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
            }),
    );
    let progress = bulk::Progress {
        action: "/quarantine/replay",
        verb: "Replayed",
        csrf: &session.csrf,
        snapshot: form.get("snapshot").unwrap_or(""),
        step,
        more,
        problems,
        carry: FIELDS
            .iter()
            .filter_map(|f| form.get(f).map(|v| (*f, v.to_owned())))
            .collect(),
        back: ("/quarantine", "Back to the quarantine"),
    };
    Ok(Reply::html(200, bulk::progress(&progress)))
}

/// `POST /quarantine/replay`: without a held snapshot that still is every match, the
/// confirmation (again, naming the new count, when it changed); with one, its messages replayed
/// (each once): with `step`, the next [`bulk::STEP`] of them and the progress; without, all of
/// them and each outcome listed.
pub async fn replay_all(console: &Console<'_>, session: &Session, form: &Params) -> Result<Reply> {
    let found: Vec<StoredMessage> = failed_matches(console, form, usize::MAX)
        .await?
        .found
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    let stepped = form.get("step").is_some();
    let asked = form.get("snapshot").is_some() || form.get("confirm").is_some();
    let claim = if asked {
        let keys: Vec<MessageKey> = found.iter().map(StoredMessage::key).collect();
        let take = if stepped { bulk::STEP } else { usize::MAX };
        console
            .replays
            .claim(form.get("snapshot"), &keys, take, Instant::now())
    } else {
        Claim::Gone
    };
    let (batch, total, rest) = match claim {
        Claim::Batch {
            items, total, rest, ..
        } => (items, total, rest),
        Claim::Changed | Claim::Gone => {
            let again = match (asked, &claim) {
                (false, _) => None,
                (true, Claim::Changed) => Some(CHANGED),
                (true, _) => Some(bulk::NOT_HELD),
            };
            let block = confirmation(console, session, form, &found, again);
            if stepped {
                return Ok(Reply::html(200, block));
            }
            return Ok(Reply::html(
                200,
                layout::page(&console.frame(), "/quarantine", "Confirm replay", block),
            ));
        }
    };
    if stepped {
        return step(console, session, form, &batch, total, rest > 0).await;
    }
    let (messages, gone) = current(console, &batch).await?;
    let retry = console.ctx.retry_queue().await?;
    let report = replay_each(&console.store, &retry, &messages, &console.operator, || {}).await;
    let body = html! {
        h1 { "Replayed " (report.replayed) " of " (batch.len()) }
        @if report.not_replayed + report.errors + gone.len() > 0 {
            (layout::error_box(&format!("{} not replayed, {} error(s), {} gone: see each below", report.not_replayed, report.errors, gone.len())))
        }
        @for g in &gone { (layout::error_box(g)) }
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
        layout::page(&console.frame(), "/quarantine", "Replayed", body),
    ))
}

/// Why a bulk replay's confirmation is asked again.
const CHANGED: &str = "The failed messages changed since you confirmed: nothing was replayed. Here is the new count; confirm again.";
