//! The Destinations page: each destination's state, circuit, rate, parked backlog, and the
//! figures of its last deliveries (by status, success rate, p50/p99, oldest pending: `inboxctl
//! stats`' figures over a bounded sample, [`figures`], never a scan), and its actions:
//! pause and resume (`inboxctl dest pause|resume`), retry its failed deliveries (`inboxctl
//! deliveries retry --status failed --destination ID`), confirmed when there is more than one,
//! in steps with a progress bar as the Quarantine page's bulk replay ([`super::bulk`]): each of
//! those the confirmation named (its snapshot) retried once, asked again when they changed.
//! Secrets are never shown, not even their number.

use super::bulk::{self, Claim, Step};
use super::charts::figures::{self, Figures, ATTEMPT_HOURS, DELIVERY_CAP};
use super::http::{query, Params, Reply};
use super::layout::{self, badge, csrf, opt, time};
use super::{Console, Session};
use crate::commands::deliveries::{queue, retry_each, select};
use crate::commands::dest::{admin_error, patterns_text, pause_destination, resume_destination};
use crate::error::{usage, Result};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::admin;
use inbox_core::outbox::delivery::{DeliveryRef, DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::DestinationId;
use maud::{html, Markup};
use std::time::Instant;

/// How many of a destination's journal entries the page shows (the newest).
const JOURNAL_SHOWN: usize = 10;

fn done_text(code: &str) -> Option<&'static str> {
    match code {
        "paused" => Some("Paused: its deliveries wait."),
        "resumed" => Some("Resumed: its parked deliveries are sent again."),
        _ => None,
    }
}

fn id_of(form: &Params) -> Result<DestinationId> {
    let id = form
        .get("id")
        .ok_or_else(|| usage("name a destination: id=…"))?;
    DestinationId::parse(id).map_err(|e| usage(format!("destination {id:?}: {e}")))
}

pub async fn page(console: &Console<'_>, session: &Session, params: &Params) -> Result<Reply> {
    let destinations = admin::list(&console.store).await.map_err(admin_error)?;
    let now = SystemClock.now_millis();
    let figures = figures::figures(&console.store, &destinations, now).await?;
    let mut journals = std::collections::BTreeMap::new();
    for d in &destinations {
        let mut journal = admin::journal(&console.store, &d.id)
            .await
            .map_err(admin_error)?;
        journal.reverse();
        journal.truncate(JOURNAL_SHOWN);
        journals.insert(d.id.as_str().to_owned(), journal);
    }
    let body = html! {
        @if let Some(text) = params.get("done").and_then(done_text) { (layout::notice(text)) }
        h1 { "Destinations" }
        @if figures.is_empty() { p.none { "No destinations (inboxctl dest add ID --url https://… --pattern '*')." } }
        @for f in &figures {
            @let s = &f.recent;
            @let d = destinations.iter().find(|d| d.id.as_str() == s.id);
            section.destination data-destination=(s.id) {
                h2 { code { (s.id) } " " (badge(&s.state)) " circuit " (badge(f.circuit.as_str())) }
                dl.fields {
                    @if let Some(d) = d {
                        dt { "url" } dd { code { (d.url) } }
                        dt { "events" } dd { code { (patterns_text(d)) } }
                        dt { "rate" } dd { (d.rate_per_sec) "/s, burst " (d.burst) ", " (d.max_in_flight) " in flight per worker" }
                        @if let Some(r) = &d.reason { dt { "reason" } dd { (r) } }
                    }
                    dt { "parked" } dd.parked { (f.backlog)
                        @if let Some(t) = f.backlog.oldest { ", the oldest " (time(t)) " UTC" } }
                    (recent(f))
                }
                @if d.is_some() {
                    (super::charts::placeholder(&format!("dest-{}-charts", s.id), &format!("/destination/chart?{}", query(&[("id", s.id.as_str())])), "Success rate and latency (charts)"))
                }
                @if let Some(journal) = journals.get(&s.id).filter(|j| !j.is_empty()) {
                    details.journal {
                        summary { "Journal (the last " (journal.len()) " changes)" }
                        table {
                            thead { tr { th { "at (UTC)" } th { "who" } th { "action" } th { "detail" } } }
                            tbody {
                                @for e in journal {
                                    tr { td { (time(e.at)) } td { (e.actor) } td { (e.action) } td { (e.detail) } }
                                }
                            }
                        }
                    }
                }
                @if d.is_some() {
                    div.actions {
                        @if s.state == "active" {
                            form.inline method="post" action="/destination/pause" {
                                (csrf(&session.csrf))
                                input type="hidden" name="id" value=(s.id);
                                input name="reason" placeholder="why (journaled)";
                                button type="submit" data-action="pause" { "Pause" }
                            }
                        } @else {
                            form.inline method="post" action="/destination/resume" {
                                (csrf(&session.csrf))
                                input type="hidden" name="id" value=(s.id);
                                button type="submit" data-action="resume" { "Resume" }
                            }
                        }
                        form.inline method="post" action="/destination/retry" {
                            (csrf(&session.csrf))
                            input type="hidden" name="id" value=(s.id);
                            button type="submit" data-action="retry" { "Retry its failed deliveries…" }
                        }
                    }
                }
            }
        }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/destinations", "Destinations", body),
    ))
}

