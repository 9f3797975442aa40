//! Cold start and binary size of the ingest function, against a hello-world Lambda.
//!
//! ```text
//! coldstart [--runs N] [--warmup N] [--runtime-api bare|http] [--local DIR] [--served N]
//!           [--ingest-env KEY=VALUE]... <ingest> <hello>
//! ```
//!
//! `<ingest>` and `<hello>` are release `bootstrap` binaries (`cargo lambda build --release --bin
//! ingest --bin hello`). For each binary, N times (default 30), alternating the two so that drift
//! hits both alike, it:
//!
//! 1. starts a tiny HTTP/1.1 server on 127.0.0.1 playing the Lambda Runtime API (one server for
//!    the whole run; it records the instant a `GET …/2018-06-01/runtime/invocation/next` arrives
//!    and holds that connection open, as the real Runtime API does while no event is queued);
//! 2. spawns the binary with a clean environment: `AWS_LAMBDA_RUNTIME_API`,
//!    `AWS_LAMBDA_FUNCTION_NAME=_`, `AWS_LAMBDA_FUNCTION_VERSION=1`,
//!    `AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256`, `AWS_REGION=us-east-1`, dummy credentials, and for
//!    ingest `TABLE_NAME`, `WEBHOOK_SOURCES` / `WEBHOOK_SECRETS` (from `local/*.json`) and
//!    `AWS_ENDPOINT_URL` pointing at a local sink that counts connections (an init that called
//!    AWS would show up there);
//! 3. measures process spawn → first `next` request (the end of the function's init), then kills
//!    the child.
//!
//! It prints median / p90 / min / max per binary, the ratio of medians ingest / hello (target
//! <= 1.5x), the binary sizes (ingest target <= 8 MB) and the connections the ingest init made to
//! the AWS endpoint (expected 0). Waits are on the request itself, with a deadline; no sleeps.
//!
//! Then, unless `--served 0`, a served run (`serve.rs`): ingest started as in the cloud (secrets
//! from a local Secrets Manager endpoint answering after 30 ms, the table on a local endpoint),
//! spawn → first response, and its peak RSS after N (default 10,000) signed webhooks through the
//! Runtime API, beside hello-world's after as many events; and the ingest's own init timeline
//! (its `init timeline` log line). The figures are written to `target/bench-figures/coldstart.jsonl`.
//!
//! `--runtime-api http` passes `http://127.0.0.1:<port>` instead of the bare `127.0.0.1:<port>`
//! that Lambda itself sets (both work with lambda_runtime 1.5). `--ingest-env KEY=VALUE` adds or
//! overrides a variable of the ingest process only, for experiments (e.g. `SSL_CERT_FILE`).

mod fakes;
mod serve;
mod start;

use fakes::{EndpointSink, RuntimeApi};
use start::{cold_start, Subject};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

const NEXT_PATH: &str = "/2018-06-01/runtime/invocation/next";
/// How long a binary may take to reach its first `next` request before the run fails.
const DEADLINE: Duration = Duration::from_secs(10);
const COLD_START_TARGET: f64 = 1.5;
const SIZE_TARGET_BYTES: u64 = 8_000_000;
const RSS_TARGET_BYTES: u64 = 32 * 1024 * 1024;
/// The round trip the fake Secrets Manager stands for.
const SECRETS_DELAY: Duration = Duration::from_millis(30);

struct Stats {
    median: Duration,
    p90: Duration,
    min: Duration,
    max: Duration,
    mean: Duration,
}

