//! The webhook ingestor's library: everything of substance that the Lambda functions share.
//!
//! Functions stay thin (read config, build clients once, map transport to domain commands);
//! the rules live here, where they can be unit-tested without AWS.
//!
//! # Layout
//!
//! - [`domain`]: newtypes that are valid by construction (source names, event ids, event types,
//!   message keys) and the message status.
//! - [`clock`]: the injectable clock every time-dependent rule reads.
//! - [`signature`]: the `Scheme` trait and one file per scheme (Stripe, Standard Webhooks,
//!   GitHub, Shopify, Slack, generic HMAC-SHA256), registered in one list; constant-time, with
//!   redacted secrets and several secrets per source.
//! - [`identity`]: where an event's id and type come from (`FieldRule`) and their extraction.
//! - [`sources`]: the configured sources (scheme, tolerance, id/type rules, kept headers) and
//!   their secrets.
//! - [`config`]: the functions' configuration from environment variables or AWS Secrets Manager.
//! - [`store`]: the storage boundary: small capability traits, the DynamoDB adapter and an
//!   in-memory fake for unit tests.
//! - [`ingest`]: the ingest command: verify, identify, store once, and the outcome or a typed
//!   error that knows its HTTP status and JSON body.
//! - [`metrics`]: the metric type and the one CloudWatch EMF writer every function emits through.
//! - [`outbox`]: outbound delivery: destinations, fan-out in the terminal transition's transaction,
//!   the delivery worker and its pure policies (schedule, token bucket, circuit breaker).

pub mod clock;
pub mod config;
pub mod domain;
pub mod identity;
pub mod ingest;
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