/// The figures of a destination's last deliveries ([`figures`]), named as what they are: the
/// last N, not all of them (`inboxctl stats` reads all).
fn recent(f: &Figures) -> Markup {
    let s = &f.recent;
    let count = |k: &str| s.by_status.get(k).copied().unwrap_or(0);
    html! {
        dt { "last " (s.deliveries) " deliveries" } dd.recent {
            (count("delivered")) " delivered, " (count("failed")) " failed, "
            (count("pending") + count("retrying") + count("delivering")) " pending"
            span.none { " (of the newest events it wants in the last " (ATTEMPT_HOURS) " h, at most " (DELIVERY_CAP)
                @if f.more { "; older ones not read" } ")" }
        }
        dt { "success rate" } dd { (opt(s.success_rate.map(|r| format!("{:.1}% of their {} attempts", r * 100.0, s.attempts)))) }
        dt { "p50 / p99" } dd { (opt(s.latency_p50_ms.map(|v| format!("{v} ms")))) " / " (opt(s.latency_p99_ms.map(|v| format!("{v} ms")))) " processed → delivered" }
        dt { "oldest pending" } dd { (opt(s.oldest_pending_age_secs.map(|a| format!("{} ago (of those)", when::age(a.saturating_mul(1000)))))) }
    }
}

fn back(code: &str) -> Reply {
    Reply::redirect(format!("/destinations?{}", query(&[("done", code)])))
}

/// `POST /destination/pause`.
pub async fn pause(console: &Console<'_>, form: &Params) -> Result<Reply> {
    let id = id_of(form)?;
    pause_destination(
        &console.store,
        &id,
        &console.operator,
        form.get("reason").map(str::to_owned),
    )
    .await?;
    Ok(back("paused"))
}

/// `POST /destination/resume`.
pub async fn resume(console: &Console<'_>, form: &Params) -> Result<Reply> {
    let id = id_of(form)?;
    let queue = queue(console.ctx).await;
    resume_destination(&console.store, queue.as_ref(), &id, &console.operator).await?;
    Ok(back("resumed"))
}

/// The confirmation of a bulk retry of `failed` (its snapshot held), `again` saying why it is
/// asked again when it is: the `#progress` block ([`bulk::confirm`]).
fn confirmation(
    console: &Console<'_>,
    session: &Session,
    id: &DestinationId,
    failed: &[DeliveryRef],
    again: Option<&str>,
) -> Markup {
    let snapshot = if failed.is_empty() {
        String::new()
    } else {
        console.retries.hold(failed.to_vec(), Instant::now())
    };
    bulk::confirm(&bulk::Confirm {
        action: "/destination/retry",
        csrf: &session.csrf,
        snapshot: &snapshot,
        total: failed.len(),
        question: format!(
            "Retry {} failed deliveries to {}?",
            failed.len(),
            id.as_str()
        ),
        again,
        explain: html! {
            p { "Each is sent again (journaled as retried by " code { (console.operator) } "), each once: those listed here, whatever fails meanwhile." }
        },
        fields: html! { input type="hidden" name="id" value=(id.as_str()); },
        label: format!("Yes, retry {}", failed.len()),
        cancel: "/destinations".into(),
        list: html! { ul { @for r in failed { li { code { (r) } } } } },
    })
}

/// Retries `targets` (a claimed part of a snapshot, or the one failed delivery), each once.
async fn retry_targets(
    console: &Console<'_>,
    targets: &[DeliveryRef],
) -> Result<(Vec<(String, String)>, bool)> {
    let queue = queue(console.ctx).await;
    let results = retry_each(
        &console.store,
        queue.as_ref(),
        targets,
        &console.operator,
        false,
        SystemClock.now_millis(),
        || {},
    )
    .await?;
    Ok((results, queue.is_some()))
}

