//! A confirmed bulk action in steps, with a progress bar: the Quarantine page's replay of every
//! match and the Destinations page's retry of a destination's failed deliveries both use it.
//!
//! The confirmation page ([`confirm`]) holds a **snapshot** of what it names: the items' ids,
//! kept in the console's memory ([`Snapshots`]) under a random token the form carries (at most
//! [`HELD`] of them, each for [`KEPT_FOR`]). The action acts on that snapshot, never on a
//! re-query: with htmx the form posts `step=1` and each step claims the next [`STEP`] ids of the
//! snapshot by position ([`Snapshots::claim`]), so an item that fails again is never picked
//! again and none is skipped, and a step sent twice acts on nothing twice; each step answers the
//! progress so far ([`progress`]), which asks for the next step by itself until the snapshot is
//! done. Without JavaScript the same form, without `step`, acts on the whole snapshot in one
//! request. Before anything is acted on, the snapshot is compared with what the selection holds
//! now: if it changed (one more failed since, one left), nothing is done and the confirmation is
//! asked again naming the new count; so it is when the token is no longer held.

use super::http::Params;
use super::layout::{self, csrf};
use maud::{html, Markup};
use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many items one step acts on.
pub const STEP: usize = 10;

/// How many snapshots the console holds (the oldest evicted past it).
pub const HELD: usize = 32;

/// How long a snapshot is held after its confirmation page.
pub const KEPT_FOR: Duration = Duration::from_secs(60 * 60);

/// A count the form carries (`confirm`, `done`, `problems`), 0 when absent.
pub fn count(form: &Params, name: &str) -> usize {
    form.get(name).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// One confirmation's snapshot: the ids it named, in order, and how many were claimed.
struct Held<T> {
    token: String,
    items: Vec<T>,
    next: usize,
    since: Instant,
}

/// The snapshots of the confirmation pages shown, by token.
pub struct Snapshots<T> {
    held: Mutex<Vec<Held<T>>>,
}

/// What a click on a confirmation may act on.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim<T> {
    /// The next ids of the snapshot (`from` its position), of `total`; `rest` still unclaimed.
    Batch {
        items: Vec<T>,
        from: usize,
        total: usize,
        rest: usize,
    },
    /// Nothing was claimed yet and the selection is no longer the snapshot: ask again.
    Changed,
    /// No snapshot under this token (never, evicted, expired, or the console restarted).
    Gone,
}

impl<T: Clone + Eq + Hash> Default for Snapshots<T> {
    fn default() -> Self {
        Self {
            held: Mutex::new(Vec::new()),
        }
    }
}

impl<T: Clone + Eq + Hash> Snapshots<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Held<T>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds `items` (what a confirmation page names), its token returned; expired snapshots
    /// are dropped and, past [`HELD`], the oldest.
    pub fn hold(&self, items: Vec<T>, now: Instant) -> String {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut held = self.lock();
        held.retain(|h| now.saturating_duration_since(h.since) < KEPT_FOR);
        while held.len() >= HELD {
            held.remove(0);
        }
        held.push(Held {
            token: token.clone(),
            items,
            next: 0,
            since: now,
        });
        token
    }

    /// Claims the next `take` ids of the snapshot under `token`. Before the first claim,
    /// `current` (what the selection holds now) must be the snapshot's ids, in any order, or
    /// nothing is claimed ([`Claim::Changed`], the snapshot dropped: the page asks again).
    pub fn claim(&self, token: Option<&str>, current: &[T], take: usize, now: Instant) -> Claim<T> {
        let mut held = self.lock();
        let Some(at) = token.and_then(|t| {
            held.iter()
                .position(|h| h.token == t && now.saturating_duration_since(h.since) < KEPT_FOR)
        }) else {
            return Claim::Gone;
        };
        let h = &mut held[at];
        if h.next == 0 && !same_set(&h.items, current) {
            held.remove(at);
            return Claim::Changed;
        }
        let from = h.next;
        let to = from.saturating_add(take).min(h.items.len());
        h.next = to;
        Claim::Batch {
            items: h.items[from..to].to_vec(),
            from,
            total: h.items.len(),
            rest: h.items.len() - to,
        }
    }
}

/// Whether `a` and `b` hold the same ids (each once), whatever their order.
fn same_set<T: Eq + Hash>(a: &[T], b: &[T]) -> bool {
    let a: HashSet<&T> = a.iter().collect();
    let b: HashSet<&T> = b.iter().collect();
    a == b
}

/// Where a bulk action stands: how many were confirmed, done, and did not succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub total: usize,
    pub done: usize,
    pub problems: usize,
}

impl Step {
    /// The counts the previous step sent (the first: nothing done) for a snapshot of `total`.
    pub fn read(form: &Params, total: usize) -> Self {
        Self {
            total,
            done: count(form, "done"),
            problems: count(form, "problems"),
        }
    }

    /// After a step of `batch` items, `ok` of them done.
    pub fn after(self, batch: usize, ok: usize) -> Self {
        Self {
            total: self.total,
            done: self.done + ok.min(batch),
            problems: self.problems + (batch - ok.min(batch)),
        }
    }
}

/// What one step did, for its progress reply.
pub struct Progress<'a> {
    /// The form's action, posted again for the next step.
    pub action: &'a str,
    /// "Replayed", "Retried".
    pub verb: &'a str,
    pub csrf: &'a str,
    /// The snapshot's token.
    pub snapshot: &'a str,
    pub step: Step,
    /// Whether the snapshot has ids not claimed yet.
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
        "csrf": p.csrf, "step": "1", "snapshot": p.snapshot, "confirm": s.total.to_string(),
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

