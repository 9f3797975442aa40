//! The reconcile Lambda's handler: one pass over every prepaid wallet per scheduled invocation.
//!
//! Each run calls [`wallet_ledger::reconcile::reconcile`] (stale holds, wallets whose balance or
//! held amount disagrees with their entries or that cannot be read, entries whose webhook event is
//! missing — within `DELIVERY_RETENTION_DAYS`, the messages' retention), logs the report (warn
//! when something is wrong, or when wallets were found only by the fallback scan and need
//! `inboxctl wallet reindex`; info otherwise) and emits the counts through the core's
//! metric writer ([`inbox_core::metrics::EmfWriter`]: one CloudWatch embedded-metric-format line,
//! namespace `WebhookIngestor/Wallet`: `StaleHolds`, `ExpiredHolds` (holds past their expiry
//! the charge function's sweep has not released), `MismatchedWallets`, `OrphanEntries`,
//! `UnmatchedPayments` — the payments unmatched for longer than
//! `RECONCILE_UNMATCHED_AFTER_MINUTES` —, `OverdueAutopayAttempts` — autopay attempts the
//! charge function has not taken 15 minutes after their due, a lease that ended unrenewed among them):
//! CloudWatch turns that log line into the metrics the alarms watch, without an API call. The
//! report is the invocation's result.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use inbox_core::clock::{Clock, SystemClock};
use inbox_core::config::{catalog, ConfigError, Env};
use inbox_core::metrics::{EmfWriter, Metric, MetricSink};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{DueIndex, ItemStore, StoreError};
use lambda_runtime::{Error, LambdaEvent};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use wallet_ledger::config::{unmatched_after_ms, RECONCILE_STALE_AFTER_HOURS};
use wallet_ledger::reconcile::{reconcile, ReconcileOptions, ReconcileReport};

/// At most this many problems of each kind go into the log line (CloudWatch Logs cuts events at
/// 256 KB); the counts and the invocation's result are always complete.
pub const LOGGED_PER_KIND: usize = 50;

const HOUR_MS: i64 = 3_600_000;

/// Everything the reconcile function needs, read once at cold start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileConfig {
    pub table_name: String,
    pub stale_after_hours: u32,
    /// `DELIVERY_RETENTION_DAYS`: how long processed messages are kept, so how far back entries
    /// must find theirs.
    pub retention_days: u32,
    /// `RECONCILE_UNMATCHED_AFTER_MINUTES`, in ms: how long a payment may stay unmatched before
    /// it is counted.
    pub unmatched_after_ms: i64,
}

impl ReconcileConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::read(&Env::process())
    }

    /// Reads the configuration from `env` (`TABLE_NAME`, `RECONCILE_STALE_AFTER_HOURS`,
    /// `DELIVERY_RETENTION_DAYS`, `RECONCILE_UNMATCHED_AFTER_MINUTES`).
    pub fn read(env: &Env) -> Result<Self, ConfigError> {
        let table_name = env.required(&catalog::TABLE_NAME)?;
        let stale_after_hours: u32 = env
            .parse(&RECONCILE_STALE_AFTER_HOURS)
            .map_err(|e| e.expecting("a whole number of hours"))?;
        if stale_after_hours == 0 {
            return Err(ConfigError::Invalid {
                var: RECONCILE_STALE_AFTER_HOURS.name,
                reason: "must be at least 1 (0 would report every hold as stale)".into(),
            });
        }
        let retention_days = env.parse(&catalog::DELIVERY_RETENTION_DAYS)?;
        Ok(Self {
            table_name,
            stale_after_hours,
            retention_days,
            unmatched_after_ms: unmatched_after_ms(env)?,
        })
    }

    /// The stale threshold in milliseconds.
    pub fn stale_after_ms(&self) -> i64 {
        i64::from(self.stale_after_hours) * HOUR_MS
    }

    /// What a run checks against: the stale threshold, the orphan window the retention gives,
    /// and the unmatched window.
    pub fn options(&self) -> ReconcileOptions {
        ReconcileOptions::new(
            self.stale_after_ms(),
            Duration::from_secs(u64::from(self.retention_days) * 86_400),
        )
        .with_unmatched_after(self.unmatched_after_ms)
    }
}

