//! The webhook ingestor's library: everything of substance that the Lambda functions share.
//!
//! Functions stay thin (read config, build clients once, map transport to domain commands);
//! the rules live here, where they can be unit-tested without AWS.
//!
//! # Layout
//!
//! - [`domain`]: newtypes that are valid by construction (source names, event ids, event types,
//!   message keys, body digests) and the message status.
//! - [`clock`]: the injectable clock every time-dependent rule reads, and a backoff's injectable
//!   wait and jitter draw.
//! - [`config`]: [`config::Env`], the one way to read an environment variable, every variable
//!   documented once ([`config::catalog`]), and [`config::ConfigError`]; it depends on no other
//!   module. Each part reads its own settings through it (`ingest::config`, `process::config`,
//!   `reaper::config`, `outbox::config`, `store::dynamo::body::BodyConfig`).
//! - [`sources`]: the configured sources (scheme, tolerance, id/type rules, kept headers) and
//!   their secrets.
//! - [`signature`]: the `Scheme` trait and one file per scheme (Stripe, Standard Webhooks,
//!   GitHub, Shopify, Slack, Zoom, SNS, SendGrid, Mailgun, Postmark, Paddle, Square, Twilio,
//!   Discord, generic HMAC-SHA256), registered in one list; constant-time, with redacted secrets
//!   and several secrets per source.
//! - [`identity`]: where an event's id and type come from (`FieldRule`) and their extraction.
//! - [`ingest`]: the ingest command: verify, answer endpoint handshakes, identify, store once
//!   (a batch: each of its events once), and the outcome or a typed error that knows its HTTP
//!   status and JSON body.
//! - [`batch`]: bodies that carry several events (a JSON array): splitting them into their
//!   events, and putting a batch back together to re-verify it.
//! - [`message`]: a stored message, its history, and the documents that travel through the
//!   queues (retry request, quarantine notice).
//! - [`policy`]: pure decisions: backoff with full jitter, what follows a failure, whether a
//!   message may be claimed, how often a write that met a transaction conflict is sent again.
//! - [`process`]: the processor (the message state machine), the handler registry, and its
//!   per-record functions for stream and retry-queue records.
//! - [`invocation`]: one Lambda invocation: the typed event (`Incoming`: a stream batch, a queue
//!   batch or the schedule) and a per-record async function lifted over a batch (bounded
//!   concurrency, one span per record, `batchItemFailures`, the stream's first-failure rule).
//! - [`error`]: an error's chain of causes, and that chain on one line for histories and logs.
//! - [`queue`]: the retry queue and the quarantine, as two roles (SQS adapters, in-memory fakes).
//! - [`reaper`]: one pass over the sparse index of open messages, re-driving what is due.
//! - [`ops`]: operator actions shared by the CLI and the tests (replay).
//! - [`metrics`]: the metric type and the one CloudWatch EMF writer every function emits through.
//! - [`logging`]: the functions' log subscriber (`lambda_runtime`'s format and levels, without
//!   `EnvFilter`'s regex engine).
//! - [`outbox`]: outbound delivery: destinations, fan-out in the terminal transition's transaction,
//!   the delivery worker and its pure policies (schedule, token bucket, circuit breaker).
//! - [`tls`]: whom the functions trust over HTTPS to AWS (a compiled-in trust store) and the SDK
//!   configuration built with it.
//! - [`store`]: the storage boundary: small capability traits, the table's schema, attribute
//!   helpers, DynamoDB's item-size rules, the DynamoDB adapter (bodies compressed in the item
//!   or kept in S3) and an in-memory fake for unit tests (behind the `test-util` feature, as is
//!   [`queue`]'s: no Lambda carries them).
//!
//! How these fit together: `docs/architecture.md`.

pub mod batch;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod identity;
pub mod ingest;
pub mod invocation;
pub mod logging;
pub mod message;
pub mod metrics;
pub mod ops;
pub mod outbox;
pub mod policy;
pub mod process;
pub mod queue;
pub mod reaper;
pub mod signature;
pub mod sources;
pub mod store;
pub mod tls;

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod tests {
    /// The `# Layout` section above names every module of the crate.
    #[test]
    fn layout_names_every_module() {
        let source = include_str!("lib.rs");
        let docs: String = source.lines().filter(|l| l.starts_with("//!")).collect();
        let modules: Vec<&str> = source
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
            .collect();
        assert!(modules.len() >= 15, "{modules:?}");
        for m in modules {
            assert!(
                docs.contains(&format!("[`{m}`]")),
                "the Layout docs do not name `{m}`"
            );
        }
    }
}
