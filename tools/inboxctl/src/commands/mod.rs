//! The commands, one module each, and what several of them share: parsing a message key from the
//! command line and the one-line summary of a message (a table row, a JSON object).

pub(crate) mod deliveries;
pub(crate) mod dest;
mod events;
mod list;
mod listen;
mod purge;
pub(crate) mod replay;
mod send;
pub(crate) mod show;
pub(crate) mod stats;
mod stripe;
pub(crate) mod wallet;

use crate::cli::{Cli, Command};
use crate::context::Context;
use crate::error::{usage, Result};
use crate::output::{or_dash, truncate};
use crate::when;
use inbox_core::config::Env;
use inbox_core::domain::{EventId, MessageKey, SourceName, Status};
use inbox_core::message::StoredMessage;
use serde::Serialize;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<()> {
    let ctx = Context::new(cli.global, Env::process())?;
    match cli.command {
        Command::List(args) => list::run(&ctx, args).await,
        Command::Show(args) => show::run(&ctx, args).await,
        Command::Replay(args) => replay::run(&ctx, args).await,
        Command::Stats => stats::run(&ctx).await,
        Command::Purge(args) => purge::run(&ctx, args).await,
        Command::Send(args) => send::run(&ctx, args).await,
        Command::Wallet(command) => wallet::run(&ctx, command).await,
        Command::Stripe(command) => stripe::run(&ctx, command).await,
        Command::Dest(command) => dest::run(&ctx, command).await,
        Command::Deliveries(command) => deliveries::run(&ctx, command).await,
        Command::Listen(args) => listen::run(&ctx, args).await,
        Command::Console(args) => crate::console::run(ctx, args).await,
        Command::Events(command) => events::run(&ctx, command).await,
    }
}

/// A message key from two command-line words, validated as the ingest path validates them.
pub fn parse_key(source: &str, event_id: &str) -> Result<MessageKey> {
    let source = SourceName::parse(source).map_err(|e| usage(format!("source {source:?} {e}")))?;
    let event_id =
        EventId::parse(event_id).map_err(|e| usage(format!("event id {event_id:?} {e}")))?;
    Ok(MessageKey::new(source, event_id))
}

/// The one-line view of a message, as `list` and the bulk commands print it.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub source: String,
    pub event_id: String,
    pub event_type: Option<String>,
    pub status: Status,
    /// RFC 3339, UTC.
    pub received_at: String,
    pub received_at_ms: i64,
    pub attempts: u32,
    pub version: u64,
    pub last_error: Option<String>,
}

impl From<&StoredMessage> for Summary {
    fn from(m: &StoredMessage) -> Self {
        Self {
            source: m.source.to_string(),
            event_id: m.event_id.to_string(),
            event_type: m.event_type.as_ref().map(ToString::to_string),
            status: m.status,
            received_at: when::rfc3339(m.received_at),
            received_at_ms: m.received_at,
            attempts: m.attempts,
            version: m.version,
            last_error: m.last_error.clone(),
        }
    }
}

/// The columns of [`summary_row`].
pub const SUMMARY_HEADER: [&str; 7] = [
    "received (UTC)",
    "source",
    "event id",
    "type",
    "status",
    "attempts",
    "last error",
];

/// A message as a table row (see [`SUMMARY_HEADER`]).
pub fn summary_row(m: &StoredMessage) -> Vec<String> {
    vec![
        when::human(m.received_at),
        m.source.to_string(),
        m.event_id.to_string(),
        or_dash(m.event_type.as_ref()),
        m.status.to_string(),
        m.attempts.to_string(),
        m.last_error
            .as_deref()
            .map_or_else(|| "-".to_owned(), |e| truncate(e, 60)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn keys_are_validated_as_usage_errors() {
        let k = parse_key("stripe", "evt_1").expect("valid");
        assert_eq!(
            (k.source.as_str(), k.event_id.as_str()),
            ("stripe", "evt_1")
        );
        assert!(matches!(parse_key("Stripe", "evt_1"), Err(Error::Usage(_))));
        assert!(matches!(parse_key("stripe", "evt 1"), Err(Error::Usage(_))));
        assert!(matches!(parse_key("stripe", ""), Err(Error::Usage(_))));
    }
}