/// One reconciliation run's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub report: ReconcileReport,
    /// When it ran (ms since the epoch).
    pub now_ms: i64,
    /// The counts, as metrics (emitted by [`handle`]).
    pub metrics: Vec<Metric>,
}

/// The reconciler: a store, a clock, what it checks against, and where its metrics go.
pub struct Reconciler<S, C> {
    store: S,
    clock: C,
    options: ReconcileOptions,
    metrics: Arc<dyn MetricSink>,
}

impl<S, C> std::fmt::Debug for Reconciler<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconciler")
            .field("options", &self.options)
            .finish()
    }
}

impl<S: ItemStore + DueIndex, C: Clock> Reconciler<S, C> {
    /// A reconciler emitting its metrics as EMF on stdout.
    pub fn new(store: S, clock: C, options: ReconcileOptions) -> Self {
        Self {
            store,
            clock,
            options,
            metrics: Arc::new(EmfWriter::stdout()),
        }
    }

    /// Replaces where the metrics go (tests record them).
    pub fn with_metrics(mut self, sink: Arc<dyn MetricSink>) -> Self {
        self.metrics = sink;
        self
    }

    /// Checks every wallet once.
    pub async fn run(&self) -> Result<Run, StoreError> {
        let now_ms = self.clock.now_millis();
        let report = reconcile(&self.store, now_ms, self.options).await?;
        let metrics = report.metrics();
        Ok(Run {
            report,
            now_ms,
            metrics,
        })
    }
}

/// The reconciler as deployed.
pub type Service = Reconciler<DynamoTable, SystemClock>;

/// A DynamoDB client for a batch job: it reads many items (and, until the wallet registry is
/// complete, scans the table), so patient per-attempt timeouts and
/// more retries than the request/response paths (a throttled page is retried, not fatal).
fn client(sdk: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(3))
                .operation_attempt_timeout(Duration::from_secs(30))
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(6))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// Builds the service once per cold start.
pub async fn build() -> Result<Service, ConfigError> {
    let config = ReconcileConfig::from_env()?;
    let sdk = inbox_core::tls::sdk_config(&Env::process()).await?;
    let store = DynamoTable::new(client(&sdk), config.table_name.clone());
    Ok(Reconciler::new(store, SystemClock, config.options()))
}

/// The report for the log line: complete counts, at most [`LOGGED_PER_KIND`] problems of each
/// kind (`truncated` says whether some were left out).
pub fn log_view(report: &ReconcileReport) -> Value {
    let cap = |n: usize| n > LOGGED_PER_KIND;
    json!({
        "clean": report.is_clean(),
        "wallets": report.wallets,
        "entries": report.entries,
        "registry_complete": report.registry_complete,
        "counts": {
            "stale_holds": report.stale_holds.len(),
            "expired_holds": report.expired_holds.len(),
            "mismatched_wallets": report.mismatched_wallets.len(),
            "orphan_entries": report.orphan_entries.len(),
            "unreadable_wallets": report.unreadable_wallets.len(),
            "unsettled_wallets": report.unsettled_wallets.len(),
            "unregistered_wallets": report.unregistered_wallets.len(),
            "unmatched_payments": report.unmatched_payments.len(),
            "overdue_attempts": report.overdue_attempts.len(),
        },
        "stale_holds": report.stale_holds.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "expired_holds": report.expired_holds.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "mismatched_wallets": report.mismatched_wallets.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "orphan_entries": report.orphan_entries.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "unreadable_wallets": report.unreadable_wallets.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "unsettled_wallets": report.unsettled_wallets.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "unregistered_wallets": report.unregistered_wallets.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "unmatched_payments": report.unmatched_payments.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "overdue_attempts": report.overdue_attempts.iter().take(LOGGED_PER_KIND).collect::<Vec<_>>(),
        "truncated": cap(report.stale_holds.len())
            || cap(report.expired_holds.len())
            || cap(report.mismatched_wallets.len())
            || cap(report.orphan_entries.len())
            || cap(report.unreadable_wallets.len())
            || cap(report.unsettled_wallets.len())
            || cap(report.unregistered_wallets.len())
            || cap(report.unmatched_payments.len())
            || cap(report.overdue_attempts.len()),
    })
}

