//! Dollars per million webhooks at list prices, computed from the measured counts.
//!
//! ```text
//! cost [--figures DIR]
//! ```
//!
//! Reads `DIR/units.json` (what `pipeline_figures` measured per webhook: DynamoDB write and read
//! units, S3 requests, for a 2 KB and a 64 KB event; DIR defaults to `target/bench-figures`),
//! prices every request a webhook causes and writes the result as figures (`DIR/cost.jsonl`) for
//! `bench-tools figures`, which renders the cost table of `docs/benchmarks.md` from them.
//!
//! What is measured and what is assumed:
//!
//! - measured: DynamoDB write units (table, open index, events index) and read units, S3 PUTs
//!   and GETs per webhook; the functions' log lines at `INFO` (`ingest_log`, `process_log`: what the
//!   functions' own JSON subscriber wrote while the ingest handler and the processor ran); the
//!   functions' memory sizes are the template's;
//! - assumed (no AWS account here): the billed duration of an invocation, which in AWS is the
//!   round trips to DynamoDB and S3 (the ingest handler's own CPU time is ~10 µs); Lambda's own
//!   platform lines (`platform.start`, `platform.report` at the template's `SystemLogLevel`
//!   `INFO`, sized from records of AWS's documented JSON shape, with X-Ray tracing on), and
//!   CloudWatch's 26 bytes per log event. Constants below, stated in the output.
//!
//! SQS costs nothing on the happy path (retries only); Lambda's stream reads of the table are free.
//!
//! A delivery (one event to one destination, a 200 at the first attempt) gets rows of its own,
//! from what `outbox_figures` measured per happy-path delivery (`DIR/outbox_units.json`: DynamoDB
//! write units and requests, from the stream and from the delivery queue), with its own
//! assumptions (`assume_delivery`): the deliver function's billed time per delivery, one read
//! unit for the event's item (a body under 4 KB, read consistently in the batch's
//! `BatchGetItem`), its log line, and on the queue path the SQS requests of the message that
//! carried it. Rows are skipped, with a note, when `outbox_figures` has not run.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// List prices, us-east-1, as published on the AWS pricing pages of each service (API Gateway,
/// Lambda, DynamoDB, S3, SQS, CloudWatch); read 2025-11, DynamoDB's on-demand prices after the
/// November 2024 reduction. Dollars.
mod price {
    /// HTTP API, per request (the first 300 million a month; metered per 512 KB).
    pub const API_GATEWAY_HTTP: f64 = 1.00 / 1e6;
    /// Per invocation.
    pub const LAMBDA_REQUEST: f64 = 0.20 / 1e6;
    /// Per GB-second, x86.
    pub const LAMBDA_GB_SECOND: f64 = 0.000_016_666_7;
    /// On-demand, standard table class.
    pub const DYNAMODB_WRU: f64 = 0.625 / 1e6;
    pub const DYNAMODB_RRU: f64 = 0.125 / 1e6;
    /// S3 Standard.
    pub const S3_PUT: f64 = 0.005 / 1e3;
    pub const S3_GET: f64 = 0.0004 / 1e3;
    /// Standard queue, per request.
    pub const SQS_REQUEST: f64 = 0.40 / 1e6;
    /// CloudWatch Logs ingestion, per GB.
    pub const LOGS_GB: f64 = 0.50;
    pub const SOURCE: &str = "AWS list prices, us-east-1, read 2025-11 (DynamoDB on-demand after the November 2024 reduction): API Gateway HTTP API $1.00/M requests; Lambda $0.20/M requests + $0.0000166667/GB-s (x86); DynamoDB $0.625/M WRU, $0.125/M RRU; S3 $0.005/1k PUT, $0.0004/1k GET; SQS $0.40/M; CloudWatch Logs $0.50/GB";
}

