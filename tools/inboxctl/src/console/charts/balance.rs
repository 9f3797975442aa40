//! A wallet's balance after each of its last [`BALANCE_CAP`] entries, and now: from the entries
//! the wallet's page reads anyway (no read of its own).

use super::series;
use super::svg::{self, Head, Line, Point};
use super::{figure, BLUE, HOUR, MINUTE};
use crate::commands::wallet::ledger::EntryView;
use maud::{html, Markup};
use wallet_ledger::Currency;

/// The most ledger entries the chart shows (the newest).
pub const BALANCE_CAP: usize = 200;

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
            half: false,
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
