//! Rewrites the generated configuration sections of `docs/configuration.md` from the variables' documentation in
//! code (see `integration_tests::config_docs`). `--check` only reports whether they are current.
//!
//! Run: `make config-docs`, or `cargo run -q -p integration-tests --bin config_docs [-- --check]`.

use integration_tests::config_docs::{page_path, render};
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().skip(1).any(|a| a == "--check");
    let path = page_path();
    let result = std::fs::read_to_string(&path)
        .map_err(|e| format!("reading {}: {e}", path.display()))
        .and_then(|text| {
            let rendered = render(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok((text, rendered))
        });
    let (text, rendered) = match result {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if text == rendered {
        println!("{}: the configuration sections are current", path.display());
        return ExitCode::SUCCESS;
    }
    if check {
        eprintln!(
            "{}: the configuration sections are stale; run `make config-docs`",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(&path, rendered) {
        eprintln!("error: writing {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("{}: configuration sections rewritten", path.display());
    ExitCode::SUCCESS
}
