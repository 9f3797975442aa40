//! A destination's charts: the success rate of its attempts and the p50/p99 of their durations,
//! per [`ATTEMPT_STEP_MIN`] minutes over the last [`ATTEMPT_HOURS`] hours, from its newest
//! [`DELIVERY_CAP`] deliveries read by key ([`super::read`]).

use super::read::{self, DELIVERY_CAP};
use super::series::{self, Attempt, Window};
use super::svg::{self, Head, Line, Point};
use super::{figure, legend, part, BLUE, HOUR, MINUTE, PURPLE};
use crate::commands::dest::admin_error;
use crate::console::http::{Params, Reply};
use crate::console::layout;
use crate::console::Console;
use crate::error::{usage, Result};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::admin;
use inbox_core::outbox::destination::DestinationId;
use maud::html;

/// The charts' span, h, in buckets of [`ATTEMPT_STEP_MIN`] minutes.
pub const ATTEMPT_HOURS: i64 = 6;
pub const ATTEMPT_STEP_MIN: i64 = 15;

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
            half: true,
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
            half: true,
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
        (legend(&[("2xx %", BLUE), ("p50", BLUE), ("p99", PURPLE)]))
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