/// Assumptions (see the module doc). Memory sizes are the template's.
mod assume {
    pub const INGEST_MEMORY_MB: f64 = 128.0;
    pub const PROCESS_MEMORY_MB: f64 = 256.0;
    /// Billed ms of one ingest invocation: one in-region DynamoDB write (~6 ms), + an S3 PUT
    /// (~25 ms) when the body goes to S3.
    pub const INGEST_MS: f64 = 8.0;
    pub const INGEST_S3_MS: f64 = 25.0;
    /// Billed ms per record of a process invocation: two item reads and the transaction
    /// (~20 ms), 10 records at a time; + an item read and an S3 GET (~15 ms) for a body in S3.
    pub const PROCESS_MS_PER_RECORD: f64 = 2.0;
    pub const PROCESS_S3_MS_PER_RECORD: f64 = 1.5;
    /// Records per process invocation (the stream's batch size).
    pub const RECORDS_PER_BATCH: f64 = 100.0;
    /// Lambda's platform records per invocation at `SystemLogLevel: INFO` (the JSON log format's
    /// `platform.start` and `platform.report`; `END` is not sent in that format), in AWS's
    /// documented shape with X-Ray tracing active, as the template has it.
    pub const PLATFORM_RECORDS: [&str; 2] = [
        r#"{"time":"2026-12-01T10:00:00.000Z","type":"platform.start","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","version":"$LATEST","tracing":{"spanId":"54565fb41ac79632","type":"X-Amzn-Trace-Id","value":"Root=1-62e900b2-710d76f009d6e7785905449a;Parent=0efbd19962d95b05;Sampled=1"}}}"#,
        r#"{"time":"2026-12-01T10:00:00.009Z","type":"platform.report","record":{"requestId":"6d68ca91-49c9-448d-89b8-7ca3e6dc66aa","metrics":{"durationMs":8.412,"billedDurationMs":9,"memorySizeMB":128,"maxMemoryUsedMB":21},"tracing":{"spanId":"54565fb41ac79632","type":"X-Amzn-Trace-Id","value":"Root=1-62e900b2-710d76f009d6e7785905449a;Parent=0efbd19962d95b05;Sampled=1"},"status":"success"}}"#,
    ];
    /// What CloudWatch Logs counts per log event beside its message.
    pub const LOG_EVENT_OVERHEAD: f64 = 26.0;
}

/// CloudWatch Logs bytes per webhook: the measured lines of the ingest invocation (one per
/// webhook) and of the process invocation (its batch's lines shared by its records, as the
/// measurement's batch of one wrote them: an upper bound), each with its platform records and
/// the per-event overhead.
fn log_bytes(ingest: &[String], process: &[String]) -> f64 {
    let bytes = |lines: &[&str]| {
        lines
            .iter()
            .map(|l| l.len() as f64 + 1.0 + assume::LOG_EVENT_OVERHEAD)
            .sum::<f64>()
    };
    let platform = bytes(&assume::PLATFORM_RECORDS);
    let own = |lines: &[String]| bytes(&lines.iter().map(String::as_str).collect::<Vec<_>>());
    own(ingest) + platform + own(process) + platform / assume::RECORDS_PER_BATCH
}

/// Assumptions for a delivery (see the module doc).
mod assume_delivery {
    /// The deliver function's memory (the template's).
    pub const MEMORY_MB: f64 = 256.0;
    /// Billed ms per delivery: a batch of 10 sent at once takes about one POST (a receiver
    /// answering in ~100 ms) plus the batch's body read, the token lease, each claim and record
    /// (~20 ms in region): ~120 ms per 10 deliveries.
    pub const MS_PER_DELIVERY: f64 = 12.0;
    /// Deliveries per invocation (both event source mappings' `BatchSize`).
    pub const PER_BATCH: f64 = 10.0;
    /// Read units per delivery: the event's item (under 4 KB), strongly consistent.
    pub const RRU: f64 = 1.0;
    /// SQS requests per delivery from the queue: the `SendMessage` that scheduled it, and its
    /// share of the poller's `ReceiveMessage` and `DeleteMessageBatch` (batches of 10).
    pub const SQS_REQUESTS_QUEUE: f64 = 1.2;
    /// CloudWatch Logs bytes per delivery: its outcome line (~300 B) and its share of Lambda's
    /// platform lines (~400 B per invocation).
    pub const LOG_BYTES: f64 = 340.0;
}

