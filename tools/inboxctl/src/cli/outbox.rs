//! The outbox's commands on the command line: `dest …` (destinations), `deliveries …` (what was
//! sent where, retries, replays) and `listen` (a local receiver, like `stripe listen`).

use crate::when::When;
use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use inbox_core::outbox::destination::DestinationId;

/// `inboxctl dest …`: destinations of the outbox (every change journaled).
#[derive(Debug, Subcommand)]
pub enum DestCommand {
    /// Add a destination (its signing secret is generated unless given, and printed once).
    Add(DestAddArgs),
    /// Every destination: state, URL, patterns, rate, circuit.
    List,
    /// One destination: its settings, circuit, secrets (ages only) and journal.
    Show(DestIdArgs),
    /// Stop sending to it (deliveries wait, nothing is lost).
    Pause(DestReasonArgs),
    /// Send to it again (also after it was disabled).
    Resume(DestIdArgs),
    /// Add a new signing secret; the old ones keep signing for a while.
    RotateSecret(DestRotateArgs),
    /// Remove a destination (its journal stays; its pending deliveries fail).
    Rm(DestIdArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DestAddArgs {
    /// The destination's id (a-z, 0-9, '-', '_').
    pub id: DestinationId,
    /// Where to POST: https://… (http:// to loopback only with --allow-http, for local testing).
    #[arg(long)]
    pub url: String,
    /// The events it wants, `source:type` with `*` wildcards (repeatable): `stripe:checkout.session.*`,
    /// `mailer:*`, `*`.
    #[arg(long = "pattern", value_name = "PATTERN", required = true)]
    pub patterns: Vec<String>,
    /// The signing secret (`whsec_…`) [default: $INBOXCTL_SECRET, else generated]. On the command
    /// line it is visible in the process list: prefer the variable.
    #[arg(long)]
    pub secret: Option<String>,
    /// Requests per second (all workers together).
    #[arg(long, default_value_t = 10.0)]
    pub rate: f64,
    /// Requests allowed at once above the rate.
    #[arg(long, default_value_t = 10)]
    pub burst: u32,
    /// Requests in flight at once, per worker.
    #[arg(long, default_value_t = 10)]
    pub max_in_flight: u32,
    /// Request timeout, ms (at most 30000).
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// Delays before each attempt [default: 0,5s,5m,30m,2h,5h,10h,10h], each ±20 %.
    #[arg(long)]
    pub schedule: Option<String>,
    /// Accept an http:// URL (the deliver function still sends plain HTTP only to loopback, and
    /// only with DELIVERY_ALLOW_LOOPBACK=true).
    #[arg(long)]
    pub allow_http: bool,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct DestIdArgs {
    /// The destination's id.
    pub id: DestinationId,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct DestReasonArgs {
    /// The destination's id.
    pub id: DestinationId,
    /// Why (journaled, shown by `dest list`).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct DestRotateArgs {
    /// The destination's id.
    pub id: DestinationId,
    /// The new secret (`whsec_…`) [default: $INBOXCTL_SECRET, else generated and printed once].
    #[arg(long)]
    pub secret: Option<String>,
    /// How long the previous secrets keep signing: 30m, 24h, 7d.
    #[arg(long, default_value = "24h")]
    pub keep_old_for: String,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

/// A delivery status, as typed on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeliveryStatusArg {
    Pending,
    Delivering,
    Retrying,
    Delivered,
    Failed,
}

/// `inboxctl deliveries …`: the outbox's deliveries.
#[derive(Debug, Subcommand)]
pub enum DeliveriesCommand {
    /// List deliveries, oldest first.
    List(DeliveriesListArgs),
    /// One delivery with its attempt journal.
    Show(DeliveryKeyArgs),
    /// Send failed (or any) deliveries again: one, or in bulk (dry run unless --yes).
    Retry(DeliveriesRetryArgs),
    /// Deliver an event again to one destination or to every destination that wants it (same
    /// webhook-id per destination: receivers deduplicate).
    Replay(DeliveriesReplayArgs),
}

#[derive(Debug, Clone, Args)]
pub struct DeliveriesListArgs {
    /// Only deliveries to this destination.
    #[arg(long = "dest", value_name = "ID")]
    pub destination: Option<DestinationId>,
    /// Only deliveries in this status.
    #[arg(long, value_enum)]
    pub status: Option<DeliveryStatusArg>,
    /// Only deliveries of events of this source.
    #[arg(long)]
    pub source: Option<String>,
    /// Only deliveries of this event id.
    #[arg(long)]
    pub event_id: Option<String>,
    /// Created at or after WHEN (RFC 3339, a date, or an age: 2h, 30m, 7d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<When>,
    /// At most this many.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
}

#[derive(Debug, Clone, Args)]
pub struct DeliveryKeyArgs {
    /// The destination's id.
    pub destination: DestinationId,
    /// The event's source.
    pub source: String,
    /// The event's id.
    pub event_id: String,
}

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("what").required(true).args(["destination", "status"])))]
pub struct DeliveriesRetryArgs {
    /// One delivery: the destination's id (with SOURCE EVENT_ID).
    #[arg(requires_all = ["source", "event_id"])]
    pub destination: Option<DestinationId>,
    /// One delivery: the event's source.
    pub source: Option<String>,
    /// One delivery: the event's id.
    pub event_id: Option<String>,
    /// Bulk: every delivery in this status (usually failed).
    #[arg(long, value_enum, conflicts_with = "destination")]
    pub status: Option<DeliveryStatusArg>,
    /// Bulk: only deliveries to this destination.
    #[arg(long = "dest", value_name = "ID", requires = "status")]
    pub bulk_destination: Option<DestinationId>,
    /// Bulk: really retry (without it, only print what would be retried).
    #[arg(long, requires = "status")]
    pub yes: bool,
    /// Who retries (noted on each delivery) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct DeliveriesReplayArgs {
    /// The event's source.
    pub source: String,
    /// The event's id.
    pub event_id: String,
    /// Only to this destination (default: every destination that has a delivery of the event or
    /// wants it now).
    #[arg(long = "dest", value_name = "ID")]
    pub destination: Option<DestinationId>,
    /// Who replays (noted on each delivery) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct ListenArgs {
    /// The port to listen on (127.0.0.1).
    #[arg(long, default_value_t = 9100)]
    pub port: u16,
    /// The destination's signing secret (`whsec_…`, repeatable): any one verifying passes
    /// [default: $INBOXCTL_SECRET, comma-separated; else asked for, or read from standard input].
    /// On the command line it is visible in the process list: prefer the variable.
    #[arg(long = "secret", value_name = "WHSEC")]
    pub secrets: Vec<String>,
    /// Answer every delivery with this status instead of 200 (e.g. 500, 410, 429).
    #[arg(long, default_value_t = 200)]
    pub status: u16,
    /// With a 429 or 503: the `Retry-After` to send, seconds.
    #[arg(long, value_name = "SECS")]
    pub retry_after: Option<u64>,
    /// Answer 500 to every Nth delivery (1-based), --status to the others.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub fail_every: Option<u64>,
    /// Wait this long before answering, ms.
    #[arg(long, default_value_t = 0)]
    pub delay_ms: u64,
    /// Print the payload of each delivery too (by default only its size: a payload may hold
    /// personal data).
    #[arg(long = "show-body", alias = "body")]
    pub show_body: bool,
    /// Stop after this many deliveries (default: run until Ctrl-C).
    #[arg(long)]
    pub max: Option<u64>,
}
