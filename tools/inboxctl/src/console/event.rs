//! One event's page: what `inboxctl show` shows (state, history as a timeline with each
//! attempt's error and duration, kept headers with signature values masked, repeats and their
//! count), its body on demand (`/event/body`: from S3 when kept there; pretty JSON with the raw
//! bytes behind a toggle), its outbound deliveries with each attempt (`inboxctl deliveries`;
//! read by key per listed destination, [`delivery::of_event`]), and the wallet ledger entries it
//! wrote; and its replay (`ops::replay`, journaled with the operator's name, as `inboxctl replay
//! SOURCE EVENT_ID`) and its resend to one destination ([`super::resend`]). Its ids and body have
//! copy buttons ([`super::copy`]); its times are shown in the browser's zone with how long ago
//! (`local_time_ago`); while it is open its status is asked for, and the page reloads as a whole
//! when it changed ([`status`]).
use super::copy::copy_button;
use super::events::event_link;
use super::http::{query, Params, Reply};
use super::layout::{self, badge, csrf, local_time, local_time_ago, opt};
use super::mask::{shown, Shown};
use super::{delivery, resend};
use super::{Console, Session};
use crate::commands::replay::describe;
use crate::commands::show::{body_value, digest_ok, sha256_of, Repeats};
use crate::commands::{parse_key, wallet::ledger::EntryView};
use crate::error::{failed, usage, Result};
use inbox_core::clock::SystemClock;
use inbox_core::domain::{MessageKey, Status};
use inbox_core::message::StoredMessage;
use inbox_core::ops::{self, ReplayOutcome};
use inbox_core::store::MessageStore as _;
use maud::{html, Markup};
use serde_json::Value;
use wallet_ledger::{Entry, Ledger};

/// The key a query string or form names (`source`, `id`).
pub fn key_of(params: &Params) -> Result<MessageKey> {
    match (params.get("source"), params.get("id")) {
        (Some(s), Some(id)) => parse_key(s, id),
        _ => Err(usage("name an event: ?source=…&id=…")),
    }
}

/// What an action's `done` code says (fixed texts: a shared link cannot make the page say
/// anything else).
fn done_text(code: &str) -> Option<&'static str> {
    match code {
        "replayed" => Some("Replayed: pending again, re-driven through the retry queue."),
        "retried" => Some("Delivery retried: it is sent again."),
        "resent" => Some("Resent to the chosen destination: its delivery is pending again."),
        _ => None,
    }
}

async fn wallet_entries(console: &Console<'_>, key: &MessageKey) -> Result<Vec<(String, Entry)>> {
    let ledger = Ledger::new(&console.store);
    let mut found = Vec::new();
    for tenant in ledger.tenants().await?.tenants {
        let Some(wallet) = ledger.wallet(&tenant).await.map_err(failed)? else {
            continue;
        };
        for e in ledger.entries(&wallet).await?.entries {
            if e.event_source == key.source.as_str() && e.event_id == key.event_id.as_str() {
                found.push((tenant.to_string(), e));
            }
        }
    }
    Ok(found)
}

pub async fn page(console: &Console<'_>, session: &Session, params: &Params) -> Result<Reply> {
    let key = key_of(params)?;
    let Some(m) = console.store.get_head(&key).await? else {
        return Err(failed(format!(
            "no event {}/{} in table {}",
            key.source, key.event_id, console.table
        )));
    };
    let repeats = Repeats::of(&console.store, &key).await?;
    let destinations = inbox_core::outbox::admin::list(&console.store).await?;
    let deliveries = delivery::of_event(&console.store, &destinations, &key).await?;
    let entries = wallet_entries(console, &key).await?;
    let body_now = if params.get("body").is_some() {
        Some(body_markup(console, &key).await?)
    } else {
        None
    };
    let title = format!("{}/{}", key.source, key.event_id);
    let markup = html! {
        @if let Some(text) = params.get("done").and_then(done_text) { (layout::notice(text)) }
        h1 { "Event " code { (title) } " " (status_badge(&m)) " " (layout::live_toggle()) }
        (fields(&m))
        (actions(session, &m))
        (resend::form(session, &key, &destinations))
        (history(&m))
        (headers(&m))
        h2 #body-heading { "Body" }
        div #body {
            @if let Some(b) = body_now { (b) } @else {
                p {
                    a href={ (event_link(&m)) "&body=1#body-heading" }
                        hx-get={ "/event/body?" (query(&[("source", key.source.as_str()), ("id", key.event_id.as_str())])) }
                        hx-target="#body" hx-swap="innerHTML" { "Show the body" }
                    span.none { " (read on demand: a large body comes from S3)" }
                }
            }
        }
        (repeats_markup(&repeats))
        (delivery::deliveries(session, &key, &deliveries))
        (wallet_markup(&entries))
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/events", &title, markup),
    ))
}

