//! Every benchmark figure with its target and verdict, and the tables of `docs/benchmarks.md`
//! rendered from them.
//!
//! ```text
//! figures                     print the figures the benches left in target/bench-figures/*.jsonl
//! figures --record [--note T] ... and record them: docs/bench-figures.jsonl, the tables of
//!                             docs/benchmarks.md and README.md
//! figures --render            rewrite those tables from docs/bench-figures.jsonl
//! ```
//!
//! Each bench step (`sidebyside`, `coldstart`, `pipeline_figures`, `cost`, `capacity`) writes its
//! figures as JSON lines (`id`, `figure`, `target`, `measured`, `met`: true / false / null for a
//! figure without a target; cost lines carry a `cost` breakdown, capacity lines a `capacity` row).
//! `make bench` ends with `--record`, so the benchmark, cost and capacity tables of
//! `docs/benchmarks.md`, and the cost table of `README.md`, always come from a recorded run; a test
//! (`the_page_tables_are_generated_from_the_recorded_figures`) fails when they drift, as the
//! configuration tables' does. The criterion regression guard's summary is printed too, when its
//! estimates exist (`criterion.rs`).

mod criterion;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const BENCH_BEGIN: &str = "<!-- bench:begin -->";
const BENCH_END: &str = "<!-- bench:end -->";
const COST_BEGIN: &str = "<!-- cost:begin -->";
const COST_END: &str = "<!-- cost:end -->";
const CAPACITY_BEGIN: &str = "<!-- capacity:begin -->";
const CAPACITY_END: &str = "<!-- capacity:end -->";
/// The page the tables are rendered into, from the workspace root.
const PAGE: &str = "docs/benchmarks.md";
/// The README, whose cost paragraph carries the cost table too.
const README: &str = "README.md";
/// The order of the table's rows, by id prefix.
const ORDER: [&str; 9] = [
    "cpu.",
    "coldstart.",
    "memory.",
    "size.",
    "wru.",
    "requests.",
    "throughput.",
    "capacity.",
    "cost.",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The figures of one run, in the table's order; the first line may be a `_meta` record.
fn parse(text: &str) -> Result<Vec<Value>, String> {
    let mut rows: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{e}: {l}")))
        .collect::<Result<_, _>>()?;
    let rank = |v: &Value| {
        let id = v["id"].as_str().unwrap_or_default();
        ORDER
            .iter()
            .position(|p| id.starts_with(p))
            .unwrap_or(if id == "_meta" { 0 } else { ORDER.len() })
    };
    rows.sort_by_key(|v| (v["id"] != "_meta", rank(v)));
    Ok(rows)
}

fn verdict(v: &Value) -> &'static str {
    match v["met"].as_bool() {
        Some(true) => "met",
        Some(false) => "missed",
        None => "—",
    }
}

/// The benchmark table.
fn bench_table(rows: &[Value]) -> String {
    let mut out = String::new();
    if let Some(meta) = rows.iter().find(|v| v["id"] == "_meta") {
        out.push_str(&format!(
            "Recorded {} by `make bench`{}.\n\n",
            meta["recorded"].as_str().unwrap_or("?"),
            meta["note"]
                .as_str()
                .map(|n| format!(" — {n}"))
                .unwrap_or_default()
        ));
    }
    out.push_str("| figure | target | measured | verdict |\n|---|---|---|---|\n");
    for v in rows
        .iter()
        .filter(|v| v["id"] != "_meta" && v.get("cost").is_none() && v.get("capacity").is_none())
    {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            v["figure"].as_str().unwrap_or_default(),
            v["target"].as_str().unwrap_or("—"),
            v["measured"].as_str().unwrap_or_default(),
            verdict(v)
        ));
    }
    out
}

/// The cost table.
fn cost_table(rows: &[Value]) -> String {
    let mut out = String::from(
        "| event | total | target | verdict | API Gateway | Lambda | DynamoDB | S3 | SQS | CloudWatch Logs |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for row in rows.iter().filter(|v| v.get("cost").is_some()) {
        let c = &row["cost"];
        let d = |k: &str| format!("${:.2}", c[k].as_f64().unwrap_or_default());
        out.push_str(&format!(
            "| {} | **{}** | {} | {} | {} | {} | {} ({} WRU, {} RRU) | {} ({} requests) | {} | {} |\n",
            c["size"].as_str().unwrap_or_default(),
            d("total"),
            row["target"].as_str().unwrap_or("—"),
            verdict(row),
            d("api_gateway"),
            d("lambda"),
            d("dynamodb"),
            c["wru"],
            c["rru"],
            d("s3"),
            c["s3_requests"],
            d("sqs"),
            d("logs")
        ));
    }
    out
}

