//! Every environment variable the inbox reads, documented once: who reads it, its default, what it
//! means ([`Var`]). The functions and `inboxctl` read them through [`super::env::Env`]; the
//! tables of `docs/configuration.md` are rendered from [`ALL`] (with the applications' own variables,
//! declared in their crates) and [`LIBRARY`]. The bare names are in [`super::vars`].

use super::doc::readers::{CATCH_UP, DELIVER, INBOXCTL, INGEST, PROCESS, REAPER, RECONCILE};
use super::doc::{ReadBy, Unset, Var};

mod breaker;
pub use breaker::*;

pub const TABLE_NAME: Var = Var {
    name: "TABLE_NAME",
    read_by: ReadBy::Everyone,
    unset: Unset::Required,
    meaning: "the inbox table (inboxctl: or `--table`)",
};

pub const WEBHOOK_SOURCES: Var = Var {
    name: "WEBHOOK_SOURCES",
    read_by: ReadBy::Only(&[INGEST, CATCH_UP, INBOXCTL]),
    unset: Unset::Required,
    meaning:
        "JSON: source name → verification settings (see [Sources](sources.md#sources-webhook_sources)); \
              `inboxctl send` falls back to `local/sources.json`",
};

pub const WEBHOOK_SECRETS: Var = Var {
    name: "WEBHOOK_SECRETS",
    read_by: ReadBy::Only(&[INGEST, INBOXCTL]),
    unset: Unset::RequiredUnless("WEBHOOK_SECRETS_ARN"),
    meaning: "locally: JSON, source name → list of signing secrets (`{\"stripe\":[\"whsec_…\"]}`; \
              a single string is accepted). Takes precedence over the ARN; `inboxctl send` falls \
              back to `local/secrets.json`",
};

pub const WEBHOOK_SECRETS_ARN: Var = Var {
    name: "WEBHOOK_SECRETS_ARN",
    read_by: ReadBy::Only(&[INGEST]),
    unset: Unset::RequiredUnless("WEBHOOK_SECRETS"),
    meaning: "in the cloud: the AWS Secrets Manager secret (its ARN or name) whose \
              `SecretString` has the `WEBHOOK_SECRETS` shape (read at cold start, then again as \
              `WEBHOOK_SECRETS_TTL_SECS` says)",
};

pub const WEBHOOK_SECRETS_TTL_SECS: Var = Var {
    name: "WEBHOOK_SECRETS_TTL_SECS",
    read_by: ReadBy::Only(&[INGEST]),
    unset: Unset::Default("300"),
    meaning: "seconds a warm function keeps the secrets read from `WEBHOOK_SECRETS_ARN` before \
              reading them again (a removed secret is refused, an added one accepted, within \
              this time); a signature that matches no secret also re-reads them, at most once a \
              minute. At least 1",
};

pub const STAGE: Var = Var {
    name: "STAGE",
    read_by: ReadBy::EveryFunctionBut(&[REAPER]),
    unset: Unset::Default("local"),
    meaning: "the deployment stage (`template.yaml` sets it): the `Stage` dimension of every \
              CloudWatch metric the functions emit, which the alarms filter on, so stacks of \
              different stages in one account keep their metrics apart",
};

pub const MAX_BODY_BYTES: Var = Var {
    name: "MAX_BODY_BYTES",
    read_by: ReadBy::Only(&[INGEST, CATCH_UP, INBOXCTL]),
    unset: Unset::Default("6291456"),
    meaning: "largest accepted body in bytes: by default 6 MiB, what Lambda accepts per \
              invocation (API Gateway takes 10 MB, but a larger event never reaches the function). \
              Without `BODY_BUCKET` at most 358400 (a body must then fit DynamoDB's 400 KB item) \
              and the default is that",
};

pub const MAX_BATCH_EVENTS: Var = Var {
    name: "MAX_BATCH_EVENTS",
    read_by: ReadBy::Only(&[INGEST]),
    unset: Unset::Default("5000"),
    meaning: "most events one request of a batching source (SendGrid, `\"batch\": true`) may be \
              split into; a JSON array with more elements is refused whole (413 \
              `too_many_events`, naming the limit) and nothing of it is stored. Between 1 and \
              100000; the default is above SendGrid's largest batch (768 KB of events)",
};