/// A confirmation of a bulk action of `total` items held as `snapshot`.
pub struct Confirm<'a> {
    pub action: &'a str,
    pub csrf: &'a str,
    pub snapshot: &'a str,
    pub total: usize,
    /// The heading: "Replay 3 failed message(s)?".
    pub question: String,
    /// Why it is asked again, when it is.
    pub again: Option<&'a str>,
    /// What the action does.
    pub explain: Markup,
    /// The hidden fields it carries besides the token, the snapshot and the count.
    pub fields: Markup,
    pub label: String,
    pub cancel: String,
    /// What it names (listed below the form).
    pub list: Markup,
}

/// The `#progress` block asking to confirm: with htmx the form goes in steps, the block replaced
/// by the progress between them (`hx-vals` adds `step`); without, it acts on all at once. The
/// same block answers a step whose snapshot changed, so the question is asked again in place.
pub fn confirm(c: &Confirm<'_>) -> Markup {
    html! {
        div #progress {
            h1 { (c.question) }
            @if let Some(why) = c.again { (layout::notice(why)) }
            (c.explain)
            @if c.total > 0 {
                form.actions method="post" action=(c.action) hx-post=(c.action)
                    hx-vals=r#"{"step":"1"}"# hx-target="#progress" hx-swap="outerHTML" {
                    (csrf(c.csrf))
                    (c.fields)
                    input type="hidden" name="snapshot" value=(c.snapshot);
                    input type="hidden" name="confirm" value=(c.total);
                    button.danger type="submit" #confirm { (c.label) }
                    a href=(c.cancel) { "cancel" }
                }
            } @else {
                p { a href=(c.cancel) { "Nothing to do: back" } }
            }
            (c.list)
        }
    }
}

/// Why a confirmation is asked again when its snapshot is no longer held.
pub const NOT_HELD: &str = "This confirmation is no longer held (over an hour old, or the console restarted): nothing was done. Here is what it would act on now.";

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(claim: Claim<u32>) -> (Vec<u32>, usize, usize, usize) {
        match claim {
            Claim::Batch {
                items,
                from,
                total,
                rest,
            } => (items, from, total, rest),
            other => panic!("expected a batch, got {other:?}"),
        }
    }

    #[test]
    fn steps_take_the_snapshot_by_position_each_id_once_whatever_the_selection_becomes() {
        let snapshots = Snapshots::default();
        let now = Instant::now();
        let ids: Vec<u32> = (0..12).collect();
        let token = snapshots.hold(ids.clone(), now);
        // The first claim checks the selection (in any order) is still the snapshot.
        let mut shuffled = ids.clone();
        shuffled.reverse();
        let (first, from, total, rest) = batch(snapshots.claim(Some(&token), &shuffled, STEP, now));
        assert_eq!((first, from, total, rest), ((0..10).collect(), 0, 12, 2));
        // The ten failed again: still the whole selection (as a re-query would find them, the
        // issue's double replays); the next step takes the next ids, none of those again.
        let (second, from, _, rest) = batch(snapshots.claim(Some(&token), &ids, STEP, now));
        assert_eq!((second, from, rest), (vec![10, 11], 10, 0));
        // A step sent again acts on nothing.
        let (again, ..) = batch(snapshots.claim(Some(&token), &ids, STEP, now));
        assert!(again.is_empty());
    }

    #[test]
    fn a_selection_that_changed_before_the_first_step_is_asked_again() {
        let snapshots = Snapshots::default();
        let now = Instant::now();
        let token = snapshots.hold(vec![1, 2, 3], now);
        assert_eq!(
            snapshots.claim(Some(&token), &[1, 2, 3, 4], STEP, now),
            Claim::Changed
        );
        // Dropped: a second click is asked again too, never acted on.
        assert_eq!(
            snapshots.claim(Some(&token), &[1, 2, 3], STEP, now),
            Claim::Gone
        );
        let token = snapshots.hold(vec![1, 2, 3], now);
        assert_eq!(
            snapshots.claim(Some(&token), &[1, 2], usize::MAX, now),
            Claim::Changed
        );
        // Once started, the selection shrinking (those done leave it) is no change.
        let token = snapshots.hold(vec![1, 2, 3], now);
        batch(snapshots.claim(Some(&token), &[3, 2, 1], 1, now));
        let (rest, ..) = batch(snapshots.claim(Some(&token), &[], usize::MAX, now));
        assert_eq!(rest, vec![2, 3]);
    }

    #[test]
    fn snapshots_are_bounded_in_number_and_age() {
        let snapshots = Snapshots::default();
        let now = Instant::now();
        assert_eq!(snapshots.claim(None, &[1], STEP, now), Claim::Gone);
        assert_eq!(snapshots.claim(Some("nope"), &[1], STEP, now), Claim::Gone);
        let old = snapshots.hold(vec![1], now);
        assert_eq!(
            snapshots.claim(Some(&old), &[1], STEP, now + KEPT_FOR),
            Claim::Gone
        );
        let first = snapshots.hold(vec![1], now);
        let tokens: Vec<String> = (0..HELD).map(|_| snapshots.hold(vec![1], now)).collect();
        assert_eq!(snapshots.lock().len(), HELD);
        assert_eq!(snapshots.claim(Some(&first), &[1], STEP, now), Claim::Gone);
        batch(snapshots.claim(Some(&tokens[0]), &[1], STEP, now));
    }

    #[test]
    fn a_step_counts_what_failed() {
        let start = Step {
            total: 12,
            done: 0,
            problems: 0,
        };
        let s = start.after(10, 9);
        assert_eq!((s.done, s.problems), (9, 1));
        let s = s.after(2, 2);
        assert_eq!((s.total, s.done, s.problems), (12, 11, 1));
    }
}
