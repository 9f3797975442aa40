//! The capacity table: for every partition-key pattern the table uses, the read and write units
//! per second it takes at a given rate of webhooks, against DynamoDB's per-partition limits, and
//! the rate at which each key caps; the design's ceiling for the whole stack and for one tenant.
//!
//! ```text
//! capacity [--figures DIR] [--rate N] [--wallet-shards K]
//! ```
//!
//! Reads what `pipeline_figures` and `outbox_figures` measured (`DIR/keys-*.json`: read and write
//! units by partition-key pattern of one wallet webhook, one delivery, one hold of the wallet API
//! and the webhook that captures it; `integration_tests::pipeline::keys`), and writes the table
//! as figures (`DIR/capacity.jsonl`) for `bench-tools figures`, which renders it into
//! `docs/benchmarks.md` (`<!-- capacity:begin -->`).
//!
//! The workloads: **the stack** takes N webhooks/s, each processed by the wallet handler (a
//! debit) and delivered to one destination (the fan-out's own writes stated from the code,
//! [`fan_out_from_code`]); **one tenant** sends emails, each a hold placed
//! through the wallet API and the delivery webhook that captures it. A key shared by the whole
//! stack caps at `partitions × limit / units per webhook`; a key shared by one tenant (or one
//! destination) caps that tenant; a key of one event never caps (its rate is its event's).
//! Inside one partition key, DynamoDB can split items apart by sort-key range when they are
//! hot ("split for heat"), except one item (it is served by one partition) and items written in
//! increasing sort-key order (every new one lands at the end of the range): those groups are
//! what caps a tenant's key; the whole key in one partition is the bound before any split.
//! `--wallet-shards K` (1, as measured, by default: what `make bench` records) spreads the
//! balance item's units over K shard items of their own partition keys, to read the table at
//! another K. The hot tenant (5,000 holds + 5,000 debits a second on one wallet) is read from
//! the hold and capture measured on a wallet of 8 shards with a warm view (`keys-hold-k8.json`,
//! `keys-capture-k8.json`): each movement reads and writes only its own shard, so the balance's
//! units spread over K, less the read units the function instances' view refreshes take of
//! every shard ([`table::VIEW_INSTANCES`]); its rows, the K it needs and the emails/s one
//! tenant's keys carry there are figures of their own, as is the K at which one tenant reaches
//! 1,000 emails/s.

mod model;
mod render;
mod table;

use model::{read_flow, Shards};
use render::SOURCES;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use table::compute;

fn figures_args() -> Result<(PathBuf, f64, f64), String> {
    let mut dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures");
    let mut rate = 1000.0;
    let mut k = 1.0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--figures", Some(d)) => dir = PathBuf::from(d),
            ("--rate", Some(r)) => rate = r.parse().map_err(|_| format!("--rate {r}: a number"))?,
            ("--wallet-shards", Some(n)) => {
                k = n
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .map(f64::from)
                    .ok_or(format!("--wallet-shards {n}: a whole number ≥ 1"))?
            }
            _ => {
                return Err("usage: capacity [--figures DIR] [--rate N] [--wallet-shards K]".into())
            }
        }
    }
    Ok((dir, rate, k))
}

fn run() -> Result<(), String> {
    let (dir, rate, k) = figures_args()?;
    let mut flows = BTreeMap::new();
    let mut whats = Vec::new();
    let mut shards = Shards::new();
    for name in [
        "webhook",
        "delivery",
        "hold",
        "capture",
        "hold-k8",
        "capture-k8",
    ] {
        let (f, what) = read_flow(&dir, name, &mut shards)?;
        flows.insert(name, f);
        whats.push(format!("{name}: {what}"));
    }
    let c = compute(&flows, rate, k, &shards);
    let lines = render::figures(&c, rate, k, &whats);
    let out = dir.join("capacity.jsonl");
    std::fs::write(&out, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    println!("  sources: {SOURCES}");
    println!("figures written to {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("capacity: {e}");
            ExitCode::FAILURE
        }
    }
}