pub const BODY_BUCKET: Var = Var {
    name: "BODY_BUCKET",
    read_by: ReadBy::Only(&[INGEST, PROCESS, REAPER, DELIVER, CATCH_UP, INBOXCTL]),
    unset: Unset::Optional,
    meaning: "the S3 bucket of bodies above `BODY_INLINE_MAX_BYTES` (the claim check: written \
              before the message, read back transparently; the reaper reads none, but removes \
              the expiry tag of the body of a message it fails; inboxctl's replays and resends \
              renew a body). Its lifecycle rule expires a body the retention \
              (`DELIVERY_RETENTION_DAYS`, the template's `RetentionDays`) after it was written or \
              renewed. Unset: every body is kept in its item, so at most 358400 bytes",
};

pub const DESTINATION_SECRETS_KEY: Var = Var {
    name: "DESTINATION_SECRETS_KEY",
    read_by: ReadBy::Only(&[DELIVER, INBOXCTL]),
    unset: Unset::Optional,
    meaning: "the KMS key (id, ARN or alias) the outbox destinations' signing secrets are \
              encrypted with in the table: `inboxctl dest add`/`rotate-secret` encrypt, the deliver \
              function decrypts (the stack's `DestinationSecretsKeyArn` output). Unset: secrets are \
              written in plaintext (inboxctl warns) and encrypted ones cannot be read",
};

pub const BODY_INLINE_MAX_BYTES: Var = Var {
    name: "BODY_INLINE_MAX_BYTES",
    read_by: ReadBy::Only(&[INGEST, CATCH_UP]),
    unset: Unset::Default("8192"),
    meaning: "largest body (raw bytes) kept in the message item, compressed, when `BODY_BUCKET` \
              is set; larger ones go to S3. The default is where S3 becomes cheaper (see \
              docs/benchmarks.md), at most 358400",
};

pub const TRUST_SYSTEM_ROOTS: Var = Var {
    name: "TRUST_SYSTEM_ROOTS",
    read_by: ReadBy::EveryFunction,
    unset: Unset::Default("false"),
    meaning:
        "`true`: the functions' AWS clients (and the SNS certificate fetch) trust the system's \
              root certificates instead of the five compiled-in roots AWS endpoints chain to \
              (Amazon Root CA 1–4, Starfield Services Root G2: see `inbox_core::tls`). Only needed \
              behind a TLS-intercepting proxy; reading the system store costs ~2 ms of cold start",
};

pub const DELIVERY_RETENTION_DAYS: Var = Var {
    name: "DELIVERY_RETENTION_DAYS",
    read_by: ReadBy::Only(&[INGEST, PROCESS, DELIVER, RECONCILE, CATCH_UP, INBOXCTL]),
    unset: Unset::Default("30"),
    meaning: "days a record is kept (TTL): a duplicate-delivery journal record (ingest), a \
              processed or ignored message (process), a delivered outbound delivery (deliver); \
              the template's `RetentionDays` sets it and the body bucket's lifecycle rule alike; \
              reconciliation (reconcile, inboxctl) expects the message of every entry younger \
              than this to be still in the inbox",
};

pub const RETRY_QUEUE_URL: Var = Var {
    name: "RETRY_QUEUE_URL",
    read_by: ReadBy::Only(&[PROCESS, REAPER, INBOXCTL]),
    unset: Unset::Required,
    meaning: "the SQS retry queue: scheduled retries, re-drives, replays (inboxctl: or \
              `--retry-queue-url`, needed by `replay`)",
};

pub const QUARANTINE_QUEUE_URL: Var = Var {
    name: "QUARANTINE_QUEUE_URL",
    read_by: ReadBy::Only(&[PROCESS, REAPER, INBOXCTL]),
    unset: Unset::Required,
    meaning: "the SQS quarantine (dead-letter) queue (inboxctl: or `--quarantine-queue-url`, \
              optional: read by `replay --from-quarantine`, its depth shown by `stats`)",
};

pub const MAX_ATTEMPTS: Var = Var {
    name: "MAX_ATTEMPTS",
    read_by: ReadBy::Only(&[PROCESS, REAPER]),
    unset: Unset::Default("5"),
    meaning: "attempts per message: failing the last one, or the reaper finding the last one \
              never reported, makes it `failed` (quarantined); at least 1",
};

pub const BACKOFF_BASE_MS: Var = Var {
    name: "BACKOFF_BASE_MS",
    read_by: ReadBy::Only(&[PROCESS, REAPER]),
    unset: Unset::Default("2000"),
    meaning: "backoff ceiling after the first failure, ms, doubling after each (full jitter); the \
              reaper re-drives a lost attempt with the same backoff",
};

