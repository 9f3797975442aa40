//! The budget of the fuzz targets: property tests over bytes from outside, each named `fuzz_…`,
//! beside the parser it covers (proptest, on stable Rust). `make test` runs each with its small
//! default number of cases (the whole set in a few seconds); `make fuzz` (`scripts/fuzz.sh`)
//! runs the same targets again and again with [`SCALE`] times as many cases, each round from a
//! fresh random seed, until its time is up. A failure is shrunk and its seed saved under
//! `shared/core/proptest-regressions/` (committed: every later run replays it first), and the
//! minimal input becomes a named regression test beside its target.
//!
//! The targets: every signature scheme (`signature/tests/fuzz.rs`: arbitrary and damaged
//! requests, the reference MAC of each HMAC scheme in `signature/tests/fuzz/reference.rs`, empty
//! secrets, the known bug classes), SNS certificates and identities (`signature/sns/tests.rs`),
//! the identity scanner (`identity/scan/tests.rs`), batch splitting (`batch.rs`), body decoding (`ingest/body.rs`: API Gateway's base64;
//! `store/dynamo/body.rs`: zstd frames inline and bodies read back from S3), `Retry-After`
//! (`outbox/schedule.rs`), destination patterns (`outbox/pattern.rs`) and `WEBHOOK_SOURCES`
//! (`sources/tests.rs`).

use proptest::test_runner::Config;

/// The environment variable that multiplies every target's cases (`make fuzz` sets it).
pub const SCALE: &str = "INBOX_FUZZ_SCALE";

/// A target's proptest configuration: `cases` (its budget in `make test`) times [`SCALE`].
pub fn config(cases: u32) -> Config {
    let scale = std::env::var(SCALE)
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    Config {
        cases: cases.saturating_mul(scale),
        ..Config::default()
    }
}
