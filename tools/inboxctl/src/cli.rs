//! The command line: global options and one struct of arguments per command (clap derive).
//!
//! Global options can also come from the environment the Lambda functions use (`TABLE_NAME`,
//! `RETRY_QUEUE_URL`, `QUARANTINE_QUEUE_URL`), so an operator can source the same settings, and
//! `INBOXCTL_JSON`. The environment is read by [`crate::context::Context::new`] through the core's
//! `Env`, by the same rules as the functions (trimmed, empty counts as unset), not by clap.

mod autopay;
mod outbox;
mod stripe;
mod wallet;

pub use autopay::*;
pub use outbox::*;
pub use stripe::*;
pub use wallet::*;

use crate::when::When;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use inbox_core::config::{catalog, Env};
use inbox_core::domain::Status;
use std::path::PathBuf;

/// Operate the webhook inbox: list, inspect, replay and purge messages, show statistics, send
/// signed test events, and manage the tenants' prepaid wallets.
///
/// The AWS endpoint, region and credentials come from the standard AWS environment
/// (AWS_ENDPOINT_URL for the local emulator, AWS_PROFILE, AWS_REGION, …).
#[derive(Debug, Parser)]
#[command(name = "inboxctl", version, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The DynamoDB table holding the messages [env: TABLE_NAME].
    #[arg(long, global = true, value_name = "NAME")]
    pub table: Option<String>,
    /// The SQS retry queue (replays re-drive through it) [env: RETRY_QUEUE_URL].
    #[arg(long, global = true, value_name = "URL")]
    pub retry_queue_url: Option<String>,
    /// The SQS quarantine (dead-letter) queue [env: QUARANTINE_QUEUE_URL].
    #[arg(long, global = true, value_name = "URL")]
    pub quarantine_queue_url: Option<String>,
    /// The SQS delivery queue (delivery retries go through it; without it, the deliver function's
    /// sweep picks them up within a minute) [env: DELIVERY_QUEUE_URL].
    #[arg(long, global = true, value_name = "URL")]
    pub delivery_queue_url: Option<String>,
    /// Print JSON for scripts instead of tables (no progress bar) [env: INBOXCTL_JSON=true].
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List messages, oldest first.
    List(ListArgs),
    /// Show one message: status, history, repeated deliveries, headers, payload.
    Show(ShowArgs),
    /// Put failed or ignored messages back to pending and re-drive them.
    Replay(ReplayArgs),
    /// Counts by status and source, the oldest open messages, the quarantine depth.
    Stats,
    /// Delete terminal messages older than some days (dry run unless --yes).
    Purge(PurgeArgs),
    /// Send a signed test event to an ingest endpoint (like `stripe trigger`).
    Send(SendArgs),
    /// Prepaid wallets: create one, show its balance and ledger, reconcile every wallet, set its
    /// autopay.
    #[command(subcommand)]
    Wallet(WalletCommand),
    /// Stripe: catch up on the events whose webhooks never arrived.
    #[command(subcommand)]
    Stripe(StripeCommand),
    /// Outbound destinations: add, list, show, pause, resume, rotate-secret, rm.
    #[command(subcommand)]
    Dest(DestCommand),
    /// Outbound deliveries: list, show (with the attempt journal), retry, replay.
    #[command(subcommand)]
    Deliveries(DeliveriesCommand),
    /// A local receiver for deliveries: verifies each signature, prints it, answers as told.
    Listen(ListenArgs),
    /// The operator console: a web page on 127.0.0.1 to see events, deliveries and wallets, and
    /// to replay, retry, pause and resume from it, with this shell's AWS credentials.
    Console(ConsoleArgs),
    /// The events index: backfill it for messages stored before it existed.
    #[command(subcommand)]
    Events(EventsCommand),
}

/// `inboxctl events …`.
#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Add the messages stored before the events index existed to it (a scan of the table,
    /// once; conditional writes, safe to run again or beside the functions).
    Reindex(ReindexArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ReindexArgs {
    /// Count (and list) the messages the index lacks; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Go on from where a stopped run was (the token its error printed).
    #[arg(long, value_name = "TOKEN")]
    pub from: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ConsoleArgs {
    /// The port on 127.0.0.1 (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 8642)]
    pub port: u16,
    /// Listen on this address instead of 127.0.0.1 (another interface only when named here:
    /// whoever reaches it acts with your credentials).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::IpAddr>,
    /// Who acts (journaled with every replay, retry, pause and resume) [default: $USER, else
    /// operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
}

/// A message status, as typed on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Pending,
    Processing,
    Retrying,
    Processed,
    Ignored,
    Failed,
}

impl From<StatusArg> for Status {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::Pending => Status::Pending,
            StatusArg::Processing => Status::Processing,
            StatusArg::Retrying => Status::Retrying,
            StatusArg::Processed => Status::Processed,
            StatusArg::Ignored => Status::Ignored,
            StatusArg::Failed => Status::Failed,
        }
    }
}

/// The statuses a bulk replay selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayableStatus {
    Failed,
    Ignored,
}

impl From<ReplayableStatus> for Status {
    fn from(s: ReplayableStatus) -> Self {
        match s {
            ReplayableStatus::Failed => Status::Failed,
            ReplayableStatus::Ignored => Status::Ignored,
        }
    }
}

/// The terminal statuses a purge may delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TerminalStatus {
    Processed,
    Ignored,
    Failed,
}

