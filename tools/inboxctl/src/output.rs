//! Output helpers: tables for people, JSON for scripts, a progress bar only when someone watches.

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{ContentArrangement, Table};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::io::{IsTerminal as _, Write as _};

/// A table with a header row, in the CLI's style.
pub fn table<I, S>(header: I) -> Table
where
    I: IntoIterator<Item = S>,
    S: Into<comfy_table::Cell>,
{
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    t
}

/// A two-column table of fields and values, without a header.
pub fn fields<'a>(rows: impl IntoIterator<Item = (&'a str, String)>) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled);
    for (k, v) in rows {
        t.add_row(vec![k.to_owned(), v]);
    }
    t
}

/// Prints `value` as pretty JSON on stdout.
pub fn print_json(value: &impl Serialize) -> crate::error::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(())
}

/// Prints a line (or a table) on stdout; a closed pipe is an error, not a panic.
pub fn say(text: impl std::fmt::Display) -> crate::error::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    Ok(())
}

/// Shortens `s` to at most `max` characters (an ellipsis marks the cut), on one line.
pub fn truncate(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `Some(x)` as text, `None` as `-`.
pub fn or_dash<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// A progress bar on stderr, hidden for JSON output or when stderr is not a terminal.
pub fn progress(len: u64, json: bool, what: &str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    let style = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

/// A spinner on stderr for work of unknown length, hidden like [`progress`].
pub fn spinner(json: bool, what: &str) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly10!", 10), "exactly10!");
        assert_eq!(truncate("this is too long", 10), "this is t…");
        assert_eq!(truncate("multi\nline", 20), "multi line");
        assert_eq!(truncate("ééééé", 3), "éé…");
    }

    #[test]
    fn dashes() {
        assert_eq!(or_dash(Some(3)), "3");
        assert_eq!(or_dash(None::<u32>), "-");
    }
}
