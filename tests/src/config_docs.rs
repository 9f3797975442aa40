//! The README's configuration tables, rendered from the variables' documentation in code: the
//! core's (`inbox_core::config::catalog`, its own and the libraries') and the wallet ledger's
//! (`wallet_ledger::config`). This crate sees every crate that declares variables, so the check
//! (`tests/it/config_docs.rs`) and the command that rewrites the README ([`REGENERATE`]) live here.

use inbox_core::config::doc::{self, SpliceError};
use inbox_core::config::{catalog, Var};
use std::path::PathBuf;

/// The command that rewrites the README's generated sections (`make config-docs` runs it).
pub const REGENERATE: &str = "cargo run -q -p integration-tests --bin config_docs";

/// Every documented variable, in the README's order: the inbox's, the wallet ledger's, then
/// those the libraries read.
pub fn variables() -> Vec<&'static Var> {
    catalog::ALL
        .iter()
        .chain(wallet_ledger::config::VARS)
        .chain(catalog::LIBRARY)
        .copied()
        .collect()
}

/// The README.
pub fn readme_path() -> PathBuf {
    crate::root().join("README.md")
}

/// `readme` with its generated sections rendered from [`variables`].
pub fn render(readme: &str) -> Result<String, SpliceError> {
    doc::splice(readme, &variables())
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
