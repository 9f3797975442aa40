//! The console's charts, small SVG drawn on the server ([`svg`]) from figures worked out pure
//! ([`series`]) over bounded reads ([`read`]):
//! - events per minute by status over the last [`EVENT_HOURS`] hours (the Events page, loaded
//!   once with it, never polled: `/events/chart`);
//! - a destination's attempts: success rate, and p50/p99 of their durations, per
//!   [`ATTEMPT_STEP_MIN`] minutes (each section of the Destinations page: `/destination/chart`);
//! - a wallet's balance after each of its last [`BALANCE_CAP`] entries (the wallet's page,
//!   from the entries it reads anyway).
//!
//! Each says what it read and, past its cap, where it stopped; each has its figures as a table
//! under it.

mod read;
mod series;
mod svg;

use read::{DELIVERY_CAP, EVENT_CAP};

use super::http::{Params, Reply};
use super::layout;
use super::Console;
use crate::commands::dest::admin_error;
use crate::commands::wallet::ledger::EntryView;
use crate::error::{usage, Result};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::admin;
use inbox_core::outbox::destination::DestinationId;
use maud::{html, Markup};
use series::{Attempt, Window};
use svg::{Head, Line, Point, Stack};
use wallet_ledger::Currency;

/// The events chart's span, h, in buckets of a minute.
pub const EVENT_HOURS: i64 = 3;
/// A destination's charts' span, h, in buckets of [`ATTEMPT_STEP_MIN`] minutes.
pub const ATTEMPT_HOURS: i64 = 6;
pub const ATTEMPT_STEP_MIN: i64 = 15;
/// The most ledger entries the balance chart shows (the newest).
pub const BALANCE_CAP: usize = 200;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

/// The statuses in the order they are stacked, each with its colour.
const STATUS_COLORS: [(&str, &str); 6] = [
    ("processed", "#2e9d57"),
    ("ignored", "#9aa3b1"),
    ("pending", "#e6b23a"),
    ("processing", "#c98a00"),
    ("retrying", "#e07b24"),
    ("failed", "#c0392b"),
];
const BLUE: &str = "#2857c5";
const PURPLE: &str = "#8a44b8";

/// A chart with its caption and its figures as a table (collapsed).
fn figure(caption: Markup, chart: Markup, table: Markup) -> Markup {
    html! {
        figure.chart {
            (chart)
            figcaption { (caption) }
            details.numbers { summary { "the figures" } (table) }
        }
    }
}

