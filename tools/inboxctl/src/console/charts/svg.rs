//! Small SVG charts, server-rendered and pure (figures in, markup out): stacked bars by bucket,
//! and lines of points (straight or stepped). maud escapes every text and attribute; colours
//! are presentation attributes (the Content-Security-Policy allows no inline style); each chart
//! is a `role="img"` with its `<title>` and `<desc>`, and each bar or point has a `<title>`
//! (the browser's tooltip) with its figures. No script, no dependency: a few hundred elements at
//! most, which a hand-written renderer does in a page of code (see docs/console.md, Charts, for
//! the crates weighed).

use super::series::Window;
use maud::{html, Markup};

/// The drawing's size and margins, px (the page scales it to its width: `viewBox`).
pub const WIDTH: f64 = 720.0;
pub const HEIGHT: f64 = 150.0;
const LEFT: f64 = 76.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 8.0;
const BOTTOM: f64 = 20.0;

/// The smallest 1, 2 or 5 × 10ⁿ at or above `max` (1 for nothing above zero): the top of an axis.
pub fn nice_max(max: f64) -> f64 {
    if !max.is_finite() || max <= 0.0 {
        return 1.0;
    }
    let mut step = 10f64.powf(max.log10().floor());
    loop {
        for m in [1.0, 2.0, 5.0, 10.0] {
            if m * step >= max {
                return m * step;
            }
        }
        step *= 10.0;
    }
}

/// A linear map from a value range onto a pixel range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub lo: f64,
    pub hi: f64,
    pub from: f64,
    pub to: f64,
}

impl Scale {
    pub fn at(&self, v: f64) -> f64 {
        if self.hi <= self.lo {
            return self.from;
        }
        self.from + (v - self.lo) / (self.hi - self.lo) * (self.to - self.from)
    }
}

/// The x scale of a window (ms onto the plot's width).
fn x_scale(start: i64, end: i64) -> Scale {
    Scale {
        lo: start as f64,
        hi: end as f64,
        from: LEFT,
        to: WIDTH - RIGHT,
    }
}

/// The y scale of a value range (its top at the plot's top).
fn y_scale(lo: f64, hi: f64) -> Scale {
    Scale {
        lo,
        hi,
        from: HEIGHT - BOTTOM,
        to: TOP,
    }
}

/// A coordinate as the drawing writes it.
fn px(v: f64) -> String {
    format!("{v:.1}")
}

/// A figure on an axis: whole, or to one decimal.
pub fn number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A time on the x axis: `HH:MM` UTC, with the day when the window spans more than one.
fn clock(ms: i64, long: bool) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) if long => t.strftime("%m-%d %H:%M").to_string(),
        Ok(t) => t.strftime("%H:%M").to_string(),
        Err(_) => ms.to_string(),
    }
}

/// What every chart has: its id (for its title's), title and description, and its width on
/// the page (`half`: two side by side).
pub struct Head<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub desc: &'a str,
    pub half: bool,
}

/// The frame: the `svg` element, its title and description, the axes with their ticks (`y`: the
/// value range and how a value is written), then `plot`.
fn frame(
    head: &Head<'_>,
    x: (i64, i64),
    y: (f64, f64),
    fmt: &dyn Fn(f64) -> String,
    plot: Markup,
) -> Markup {
    let ys = y_scale(y.0, y.1);
    let xs = x_scale(x.0, x.1);
    let long = x.1 - x.0 > 86_400_000;
    let ticks = [y.0, (y.0 + y.1) / 2.0, y.1];
    let labelled = format!("{0}-title {0}-desc", head.id);
    html! {
        svg.chart id=(head.id) data-chart=(head.id) role="img" aria-labelledby=(labelled)
            width=(if head.half { "49%" } else { "100%" })
            viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } xmlns="http://www.w3.org/2000/svg" {
            title id={ (head.id) "-title" } { (head.title) }
            desc id={ (head.id) "-desc" } { (head.desc) }
            g.axes stroke="#dde2ea" {
                @for t in ticks {
                    line x1=(px(LEFT)) x2=(px(WIDTH - RIGHT)) y1=(px(ys.at(t))) y2=(px(ys.at(t))) {}
                }
            }
            g.ticks fill="#6b7483" font-size="10" {
                @for t in ticks {
                    text x=(px(LEFT - 4.0)) y=(px(ys.at(t) + 3.0)) text-anchor="end" { (fmt(t)) }
                }
                text x=(px(xs.at(x.0 as f64))) y=(px(HEIGHT - 5.0)) { (clock(x.0, long)) }
                text x=(px(xs.at((x.0 / 2 + x.1 / 2) as f64))) y=(px(HEIGHT - 5.0)) text-anchor="middle" { (clock(x.0 / 2 + x.1 / 2, long)) }
                text x=(px(xs.at(x.1 as f64))) y=(px(HEIGHT - 5.0)) text-anchor="end" { (clock(x.1, long)) " UTC" }
            }
            (plot)
        }
    }
}

/// One stack of a bar chart: its name (a status), colour and count per bucket.
pub struct Stack<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub counts: &'a [u64],
}

