//! The page shell every console page shares (navigation, the vendored htmx, the stylesheet), and
//! small pieces of markup the pages have in common: a status badge, a time, the CSRF field of a
//! form, a notice after an action, an error box. Every value goes through maud, which escapes it.

use crate::when;
use maud::{html, Markup, DOCTYPE};

/// htmx, vendored (npm `htmx.org` 2.0.11, Zero-Clause BSD: `assets/htmx-LICENSE`): served from
/// the binary, no CDN, works offline.
pub const HTMX: &str = include_str!("assets/htmx.min.js");
/// The console's stylesheet.
pub const CSS: &str = include_str!("assets/console.css");
/// The console's own script: times shown in the browser's zone, `/` to the search box.
pub const JS: &str = include_str!("assets/console.js");

/// htmx's settings: no `eval`, no script tags run from swapped content, requests only to the
/// console itself, no inline indicator styles (the CSP allows no inline style).
const HTMX_CONFIG: &str = r#"{"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"includeIndicatorStyles":false,"historyCacheSize":0}"#;

/// The sections of the navigation: (path, label).
const NAV: [(&str, &str); 4] = [
    ("/events", "Events"),
    ("/quarantine", "Quarantine"),
    ("/destinations", "Destinations"),
    ("/wallets", "Wallets"),
];

/// What the shell shows besides the page: the table and the operator.
pub struct Frame<'a> {
    pub table: &'a str,
    pub operator: &'a str,
}

/// A whole page: `section` is the navigation entry it belongs to.
pub fn page(frame: &Frame<'_>, section: &str, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="htmx-config" content=(HTMX_CONFIG);
                title { (title) " · inboxctl console" }
                link rel="stylesheet" href="/static/console.css";
                script src="/static/htmx.min.js" {}
                script src="/static/console.js" defer {}
            }
            body {
                header {
                    strong { "inboxctl console" }
                    nav {
                        @for (path, label) in NAV {
                            a href=(path) class=[(path == section).then_some("current")] { (label) }
                        }
                    }
                    span.who { "table " code { (frame.table) } " · acting as " code { (frame.operator) } }
                }
                main { (body) }
            }
        }
    }
}

/// A message or delivery status as a badge.
pub fn badge(status: &str) -> Markup {
    html! { span class={ "badge " (status) } { (status) } }
}

/// A time (ms since the epoch) in UTC, with its RFC 3339 form as the machine-readable value.
pub fn time(ms: i64) -> Markup {
    html! { time datetime=(when::rfc3339(ms)) { (when::human(ms)) } }
}

/// A time (ms since the epoch) to the millisecond, shown in the browser's zone by
/// `assets/console.js` (its UTC text on hover); without JavaScript, the UTC text.
pub fn local_time(ms: i64) -> Markup {
    let utc = when::human_ms(ms);
    html! { time.local datetime=(when::rfc3339(ms)) title=(utc) { (utc) } }
}

/// [`local_time`], followed by how long ago it was (or how soon it is: "in 4 min") in the browser,
/// kept current while the page is open; without JavaScript, the UTC text.
pub fn local_time_ago(ms: i64) -> Markup {
    let utc = when::human_ms(ms);
    html! { time.local.ago datetime=(when::rfc3339(ms)) title=(utc) { (utc) } }
}

/// The button that pauses (and resumes) a page's auto-refresh: every element marked
/// `data-poll` stops asking while it is paused, on every page of the console (kept in the
/// browser's `localStorage`). Shown by `assets/console.js` (no polling without it).
pub fn live_toggle() -> Markup {
    html! {
        button #live-toggle type="button" hidden aria-pressed="false" { "Pause auto-refresh" }
    }
}

/// An optional value, `-` when absent.
pub fn opt<T: std::fmt::Display>(v: Option<T>) -> Markup {
    match v {
        Some(v) => html! { (v.to_string()) },
        None => html! { span.none { "-" } },
    }
}

/// The hidden CSRF field every state-changing form carries.
pub fn csrf(token: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(token); }
}

/// A box saying what an action did.
pub fn notice(text: &str) -> Markup {
    html! { p.notice role="status" { (text) } }
}

/// A box saying why something failed (AWS's reason included).
pub fn error_box(text: &str) -> Markup {
    html! { p.error role="alert" { (text) } }
}
