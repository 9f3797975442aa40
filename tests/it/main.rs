//! The integration tests, one binary (each test binary links the AWS SDK; one link instead of
//! six). Every module but `config_docs` needs the emulator `make test` starts (`AWS_ENDPOINT_URL`).
//!
//! - [`ingest_dynamo`]: the ingest path against DynamoDB (store once, duplicates, concurrency, outages).
//! - [`bad_input`]: every class of bad request, per scheme: status, JSON code, nothing stored.
//! - [`bodies`]: bodies compressed in the item, large ones in S3, items of the old format.
//! - [`provider_libs`]: signatures made and checked by the providers' own libraries.
//! - [`providers`]: endpoint handshakes, batched deliveries, and every email provider's events
//!   through the pipeline into the wallet.
//! - [`replays`]: captured requests resent, repeated deliveries bounded, unidentifiable events kept.
//! - [`secrets`]: secrets re-read from Secrets Manager by a warm function (TTL, after a mismatch).
//! - [`sealed`]: destinations' signing secrets encrypted at rest with a KMS key (moto's).
//! - [`pipeline`]: ingest → stream → process → retry / quarantine → reaper, exactly once.
//! - [`wallet`]: the wallet ledger through the real pipeline.
//! - [`contention`]: DynamoDB's transaction conflicts injected at the SDK's HTTP layer: sent
//!   again with backoff, bounded and counted, then the processor's conflict path; once each.
//! - [`wallet_holds`]: the wallet API's holds on DynamoDB (exact under 200 concurrent holds, the
//!   floor, settled by the delivery webhooks) and core's bounded adjustment.
//! - [`wallet_api`]: the wallet API through its real handler (holds under concurrency, idempotency
//!   keys, release, the wallet's view, checkout sessions).
//! - [`wallet_shards`]: a hot tenant: a wallet of 8 shards under 2,000 holds and 2,000 debits at
//!   once, exact; a tight one refusing exactly what the whole wallet cannot afford; one funded on
//!   one shard refilling the others under concurrent holds and captures.
//! - [`wallet_views`]: the instance's view of a sharded wallet: with it warm a hold or a webhook's
//!   debit reads its own shard alone (counted at the SDK), without it all 8 and the AUTOPAY item.
//! - [`wallet_events`]: the wallet's own events (source `wallet`) through the outbox, once each.
//! - [`outbox`], [`outbox_faults`]: outbound delivery (fan-out, signing, retries, replays, crash;
//!   rate limit, SSRF guard, a poison destination).
//! - [`stripe_catch_up`]: webhooks Stripe gave up on, caught up from its events API (by the
//!   operator's catch-up and by the scheduled catch-up function's handler), credited once; their
//!   late delivery changes nothing.
//! - [`stripe_reconcile`]: the ledger against Stripe's own payments: a clean month, a payment
//!   whose webhooks were dropped (paid, not credited until the catch-up), a forged row, an
//!   amount that differs, a bank debit still processing (no difference).
//! - [`stripe_client`]: the Stripe client against the local Stripe stand-in: the decline cards,
//!   a top-up's Checkout Session (its faults are in `faults::stripe`).
//! - [`checkout_topup`]: a hosted top-up created through the Stripe module, paid on the
//!   stand-in, its webhooks ingested and processed: credited once, whichever event comes first.
//! - [`smoke`]: the release `bootstrap` through a Lambda runtime API.
//! - [`events_index`]: the console's Events page's index on DynamoDB: pages newest first, each
//!   match once by the cursor both ways, filters within the page, time bounds in the key.
//! - [`template`]: least privilege (leading keys too), schedules, secrets, routes, alarms and
//!   timeouts of `template.yaml`.
//! - [`config_docs`]: the tables of `docs/configuration.md` match the variables documented in code.
//! - [`faults`]: the fault-injection suite, each test against an emulator of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // helpers of tests: a failed setup is a failed test

mod autopay_loop;
mod bad_input;
mod bodies;
mod checkout_topup;
mod config_docs;
mod contention;
mod events_index;
mod faults;
mod ingest_dynamo;
mod outbox;
mod outbox_faults;
mod pipeline;
mod provider_libs;
mod providers;
mod replays;
mod sealed;
mod secrets;
mod smoke;
mod stripe_catch_up;
mod stripe_client;
mod stripe_reconcile;
mod template;
mod wallet;
mod wallet_api;
mod wallet_autopay;
mod wallet_events;
mod wallet_holds;
mod wallet_notices;
mod wallet_shards;
mod wallet_views;
