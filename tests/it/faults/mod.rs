//! The fault-injection suite: the tests that pause, kill or restart the emulators, or load them
//! heavily, start a pair of their own ([`integration_tests::faults::OwnEmulator`]: DynamoDB Local
//! and moto, durable across a kill); the others use the shared ones with a table and queues of
//! their own (5-12 s of start and warm-up saved per test, docs/dynamodb-local.md). Each injects
//! faults at deterministic points, and checks
//! the invariants that matter — every acknowledged event present, every effect applied once,
//! every failure ending with one quarantine notice — then records the counts it observed
//! (`docs/faults.md`, `make fault-table`; each test's rows are keyed `<n>-<module>`, which orders
//! the table). Time-bounded: every wait polls with a deadline.
//!
//! - [`serializable`]: concurrent ingest while processing transactions are cancelled.
//! - [`emulator`]: the emulator paused (SIGSTOP/SIGCONT) and killed and restarted mid-load.
//! - [`killed`]: the process function killed at each step.
//! - [`queues`]: the retry and quarantine queues unavailable.
//! - [`outage`]: a short outage of the store and queues while retries are handled: how late an
//!   effect is once they are back.
//! - [`storm`]: 1,000 deliveries of 100 ids at full concurrency.
//! - [`ack`]: an ingest write whose answer is lost, retried by the SDK.
//! - [`local_pipeline`]: `make dev`'s event sources across an emulator restart.
//! - [`outbox`]: a destination newer than the deliver worker's copy, the delivery quarantine
//!   unavailable, a thousand due deliveries in one shard.
//! - [`outbox_load`]: what the outbox writes under load: done shards, bounded journals, parked
//!   paused deliveries, a long `Retry-After`.
//! - [`slow_destination`]: a slow destination against the invocation's deadline, and a 429's
//!   hold on the destination's shared rate limit.
//! - [`hostile`]: hostile input (an oversized batch, a reordered Twilio resend, SNS certificate
//!   URLs SNS never issued) and S3's 409 on the claim check.
//! - [`stripe`]: Stripe's faults against the autopay client: a crash after the call, a 429
//!   storm and the shared bucket, `Stripe-Should-Retry: false`, a 500 or a reset after the charge.
//! - [`bodies`]: bodies kept in S3 when a message never reports, a body is gone, an attempt
//!   lapses at the limit, a resend comes late, and one event fans out in a batch.

mod ack;
mod bodies;
mod emulator;
mod hostile;
mod killed;
mod local_pipeline;
mod outage;
mod outbox;
mod outbox_load;
mod queues;
mod serializable;
mod slow_destination;
mod storm;
mod stripe;

use inbox_core::domain::Status;
use integration_tests::pipeline::Pipeline;

/// Of `ids` (stripe events of the test type), how many are missing from the table, and how many
/// are present but not `processed` with their effect applied exactly once.
pub async fn missing_or_wrong(p: &Pipeline, ids: &[String]) -> (usize, usize) {
    let store = inbox_core::store::dynamo::DynamoTable::new(
        p.harness.client.clone(),
        p.harness.table.clone(),
    );
    let (mut missing, mut wrong) = (0, 0);
    for id in ids {
        let key = inbox_core::domain::MessageKey::new(
            inbox_core::domain::SourceName::parse(integration_tests::pipeline::SOURCE).unwrap(),
            inbox_core::domain::EventId::parse(id).unwrap(),
        );
        match inbox_core::store::MessageStore::get(&store, &key)
            .await
            .unwrap()
        {
            None => missing += 1,
            Some(m) => {
                if m.status != Status::Processed || p.effect_count(id).await != 1 {
                    wrong += 1;
                }
            }
        }
    }
    (missing, wrong)
}
