//! The console's charts, small SVG drawn on the server ([`svg`]) from figures worked out pure
//! ([`series`]) over bounded reads ([`read`]):
//! - events per minute by status over the last [`EVENT_HOURS`] hours (the Events page, loaded
//!   once with it, never polled: `/events/chart`);
//! - a destination's attempts: success rate, and p50/p99 of their durations, per
//!   quarter-hour over the last 6 hours ([`destination`]; each section of the Destinations page:
//!   `/destination/chart`);
//! - a wallet's balance after each of its last entries ([`balance`]; the wallet's page, from the
//!   entries it reads anyway).
//!
//! Each says what it read and, past its cap, where it stopped; each has its figures as a table
//! under it.

mod balance;
mod destination;
pub(super) mod figures;
pub(super) mod read;
mod series;
mod svg;

pub use balance::balance;
pub use destination::destination;

use read::EVENT_CAP;

use super::http::{Params, Reply};
use super::layout;
use super::Console;
use crate::error::Result;
use inbox_core::clock::{Clock as _, SystemClock};
use maud::{html, Markup};
use series::Window;
use svg::{Head, Stack};

/// The events chart's span, h, in buckets of a minute.
pub const EVENT_HOURS: i64 = 3;

pub(super) const MINUTE: i64 = 60_000;
pub(super) const HOUR: i64 = 3_600_000;

/// The statuses in the order they are stacked, each with its colour.
const STATUS_COLORS: [(&str, &str); 6] = [
    ("processed", "#2e9d57"),
    ("ignored", "#9aa3b1"),
    ("pending", "#e6b23a"),
    ("processing", "#c98a00"),
    ("retrying", "#e07b24"),
    ("failed", "#c0392b"),
];
pub(super) const BLUE: &str = "#2857c5";
pub(super) const PURPLE: &str = "#8a44b8";

/// The colours of a chart's series, named (part of its caption).
pub(super) fn legend(items: &[(&str, &str)]) -> Markup {
    html! {
        span.legend {
            @for (name, color) in items {
                " "
                svg width="10" height="10" viewBox="0 0 10 10" aria-hidden="true" { rect width="10" height="10" fill=(color) {} }
                " " (name)
            }
        }
    }
}

/// A chart with its caption and its figures as a table (collapsed).
pub(super) fn figure(caption: Markup, chart: Markup, table: Markup) -> Markup {
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
        half: false,
    };
    let chart = svg::stacked_bars(&head, &window, &stacks, sample.cut);
    let caption = html! {
        (title) " (current status; " (sample.messages.len()) " events"
        @if let Some(cut) = sample.cut {
            ": the newest " (EVENT_CAP) " only, sampled: minutes before " (layout::local_time(cut)) " were not read"
        }
        ", " (sample.requests) " requests, " (format!("{:.1}", sample.read_units)) " read units)"
        (legend(&stacks.iter().map(|s| (s.name, s.color)).collect::<Vec<_>>()))
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