/// The capacity table: one row per partition-key pattern and workload.
fn capacity_table(rows: &[Value]) -> String {
    let caps: Vec<&Value> = rows.iter().filter_map(|v| v.get("capacity")).collect();
    let rate = caps
        .first()
        .and_then(|c| c["rate"].as_f64())
        .unwrap_or(1000.0);
    let mut out = format!(
        "| partition key | shared by | per | RCU | WCU | per partition at {rate:.0}/s: RCU/s | WCU/s | caps at (per second) | bound by | verdict |\n|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for (c, v) in caps
        .iter()
        .zip(rows.iter().filter(|v| v.get("capacity").is_some()))
    {
        // A key of one event has no per-partition rate (null): it takes one event's units.
        let f = |k: &str, digits: usize| {
            c[k].as_f64()
                .map_or("—".to_owned(), |x| format!("{x:.digits$}"))
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c["key"].as_str().unwrap_or_default(),
            c["shared"].as_str().unwrap_or_default(),
            c["workload"].as_str().unwrap_or_default(),
            f("rcu", 2),
            f("wcu", 2),
            f("rcu_s", 0),
            f("wcu_s", 0),
            v["measured"].as_str().unwrap_or_default(),
            c["bound"].as_str().unwrap_or_default(),
            verdict(v)
        ));
    }
    out
}

/// `text` with the part between `begin` and `end` replaced by `body`.
fn splice(text: &str, begin: &str, end: &str, body: &str) -> Result<String, String> {
    let start = text.find(begin).ok_or(format!("no {begin}"))? + begin.len();
    let stop = text[start..].find(end).ok_or(format!("no {end}"))? + start;
    Ok(format!("{}\n{body}{}", &text[..start], &text[stop..]))
}

/// The page with its tables rendered from `rows`.
fn render(page: &str, rows: &[Value]) -> Result<String, String> {
    let text = splice(page, BENCH_BEGIN, BENCH_END, &bench_table(rows))?;
    let text = splice(&text, COST_BEGIN, COST_END, &cost_table(rows))?;
    splice(&text, CAPACITY_BEGIN, CAPACITY_END, &capacity_table(rows))
}

/// The README with its cost table rendered from `rows`.
fn render_readme(readme: &str, rows: &[Value]) -> Result<String, String> {
    splice(readme, COST_BEGIN, COST_END, &cost_table(rows))
}

