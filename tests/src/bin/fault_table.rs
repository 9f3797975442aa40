//! Renders the counts the fault-injection tests recorded (JSON lines, `FAULT_COUNTS`) into
//! `docs/faults.md`: what was injected, how often, what was found.
//!
//! Run: `make fault-table` (runs the fault tests with `FAULT_COUNTS` set, then this), or
//! `cargo run -q -p integration-tests --bin fault_table -- <counts.jsonl> <out.md>`.

use integration_tests::faults::report::{render, Row};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: fault_table <counts.jsonl> <out.md>");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(input) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "fault_table: reading {input}: {e} (run the fault tests with FAULT_COUNTS={input})"
            );
            return ExitCode::FAILURE;
        }
    };
    let mut rows = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<Row>(line) {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("fault_table: {input}:{}: {e}", n + 1);
                return ExitCode::FAILURE;
            }
        }
    }
    if rows.is_empty() {
        eprintln!("fault_table: {input} holds no rows: did the fault tests run?");
        return ExitCode::FAILURE;
    }
    if let Err(e) = std::fs::write(output, render(&rows)) {
        eprintln!("fault_table: writing {output}: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("{output}: {} rows", rows.len());
    ExitCode::SUCCESS
}
