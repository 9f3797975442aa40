//! Integration-test support: the local AWS emulators (DynamoDB Local, moto), tables created from `template.yaml`,
//! real-shaped API Gateway HTTP API (payload 2.0) events, and signing with the local secrets;
//! the outbox's rig ([`outbox`]), a programmable local receiver ([`receiver`]) and the local
//! Stripe stand-in ([`stripe`]).
//! Here: the workspace's paths, the local configuration and the venv's Python; the emulator
//! ([`emulator`]), the ingest harness ([`harness`]) and the events ([`events`]) have their own
//! modules, re-exported at the root; [`faults`] supports the fault-injection suite; [`contention`]
//! answers DynamoDB requests as DynamoDB does under contention (transaction conflicts).
//!
//! Tests expect `AWS_ENDPOINT_URL_DYNAMODB` to point at a running DynamoDB Local,
//! `AWS_ENDPOINT_URL` at a running moto server and `INBOX_VENV` at the project's Python venv:
//! `make test` (scripts/test.sh) provides them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: a failed setup is a failed test

pub mod config_docs;
pub mod contention;
pub mod emulator;
pub mod events;
pub mod faults;
pub mod harness;
pub mod outbox;
pub mod pipeline;
pub mod receiver;
pub mod stripe;

#[cfg(test)]
mod code_size;
#[cfg(test)]
mod core_names;

pub use emulator::{
    body_bucket, counted_body_bucket, create_table, endpoints, scan_all, sdk_config,
    sdk_config_for, table_definition, Endpoints,
};
pub use events::{api_event, mailer_event, realistic_padding, stripe_event};
pub use harness::{raw_body, Harness, Reply, TEST_MAX_BODY_BYTES};

use inbox_core::sources::{parse_secrets, Sources};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The project's Python venv (`INBOX_VENV`, else `.venv` in the workspace).
pub fn venv() -> PathBuf {
    std::env::var_os("INBOX_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv"))
}

/// The venv's Python interpreter.
pub fn python() -> PathBuf {
    venv().join("bin").join("python")
}

/// `prefix` followed by a fresh UUID's 32 hex digits: an id no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// The wall clock, in Unix seconds.
pub fn now_secs() -> i64 {
    inbox_core::clock::Clock::now_secs(&inbox_core::clock::SystemClock)
}

/// The local sources and secrets (`local/*.json`), the same ones `make dev` serves.
pub fn local_sources() -> Sources {
    local_sources_fetching(None)
}

/// The local sources, with `fetcher` (when given) for what SNS publishes and the confirmation URLs
/// its subscription handshakes visit: tests never reach the network.
pub fn local_sources_fetching(
    fetcher: Option<&std::sync::Arc<dyn inbox_core::signature::Fetcher>>,
) -> Sources {
    let read =
        |f: &str| std::fs::read_to_string(root().join("local").join(f)).expect("read local config");
    let secrets = parse_secrets(&read("secrets.json"), "WEBHOOK_SECRETS").expect("local secrets");
    Sources::from_json_with_fetcher(&read("sources.json"), &secrets, fetcher)
        .expect("local sources")
}

/// The first secret of `source` in `local/secrets.json`, as written there (e.g. `whsec_…`), for
/// handing to a provider's own library.
pub fn local_secret(source: &str) -> String {
    let text = std::fs::read_to_string(root().join("local/secrets.json"))
        .expect("read local/secrets.json");
    // Read as plain JSON: `parse_secrets` yields redacted `Secret`s, on purpose unreadable here.
    let secrets: HashMap<String, Vec<String>> =
        serde_json::from_str(&text).expect("local secrets: source → list of secrets");
    secrets
        .get(source)
        .and_then(|s| s.first())
        .cloned()
        .unwrap_or_else(|| panic!("no local secret for source {source:?}"))
}

/// Runs `script` with the venv's Python (`python -c script`), writes `input` as JSON to its stdin
/// and returns the JSON it prints on stdout. Nothing is interpolated into the script or a shell:
/// the script reads its data with `json.load(sys.stdin)`. Panics with Python's stderr if it fails.
pub fn run_python(script: &str, input: &Value) -> Value {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(python())
        .arg("-c")
        .arg(script)
        .env("PYTHONIOENCODING", "utf-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} ({e}): run the tests with `make test`, which sets INBOX_VENV",
                python().display()
            )
        });
    let mut stdin = child.stdin.take().expect("python's stdin");
    let data = serde_json::to_vec(input).expect("JSON input");
    // Written from a thread so that a large input cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output().expect("wait for python");
    let written = writer.join().expect("stdin writer thread");
    assert!(
        out.status.success(),
        "python failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    written.expect("write python's stdin");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "python did not print JSON ({e}): {:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
