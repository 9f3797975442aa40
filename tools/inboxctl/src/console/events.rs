//! The Events page: one page of the events index (`EventIndex::page`: newest first, never a
//! scan), filtered by the query string (`source`, `type`, `since`, `until` in `inboxctl list`'s
//! forms, and `q`: part of an event id, or a provider id; `status` on the page's rows), with a
//! cursor to the older and the newer page (`before`, `after`: `cursor.rs`), the counts by
//! status of the page's rows, the index's size as DynamoDB last counted it, and the live part
//! htmx polls (`/events/rows`, the same page read again).

use super::http::{query, Params, Reply};
use super::layout::{self, badge, local_time, opt};
use super::{cursor, Console};
use crate::commands::stats::{tally, ALL_STATUSES};
use crate::error::{usage, Result};
use crate::output::truncate;
use crate::when::When;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::StoredMessage;
use inbox_core::store::events::MAX_ROWS;
use inbox_core::store::{EventIndex as _, EventPage, EventQuery, ListFilter};
use maud::{html, Markup};
use std::collections::BTreeMap;

/// Rows on a page unless the query string asks for another number (`rows`, up to [`MAX_ROWS`]).
pub const ROWS: usize = 50;

/// How often an open Events page asks for its page again, s (each ask reads that page again:
/// a query per index partition and the rows shown, never the table).
pub const POLL_SECS: u32 = 10;

/// A status by its stored name.
pub fn status_named(name: &str) -> Result<Status> {
    ALL_STATUSES
        .iter()
        .copied()
        .find(|s| s.as_str() == name)
        .ok_or_else(|| {
            usage(format!(
                "status {name:?}: one of pending, processing, retrying, processed, ignored, failed"
            ))
        })
}

/// The filter of the query string, without its status (the counts are by status).
pub fn list_filter(params: &Params, now: i64) -> Result<ListFilter> {
    let when = |name: &str| -> Result<Option<i64>> {
        params
            .get(name)
            .map(|v| {
                v.parse::<When>()
                    .map(|w| w.resolve(now))
                    .map_err(|e| usage(format!("{name}: {e}")))
            })
            .transpose()
    };
    Ok(ListFilter {
        status: None,
        source: params.get("source").map(str::to_owned),
        event_type: params.get("type").map(str::to_owned),
        since: when("since")?,
        until: when("until")?,
    })
}

/// Whether `m` is what `q` searches: its event id contains it, or its provider id is it.
pub fn searched(m: &StoredMessage, q: Option<&str>) -> bool {
    q.is_none_or(|q| m.event_id.as_str().contains(q) || m.provider_id.as_deref() == Some(q))
}

/// What the Events page shows: one page of the events index (the filters of the index walk
/// applied), its rows of the status asked for, and the counts by status of its rows.
pub struct Listing {
    pub page: EventPage,
    /// The page's rows of the status asked for (all of them without one), newest first.
    pub messages: Vec<StoredMessage>,
    /// The page's rows by status (whatever the status asked for).
    pub counts: BTreeMap<String, usize>,
}

/// How many rows a page shows: `rows` in the query string (1 to 100), else [`ROWS`].
pub fn rows_asked(params: &Params) -> Result<usize> {
    match params.get("rows") {
        None => Ok(ROWS),
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_ROWS).contains(n))
            .ok_or_else(|| usage(format!("rows {v:?}: a number from 1 to {MAX_ROWS}"))),
    }
}

/// The index query of `params` (its filters, its cursor, its size).
pub fn event_query(params: &Params, now: i64) -> Result<EventQuery> {
    let filter = list_filter(params, now)?;
    Ok(EventQuery {
        source: filter.source,
        event_type: filter.event_type,
        search: params.get("q").map(str::to_owned),
        since: filter.since,
        until: filter.until,
        from: cursor::from_params(params)?,
        rows: rows_asked(params)?,
    })
}

/// One page of the index by `params` (one bounded query per index partition, one read of the
/// rows shown).
pub async fn listing(console: &Console<'_>, params: &Params) -> Result<Listing> {
    let now = SystemClock.now_millis();
    let query = event_query(params, now)?;
    let status = params.get("status").map(status_named).transpose()?;
    let page = console.store.page(&query).await?;
    let counts = tally(&page.messages, now).by_status;
    let messages = page
        .messages
        .iter()
        .filter(|m| status.is_none_or(|s| m.status == s))
        .cloned()
        .collect();
    Ok(Listing {
        page,
        messages,
        counts,
    })
}

/// The link to one event's page.
pub fn event_link(m: &StoredMessage) -> String {
    event_href(m.source.as_str(), m.event_id.as_str())
}

/// The link to the page of event `source`/`id`.
pub fn event_href(source: &str, id: &str) -> String {
    format!("/event?{}", query(&[("source", source), ("id", id)]))
}