impl From<TerminalStatus> for Status {
    fn from(s: TerminalStatus) -> Self {
        match s {
            TerminalStatus::Processed => Status::Processed,
            TerminalStatus::Ignored => Status::Ignored,
            TerminalStatus::Failed => Status::Failed,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only messages in this status.
    #[arg(long, value_enum)]
    pub status: Option<StatusArg>,
    /// Only messages of this source.
    #[arg(long)]
    pub source: Option<String>,
    /// Only messages of this event type.
    #[arg(long = "type", value_name = "TYPE")]
    pub event_type: Option<String>,
    /// Received at or after WHEN: RFC 3339 (2026-11-30T10:00:00Z), a date, or an age (2h, 30m, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<When>,
    /// Received before WHEN (same forms as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<When>,
    /// At most this many messages.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
}

#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The message's source (`stripe`, …).
    pub source: String,
    /// The provider's event id.
    pub event_id: String,
    /// Print the payload (pretty-printed if it is JSON); otherwise only its size and SHA-256.
    #[arg(long)]
    pub body: bool,
    /// Print the kept headers' values (signatures included); otherwise only their names.
    #[arg(long)]
    pub headers: bool,
}

#[derive(Debug, Clone, Args)]
#[command(group(
    ArgGroup::new("mode")
        .required(true)
        .args(["key_source", "status", "from_quarantine"]),
))]
pub struct ReplayArgs {
    /// Replay one message: its source.
    #[arg(value_name = "SOURCE", requires = "event_id")]
    pub key_source: Option<String>,
    /// Replay one message: its event id.
    #[arg(value_name = "EVENT_ID")]
    pub event_id: Option<String>,
    /// Also replay a message that is pending, retrying or processed (never one being processed).
    #[arg(long, conflicts_with = "status")]
    pub force: bool,
    /// Bulk: replay every message in this status (matching the filters below).
    #[arg(long, value_enum)]
    pub status: Option<ReplayableStatus>,
    /// Bulk: only messages of this source.
    #[arg(long, conflicts_with_all = ["key_source", "from_quarantine"])]
    pub source: Option<String>,
    /// Bulk: only messages of this event type.
    #[arg(long = "type", value_name = "TYPE", conflicts_with_all = ["key_source", "from_quarantine"])]
    pub event_type: Option<String>,
    /// Bulk: received at or after WHEN.
    #[arg(long, value_name = "WHEN", conflicts_with_all = ["key_source", "from_quarantine"])]
    pub since: Option<When>,
    /// Bulk: received before WHEN.
    #[arg(long, value_name = "WHEN", conflicts_with_all = ["key_source", "from_quarantine"])]
    pub until: Option<When>,
    /// Bulk: at most this many messages.
    #[arg(long, conflicts_with_all = ["key_source", "from_quarantine"])]
    pub limit: Option<usize>,
    /// Bulk: really replay (without it, only print what would be replayed).
    #[arg(long, conflicts_with_all = ["key_source", "from_quarantine"])]
    pub yes: bool,
    /// Replay the messages named on the quarantine queue, deleting each queue message once its
    /// replay is durable.
    #[arg(long)]
    pub from_quarantine: bool,
    /// Quarantine: handle at most this many queue messages.
    #[arg(long, conflicts_with_all = ["key_source", "status"])]
    pub max: Option<usize>,
    /// Quarantine: delete queue messages that name no message (e.g. a stream's on-failure
    /// records) instead of leaving them in the queue.
    #[arg(long, conflicts_with_all = ["key_source", "status"])]
    pub drop_unreadable: bool,
    /// Quarantine: how long each receive waits for messages (long polling), seconds.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(0..=20), conflicts_with_all = ["key_source", "status"])]
    pub wait_secs: i32,
    /// Who replays (written to the message's history: "replayed by NAME") [default: $USER, else
    /// operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct PurgeArgs {
    /// Only messages received more than this many days ago.
    #[arg(long, value_name = "N")]
    pub older_than_days: u32,
    /// Statuses to purge (repeatable or comma-separated); failed messages only when named.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TerminalStatus::Processed, TerminalStatus::Ignored])]
    pub status: Vec<TerminalStatus>,
    /// Really delete (without it, only print what would go).
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SendArgs {
    /// The configured source to send as (`stripe`, `mailer`, `github`, …).
    pub source: String,
    /// The ingest endpoint [default: http://127.0.0.1:9000/lambda-url/ingest/webhooks/SOURCE].
    #[arg(long)]
    pub url: Option<String>,
    /// Send this file's bytes as the body instead of a generated sample event.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// The event id (default: a fresh random one in the provider's format).
    #[arg(long)]
    pub event_id: Option<String>,
    /// The event type (default: the provider's usual test event).
    #[arg(long = "type", value_name = "TYPE")]
    pub event_type: Option<String>,
    /// Send the same event this many times (re-signed each time), like a provider's retries.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Sources file [default: $WEBHOOK_SOURCES if set, else local/sources.json].
    #[arg(long, value_name = "FILE")]
    pub sources: Option<PathBuf>,
    /// Secrets file [default: $WEBHOOK_SECRETS if set, else local/secrets.json].
    #[arg(long, value_name = "FILE")]
    pub secrets: Option<PathBuf>,
}

/// Who replays when `--operator` is not given: `USER`, read like every variable (documented in
/// the core's catalog with its default).
pub(crate) fn default_operator() -> String {
    Env::process()
        .parse(&catalog::USER)
        .unwrap_or_else(|_| "operator".to_owned())
}

#[cfg(test)]
mod tests;
