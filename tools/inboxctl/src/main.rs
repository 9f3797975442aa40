//! `inboxctl`: the webhook ingestor's operator CLI.
//!
//! Lists, inspects, replays and purges stored messages, shows statistics, sends signed test
//! events to a running ingest endpoint, and manages the tenants' prepaid wallets (create, balance,
//! ledger, reconcile). The same flags work against the local emulator and AWS:
//! the endpoint, region and credentials come from the standard AWS environment
//! (`AWS_ENDPOINT_URL`, `AWS_REGION`, profiles, …).
//!
//! Exit codes: 0 success, 1 operational failure, 2 usage error.

mod cli;
mod commands;
mod console;
mod context;
mod error;
mod output;
mod sample;
mod secret_input;
mod server;
mod when;

use clap::Parser as _;
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
