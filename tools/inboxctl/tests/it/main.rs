//! The CLI's integration tests, one binary: `inboxctl` run as a user runs it, against the
//! emulator `make test` starts.
//!
//! - [`cli`]: list, show, replay, purge, stats, send.
//! - [`wallet`]: the wallet commands.
//! - [`outbox`]: dest, deliveries, listen, and the outbox part of stats.
//! - [`stripe`]: stripe catch-up against the local Stripe stand-in.
//! - [`console`]: the operator console in a real browser (Chromium driven by Playwright).

#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers of tests: a failed setup is a failed test

mod cli;
mod console;
mod outbox;
mod stripe;
mod wallet;