/// `GET /events/chart`: the events chart (`part=1`: the fragment the Events page loads).
pub async fn events(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let now = SystemClock.now_millis();
    let window = Window::last(now, EVENT_HOURS * HOUR, MINUTE);
    let sample = read::events_since(
        &console.store,
        window.start,
        params.get("source"),
        params.get("type"),
        |_| false,
    )
    .await?;
    let by = series::counts_by_status(
        &window,
        sample
            .messages
            .iter()
            .map(|m| (m.received_at, m.status.as_str())),
    );
    let stacks: Vec<Stack<'_>> = STATUS_COLORS
        .iter()
        .filter_map(|(name, color)| {
            by.get(*name).map(|counts| Stack {
                name,
                color,
                counts,
            })
        })
        .collect();
    let title = format!("Events per minute by status, the last {EVENT_HOURS} hours");
    let desc = match sample.cut {
        Some(cut) => format!(
            "{} events read (the cap); older minutes, before {} UTC, were not read",
            sample.messages.len(),
            crate::when::human(cut)
        ),
        None => format!("{} events", sample.messages.len()),
    };
    let head = Head {
        id: "events-chart",
        title: &title,
        desc: &desc,
    };
    let chart = svg::stacked_bars(&head, &window, &stacks, sample.cut);
    let caption = html! {
        (title) " (current status; " (sample.messages.len()) " events"
        @if let Some(cut) = sample.cut {
            ": the newest " (EVENT_CAP) " only, sampled: minutes before " (layout::local_time(cut)) " were not read"
        }
        ", " (sample.requests) " requests)"
    };
    let table = html! {
        table.figures {
            thead { tr { th { "minute (UTC)" } @for s in &stacks { th.num { (s.name) } } } }
            tbody {
                @for i in (0..window.buckets()).rev() {
                    @if stacks.iter().any(|s| s.counts.get(i).is_some_and(|n| *n > 0)) {
                        tr { td { (crate::when::human(window.at(i))) }
                            @for s in &stacks { td.num { (s.counts.get(i).copied().unwrap_or(0)) } } }
                    }
                }
            }
        }
    };
    let block = html! { div #events-chart-block { (figure(caption, chart, table)) } };
    part(console, params, "/events", "Events per minute", block)
}

/// The fragment when the page asked for it (`part=1`), else a whole page.
fn part(
    console: &Console<'_>,
    params: &Params,
    nav: &str,
    title: &str,
    block: Markup,
) -> Result<Reply> {
    if params.get("part").is_some() {
        return Ok(Reply::html(200, block));
    }
    Ok(Reply::html(
        200,
        layout::page(
            &console.frame(),
            nav,
            title,
            html! { h1 { (title) } (block) },
        ),
    ))
}

/// The element a page holds in the chart's place: htmx loads it once (never polled); without
/// JavaScript, a link to it.
pub fn placeholder(id: &str, href: &str, label: &str) -> Markup {
    html! {
        div.chart-slot id=(id) hx-get={ (href) "&part=1" } hx-trigger="load" hx-swap="outerHTML" {
            a href=(href) { (label) }
        }
    }
}

/// `GET /destination/chart?id=…`: a destination's success rate and p50/p99 over time.
pub async fn destination(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let text = params
        .get("id")
        .ok_or_else(|| usage("name a destination: id=…"))?;
    let id = DestinationId::parse(text).map_err(|e| usage(format!("destination {text:?}: {e}")))?;
    let destinations = admin::list(&console.store).await.map_err(admin_error)?;
    let d = destinations
        .iter()
        .find(|d| d.id == id)
        .ok_or_else(|| usage(format!("no destination {text:?}")))?;
    let now = SystemClock.now_millis();
    let window = Window::last(now, ATTEMPT_HOURS * HOUR, ATTEMPT_STEP_MIN * MINUTE);
    let sample = read::events_since(&console.store, window.start, None, None, |got| {
        read::wanted(d, got).0.len() >= DELIVERY_CAP
    })
    .await?;
    let (refs, more) = read::wanted(d, &sample);
    let deliveries = read::deliveries(&console.store, &refs).await?;
    let attempts: Vec<Attempt> = deliveries
        .iter()
        .flat_map(|d| &d.journal)
        .map(|a| Attempt {
            at: a.at,
            ok: a.status.is_some_and(|s| (200..300).contains(&s)),
            duration_ms: a.duration_ms,
        })
        .collect();
    let buckets = series::attempt_buckets(&window, attempts.iter().copied());
    let mid = |i: usize| window.at(i) + window.step / 2;
    let when = |i: usize| crate::when::human(window.at(i));
    let mut rate = Vec::new();
    let (mut p50, mut p99) = (Vec::new(), Vec::new());
    for (i, b) in buckets.iter().enumerate() {
        if let Some(r) = b.success_rate() {
            rate.push(Point {
                at: mid(i),
                value: r * 100.0,
                text: format!(
                    "{} UTC: {:.1}% of {} attempts",
                    when(i),
                    r * 100.0,
                    b.attempts
                ),
            });
        }
        if let (Some(a), Some(b99)) = (b.p50_ms, b.p99_ms) {
            p50.push(Point {
                at: mid(i),
                value: a as f64,
                text: format!("{} UTC: p50 {a} ms", when(i)),
            });
            p99.push(Point {
                at: mid(i),
                value: b99 as f64,
                text: format!("{} UTC: p99 {b99} ms", when(i)),
            });
        }
    }
    let slug = format!("dest-{}", id.as_str());
    let (rate_id, latency_id) = (format!("{slug}-rate"), format!("{slug}-latency"));
    let desc = format!(
        "{} attempts of {} deliveries, the newest {} events it wants",
        attempts.len(),
        deliveries.len(),
        refs.len()
    );
    let x = (window.start, window.end);
    let rate_title = format!(
        "{}: attempts that got a 2xx, % per {ATTEMPT_STEP_MIN} min",
        id.as_str()
    );
    let latency_title = format!(
        "{}: attempt duration p50 and p99, ms per {ATTEMPT_STEP_MIN} min",
        id.as_str()
    );
    let rate_chart = svg::lines(
        &Head {
            id: &rate_id,
            title: &rate_title,
            desc: &desc,
        },
        x,
        &[Line {
            name: "success",
            color: BLUE,
            points: rate,
            step: false,
        }],
        Some(100.0),
        &|v| format!("{}%", svg::number(v)),
    );
    let latency_chart = svg::lines(
        &Head {
            id: &latency_id,
            title: &latency_title,
            desc: &desc,
        },
        x,
        &[
            Line {
                name: "p50",
                color: BLUE,
                points: p50,
                step: false,
            },
            Line {
                name: "p99",
                color: PURPLE,
                points: p99,
                step: false,
            },
        ],
        None,
        &|v| format!("{} ms", svg::number(v)),
    );
    let caption = html! {
        "The last " (ATTEMPT_HOURS) " h: " (desc)
        @if more || sample.cut.is_some() { " (sampled: the newest " (DELIVERY_CAP) " only)" }
        "; each point " (ATTEMPT_STEP_MIN) " minutes. Duration: the request's, to its answer (not the processed→delivered figure above)."
    };
    let table = html! {
        table.figures {
            thead { tr { th { "from (UTC)" } th.num { "attempts" } th.num { "2xx" } th.num { "p50 ms" } th.num { "p99 ms" } } }
            tbody {
                @for (i, b) in buckets.iter().enumerate().rev() {
                    @if b.attempts > 0 {
                        tr { td { (when(i)) } td.num { (b.attempts) } td.num { (b.ok) }
                             td.num { (layout::opt(b.p50_ms)) } td.num { (layout::opt(b.p99_ms)) } }
                    }
                }
            }
        }
    };
    let block = html! {
        div.destination-charts id={ (slug) "-charts" } {
            div.pair { (rate_chart) (latency_chart) }
            (figure(caption, html! {}, table))
        }
    };
    part(
        console,
        params,
        "/destinations",
        "Destination charts",
        block,
    )
}

/// A wallet's balance after each of its last [`BALANCE_CAP`] entries (`entries` newest first,
/// as the page lists them), up to `now` at its balance now. Reads nothing.
pub fn balance(balance_now: i64, entries: &[EntryView], currency: Currency, now: i64) -> Markup {
    let deltas: Vec<(i64, i64)> = entries
        .iter()
        .rev()
        .map(|e| (e.at_ms, e.balance_delta))
        .collect();
    let (after, cut) = series::balance_after(balance_now, &deltas, BALANCE_CAP);
    let money = |v: i64| currency.amount(v).to_string();
    let mut points: Vec<Point> = after
        .iter()
        .map(|&(at, b)| Point {
            at,
            value: b as f64,
            text: format!("{} UTC: {}", crate::when::human(at), money(b)),
        })
        .collect();
    let start = points
        .first()
        .map_or(now - HOUR, |p| p.at)
        .min(now - MINUTE);
    points.push(Point {
        at: now,
        value: balance_now as f64,
        text: format!("now: {}", money(balance_now)),
    });
    let title = "Balance after each entry".to_owned();
    let desc = format!(
        "{} entries{}",
        after.len(),
        if cut { ", the newest only" } else { "" }
    );
    let chart = svg::lines(
        &Head {
            id: "balance-chart",
            title: &title,
            desc: &desc,
        },
        (start, now),
        &[Line {
            name: "balance",
            color: BLUE,
            points,
            step: true,
        }],
        None,
        &|v| money(v as i64),
    );
    let caption = html! {
        (title) " and now (" (after.len()) " entries"
        @if cut { ": the newest " (BALANCE_CAP) " only" }
        "; worked back from the balance now)"
    };
    let table = html! {
        table.figures {
            thead { tr { th { "time (UTC)" } th.num { "balance after" } } }
            tbody { @for (at, b) in after.iter().rev() { tr { td { (crate::when::human(*at)) } td.num { (money(*b)) } } } }
        }
    };
    figure(caption, chart, table)
}