/// Both documents rendered from `rows` and written.
fn write_docs(rows: &[Value]) -> Result<(), String> {
    for (path, render) in [
        (
            workspace().join(PAGE),
            render as fn(&str, &[Value]) -> Result<String, String>,
        ),
        (workspace().join(README), render_readme),
    ] {
        let new = render(&read(&path)?, rows)?;
        std::fs::write(&path, new).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The figures the benches left: every `*.jsonl` of `target/bench-figures`.
fn measured() -> Result<String, String> {
    let dir = workspace().join("target/bench-figures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}; run `make bench`", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut text = String::new();
    for f in files {
        text.push_str(&read(&f)?);
    }
    Ok(text)
}

fn print(rows: &[Value]) {
    println!("== every figure, with its target ==");
    for v in rows.iter().filter(|v| v["id"] != "_meta") {
        println!(
            "  {:<7} {:<12} {}  [{}: {}]",
            verdict(v),
            v["target"].as_str().unwrap_or("—"),
            v["figure"].as_str().unwrap_or_default(),
            v["id"].as_str().unwrap_or_default(),
            v["measured"].as_str().unwrap_or_default()
        );
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let recorded = workspace().join("docs/bench-figures.jsonl");
    match args.first().map(String::as_str) {
        None | Some("--record") => {
            if let Err(e) = criterion::print_summary() {
                println!("(criterion summary left out: {e})\n");
            }
            let mut text = measured()?;
            let rows = parse(&text)?;
            print(&rows);
            if args.first().map(String::as_str) == Some("--record") {
                let note = match (args.get(1).map(String::as_str), args.get(2)) {
                    (Some("--note"), Some(n)) => Some(n.clone()),
                    _ => None,
                };
                let meta = serde_json::json!({"id": "_meta", "recorded": today(), "note": note});
                text = format!("{meta}\n{text}");
                let rows = parse(&text)?;
                let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
                std::fs::write(&recorded, lines.join("\n") + "\n").map_err(|e| e.to_string())?;
                write_docs(&rows)?;
                println!("\nrecorded in {}, {PAGE} and {README}", recorded.display());
            }
            Ok(())
        }
        Some("--render") => write_docs(&parse(&read(&recorded)?)?),
        Some(other) => Err(format!(
            "unknown argument {other:?}; usage: figures [--record [--note TEXT] | --render]"
        )),
    }
}

/// Today's date (UTC), from the system clock.
fn today() -> String {
    jiff::tz::Offset::UTC
        .to_datetime(jiff::Timestamp::now())
        .date()
        .to_string()
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("figures: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_tables_are_generated_from_the_recorded_figures() {
        let rows = parse(&read(&workspace().join("docs/bench-figures.jsonl")).unwrap()).unwrap();
        let page = read(&workspace().join(PAGE)).unwrap();
        assert!(
            render(&page, &rows).unwrap() == page,
            "{PAGE}'s benchmark tables are stale: run `make bench-docs` \
             (`cargo run -q -p bench-tools --bin figures -- --render`) or `make bench`"
        );
        let readme = read(&workspace().join(README)).unwrap();
        assert!(
            render_readme(&readme, &rows).unwrap() == readme,
            "{README}'s cost table is stale: run `make bench-docs` or `make bench`"
        );
    }

    #[test]
    fn rows_render_in_order_with_verdicts() {
        let text = r#"{"id":"wru.x","figure":"W","target":"≤ 2","measured":"3","met":false}
{"id":"cpu.a","figure":"C","target":"≥ 2×","measured":"3×","met":true}
{"id":"cost.2KB","figure":"$","target":"—","measured":"$1","met":null,"cost":{"size":"2KB","total":1.0,"api_gateway":1.0,"lambda":0.0,"dynamodb":0.0,"s3":0.0,"sqs":0.0,"logs":0.0,"wru":1,"rru":0,"s3_requests":0}}
{"id":"capacity.key.00","figure":"K","target":"≥ 10,000/s","measured":"8,000/s","met":false,"capacity":{"key":"open-index OPEN#{shard}","workload":"webhook + delivery","shared":"the stack, 16 shards","rcu":0.0,"wcu":2.0,"rate":1000.0,"rcu_s":0.0,"wcu_s":125.0,"cap":8000.0,"bound":"writes"}}"#;
        let rows = parse(text).unwrap();
        let table = bench_table(&rows);
        let c = table.find("| C |").unwrap();
        let w = table.find("| W |").unwrap();
        assert!(c < w, "CPU first:\n{table}");
        assert!(table.contains("| W | ≤ 2 | 3 | missed |"));
        assert!(table.contains("| C | ≥ 2× | 3× | met |"));
        assert!(!table.contains("| $ |"), "cost rows go to the cost table");
        assert!(
            !table.contains("| K |"),
            "capacity rows go to the capacity table"
        );
        assert!(cost_table(&rows).contains("| 2KB | **$1.00** | — | — |"));
        assert!(capacity_table(&rows).contains(
            "| `open-index OPEN#{shard}` | the stack, 16 shards | webhook + delivery | 0.00 | 2.00 | 0 | 125 | 8,000/s | writes | missed |"
        ), "{}", capacity_table(&rows));
        let page = format!("a\n{BENCH_BEGIN}\nold\n{BENCH_END}\nb\n{COST_BEGIN}\n{COST_END}\nc\n{CAPACITY_BEGIN}\n{CAPACITY_END}\n");
        let new = render(&page, &rows).unwrap();
        assert!(new.starts_with("a\n<!-- bench:begin -->\n| figure |"));
        assert!(new.contains("b\n<!-- cost:begin -->\n| event |"));
        assert!(new.contains("c\n<!-- capacity:begin -->\n| partition key |"));
        assert_eq!(render(&new, &rows).unwrap(), new, "rendering is stable");
        let readme = format!("r\n{COST_BEGIN}\nold\n{COST_END}\n");
        let new = render_readme(&readme, &rows).unwrap();
        assert!(new.contains("<!-- cost:begin -->\n| event |") && !new.contains("old"));
        assert!(
            render(&readme, &rows).is_err(),
            "the page needs all three tables' markers"
        );
        assert_eq!(today().len(), 10);
    }
}