/// The Lambda entry point (the scheduled event's content is not needed). A store error fails the
/// invocation, so the function's Errors metric (and alarm) sees it.
pub async fn handle<S: ItemStore + DueIndex, C: Clock>(
    reconciler: &Reconciler<S, C>,
    _event: LambdaEvent<Value>,
) -> Result<Value, Error> {
    let run = reconciler.run().await.inspect_err(
        |e| tracing::error!(error = %e, kind = e.kind(), "reconciliation could not read the table"),
    )?;
    let r = &run.report;
    let view = log_view(r).to_string();
    if !r.unregistered_wallets.is_empty() {
        tracing::warn!(
            unregistered = r.unregistered_wallets.len(),
            "wallets created before the wallet registry were found by a table scan; run `inboxctl wallet reindex` once to register them and stop scanning"
        );
    }
    if r.is_clean() {
        tracing::info!(
            wallets = r.wallets,
            entries = r.entries,
            report = %view,
            "every wallet reconciles"
        );
    } else {
        tracing::warn!(
            wallets = r.wallets,
            entries = r.entries,
            stale_holds = r.stale_holds.len(),
            mismatched_wallets = r.mismatched_wallets.len(),
            orphan_entries = r.orphan_entries.len(),
            unreadable_wallets = r.unreadable_wallets.len(),
            unmatched_payments = r.unmatched_payments.len(),
            overdue_attempts = r.overdue_attempts.len(),
            report = %view,
            "wallets do not reconcile (or payments wait unmatched: inboxctl wallet unmatched)"
        );
    }
    reconciler.metrics.emit(run.now_ms, &run.metrics);
    Ok(serde_json::to_value(&run.report)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::clock::ManualClock;
    use inbox_core::metrics::RecordingSink;
    use inbox_core::store::memory::MemoryStore;
    use wallet_ledger::balance::rules::EntryKind;
    use wallet_ledger::{Currency, Entry, Wallet};

    const T0: i64 = 1_795_000_000_000;

    fn lookup(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn config_defaults_and_errors_name_the_variable() {
        let c = ReconcileConfig::read(&lookup(&[("TABLE_NAME", "t")])).unwrap();
        assert_eq!(c.table_name, "t");
        assert_eq!(c.stale_after_hours, 24);
        assert_eq!(c.stale_after_ms(), 24 * 3_600_000);
        assert_eq!(c.retention_days, 30);
        assert_eq!(c.options().orphan_window_ms, 30 * 86_400_000 - 3_600_000);
        let c = ReconcileConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RECONCILE_STALE_AFTER_HOURS", " 6 "),
        ]))
        .unwrap();
        assert_eq!(c.stale_after_hours, 6);
        let err = |pairs: &[(&str, &str)]| {
            ReconcileConfig::read(&lookup(pairs))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[]).contains("TABLE_NAME"));
        assert!(
            err(&[("TABLE_NAME", "t"), ("DELIVERY_RETENTION_DAYS", "a week")])
                .contains("DELIVERY_RETENTION_DAYS")
        );
        for bad in ["x", "-1", "1.5", "0"] {
            let e = err(&[("TABLE_NAME", "t"), ("RECONCILE_STALE_AFTER_HOURS", bad)]);
            assert!(e.contains("RECONCILE_STALE_AFTER_HOURS"), "{bad}: {e}");
        }
        assert_eq!(
            err(&[("TABLE_NAME", "t"), ("RECONCILE_STALE_AFTER_HOURS", "x")]),
            "environment variable RECONCILE_STALE_AFTER_HOURS is invalid: invalid digit found in \
             string (expected a whole number of hours)"
        );
        let blank = ReconcileConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RECONCILE_STALE_AFTER_HOURS", "  "),
        ]))
        .unwrap();
        assert_eq!(blank.stale_after_hours, 24, "blank counts as unset");
    }

    fn usd() -> Currency {
        Currency::parse("usd").unwrap()
    }

    fn options() -> ReconcileOptions {
        ReconcileConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RECONCILE_STALE_AFTER_HOURS", "1"),
        ]))
        .unwrap()
        .options()
    }

    use wallet_ledger::TenantId;

    fn entry(tenant: &str, id: &str, balance_delta: i64, event_id: &str) -> Entry {
        Entry {
            id: id.into(),
            tenant: TenantId::parse(tenant).unwrap(),
            kind: EntryKind::Topup,
            amount: usd().amount(balance_delta),
            balance_delta: usd().amount(balance_delta),
            held_delta: usd().amount(0),
            subject: "pi_1".into(),
            event_source: "stripe".into(),
            event_id: event_id.into(),
            at: T0,
        }
    }

    fn event() -> LambdaEvent<Value> {
        LambdaEvent::new(
            json!({"source": "aws.scheduler", "detail-type": "Scheduled Event"}),
            lambda_runtime::Context::default(),
        )
    }

    #[tokio::test]
    async fn reports_and_counts_what_does_not_reconcile() {
        let store = Arc::new(MemoryStore::new());
        let mut wallet = Wallet::new(
            TenantId::parse("acme").unwrap(),
            usd().amount(25),
            usd().amount(0),
            None,
            T0,
        );
        store.put_item(wallet.to_item());
        let metrics = Arc::new(RecordingSink::new());
        let r = Reconciler::new(store.clone(), ManualClock::at_millis(T0), options())
            .with_metrics(metrics.clone());
        let clean = handle(&r, event()).await.unwrap();
        assert_eq!(clean["wallets"], 1);
        assert_eq!(clean["mismatched_wallets"], json!([]));
        assert_eq!(
            clean["unregistered_wallets"],
            json!(["acme"]),
            "a wallet put before the registry: found by the fallback scan"
        );
        let emitted = metrics.emitted();
        assert_eq!(
            emitted
                .iter()
                .map(|(at, m)| (*at, m.name.as_str(), m.value))
                .collect::<Vec<_>>(),
            vec![
                (T0, "StaleHolds", 0),
                (T0, "ExpiredHolds", 0),
                (T0, "MismatchedWallets", 0),
                (T0, "OrphanEntries", 0),
                (T0, "UnmatchedPayments", 0),
                (T0, "OverdueAutopayAttempts", 0)
            ],
            "the invocation emits its counts"
        );
        let run = r.run().await.unwrap();
        assert!(run.report.is_clean());
        let documents = EmfWriter::stdout().documents(run.now_ms, &run.metrics);
        assert_eq!(documents.len(), 1, "one EMF line");
        let emf: Value = serde_json::from_str(&documents[0]).unwrap();
        assert_eq!(emf["_aws"]["Timestamp"], T0);
        assert_eq!(
            emf["_aws"]["CloudWatchMetrics"][0]["Namespace"],
            "WebhookIngestor/Wallet"
        );
        for m in [
            "StaleHolds",
            "ExpiredHolds",
            "MismatchedWallets",
            "OrphanEntries",
            "UnmatchedPayments",
            "OverdueAutopayAttempts",
        ] {
            assert_eq!(emf[m], 0, "{m}");
        }

        // A balance edited by hand, and an entry whose event is not in the inbox.
        wallet.balance = usd().amount(500);
        store.put_item(wallet.to_item());
        store.put_item(entry("acme", "e1", 300, "evt_gone").to_item());
        let report = handle(&r, event()).await.unwrap();
        assert_eq!(report["mismatched_wallets"][0]["tenant"], "acme");
        assert_eq!(report["mismatched_wallets"][0]["balance"], 500);
        assert_eq!(report["mismatched_wallets"][0]["entries_balance"], 300);
        assert_eq!(report["orphan_entries"][0]["event_id"], "evt_gone");
        let run = r.run().await.unwrap();
        let emf: Value =
            serde_json::from_str(&EmfWriter::stdout().documents(run.now_ms, &run.metrics)[0])
                .unwrap();
        assert_eq!(
            (
                emf["MismatchedWallets"].as_u64(),
                emf["OrphanEntries"].as_u64(),
                emf["StaleHolds"].as_u64()
            ),
            (Some(1), Some(1), Some(0))
        );
    }

    #[tokio::test]
    async fn payments_unmatched_longer_than_the_window_are_counted() {
        let store = Arc::new(MemoryStore::new());
        let key = inbox_core::domain::MessageKey::new(
            inbox_core::domain::SourceName::parse("stripe").unwrap(),
            inbox_core::domain::EventId::parse("evt_1").unwrap(),
        );
        let mut paid = wallet_ledger::UnmatchedPayment::first(
            "pi_1",
            2500,
            Some("usd".into()),
            &key,
            T0,
            b"{}",
        );
        paid.email = Some("payer@example.com".into());
        store.put_item(paid.to_item(None));
        let config = ReconcileConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RECONCILE_UNMATCHED_AFTER_MINUTES", "30"),
        ]))
        .unwrap();
        assert_eq!(config.unmatched_after_ms, 30 * 60_000);
        let at = |ms: i64| {
            let metrics = Arc::new(RecordingSink::new());
            let r = Reconciler::new(store.clone(), ManualClock::at_millis(ms), config.options())
                .with_metrics(metrics.clone());
            async move {
                let report = handle(&r, event()).await.unwrap();
                let gauge = metrics
                    .emitted()
                    .iter()
                    .find(|(_, m)| m.name == "UnmatchedPayments")
                    .map(|(_, m)| m.value);
                let logged = log_view(&r.run().await.unwrap().report);
                (report, gauge, logged)
            }
        };
        let (report, gauge, logged) = at(T0 + 30 * 60_000).await;
        assert_eq!(
            (
                gauge,
                report["unmatched_payments"].clone(),
                logged["clean"].clone()
            ),
            (Some(0), json!([]), json!(true)),
            "within the window: not counted"
        );
        let (report, gauge, logged) = at(T0 + 30 * 60_000 + 1).await;
        assert_eq!(gauge, Some(1));
        assert_eq!(report["unmatched_payments"][0]["payment_key"], "pi_1");
        assert_eq!(
            report["unmatched_payments"][0]["email"],
            "payer@example.com"
        );
        assert_eq!(
            (
                logged["counts"]["unmatched_payments"].clone(),
                logged["clean"].clone()
            ),
            (json!(1), json!(false))
        );
        assert!(ReconcileConfig::read(&lookup(&[
            ("TABLE_NAME", "t"),
            ("RECONCILE_UNMATCHED_AFTER_MINUTES", "0"),
        ]))
        .unwrap_err()
        .to_string()
        .contains("RECONCILE_UNMATCHED_AFTER_MINUTES"));
    }

    #[tokio::test]
    async fn the_orphan_window_follows_delivery_retention_days() {
        let store = Arc::new(MemoryStore::new());
        store.put_item(
            Wallet::new(
                TenantId::parse("acme").unwrap(),
                usd().amount(25),
                usd().amount(0),
                None,
                T0,
            )
            .to_item(),
        );
        let mut old = entry("acme", "e1", 0, "evt_expired");
        old.at = T0 - 10 * 86_400_000;
        store.put_item(old.to_item());
        let orphans = |days: &str| {
            let config = ReconcileConfig::read(&lookup(&[
                ("TABLE_NAME", "t"),
                ("DELIVERY_RETENTION_DAYS", days),
            ]))
            .unwrap();
            let r = Reconciler::new(store.clone(), ManualClock::at_millis(T0), config.options());
            async move { r.run().await.unwrap().report.orphan_entries.len() }
        };
        assert_eq!(
            orphans("7").await,
            0,
            "its message may have expired: not checked"
        );
        assert_eq!(orphans("30").await, 1, "its message must still be there");
    }

    #[tokio::test]
    async fn a_store_error_fails_the_invocation() {
        let store = Arc::new(MemoryStore::new());
        store.put_item(
            Wallet::new(
                TenantId::parse("acme").unwrap(),
                usd().amount(25),
                usd().amount(0),
                None,
                T0,
            )
            .to_item(),
        );
        store.set_down(true);
        let r = Reconciler::new(store, ManualClock::at_millis(T0), options());
        assert!(handle(&r, event()).await.is_err());
    }

    #[test]
    fn the_log_view_is_capped_but_counts_everything() {
        let mut report = ReconcileReport {
            wallets: 1,
            ..Default::default()
        };
        for i in 0..(LOGGED_PER_KIND + 5) {
            report
                .orphan_entries
                .push(wallet_ledger::reconcile::OrphanEntry {
                    tenant: TenantId::parse("acme").unwrap(),
                    entry_id: format!("e{i}"),
                    event_source: "stripe".into(),
                    event_id: format!("evt_{i}"),
                });
        }
        let v = log_view(&report);
        assert_eq!(v["clean"], false);
        assert_eq!(v["counts"]["orphan_entries"], LOGGED_PER_KIND + 5);
        assert_eq!(
            v["orphan_entries"].as_array().map(Vec::len),
            Some(LOGGED_PER_KIND)
        );
        assert_eq!(v["truncated"], true);
        assert_eq!(log_view(&ReconcileReport::default())["truncated"], false);
    }
}