/// How often an event's page asks for its status while it is not terminal, s.
pub const STATUS_POLL_SECS: u32 = 2;
/// How often it asks once the event is terminal (a replay from elsewhere, the CLI or another
/// tab, changes it again), s: one `GetItem` of its head.
pub const TERMINAL_POLL_SECS: u32 = 10;

/// The event's status, asked for again by htmx (every [`STATUS_POLL_SECS`], or
/// [`TERMINAL_POLL_SECS`] once terminal) with the status and version shown; when either changed
/// (a transition, even one that ends where it began: a replay of an ignored event is ignored
/// again, with a new history), the whole page is reloaded ([`status`]), so the fields, history
/// and buttons change with the title. The poll pauses with the page's auto-refresh
/// (`data-poll`, `assets/console.js`).
fn status_badge(m: &StoredMessage) -> Markup {
    let version = m.version.to_string();
    let href = format!(
        "/event/status?{}",
        query(&[
            ("source", m.source.as_str()),
            ("id", m.event_id.as_str()),
            ("shown", m.status.as_str()),
            ("v", &version),
        ])
    );
    let every = if m.status.is_terminal() {
        TERMINAL_POLL_SECS
    } else {
        STATUS_POLL_SECS
    };
    html! {
        span #status data-status=(m.status.as_str()) data-poll hx-get=(href)
            hx-trigger={ "every " (every) "s" } hx-swap="outerHTML" {
            (badge(m.status.as_str()))
        }
    }
}

/// `GET /event/status`: the polled status. The same status and version as the page shows
/// (`shown`, `v`) replace the badge; another asks for the page again (`HX-Refresh`), since the
/// fields, the history and the buttons changed with it.
pub async fn status(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let key = key_of(params)?;
    let Some(m) = console.store.get_head(&key).await? else {
        return Err(failed(format!("no event {}/{}", key.source, key.event_id)));
    };
    let badge = Reply::html(200, status_badge(&m));
    let same = params.get("shown") == Some(m.status.as_str())
        && params.get("v") == Some(m.version.to_string().as_str());
    Ok(if !same { badge.refreshing() } else { badge })
}

