//! A confirmed bulk action in steps, with a progress bar: the Quarantine page's replay of every
//! match and the Destinations page's retry of a destination's failed deliveries both use it.
//!
//! The confirmation form ([`confirm_form`]) posts, through htmx, `step=1` with the confirmed
//! count; each step acts on the next [`STEP`] items and answers the progress so far
//! ([`progress`]), which asks for the next step by itself until every confirmed one is done.
//! Those that did not succeed stay at the head of the selection (the successful ones leave it),
//! so each step skips as many as failed before it ([`Step::skip`]). Without JavaScript the same
//! form, without `step`, acts on them all in one request.

use super::http::Params;
use super::layout::{self, csrf};
use maud::{html, Markup};

/// How many items one step acts on.
pub const STEP: usize = 10;

/// A count the form carries (`confirm`, `done`, `problems`), 0 when absent.
pub fn count(form: &Params, name: &str) -> usize {
    form.get(name).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Where a bulk action stands: how many were confirmed, done, and did not succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub total: usize,
    pub done: usize,
    pub problems: usize,
}

impl Step {
    /// The counts the previous step sent (the first: the confirmed count, nothing done).
    pub fn read(form: &Params) -> Self {
        Self {
            total: count(form, "confirm"),
            done: count(form, "done"),
            problems: count(form, "problems"),
        }
    }

    /// How many of the selection's head to skip: those that did not succeed before.
    pub fn skip(&self) -> usize {
        self.problems
    }

    /// After a step of `batch` items, `ok` of them done.
    pub fn after(self, batch: usize, ok: usize) -> (Self, bool) {
        let next = Self {
            total: self.total,
            done: self.done + ok,
            problems: self.problems + (batch - ok.min(batch)),
        };
        let more = batch > 0 && next.done + next.problems < self.total;
        (next, more)
    }
}

/// What one step did, for its progress reply.
pub struct Progress<'a> {
    /// The form's action, posted again for the next step.
    pub action: &'a str,
    /// "Replayed", "Retried".
    pub verb: &'a str,
    pub csrf: &'a str,
    pub step: Step,
    pub more: bool,
    /// The items of this step that did not succeed, each with why.
    pub problems: Vec<String>,
    /// The fields the next step carries (the filter, the destination).
    pub carry: Vec<(&'a str, String)>,
    /// Where to go once done: (href, text).
    pub back: (&'a str, &'a str),
}

/// The `#progress` block of a step: the bar, the count, what failed, and the next step's trigger.
pub fn progress(p: &Progress<'_>) -> Markup {
    let s = p.step;
    let mut next = serde_json::json!({
        "csrf": p.csrf, "step": "1", "confirm": s.total.to_string(),
        "done": s.done.to_string(), "problems": s.problems.to_string(),
    });
    for (k, v) in &p.carry {
        next[*k] = serde_json::Value::String(v.clone());
    }
    html! {
        div #progress {
            progress value=(s.done + s.problems) max=(s.total) {}
            p { (p.verb) " " (s.done) " of " (s.total) @if p.more { "…" } }
            @for problem in &p.problems { (layout::error_box(problem)) }
            @if p.more {
                div hx-post=(p.action) hx-trigger="load" hx-vals=(next.to_string())
                    hx-target="#progress" hx-swap="outerHTML" {}
            } @else {
                p { a href=(p.back.0) { (p.back.1) } }
            }
        }
    }
}

/// The confirmation form of a bulk action of `total` items: with htmx it goes in steps, the
/// page showing progress between them (`hx-vals` adds `step`); without, it acts on all at once.
/// `fields` are the hidden fields it carries besides the token and the count.
pub fn confirm_form(
    action: &str,
    token: &str,
    total: usize,
    fields: Markup,
    label: &str,
    cancel: &str,
) -> Markup {
    html! {
        div #progress {
            form.actions method="post" action=(action) hx-post=(action)
                hx-vals=r#"{"step":"1"}"# hx-target="#progress" hx-swap="outerHTML" {
                (csrf(token))
                (fields)
                input type="hidden" name="confirm" value=(total);
                button.danger type="submit" #confirm { (label) }
                a href=(cancel) { "cancel" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_count_what_failed_and_stop_when_all_confirmed_are_done() {
        let start = Step {
            total: 12,
            done: 0,
            problems: 0,
        };
        let (s, more) = start.after(10, 9);
        assert_eq!((s.done, s.problems, s.skip(), more), (9, 1, 1, true));
        let (s, more) = s.after(2, 2);
        assert_eq!((s.done, s.problems, more), (11, 1, false));
        // Nothing left to act on: done, whatever the counts say.
        let (_, more) = start.after(0, 0);
        assert!(!more);
    }
}