/// What one happy-path delivery costs, by service (dollars per million deliveries).
fn delivery_bill(wru: f64, from_queue: bool) -> Bill {
    let m = 1e6;
    let gb_s = assume_delivery::MS_PER_DELIVERY / 1e3 * assume_delivery::MEMORY_MB / 1024.0;
    Bill {
        api_gateway: 0.0,
        lambda: m
            * (price::LAMBDA_REQUEST / assume_delivery::PER_BATCH + gb_s * price::LAMBDA_GB_SECOND),
        dynamodb: m * (wru * price::DYNAMODB_WRU + assume_delivery::RRU * price::DYNAMODB_RRU),
        s3: 0.0,
        sqs: if from_queue {
            m * assume_delivery::SQS_REQUESTS_QUEUE * price::SQS_REQUEST
        } else {
            0.0
        },
        logs: m * assume_delivery::LOG_BYTES / 1e9 * price::LOGS_GB,
    }
}

/// The cost rows of a happy-path delivery, from `outbox_units.json` (what `outbox_figures`
/// measured), or a note why there are none.
fn delivery_rows(dir: &Path) -> Result<Vec<String>, String> {
    let path = dir.join("outbox_units.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "  (no {}: run outbox_figures for the delivery rows)",
            path.display()
        );
        return Ok(Vec::new());
    };
    let units: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    for origin in ["stream", "queue"] {
        let wru = units[origin]["wru"]
            .as_f64()
            .ok_or(format!("outbox_units.json: no `{origin}.wru`"))?;
        let b = delivery_bill(wru, origin == "queue");
        println!(
            "  a delivery from the {origin}: ${:.2} per million: Lambda {:.2}, DynamoDB {:.2} ({wru:.2} WRU, {} RRU), SQS {:.2}, CloudWatch Logs {:.2}",
            b.total(), b.lambda, b.dynamodb, assume_delivery::RRU, b.sqs, b.logs
        );
        let row = serde_json::json!({
            "id": format!("cost.delivery.{origin}"),
            "figure": format!("dollars per million deliveries, happy path, from the {origin}"),
            "target": "—",
            "measured": format!("${:.2}", b.total()),
            "met": null,
            "cost": {"size": format!("a delivery, from the {origin}"), "api_gateway": b.api_gateway,
                     "lambda": b.lambda, "dynamodb": b.dynamodb, "s3": b.s3, "sqs": b.sqs,
                     "logs": b.logs, "total": b.total(), "wru": (wru * 100.0).round() / 100.0,
                     "rru": assume_delivery::RRU, "s3_requests": 0},
        });
        lines.push(row.to_string());
    }
    println!(
        "  assumed per delivery: deliver {} MB, {} ms billed, {} per invocation; {} RRU; {} SQS requests from the queue; {} log bytes",
        assume_delivery::MEMORY_MB,
        assume_delivery::MS_PER_DELIVERY,
        assume_delivery::PER_BATCH,
        assume_delivery::RRU,
        assume_delivery::SQS_REQUESTS_QUEUE,
        assume_delivery::LOG_BYTES
    );
    Ok(lines)
}

/// The counts of one event size, from `units.json`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counts {
    wru: f64,
    rru: f64,
    s3_puts: f64,
    s3_gets: f64,
    in_s3: bool,
    log_bytes: f64,
}

impl Counts {
    fn from_json(v: &Value) -> Result<Self, String> {
        let n = |k: &str| v[k].as_f64().ok_or(format!("units.json: no number `{k}`"));
        Ok(Self {
            wru: n("ingest_wru")?
                + n("ingest_index_wru")?
                // Records made before the events index was counted have none: 0 there.
                + v["ingest_events_index_wru"].as_f64().unwrap_or(0.0)
                + n("process_wru")?
                + n("process_index_wru")?,
            rru: n("process_rru")?,
            s3_puts: n("s3_puts")?,
            s3_gets: n("s3_gets")?,
            in_s3: v["body_in_s3"].as_bool().unwrap_or(false),
            log_bytes: log_bytes(&lines(v, "ingest_log")?, &lines(v, "process_log")?),
        })
    }
}

/// The log lines `pipeline_figures` captured under `k`.
fn lines(v: &Value, k: &str) -> Result<Vec<String>, String> {
    v[k].as_array()
        .ok_or(format!("units.json: no list of log lines `{k}`"))?
        .iter()
        .map(|l| {
            l.as_str()
                .map(str::to_owned)
                .ok_or(format!("units.json: `{k}` is not text"))
        })
        .collect()
}

