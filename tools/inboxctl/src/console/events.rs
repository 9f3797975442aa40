//! The Events page: the messages the store lists (`MessageStore::list`, as `inboxctl list`),
//! newest first, filtered by the query string (`source`, `type`, `status`, `since`, `until` in
//! `inboxctl list`'s forms, and `q`: an event id, part of one, or a provider id), the counts by
//! status of what the other filters match, and the live part htmx polls (`/events/rows`).

use super::http::{query, Params, Reply};
use super::layout::{self, badge, opt, time};
use super::Console;
use crate::commands::stats::{tally, ALL_STATUSES};
use crate::error::{usage, Result};
use crate::output::truncate;
use crate::when::When;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::StoredMessage;
use inbox_core::store::{ListFilter, MessageStore as _};
use maud::{html, Markup};
use std::collections::BTreeMap;

/// At most this many rows are shown (the counts cover every match).
pub const SHOWN: usize = 200;

/// How often an open Events page asks for new rows, s (each ask lists the table again).
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

/// What the Events page shows: the counts by status of every match, and the matches of the
/// status asked for, newest first.
pub struct Listing {
    pub counts: BTreeMap<String, usize>,
    pub messages: Vec<StoredMessage>,
    /// Matches beyond [`SHOWN`].
    pub more: usize,
}

/// Lists the table by `params` (one `list` of the store).
pub async fn listing(console: &Console<'_>, params: &Params) -> Result<Listing> {
    let now = SystemClock.now_millis();
    let filter = list_filter(params, now)?;
    let status = params.get("status").map(status_named).transpose()?;
    let q = params.get("q");
    let mut all = console.store.list(&filter, usize::MAX).await?;
    all.retain(|m| searched(m, q));
    let counts = tally(&all, now).by_status;
    all.retain(|m| status.is_none_or(|s| m.status == s));
    all.reverse();
    let more = all.len().saturating_sub(SHOWN);
    all.truncate(SHOWN);
    Ok(Listing {
        counts,
        messages: all,
        more,
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
            label { "event or provider id" input name="q" value=(value("q")) placeholder="evt_…"; }
            button type="submit" { "Filter" }
            a href="/events" { "clear" }
        }
        (live(params, &listing))
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/events", "Events", body),
    ))
}

/// The polled fragment: the same element, so polling goes on.
pub async fn rows(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let listing = listing(console, params).await?;
    Ok(Reply::html(200, live(params, &listing)))
}

/// The counts and the table, replaced by htmx every [`POLL_SECS`].
fn live(params: &Params, listing: &Listing) -> Markup {
    let poll = format!("/events/rows?{}", params.encode());
    html! {
        div #live hx-get=(poll) hx-trigger={ "every " (POLL_SECS) "s" } hx-swap="outerHTML" {
            div.counts {
                @for (status, n) in &listing.counts {
                    a href={ "/events?" (params.with("status", status).encode()) } {
                        (badge(status)) " " span.count data-status=(status) { (n) }
                    }
                }
            }
            @if listing.messages.is_empty() {
                p.none { "No events match." }
            } @else {
                table #events {
                    thead { tr {
                        th { "received (UTC)" } th { "source" } th { "event id" } th { "type" }
                        th { "status" } th.num { "attempts" } th { "last error" }
                    } }
                    tbody {
                        @for m in &listing.messages {
                            tr data-event=(m.event_id.as_str()) {
                                td { (time(m.received_at)) }
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
                @if listing.more > 0 {
                    p.none { "and " (listing.more) " older matches (narrow the filter)" }
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
