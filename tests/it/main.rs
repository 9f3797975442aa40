//! The integration tests, one binary (each test binary links the AWS SDK; one link instead of
//! six). Every module but `config_docs` needs the emulator `make test` starts (`AWS_ENDPOINT_URL`).
//!
//! - [`ingest_dynamo`]: the ingest path against DynamoDB (store once, duplicates, concurrency, outages).
//! - [`bad_input`]: every class of bad request, per scheme: status, JSON code, nothing stored.
//! - [`provider_libs`]: signatures made and checked by the providers' own libraries.
//! - [`pipeline`]: ingest → stream → process → retry / quarantine → reaper, exactly once.
//! - [`wallet`]: the wallet ledger through the real pipeline.
//! - [`smoke`]: the release `bootstrap` through a Lambda runtime API.
//! - [`config_docs`]: the README's configuration tables match the variables documented in code.
//! - [`faults`]: the fault-injection suite, each test against an emulator of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers of tests: a failed setup is a failed test

mod bad_input;
mod config_docs;
mod faults;
mod ingest_dynamo;
mod pipeline;
mod provider_libs;
mod smoke;
mod wallet;