/// Dollars per million webhooks, by service.
#[derive(Debug, Clone, PartialEq)]
struct Bill {
    api_gateway: f64,
    lambda: f64,
    dynamodb: f64,
    s3: f64,
    sqs: f64,
    logs: f64,
}

impl Bill {
    fn of(c: &Counts) -> Self {
        let m = 1e6;
        let ingest_ms = assume::INGEST_MS + if c.in_s3 { assume::INGEST_S3_MS } else { 0.0 };
        let process_ms = assume::PROCESS_MS_PER_RECORD
            + if c.in_s3 {
                assume::PROCESS_S3_MS_PER_RECORD
            } else {
                0.0
            };
        let gb_s = ingest_ms / 1e3 * assume::INGEST_MEMORY_MB / 1024.0
            + process_ms / 1e3 * assume::PROCESS_MEMORY_MB / 1024.0;
        let invocations = 1.0 + 1.0 / assume::RECORDS_PER_BATCH;
        Self {
            api_gateway: m * price::API_GATEWAY_HTTP,
            lambda: m * (invocations * price::LAMBDA_REQUEST + gb_s * price::LAMBDA_GB_SECOND),
            dynamodb: m * (c.wru * price::DYNAMODB_WRU + c.rru * price::DYNAMODB_RRU),
            s3: m * (c.s3_puts * price::S3_PUT + c.s3_gets * price::S3_GET),
            sqs: m * 0.0 * price::SQS_REQUEST,
            logs: m * c.log_bytes / 1e9 * price::LOGS_GB,
        }
    }

    fn total(&self) -> f64 {
        self.api_gateway + self.lambda + self.dynamodb + self.s3 + self.sqs + self.logs
    }
}

/// The target for a 2 KB wallet webhook, end to end, dollars per million.
const TARGET_2KB: f64 = 6.50;

fn figures_dir() -> Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures")),
        (Some("--figures"), Some(dir)) => Ok(PathBuf::from(dir)),
        _ => Err("usage: cost [--figures DIR]".into()),
    }
}

