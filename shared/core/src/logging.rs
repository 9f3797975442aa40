//! The functions' log subscriber: the same output and levels as `lambda_runtime`'s
//! `init_default_subscriber` (fmt lines without time or target, JSON when
//! `AWS_LAMBDA_LOG_FORMAT=JSON`, to stdout), filtered without its `EnvFilter`, except that a JSON
//! line carries its span once (`span`), not again as a list of one (`spans`: the functions open
//! one span at a time, so the list only repeated it, ~95 bytes of every processed record's line).
//!
//! `EnvFilter` brings a regex engine (regex-automata, regex-syntax, matchers): 0.85 MB of the
//! ingest binary, for span and field filters no deployment uses. [`filter`] reads the same
//! variables with the same precedence into a [`Targets`] filter: `RUST_LOG`'s directives
//! (`level`, `target=level`, comma-separated; an invalid one is ignored with a note on stderr, as
//! `EnvFilter` does), or when it has none, the level of `AWS_LAMBDA_LOG_LEVEL`, else of
//! `RUST_LOG`, else `INFO`. [`json_lines_of`]: the same JSON lines captured (the bench's log bytes
//! per webhook).

use crate::config::{catalog, Env};
use std::str::FromStr;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the process's subscriber (once, at the start of `main`).
pub fn init() {
    let env = Env::process();
    let json = env
        .optional(&catalog::AWS_LAMBDA_LOG_FORMAT)
        .is_some_and(|f| f.eq_ignore_ascii_case("json"));
    let lambda_level = env.optional(&catalog::AWS_LAMBDA_LOG_LEVEL);
    let rust_log = env.optional(&catalog::RUST_LOG);
    let (filter, ignored) = filter(lambda_level.as_deref(), rust_log.as_deref());
    for (directive, reason) in ignored {
        eprintln!("ignoring `{directive}`: {reason}");
    }
    let layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .with_writer(std::io::stdout);
    let registry = tracing_subscriber::registry().with(filter);
    if json {
        registry.with(layer.json().with_span_list(false)).init();
    } else {
        registry.with(layer).init();
    }
}

/// The lines the functions' JSON subscriber (as [`init`] installs it with
/// `AWS_LAMBDA_LOG_FORMAT=JSON`, the template's format, at `INFO`) writes while `f` runs, and
/// `f`'s output: what the bench counts as the log bytes of a webhook.
pub async fn json_lines_of<F: std::future::Future>(f: F) -> (F::Output, Vec<String>) {
    use tracing::instrument::WithSubscriber;
    let captured = Captured::default();
    let layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        .without_time()
        .with_writer(captured.clone())
        .json()
        .with_span_list(false);
    let subscriber = tracing_subscriber::registry()
        .with(Targets::new().with_default(LevelFilter::INFO))
        .with(layer);
    let out = f.with_subscriber(subscriber).await;
    let bytes = std::mem::take(&mut *captured.0.lock().unwrap_or_else(|e| e.into_inner()));
    let lines = String::from_utf8_lossy(&bytes)
        .lines()
        .map(str::to_owned)
        .collect();
    (out, lines)
}

/// A writer into a shared buffer ([`json_lines_of`]).
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'w> tracing_subscriber::fmt::MakeWriter<'w> for Captured {
    type Writer = Self;

    fn make_writer(&'w self) -> Self {
        self.clone()
    }
}

/// The filter from `AWS_LAMBDA_LOG_LEVEL` and `RUST_LOG`, with the directives it ignored and why.
pub fn filter(
    lambda_level: Option<&str>,
    rust_log: Option<&str>,
) -> (Targets, Vec<(String, String)>) {
    let mut targets = Targets::new();
    let mut directives = 0;
    let mut ignored = Vec::new();
    for directive in rust_log.unwrap_or("").split(',').filter(|d| !d.is_empty()) {
        match Targets::from_str(directive) {
            Ok(one) => {
                directives += 1;
                if let Some(level) = one.default_level() {
                    targets = targets.with_default(level);
                }
                targets = targets.with_targets(one);
            }
            Err(e) => ignored.push((directive.to_owned(), e.to_string())),
        }
    }
    if directives == 0 {
        let level = lambda_level.or(rust_log).unwrap_or("INFO");
        targets = targets.with_default(LevelFilter::from_str(level).unwrap_or(LevelFilter::INFO));
    }
    (targets, ignored)
}

#[cfg(test)]
mod tests;
