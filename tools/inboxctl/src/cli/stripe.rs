//! `inboxctl stripe …` on the command line: catch-up from Stripe's events API.

use super::default_operator;
use crate::when::When;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `inboxctl stripe …`.
#[derive(Debug, Subcommand)]
pub enum StripeCommand {
    /// List Stripe's events since a time (its events API, paged, through the account's token
    /// bucket) and store every one the inbox lacks as if its webhook had arrived, through ingest's
    /// own identity and conditional write, recorded as `catch-up` by the operator; events already
    /// received are left untouched. Prints counts by outcome and what was missing; exit 1 if an
    /// event was refused. Needs STRIPE_SECRET_KEY (or STRIPE_SECRET_ARN), STRIPE_API_BASE, the
    /// table, and the sources (as `send` reads them).
    CatchUp(CatchUpArgs),
}

#[derive(Debug, Clone, Args)]
pub struct CatchUpArgs {
    /// How far back: an age (72h, 3d) or a time; at most 30 days (Stripe keeps no older event).
    #[arg(long, value_name = "WHEN")]
    pub since: When,
    /// The event types (comma-separated or repeated, at most 20) [default: the Stripe types the
    /// wallet and autopay handle].
    #[arg(long, value_name = "TYPE", value_delimiter = ',')]
    pub types: Vec<String>,
    /// Only the events Stripe reports undelivered (`delivery_success=false`): fewer pages, but
    /// blind to events Stripe delivered somewhere else (a mis-set endpoint URL that answered 2xx).
    #[arg(long)]
    pub undelivered_only: bool,
    /// List and compare only: store no event (the account's token bucket still counts the
    /// requests).
    #[arg(long)]
    pub dry_run: bool,
    /// The inbox source Stripe's webhooks arrive as [default: $WALLET_STRIPE_SOURCE, else stripe].
    #[arg(long, value_name = "SOURCE")]
    pub source: Option<String>,
    /// Who runs it (recorded on every event stored) [default: $USER, else operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
    /// Sources file [default: $WEBHOOK_SOURCES if set, else local/sources.json].
    #[arg(long, value_name = "FILE")]
    pub sources: Option<PathBuf>,
    /// Secrets file [default: $WEBHOOK_SECRETS if set, else local/secrets.json].
    #[arg(long, value_name = "FILE")]
    pub secrets: Option<PathBuf>,
}
