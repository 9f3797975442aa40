//! The configuration page's tables (`docs/configuration.md`), rendered from the variables' documentation in code: the
//! core's (`inbox_core::config::catalog`, its own and the libraries') and the wallet ledger's
//! (`wallet_ledger::config`), the Stripe module's (`stripe_charges::config`) and the wallet API's
//! (`wallet_api::config`). This crate sees every crate that declares variables, so the check
//! (`tests/it/config_docs.rs`) and the command that rewrites the page ([`REGENERATE`]) live here.

use inbox_core::config::doc::readers::{CATCH_UP, DELIVER, INGEST, PROCESS, REAPER, RECONCILE};
use inbox_core::config::doc::{self, SpliceError};
use inbox_core::config::{catalog, Var};
use std::path::PathBuf;
use wallet_ledger::config::{CHARGE, WALLET_API};

/// The command that rewrites the page's generated sections (`make config-docs` runs it).
pub const REGENERATE: &str = "cargo run -q -p integration-tests --bin config_docs";

/// Every documented variable, in the page's order: the inbox's, the wallet ledger's, then
/// those the libraries read.
pub fn variables() -> Vec<&'static Var> {
    catalog::ALL
        .iter()
        .chain(wallet_ledger::config::VARS)
        .chain(stripe_charges::config::VARS)
        .chain(wallet_api::config::VARS)
        .chain(catalog::LIBRARY)
        .copied()
        .collect()
}

/// The deployment's functions as `template.yaml` names them, in the order the page lists the
/// readers of a variable every function reads: the core's and the wallet's. The core names none
/// of its applications' functions, so they are listed here, where every crate is seen.
pub const FUNCTIONS: &[&str] = &[
    INGEST, PROCESS, REAPER, RECONCILE, DELIVER, CHARGE, CATCH_UP, WALLET_API,
];

/// The page of every variable, `docs/configuration.md`.
pub fn page_path() -> PathBuf {
    crate::root().join("docs/configuration.md")
}

/// `page` with its generated sections rendered from [`variables`].
pub fn render(page: &str) -> Result<String, SpliceError> {
    doc::splice(page, &variables(), FUNCTIONS)
}

/// The generated sections of `text` (from each begin marker to its end marker), for messages.
pub fn sections(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!-- config:begin ") {
        let Some(len) = rest[start..].find("<!-- config:end -->") else {
            break;
        };
        let end = start + len + "<!-- config:end -->".len();
        out.push(&rest[start..end]);
        rest = &rest[end..];
    }
    out
}
