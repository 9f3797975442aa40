//! The criterion benchmark's summary (the regression guard): ingest / raw HMAC-SHA256 from
//! criterion's estimates, when `cargo bench -p ingest-function --bench ingest` left them.
//!
//! Reads what `cargo bench -p ingest-function --bench ingest` left in
//! `<DIR>/ingest/<bench>/<size>/new/estimates.json` (`<bench>`: `full_new_event`,
//! `raw_hmac_sha256`; `<size>`: `2KB`, `64KB`) and prints, per size, both times with their 95 %
//! confidence intervals, the ratio full / raw HMAC (and the range the intervals allow) and whether
//! it meets the target (<= 2x). The time of a benchmark is criterion's typical estimate: the slope
//! of its linear regression, else the mean (what criterion prints as `time:`).
//!
//! The directory is `$CRITERION_HOME`, else `$CARGO_TARGET_DIR/criterion`, else the workspace's
//! `target/criterion`. The figures of record are the side-by-side bench's (`sidebyside.rs`).

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The criterion group of the ingest benchmark, its two benchmarks and its event sizes.
const GROUP: &str = "ingest";
const FULL: &str = "full_new_event";
const BASELINE: &str = "raw_hmac_sha256";
const SIZES: [&str; 2] = ["2KB", "64KB"];
/// Target: the full ingest costs at most this many raw HMACs of the same body.
const TARGET: f64 = 2.0;

/// A time in nanoseconds with its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    point: f64,
    lower: f64,
    upper: f64,
}

impl Estimate {
    /// Criterion's typical estimate of an `estimates.json`: the slope, else the mean.
    fn typical(estimates: &Value) -> Result<Self, String> {
        let e = match &estimates["slope"] {
            Value::Null => &estimates["mean"],
            slope => slope,
        };
        let number = |v: &Value, what: &str| v.as_f64().ok_or(format!("no number at {what}"));
        Ok(Self {
            point: number(&e["point_estimate"], "point_estimate")?,
            lower: number(&e["confidence_interval"]["lower_bound"], "lower_bound")?,
            upper: number(&e["confidence_interval"]["upper_bound"], "upper_bound")?,
        })
    }

    fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read {}: {e}; run `cargo bench -p ingest-function --bench ingest` first",
                path.display()
            )
        })?;
        let json: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::typical(&json).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn micros(&self) -> String {
        format!(
            "{:.2} µs [{:.2}, {:.2}]",
            self.point / 1e3,
            self.lower / 1e3,
            self.upper / 1e3
        )
    }
}

/// One size: the full ingest against the baseline.
#[derive(Debug, Clone, Copy)]
struct Row {
    size: &'static str,
    full: Estimate,
    hmac: Estimate,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.full.point / self.hmac.point
    }

    /// The lowest and highest ratio the two confidence intervals allow.
    fn ratio_range(&self) -> (f64, f64) {
        (
            self.full.lower / self.hmac.upper,
            self.full.upper / self.hmac.lower,
        )
    }

    fn verdict(&self) -> &'static str {
        if self.ratio() <= TARGET {
            "met"
        } else {
            "MISSED"
        }
    }
}

fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return PathBuf::from(home);
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(target).join("criterion");
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .unwrap_or(manifest)
        .join("target/criterion")
}

/// Prints the criterion summary (an error if the estimates are missing).
pub fn print_summary() -> Result<(), String> {
    let dir = criterion_dir();
    let estimate = |bench: &str, size: &str| {
        Estimate::read(
            &dir.join(GROUP)
                .join(bench)
                .join(size)
                .join("new/estimates.json"),
        )
    };
    let rows = SIZES
        .iter()
        .map(|&size| {
            Ok(Row {
                size,
                full: estimate(FULL, size)?,
                hmac: estimate(BASELINE, size)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;

    println!(
        "== ingest hot path vs raw HMAC-SHA256 (criterion estimates in {}) ==",
        dir.join(GROUP).display()
    );
    println!(
        "  {:<5} {:<30} {:<30} {:>7} {:>13} {:>7}  verdict",
        "size", FULL, BASELINE, "ratio", "ratio range", "target"
    );
    for row in &rows {
        let (low, high) = row.ratio_range();
        println!(
            "  {:<5} {:<30} {:<30} {:>6.2}x {:>13} {:>7}  {}",
            row.size,
            row.full.micros(),
            row.hmac.micros(),
            row.ratio(),
            format!("{low:.2}-{high:.2}x"),
            format!("<= {TARGET:.0}x"),
            row.verdict()
        );
    }
    println!();
    for row in &rows {
        println!(
            "SUMMARY {}: full/raw HMAC = {:.2}x ({:.2} µs / {:.2} µs; target <= {TARGET:.1}x: {})",
            row.size,
            row.ratio(),
            row.full.point / 1e3,
            row.hmac.point / 1e3,
            row.verdict()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn estimate(point: f64, lower: f64, upper: f64) -> Value {
        json!({"point_estimate": point, "standard_error": 1.0,
               "confidence_interval": {"confidence_level": 0.95, "lower_bound": lower, "upper_bound": upper}})
    }

    #[test]
    fn the_typical_estimate_is_the_slope_else_the_mean() {
        let mean = estimate(10.0, 9.0, 11.0);
        let slope = estimate(8.0, 7.5, 8.5);
        let with_slope = json!({"mean": mean, "median": mean, "slope": slope});
        assert_eq!(
            Estimate::typical(&with_slope),
            Ok(Estimate {
                point: 8.0,
                lower: 7.5,
                upper: 8.5
            })
        );
        let flat = json!({"mean": mean, "median": estimate(1.0, 1.0, 1.0), "slope": null});
        assert_eq!(Estimate::typical(&flat).map(|e| e.point), Ok(10.0));
        assert!(Estimate::typical(&json!({"slope": null})).is_err());
    }

    #[test]
    fn ratios_and_verdicts() {
        let e = |point, lower, upper| Estimate {
            point,
            lower,
            upper,
        };
        let row = Row {
            size: "2KB",
            full: e(4000.0, 3900.0, 4200.0),
            hmac: e(2000.0, 1950.0, 2100.0),
        };
        assert_eq!(row.ratio(), 2.0);
        assert_eq!(row.verdict(), "met", "the target is inclusive");
        let (low, high) = row.ratio_range();
        assert!((low - 3900.0 / 2100.0).abs() < 1e-12 && (high - 4200.0 / 1950.0).abs() < 1e-12);
        let missed = Row {
            full: e(4100.0, 4000.0, 4200.0),
            ..row
        };
        assert_eq!(missed.verdict(), "MISSED");
    }
}