pub async fn page(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let listing = listing(console, params).await?;
    let estimate = console.store.estimate().await?;
    let value = |name: &str| params.get(name).unwrap_or("").to_owned();
    let status = value("status");
    let body = html! {
        h1 { "Events" }
        form.filters method="get" action="/events" {
            label { "source" input name="source" value=(value("source")) placeholder="stripe"; }
            label { "type" input name="type" value=(value("type")) placeholder="invoice.paid"; }
            label { "status"
                select name="status" {
                    option value="" { "any" }
                    @for s in ALL_STATUSES {
                        option value=(s.as_str()) selected[status == s.as_str()] { (s.as_str()) }
                    }
                }
            }
            label { "since" input name="since" value=(value("since")) placeholder="2h, 2026-11-30"; }
            label { "until" input name="until" value=(value("until")) placeholder="RFC 3339 or age"; }
            label { "event or provider id" input #search name="q" value=(value("q")) placeholder="evt_… (press /)"; }
            @if let Some(rows) = params.get("rows") { input type="hidden" name="rows" value=(rows); }
            button type="submit" { "Filter" }
            a href="/events" { "clear" }
        }
        @if let Some(n) = estimate {
            p.estimate { "About " (n) " events in the table (DynamoDB's count, refreshed about every six hours; no page reads them all)." }
        }
        (super::charts::placeholder("events-chart-block", &chart_href(params), "Events per minute (chart)"))
        p { (layout::live_toggle()) }
        (live(params, &listing))
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/events", "Events", body),
    ))
}

/// The events chart of the page's source and type (loaded once with the page, never polled).
fn chart_href(params: &Params) -> String {
    let kept: Vec<(&str, &str)> = ["source", "type"]
        .into_iter()
        .filter_map(|k| params.get(k).map(|v| (k, v)))
        .collect();
    format!("/events/chart?{}", query(&kept))
}

/// The polled fragment: the same element, so polling goes on.
pub async fn rows(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let listing = listing(console, params).await?;
    Ok(Reply::html(200, live(params, &listing)))
}

/// The link to the page beside this one: `dir` is `before` (older) or `after` (newer).
fn page_link(params: &Params, dir: &str, place: &inbox_core::store::events::Position) -> String {
    let p = params.without("before").without("after");
    format!(
        "/events?{}",
        p.with(dir, &cursor::encode(&p, place)).encode()
    )
}

/// The counts, the table and the links to the pages beside, replaced by htmx every
/// [`POLL_SECS`].
fn live(params: &Params, listing: &Listing) -> Markup {
    let poll = format!("/events/rows?{}", params.encode());
    let first = params.without("before").without("after");
    let page = &listing.page;
    html! {
        div #live data-poll hx-get=(poll) hx-trigger={ "every " (POLL_SECS) "s" } hx-swap="outerHTML" {
            div.counts title="by status, of this page's events" {
                "this page: "
                @for (status, n) in &listing.counts {
                    a href={ "/events?" (first.with("status", status).encode()) } {
                        (badge(status)) " " span.count data-status=(status) { (n) }
                    }
                }
            }
            @if listing.messages.is_empty() {
                p.none {
                    @if page.messages.is_empty() { "No events match." }
                    @else { "None of this page's " (page.messages.len()) " events has that status." }
                }
            } @else {
                table #events {
                    thead { tr {
                        th { "received" } th { "source" } th { "event id" } th { "type" }
                        th { "status" } th.num { "attempts" } th { "last error" }
                    } }
                    tbody {
                        @for m in &listing.messages {
                            tr data-event=(m.event_id.as_str()) {
                                td { (local_time(m.received_at)) }
                                td { (m.source.as_str()) }
                                td { a href=(event_link(m)) { code { (m.event_id.as_str()) } } }
                                td { (opt(m.event_type.as_ref())) }
                                td { (badge(m.status.as_str())) }
                                td.num { (m.attempts) }
                                td { (opt(m.last_error.as_deref().map(|e| truncate(e, 80)))) }
                            }
                        }
                    }
                }
            }
            nav.pages {
                @if let Some(newer) = &page.newer {
                    a rel="prev" href=(page_link(params, "after", newer)) { "← newer" }
                    " "
                    a href={ "/events?" (first.encode()) } { "newest" }
                }
                @if let Some(older) = &page.older {
                    " "
                    a rel="next" href=(page_link(params, "before", older)) { "older →" }
                }
            }
            p.live { "updates every " (POLL_SECS) " s while open" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_string_is_the_filter() {
        let now = 1_796_032_800_000;
        let p = Params::parse(
            "source=stripe&type=invoice.paid&since=2h&until=2026-11-30T10%3A00%3A00Z",
        );
        let f = list_filter(&p, now).unwrap();
        assert_eq!(f.source.as_deref(), Some("stripe"));
        assert_eq!(f.event_type.as_deref(), Some("invoice.paid"));
        assert_eq!(f.since, Some(now - 2 * 3_600_000));
        assert_eq!(f.until, Some(now));
        assert!(list_filter(&Params::parse("since=yesterday-ish"), now).is_err());
        assert_eq!(status_named("failed").unwrap(), Status::Failed);
        assert!(status_named("broken").is_err());
    }
}