fn run() -> Result<(), String> {
    let dir = figures_dir()?;
    let path = dir.join("units.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e}; run pipeline_figures first (make bench)",
            path.display()
        )
    })?;
    let units: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    println!("== dollars per million webhooks (wallet handler, happy path) ==");
    println!("  prices: {}", price::SOURCE);
    let mut lines = Vec::new();
    for (size, target) in [("2KB", Some(TARGET_2KB)), ("64KB", None)] {
        let c = Counts::from_json(&units[size])?;
        let b = Bill::of(&c);
        println!(
            "  {size:<5} ${:.2}: API Gateway {:.2}, Lambda {:.2}, DynamoDB {:.2} ({} WRU, {} RRU), S3 {:.2}, SQS {:.2}, CloudWatch Logs {:.2} ({:.0} bytes)",
            b.total(), b.api_gateway, b.lambda, b.dynamodb, c.wru, c.rru, b.s3, b.sqs, b.logs, c.log_bytes
        );
        let row = serde_json::json!({
            "id": format!("cost.{size}"),
            "figure": format!("dollars per million webhooks, {size} event"),
            "target": target.map_or("—".to_owned(), |t| format!("≤ ${t:.2}")),
            "measured": format!("${:.2}", b.total()),
            "met": target.map(|t| b.total() <= t),
            "cost": {"size": size, "api_gateway": b.api_gateway, "lambda": b.lambda,
                     "dynamodb": b.dynamodb, "s3": b.s3, "sqs": b.sqs, "logs": b.logs,
                     "total": b.total(), "wru": c.wru, "rru": c.rru, "log_bytes": c.log_bytes,
                     "s3_requests": c.s3_puts + c.s3_gets},
        });
        lines.push(row.to_string());
    }
    println!(
        "  assumed: ingest {} MB, {} ms (+{} ms with an S3 PUT); process {} MB, {} ms per record (+{} ms for a body in S3), {} records per invocation; Lambda's platform records {} bytes per invocation, {} bytes per log event (the functions' own lines measured)",
        assume::INGEST_MEMORY_MB,
        assume::INGEST_MS,
        assume::INGEST_S3_MS,
        assume::PROCESS_MEMORY_MB,
        assume::PROCESS_MS_PER_RECORD,
        assume::PROCESS_S3_MS_PER_RECORD,
        assume::RECORDS_PER_BATCH,
        assume::PLATFORM_RECORDS.iter().map(|r| r.len()).sum::<usize>(),
        assume::LOG_EVENT_OVERHEAD
    );
    lines.extend(delivery_rows(&dir)?);
    let out = dir.join("cost.jsonl");
    std::fs::write(&out, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
    println!("figures written to {}", out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cost: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bill_adds_up_its_services_at_the_stated_prices() {
        let c = Counts {
            wru: 14.0,
            rru: 2.0,
            s3_puts: 0.0,
            s3_gets: 0.0,
            in_s3: false,
            log_bytes: 1000.0,
        };
        let b = Bill::of(&c);
        assert!(
            (b.logs - 0.5).abs() < 1e-9,
            "1,000 bytes a webhook at $0.50/GB"
        );
        assert!((b.api_gateway - 1.0).abs() < 1e-9);
        assert!((b.dynamodb - (14.0 * 0.625 + 2.0 * 0.125)).abs() < 1e-9);
        assert_eq!(b.s3, 0.0);
        let lambda = 1.01 * 0.20 + (0.008 * 0.125 + 0.002 * 0.25) * 1e6 * 0.000_016_666_7;
        assert!((b.lambda - lambda).abs() < 1e-6, "{} vs {lambda}", b.lambda);
        let total = b.api_gateway + b.lambda + b.dynamodb + b.logs;
        assert!((b.total() - total).abs() < 1e-9);
        let in_s3 = Bill::of(&Counts {
            s3_puts: 1.0,
            s3_gets: 1.0,
            in_s3: true,
            ..c
        });
        assert!((in_s3.s3 - 5.4).abs() < 1e-9, "a PUT and a GET per webhook");
        assert!(
            in_s3.lambda > b.lambda,
            "the S3 round trips are billed time"
        );
    }

    #[test]
    fn a_delivery_s_bill_prices_its_units_and_the_queue_s_requests() {
        let stream = delivery_bill(2.0, false);
        let queue = delivery_bill(2.0, true);
        assert_eq!(stream.api_gateway, 0.0);
        assert!((stream.dynamodb - (2.0 * 0.625 + 0.125)).abs() < 1e-9);
        assert_eq!(stream.sqs, 0.0);
        assert!(
            (queue.sqs - 1.2 * 0.40).abs() < 1e-9,
            "SQS on the queue path only"
        );
        let lambda = 0.02 + 0.012 * 0.25 * 1e6 * 0.000_016_666_7;
        assert!((stream.lambda - lambda).abs() < 1e-6, "{}", stream.lambda);
        assert!(queue.total() > stream.total());
    }

    #[test]
    fn counts_come_from_units_json() {
        let v = serde_json::json!({"ingest_wru": 2, "ingest_index_wru": 1, "process_wru": 10,
                                   "process_index_wru": 1, "process_rru": 2, "s3_puts": 0,
                                   "s3_gets": 0, "body_in_s3": false,
                                   "ingest_log": ["x".repeat(99)], "process_log": []});
        let c = Counts::from_json(&v).unwrap();
        assert_eq!((c.wru, c.rru), (14.0, 2.0));
        let platform: f64 = assume::PLATFORM_RECORDS
            .iter()
            .map(|r| r.len() as f64 + 27.0)
            .sum();
        let expected = 126.0 + platform * 1.01;
        assert!(
            (c.log_bytes - expected).abs() < 1e-9,
            "{} vs {expected}",
            c.log_bytes
        );
        assert!(Counts::from_json(&serde_json::json!({})).is_err());
        let mut counted = v.clone();
        counted["ingest_events_index_wru"] = serde_json::json!(1);
        assert_eq!(
            Counts::from_json(&counted).unwrap().wru,
            15.0,
            "the events index's entry"
        );
    }
}