pub const BACKOFF_CAP_MS: Var = Var {
    name: "BACKOFF_CAP_MS",
    read_by: ReadBy::Only(&[PROCESS, REAPER]),
    unset: Unset::Default("900000"),
    meaning: "largest backoff ceiling, ms, at most 900000 (15 minutes, SQS's largest delay)",
};

pub const LEASE_MS: Var = Var {
    name: "LEASE_MS",
    read_by: ReadBy::Only(&[PROCESS, REAPER]),
    unset: Unset::Default("60000"),
    meaning: "how long a claim holds, ms: the function's timeout plus a margin; also how long a \
              failed message's quarantine notice may take before the reaper sends it",
};

pub const PROCESS_CONCURRENCY: Var = Var {
    name: "PROCESS_CONCURRENCY",
    read_by: ReadBy::Only(&[PROCESS]),
    unset: Unset::Default("10"),
    meaning: "records of a batch processed at once (0 counts as 1)",
};

pub const REAPER_MAX_PER_RUN: Var = Var {
    name: "REAPER_MAX_PER_RUN",
    read_by: ReadBy::Only(&[REAPER]),
    unset: Unset::Default("1000"),
    meaning: "most due messages handled per run (re-driven, failed, or their pending notice \
              sent), spread evenly over the open index's 64 shards",
};

pub const INBOXCTL_JSON: Var = Var {
    name: "INBOXCTL_JSON",
    read_by: ReadBy::Only(&[INBOXCTL]),
    unset: Unset::Default("false"),
    meaning: "`true`: print JSON instead of tables, as `--json` does",
};

pub const INBOXCTL_SECRET: Var = Var {
    name: "INBOXCTL_SECRET",
    read_by: ReadBy::Only(&[INBOXCTL]),
    unset: Unset::Optional,
    meaning: "a destination's signing secret (`whsec_…`; comma-separated for several) for \
              `inboxctl listen` and `dest add`/`rotate-secret`, instead of `--secret` on the command \
              line. Unset: `listen` asks for it (or reads standard input), `dest` generates one",
};

pub const USER: Var = Var {
    name: "USER",
    read_by: ReadBy::Only(&[INBOXCTL]),
    unset: Unset::Default("operator"),
    meaning: "who replays, written to the message's history (`--operator` overrides it)",
};

pub const DELIVERY_QUEUE_URL: Var = Var {
    name: "DELIVERY_QUEUE_URL",
    read_by: ReadBy::Only(&[DELIVER, INBOXCTL]),
    unset: Unset::Required,
    meaning: "the SQS delivery queue: outbound retries (up to 15 min ahead), the sweep's re-drives, \
              operator retries (inboxctl: or `--delivery-queue-url`, optional: without it a retried \
              delivery waits for the sweep, within a minute)",
};

pub const DELIVERY_QUARANTINE_QUEUE_URL: Var = Var {
    name: "DELIVERY_QUARANTINE_QUEUE_URL",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Required,
    meaning:
        "the SQS queue of failed-delivery notices (also the delivery queue's dead-letter queue)",
};

pub const DELIVERY_ALLOW_LOOPBACK: Var = Var {
    name: "DELIVERY_ALLOW_LOOPBACK",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("false"),
    meaning:
        "`true`: deliveries may go to loopback addresses and over plain `http://` (`make dev` \
              and the tests only; never set in the template). Private, link-local and metadata \
              addresses stay refused",
};

pub const DESTINATION_CACHE_MS: Var = Var {
    name: "DESTINATION_CACHE_MS",
    read_by: ReadBy::Only(&[PROCESS, DELIVER]),
    unset: Unset::Default("5000"),
    meaning: "how long the destinations read from the table are kept, ms: a change by `inboxctl \
              dest` reaches the functions within this time",
};

pub const DELIVERY_CONCURRENCY: Var = Var {
    name: "DELIVERY_CONCURRENCY",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("10"),
    meaning: "deliveries of a batch sent at once (0 counts as 1)",
};

pub const DELIVERY_MAX_WAIT_MS: Var = Var {
    name: "DELIVERY_MAX_WAIT_MS",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("2000"),
    meaning: "the longest a delivery waits in the function for its destination's rate limit, ms; \
              longer waits defer it (no attempt counted)",
};