fn stats(samples: &[Duration]) -> Stats {
    let mut v = samples.to_vec();
    v.sort();
    let n = v.len();
    let rank = |q: f64| v[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    Stats {
        median: if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2
        },
        p90: rank(0.9),
        min: v[0],
        max: v[n - 1],
        mean: v.iter().sum::<Duration>() / n as u32,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Options {
    runs: usize,
    warmup: usize,
    http_form: bool,
    local: PathBuf,
    ingest_env: Vec<(String, String)>,
    served: usize,
    ingest: PathBuf,
    hello: PathBuf,
}

const USAGE: &str = "usage: coldstart [--runs N] [--warmup N] [--runtime-api bare|http] [--local DIR] [--served N] [--ingest-env KEY=VALUE]... <ingest-bootstrap> <hello-bootstrap>";

fn parse_args() -> Result<Options, String> {
    let mut runs = 30;
    let mut warmup = 2;
    let mut http_form = false;
    let mut local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../local");
    let mut ingest_env = Vec::new();
    let mut served = 10_000;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--runs" => {
                runs = value("--runs")?
                    .parse()
                    .map_err(|e| format!("--runs: {e}"))?
            }
            "--warmup" => {
                warmup = value("--warmup")?
                    .parse()
                    .map_err(|e| format!("--warmup: {e}"))?
            }
            "--runtime-api" => {
                http_form = match value("--runtime-api")?.as_str() {
                    "bare" => false,
                    "http" => true,
                    other => return Err(format!("--runtime-api: {other:?} is not bare or http")),
                }
            }
            "--local" => local = PathBuf::from(value("--local")?),
            "--served" => {
                served = value("--served")?
                    .parse()
                    .map_err(|e| format!("--served: {e}"))?
            }
            "--ingest-env" => {
                let pair = value("--ingest-env")?;
                let (k, v) = pair
                    .split_once('=')
                    .ok_or(format!("--ingest-env: {pair:?} is not KEY=VALUE"))?;
                ingest_env.push((k.to_owned(), v.to_owned()));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let [ingest, hello]: [PathBuf; 2] = paths
        .try_into()
        .map_err(|_| format!("two binaries are needed\n{USAGE}"))?;
    if runs == 0 {
        return Err("--runs must be at least 1".into());
    }
    Ok(Options {
        runs,
        warmup,
        http_form,
        local,
        ingest_env,
        served,
        ingest,
        hello,
    })
}

fn size_line(name: &str, path: &Path) -> Result<u64, String> {
    let bytes = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    println!(
        "  {name:<7} {bytes:>11} bytes = {:>6.2} MB = {:>6.2} MiB   {}",
        bytes as f64 / 1e6,
        bytes as f64 / (1024.0 * 1024.0),
        path.display()
    );
    Ok(bytes)
}

fn run() -> Result<(), String> {
    let opts = parse_args()?;
    let read = |file: &str| {
        let path = opts.local.join(file);
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let sink = EndpointSink::start()?;
    let api = RuntimeApi::start()?;
    let runtime_api = if opts.http_form {
        format!("http://{}", api.addr)
    } else {
        api.addr.to_string()
    };

    let mut ingest_env: Vec<(String, String)> = vec![
        ("TABLE_NAME".into(), "x".into()),
        ("WEBHOOK_SOURCES".into(), read("sources.json")?),
        ("WEBHOOK_SECRETS".into(), read("secrets.json")?),
        ("AWS_ENDPOINT_URL".into(), format!("http://{}", sink.addr)),
    ];
    // Later entries win (`Command::env` overrides), so extra variables may replace defaults.
    ingest_env.extend(opts.ingest_env.iter().cloned());
    let mut ingest = Subject {
        name: "ingest",
        path: opts.ingest.clone(),
        env: ingest_env,
        samples: Vec::new(),
    };
    let mut hello = Subject {
        name: "hello",
        path: opts.hello.clone(),
        env: Vec::new(),
        samples: Vec::new(),
    };

    println!("== cold start: process spawn -> first GET {NEXT_PATH} ==");
    println!(
        "AWS_LAMBDA_RUNTIME_API={runtime_api}; {} runs each, alternating, after {} untimed warm-up run(s) each",
        opts.runs, opts.warmup
    );
    for (k, v) in &opts.ingest_env {
        println!("extra ingest environment: {k}={v}");
    }
    for _ in 0..opts.warmup {
        cold_start(&api, &runtime_api, &ingest)?;
        cold_start(&api, &runtime_api, &hello)?;
    }
    for i in 0..opts.runs {
        // Alternate which goes first, so that neither always follows the other.
        let order: [&mut Subject; 2] = if i % 2 == 0 {
            [&mut ingest, &mut hello]
        } else {
            [&mut hello, &mut ingest]
        };
        for subject in order {
            let d = cold_start(&api, &runtime_api, subject)?;
            subject.samples.push(d);
        }
    }

    println!(
        "  {:<7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "binary", "median", "p90", "min", "max", "mean"
    );
    let mut medians = Vec::new();
    for subject in [&ingest, &hello] {
        let s = stats(&subject.samples);
        println!(
            "  {:<7} {:>7.2}ms {:>7.2}ms {:>7.2}ms {:>7.2}ms {:>7.2}ms",
            subject.name,
            ms(s.median),
            ms(s.p90),
            ms(s.min),
            ms(s.max),
            ms(s.mean)
        );
        medians.push(s.median);
    }
    let ratio = medians[0].as_secs_f64() / medians[1].as_secs_f64();
    let verdict = if ratio <= COLD_START_TARGET {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "  ratio of medians ingest/hello = {ratio:.2}x (target <= {COLD_START_TARGET:.1}x: {verdict})"
    );
    let connections = sink.count();
    println!(
        "  connections from ingest's init to the AWS endpoint (AWS_ENDPOINT_URL sink): {connections} in {} starts",
        opts.runs + opts.warmup
    );

    println!();
    println!("== binary size ==");
    let ingest_bytes = size_line("ingest", &opts.ingest)?;
    size_line("hello", &opts.hello)?;
    let verdict = if ingest_bytes <= SIZE_TARGET_BYTES {
        "met"
    } else {
        "MISSED"
    };
    println!(
        "  ingest: {:.2} MB (target <= 8 MB: {verdict})",
        ingest_bytes as f64 / 1e6
    );
    println!();
    println!(
        "SUMMARY cold start ingest/hello = {ratio:.2}x (median {:.2} ms vs {:.2} ms; target <= {COLD_START_TARGET:.1}x); ingest size {:.2} MB (target <= 8 MB); AWS connections at init: {connections}",
        ms(medians[0]),
        ms(medians[1]),
        ingest_bytes as f64 / 1e6
    );
    let mut lines = vec![
        figure(
            "coldstart.ratio",
            "cold start, spawn → first `next`: ingest / hello-world `lambda_runtime` (same release profile), ratio of medians",
            &format!("≤ {COLD_START_TARGET:.1}×"),
            format!(
                "{ratio:.2}× ({:.2} ms / {:.2} ms, {} starts each, alternating)",
                ms(medians[0]),
                ms(medians[1]),
                opts.runs
            ),
            Some(ratio <= COLD_START_TARGET),
        ),
        figure(
            "size.ingest",
            "ingest `bootstrap` size",
            "≤ 8 MB",
            format!("{:.2} MB", ingest_bytes as f64 / 1e6),
            Some(ingest_bytes <= SIZE_TARGET_BYTES),
        ),
    ];
    if opts.served > 0 {
        let (sources, secrets) = (read("sources.json")?, read("secrets.json")?);
        lines.extend(served_figures(&opts, &sources, &secrets)?);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-figures");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("coldstart.jsonl"), lines.join("\n") + "\n")
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// One figure as the JSON line `bench-tools figures` reads.
fn figure(id: &str, name: &str, target: &str, measured: String, met: Option<bool>) -> String {
    serde_json::json!({"id": id, "figure": name, "target": target, "measured": measured, "met": met})
        .to_string()
}

/// The served run's figures: first response, peak RSS against hello-world's.
fn served_figures(opts: &Options, sources: &str, secrets: &str) -> Result<Vec<String>, String> {
    let endpoint = serve::aws_endpoint(secrets.to_owned(), SECRETS_DELAY)?;
    let env = vec![
        ("TABLE_NAME".to_owned(), "inbox".to_owned()),
        ("WEBHOOK_SOURCES".to_owned(), sources.to_owned()),
        ("WEBHOOK_SECRETS_ARN".to_owned(), "inbox".to_owned()),
        ("AWS_ENDPOINT_URL".to_owned(), format!("http://{endpoint}")),
    ];
    let secret: serde_json::Value = serde_json::from_str(secrets).map_err(|e| e.to_string())?;
    let secret = secret["stripe"][0].as_str().unwrap_or_default().to_owned();
    println!();
    println!(
        "== served: {} signed 2 KB webhooks through the Runtime API (secrets from a local Secrets Manager answering after {} ms, table on a local endpoint) ==",
        opts.served,
        SECRETS_DELAY.as_millis()
    );
    let ingest = serve::run(&opts.ingest, &env, opts.served, &secret)?;
    let hello = serve::run(&opts.hello, &[], opts.served, &secret)?;
    let timeline = serve::init_timeline(&opts.ingest, &env, &secret)?;
    println!("  ingest's init timeline (ms from the start of its init): {timeline}");
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "  ingest: init {:.2} ms, first response {:.2} ms after spawn, {} answered ({} not 200) in {:.2} s, peak RSS {:.1} MiB",
        ms(ingest.init),
        ms(ingest.first_response),
        ingest.answered,
        ingest.not_ok,
        ingest.elapsed.as_secs_f64(),
        mb(ingest.peak_rss)
    );
    println!(
        "  hello:  peak RSS {:.1} MiB after as many events",
        mb(hello.peak_rss)
    );
    if ingest.not_ok > 0 {
        return Err(format!("{} ingest responses were not 200", ingest.not_ok));
    }
    Ok(vec![
        figure(
            "coldstart.first_response",
            "spawn → first response, secrets fetched at init from a local Secrets Manager endpoint (30 ms round trip), table on a local endpoint",
            "—",
            format!(
                "{:.2} ms (init {:.2} ms, of which 30 ms stand for the secret's round trip; init timeline, ms from the start of its init: {timeline})",
                ms(ingest.first_response),
                ms(ingest.init)
            ),
            None,
        ),
        figure(
            "memory.peak",
            &format!("ingest peak RSS after {} requests through the Runtime API", opts.served),
            "≤ 32 MiB",
            format!(
                "{:.1} MiB (hello-world: {:.1} MiB)",
                mb(ingest.peak_rss),
                mb(hello.peak_rss)
            ),
            Some(ingest.peak_rss <= RSS_TARGET_BYTES),
        ),
    ])
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coldstart: {e}");
            ExitCode::FAILURE
        }
    }
}