/// One drawn bar (a stack's part of a bucket).
struct Bar<'a> {
    x: f64,
    y0: f64,
    y1: f64,
    at: i64,
    count: u64,
    name: &'a str,
    color: &'a str,
}

/// Bars per bucket of `window`, `stacks` piled in their order; before `unread_before` (when
/// the read stopped at its cap), a grey band saying it was not read.
pub fn stacked_bars(
    head: &Head<'_>,
    window: &Window,
    stacks: &[Stack<'_>],
    unread_before: Option<i64>,
) -> Markup {
    let n = window.buckets();
    let totals: Vec<u64> = (0..n)
        .map(|i| {
            stacks
                .iter()
                .map(|s| s.counts.get(i).copied().unwrap_or(0))
                .sum()
        })
        .collect();
    let top = nice_max(totals.iter().copied().max().unwrap_or(0) as f64);
    let ys = y_scale(0.0, top);
    let xs = x_scale(window.start, window.end);
    let bar = ((xs.to - xs.from) / n.max(1) as f64 - 1.0).max(1.0);
    let mut bars = Vec::new();
    for i in 0..n {
        let mut below = 0u64;
        for s in stacks {
            let count = s.counts.get(i).copied().unwrap_or(0);
            if count > 0 {
                bars.push(Bar {
                    x: xs.at(window.at(i) as f64),
                    y0: ys.at(below as f64),
                    y1: ys.at((below + count) as f64),
                    at: window.at(i),
                    count,
                    name: s.name,
                    color: s.color,
                });
                below += count;
            }
        }
    }
    let plot = html! {
        @if let Some(cut) = unread_before.filter(|c| *c > window.start) {
            rect.unread x=(px(xs.at(window.start as f64))) y=(px(TOP)) width=(px(xs.at(cut.min(window.end) as f64) - xs.at(window.start as f64)))
                height=(px(HEIGHT - BOTTOM - TOP)) fill="#eceff4" {
                title { "not read: before " (clock(cut, false)) " UTC, past the read's cap" }
            }
        }
        g.bars {
            @for b in &bars {
                rect x=(px(b.x)) y=(px(b.y1)) width=(px(bar)) height=(px(b.y0 - b.y1)) fill=(b.color)
                    data-status=(b.name) data-count=(b.count) data-at=(b.at) {
                    title { (clock(b.at, false)) " UTC: " (b.count) " " (b.name) }
                }
            }
        }
    };
    frame(head, (window.start, window.end), (0.0, top), &number, plot)
}

/// One point of a line: when, its value, and its tooltip's text.
pub struct Point {
    pub at: i64,
    pub value: f64,
    pub text: String,
}

/// One line: its name, colour, points (by time), and whether it holds its value until the next
/// point (a balance) or goes straight to it (a rate).
pub struct Line<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub points: Vec<Point>,
    pub step: bool,
}

/// The value range of lines: from `floor` (or below, for negative values) to a nice top (or
/// `fixed`).
fn range(lines: &[Line<'_>], floor: f64, fixed: Option<f64>) -> (f64, f64) {
    let values = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.value));
    let lo = values().fold(floor, f64::min);
    let hi = fixed.unwrap_or_else(|| nice_max(values().fold(0.0, f64::max)));
    let lo = if lo < 0.0 { -nice_max(-lo) } else { lo };
    (lo, hi.max(lo + 1.0))
}

/// Lines over `x` (ms), each point a dot with its tooltip; `fixed` is the axis's top when it
/// has one (100 for a percentage), and `fmt` writes a value on the axis.
pub fn lines(
    head: &Head<'_>,
    x: (i64, i64),
    lines: &[Line<'_>],
    fixed: Option<f64>,
    fmt: &dyn Fn(f64) -> String,
) -> Markup {
    let (lo, hi) = range(lines, 0.0, fixed);
    let ys = y_scale(lo, hi);
    let xs = x_scale(x.0, x.1);
    let path = |l: &Line<'_>| -> String {
        let mut out: Vec<String> = Vec::new();
        let mut last_y: Option<f64> = None;
        for p in &l.points {
            let (px_x, px_y) = (xs.at(p.at as f64), ys.at(p.value));
            if let (true, Some(y)) = (l.step, last_y) {
                out.push(format!("{},{}", px(px_x), px(y)));
            }
            out.push(format!("{},{}", px(px_x), px(px_y)));
            last_y = Some(px_y);
        }
        out.join(" ")
    };
    let plot = html! {
        @for l in lines {
            g.line data-series=(l.name) {
                @if l.points.len() > 1 {
                    polyline points=(path(l)) fill="none" stroke=(l.color) stroke-width="1.5" {}
                }
                @for p in &l.points {
                    circle cx=(px(xs.at(p.at as f64))) cy=(px(ys.at(p.value))) r="2.5" fill=(l.color)
                        data-series=(l.name) data-at=(p.at) {
                        title { (p.text) }
                    }
                }
            }
        }
    };
    frame(head, x, (lo, hi), fmt, plot)
}

#[cfg(test)]
mod tests;