pub const DELIVERY_SWEEP_MAX_PER_RUN: Var = Var {
    name: "DELIVERY_SWEEP_MAX_PER_RUN",
    read_by: ReadBy::Only(&[DELIVER]),
    unset: Unset::Default("1000"),
    meaning: "most due deliveries the scheduled sweep re-drives per run (fan-outs and pending \
              failure notices included), spread evenly over the outbox's 16 open-index shards",
};

pub const AWS_LAMBDA_LOG_LEVEL: Var = Var {
    name: "AWS_LAMBDA_LOG_LEVEL",
    read_by: ReadBy::EveryFunction,
    unset: Unset::Optional,
    meaning: "log level (Lambda's advanced logging controls); applies when `RUST_LOG` is unset",
};

pub const RUST_LOG: Var = Var {
    name: "RUST_LOG",
    read_by: ReadBy::EveryFunction,
    unset: Unset::Default("info"),
    meaning: "log filter: comma-separated `level` and `target=level` directives \
              (e.g. `info,inbox_core=debug`); overrides `AWS_LAMBDA_LOG_LEVEL`",
};

pub const AWS_LAMBDA_LOG_FORMAT: Var = Var {
    name: "AWS_LAMBDA_LOG_FORMAT",
    read_by: ReadBy::EveryFunction,
    unset: Unset::Optional,
    meaning: "`JSON` for structured logs (set by `LoggingConfig` in `template.yaml`)",
};

/// The inbox's own variables, in the order `docs/configuration.md` lists them.
pub const ALL: &[&Var] = &[
    &TABLE_NAME,
    &WEBHOOK_SOURCES,
    &WEBHOOK_SECRETS,
    &WEBHOOK_SECRETS_ARN,
    &WEBHOOK_SECRETS_TTL_SECS,
    &MAX_BODY_BYTES,
    &MAX_BATCH_EVENTS,
    &BODY_BUCKET,
    &DESTINATION_SECRETS_KEY,
    &BODY_INLINE_MAX_BYTES,
    &TRUST_SYSTEM_ROOTS,
    &DELIVERY_RETENTION_DAYS,
    &RETRY_QUEUE_URL,
    &QUARANTINE_QUEUE_URL,
    &MAX_ATTEMPTS,
    &BACKOFF_BASE_MS,
    &BACKOFF_CAP_MS,
    &LEASE_MS,
    &PROCESS_CONCURRENCY,
    &REAPER_MAX_PER_RUN,
    &STAGE,
    &DELIVERY_QUEUE_URL,
    &DELIVERY_QUARANTINE_QUEUE_URL,
    &DELIVERY_ALLOW_LOOPBACK,
    &DESTINATION_CACHE_MS,
    &DELIVERY_CONCURRENCY,
    &DELIVERY_MAX_WAIT_MS,
    &BREAKER_WINDOW_MS,
    &BREAKER_MIN_REQUESTS,
    &BREAKER_FAILURE_RATE,
    &BREAKER_HALF_OPEN_PROBES,
    &BREAKER_COOLDOWN_MS,
    &BREAKER_MAX_COOLDOWN_MS,
    &BREAKER_DISABLE_AFTER_MS,
    &DELIVERY_SWEEP_MAX_PER_RUN,
    &INBOXCTL_JSON,
    &INBOXCTL_SECRET,
    &USER,
    &AWS_LAMBDA_LOG_LEVEL,
    &RUST_LOG,
    &AWS_LAMBDA_LOG_FORMAT,
];

/// Variables read by the libraries every function links, documented for completeness.
pub const LIBRARY: &[&Var] = &[
    &Var {
        name: "AWS_ENDPOINT_URL",
        read_by: ReadBy::Library("every function, inboxctl (the AWS SDK)"),
        unset: Unset::Optional,
        meaning: "points the SDK at an emulator (locally: moto, for SQS, S3 and Secrets \
                  Manager); the other standard AWS SDK variables (`AWS_REGION`, `AWS_PROFILE`, \
                  credentials, …) apply as well",
    },
    &Var {
        name: "AWS_ENDPOINT_URL_DYNAMODB",
        read_by: ReadBy::Library("every function, inboxctl (the AWS SDK)"),
        unset: Unset::Optional,
        meaning: "points the SDK's DynamoDB client elsewhere than `AWS_ENDPOINT_URL` (locally: \
                  AWS's DynamoDB Local, see `docs/dynamodb-local.md`); \
                  `AWS_ENDPOINT_URL_DYNAMODB_STREAMS` does the same for the table's stream",
    },
];