/// One step of a confirmed bulk retry ([`bulk`]): the snapshot's next failed deliveries.
async fn step(
    console: &Console<'_>,
    session: &Session,
    form: &Params,
    id: &DestinationId,
    targets: &[DeliveryRef],
    total: usize,
    more: bool,
) -> Result<Reply> {
    let at = Step::read(form, total);
    let (results, _) = retry_targets(console, targets).await?;
    let ok = results.iter().filter(|(_, o)| o == RETRIED).count();
    let step = at.after(targets.len(), ok);
    let progress = bulk::Progress {
        action: "/destination/retry",
        verb: "Retried",
        csrf: &session.csrf,
        snapshot: form.get("snapshot").unwrap_or(""),
        step,
        more,
        problems: results
            .iter()
            .filter(|(_, o)| o != RETRIED)
            .map(|(r, o)| format!("{r}: {o}"))
            .collect(),
        carry: vec![("id", id.as_str().to_owned())],
        back: ("/destinations", "Back to the destinations"),
    };
    Ok(Reply::html(200, bulk::progress(&progress)))
}

/// A retry's outcome when it went back to pending (`outcome_text` of `Retried`).
const RETRIED: &str = "retried";

/// Why a bulk retry's confirmation is asked again.
const CHANGED: &str = "The failed deliveries changed since you confirmed: nothing was retried. Here is the new count; confirm again.";

/// `POST /destination/retry`: the destination's failed deliveries, retried (one at once; more
/// after a confirmation naming their count, each of those it named once, in steps with progress
/// ([`bulk`]); asked again, naming the new count, when they changed before the click).
pub async fn retry(console: &Console<'_>, session: &Session, form: &Params) -> Result<Reply> {
    let id = id_of(form)?;
    let failed: Vec<DeliveryRef> = select(
        &console.store,
        Some(&id),
        Some(DeliveryStatus::Failed),
        None,
        None,
        None,
    )
    .await?
    .iter()
    .map(OutboundDelivery::reference)
    .collect();
    let stepped = form.get("step").is_some();
    let asked = form.get("snapshot").is_some() || form.get("confirm").is_some();
    let targets = if asked {
        let take = if stepped { bulk::STEP } else { usize::MAX };
        match console
            .retries
            .claim(form.get("snapshot"), &failed, take, Instant::now())
        {
            Claim::Batch {
                items, total, rest, ..
            } => {
                if stepped {
                    return step(console, session, form, &id, &items, total, rest > 0).await;
                }
                items
            }
            claim => {
                let again = match claim {
                    Claim::Changed => CHANGED,
                    _ => bulk::NOT_HELD,
                };
                let block = confirmation(console, session, &id, &failed, Some(again));
                if stepped {
                    return Ok(Reply::html(200, block));
                }
                return Ok(Reply::html(
                    200,
                    layout::page(&console.frame(), "/destinations", "Confirm retry", block),
                ));
            }
        }
    } else if failed.len() <= 1 {
        failed
    } else {
        let block = confirmation(console, session, &id, &failed, None);
        return Ok(Reply::html(
            200,
            layout::page(&console.frame(), "/destinations", "Confirm retry", block),
        ));
    };
    let (results, queued) = retry_targets(console, &targets).await?;
    let body = html! {
        h1 { "Retried " (results.len()) " deliveries to " code { (id.as_str()) } }
        table {
            thead { tr { th { "delivery" } th { "outcome" } } }
            tbody { @for (r, o) in &results { tr { td { code { (r) } } td { (o) } } } }
        }
        @if !queued { p.none { "No delivery queue configured: the deliver function's sweep sends them within a minute." } }
        p { a href="/destinations" { "Back to the destinations" } }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/destinations", "Retried", body),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::outbox::breaker::CircuitState;
    use inbox_core::outbox::parking::Backlog;

    #[test]
    fn the_figures_say_they_are_the_last_deliveries_read() {
        let f = Figures {
            backlog: Backlog {
                parked: 1_000,
                more: true,
                oldest: None,
            },
            circuit: CircuitState::Closed,
            recent: crate::commands::stats::outbox::DestinationStats {
                id: "crm".into(),
                state: "active".into(),
                deliveries: 3,
                by_status: [("delivered".to_owned(), 2), ("failed".to_owned(), 1)].into(),
                attempts: 4,
                successful_attempts: 2,
                success_rate: Some(0.5),
                oldest_pending_age_secs: None,
                circuit: CircuitState::Closed,
                latency_p50_ms: Some(12),
                latency_p99_ms: Some(40),
            },
            more: true,
        };
        let html = recent(&f).into_string();
        assert!(html.contains("last 3 deliveries"), "{html}");
        assert!(html.contains("2 delivered, 1 failed, 0 pending"), "{html}");
        assert!(html.contains("at most 100; older ones not read"), "{html}");
        assert!(html.contains("50.0% of their 4 attempts"), "{html}");
        assert_eq!(f.backlog.to_string(), "1000 or more parked");
    }
}