fn fields(m: &StoredMessage) -> Markup {
    html! {
        dl.fields {
            dt { "status" } dd { (badge(m.status.as_str())) }
            dt { "event id" } dd { code #event-id { (m.event_id.as_str()) } " " (copy_button("event-id", "the event id")) }
            dt { "type" } dd { (opt(m.event_type.as_ref())) }
            dt { "provider id" } dd {
                @if let Some(p) = &m.provider_id { code #provider-id { (p) } " " (copy_button("provider-id", "the provider id")) }
                @else { (opt(None::<&str>)) }
            }
            @if let Some(e) = &m.identity_error { dt { "unidentified" } dd { (e) } }
            @if let Some(b) = &m.batch {
                dt { "batch" } dd { "event " (b.index + 1) " of " (b.count) " (batch " code { (b.sha256) } ")" }
            }
            dt { "received" } dd { (local_time_ago(m.received_at)) }
            dt { "attempts" } dd { (m.attempts) }
            dt { "version" } dd { (m.version) }
            dt { "lease until" } dd { (time_or_dash(m.lease_until)) }
            dt { "next attempt" } dd { (time_or_dash(m.next_attempt_at)) }
            dt { "last error" } dd { (opt(m.last_error.as_ref())) }
            dt { "expires (TTL)" } dd { (time_or_dash(m.expires_at.map(|s| s.saturating_mul(1000)))) }
        }
    }
}

/// A time in the browser's zone with how long ago (or how soon), `-` when absent.
fn time_or_dash(ms: Option<i64>) -> Markup {
    match ms {
        Some(ms) => local_time_ago(ms),
        None => opt(None::<&str>),
    }
}

fn actions(session: &Session, m: &StoredMessage) -> Markup {
    let replayable = matches!(m.status, Status::Failed | Status::Ignored);
    html! {
        div.actions {
            @if m.status != Status::Processing {
                form.inline method="post" action="/event/replay" {
                    (csrf(&session.csrf))
                    input type="hidden" name="source" value=(m.source.as_str());
                    input type="hidden" name="id" value=(m.event_id.as_str());
                    @if replayable {
                        button type="submit" #replay { "Replay" }
                    } @else {
                        input type="hidden" name="force" value="1";
                        button.danger type="submit" #replay { "Replay anyway (it is " (m.status.as_str()) ")" }
                    }
                }
            }
        }
    }
}

fn history(m: &StoredMessage) -> Markup {
    let total = m.history_count();
    html! {
        h2 { "History"
            @if total > m.history.len() as u64 { " (the last " (m.history.len()) " of " (total) ")" }
        }
        ol.timeline #history {
            @for h in &m.history {
                li {
                    (local_time(h.at)) " " (badge(h.status.as_str())) " " (h.note)
                    @if let Some(a) = h.attempt { " · attempt " (a) }
                    @if let Some(d) = h.duration_ms { " · " (d) " ms" }
                    @if let Some(e) = &h.error { br; span.err { (e) } }
                }
            }
        }
    }
}

fn headers(m: &StoredMessage) -> Markup {
    let mut names: Vec<&String> = m.headers.keys().collect();
    names.sort();
    html! {
        h2 { "Kept headers (" (names.len()) ")" }
        table #headers {
            tbody {
                @for name in names {
                    tr {
                        td { code { (name) } }
                        td {
                            @match shown(name, &m.headers[name]) {
                                Shown::Value(v) => code { (v) },
                                Shown::Masked { chars } => span.masked { "masked (" (chars) " characters)" },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The body, read now (through S3 when it is kept there).
async fn body_markup(console: &Console<'_>, key: &MessageKey) -> Result<Markup> {
    let Some(m) = console.store.get(key).await? else {
        return Err(failed(format!("no event {}/{}", key.source, key.event_id)));
    };
    let (value, encoding) = body_value(&m.body);
    let pretty = match (&value, encoding) {
        (v, "json") => serde_json::to_string_pretty(v).unwrap_or_default(),
        (Value::String(s), _) => s.clone(),
        (v, _) => v.to_string(),
    };
    let raw = String::from_utf8_lossy(&m.body);
    Ok(html! {
        p {
            (m.body.len()) " bytes, " (encoding) ", sha256 " code { (sha256_of(&m)) }
            @if !digest_ok(&m) { " " span.err { "DOES NOT MATCH the stored digest" } }
        }
        pre #body-pretty { (pretty) }
        (copy_button("body-pretty", "the body"))
        @if encoding == "json" {
            details { summary { "raw" } pre #body-raw { (raw) } (copy_button("body-raw", "the raw body")) }
        }
    })
}

pub async fn body(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let key = key_of(params)?;
    Ok(Reply::html(200, body_markup(console, &key).await?))
}

fn repeats_markup(r: &Repeats) -> Markup {
    let total = r.total();
    html! {
        h2 { "Repeated deliveries (" (total) ")"
            @if total > r.journal.len() as u64 { " — the first " (r.journal.len()) " journaled" }
        }
        @if !r.journal.is_empty() {
            table {
                thead { tr { th { "received" } th { "body sha256" } th { "body differs" } } }
                tbody {
                    @for d in &r.journal {
                        tr {
                            td { (local_time(d.received_at)) }
                            td { code { (d.body_sha256) } }
                            td { @if d.body_differs { strong { "YES" } } @else { "no" } }
                        }
                    }
                }
            }
        }
    }
}

fn wallet_markup(entries: &[(String, Entry)]) -> Markup {
    html! {
        h2 { "Wallet ledger entries it wrote (" (entries.len()) ")" }
        @if !entries.is_empty() {
            table #wallet-entries {
                thead { tr { th { "tenant" } th { "kind" } th.num { "amount" } th.num { "balance Δ" } th.num { "held Δ" } th { "email / payment" } } }
                tbody {
                    @for (tenant, e) in entries {
                        @let v = EntryView::from(e.clone());
                        tr {
                            td { a href={ "/wallet?" (query(&[("tenant", tenant)])) } { (tenant) } }
                            td { (v.kind.as_str()) }
                            td.num { (e.amount.to_string()) }
                            td.num { (e.balance_delta.delta()) }
                            td.num { (e.held_delta.delta()) }
                            td { (opt(v.email_id.or(v.payment_id))) }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /event/replay`: [`ops::replay`] of the named event, as the operator.
pub async fn replay(console: &Console<'_>, form: &Params) -> Result<Reply> {
    let key = key_of(form)?;
    let retry = console.ctx.retry_queue().await?;
    let force = form.get("force").is_some();
    let outcome = ops::replay(
        &console.store,
        &retry,
        &SystemClock,
        &key,
        &console.operator,
        force,
    )
    .await?;
    match outcome {
        ReplayOutcome::Replayed => Ok(Reply::redirect(format!(
            "/event?{}",
            query(&[
                ("source", key.source.as_str()),
                ("id", key.event_id.as_str()),
                ("done", "replayed")
            ])
        ))),
        other => Err(failed(format!(
            "{}/{} not replayed: {}",
            key.source,
            key.event_id,
            describe(&other).1.unwrap_or_default()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(headers: serde_json::Value) -> StoredMessage {
        serde_json::from_value(serde_json::json!({
            "source": "stripe", "event_id": "evt_1", "status": "failed", "received_at": 0,
            "last_error": "<b>boom</b>", "headers": headers,
            "history": [{"at": 0, "status": "failed", "note": "<script>alert(1)</script>", "error": "<i>x</i>"}],
        }))
        .unwrap()
    }

    #[test]
    fn hostile_values_are_text_and_signatures_masked() {
        let m = message(serde_json::json!({
            "content-type": "application/json; x=\"<script>alert(1)</script>\"",
            "stripe-signature": "t=1,v1=deadbeef",
        }));
        let html = [headers(&m), history(&m), fields(&m)]
            .map(|h| h.into_string())
            .concat();
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<b>") && !html.contains("<i>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            !html.contains("deadbeef"),
            "the signature value is never rendered"
        );
        assert!(html.contains("masked (15 characters)"), "{html}");
    }

    #[test]
    fn the_status_is_polled_with_the_status_shown_slower_once_terminal() {
        let failed = message(serde_json::json!({}));
        let html = status_badge(&failed).into_string();
        assert!(
            html.contains(
                r#"hx-get="/event/status?source=stripe&amp;id=evt_1&amp;shown=failed&amp;v=0""#
            ),
            "{html}"
        );
        assert!(html.contains(r#"hx-trigger="every 10s""#), "{html}");
        assert!(
            html.contains("data-poll"),
            "pauses with auto-refresh: {html}"
        );
        let mut pending = failed.clone();
        pending.status = Status::Pending;
        let html = status_badge(&pending).into_string();
        assert!(html.contains("shown=pending"), "{html}");
        assert!(html.contains(r#"hx-trigger="every 2s""#), "{html}");
    }
}
