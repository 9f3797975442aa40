//! The ledger reconciled against Stripe, after a catch-up run, about once an hour
//! ([`due`]: the run whose start falls in the first quarter of an hour): Stripe's
//! PaymentIntents of the last 7 days compared with the ledger's payment rows
//! ([`wallet_ledger::reconcile::provider`]), each kind of difference a metric of the wallet's
//! namespace (`StripePaidNotCredited`, `StripeCreditedNotInStripe`, `StripeAmountsDiffer`,
//! `StripeRefundsDiffer`, each with its alarm), and `StripeReconcileFailed` when the pass could
//! not finish (Stripe or the table unavailable: nothing compared is no proof of agreement).
//!
//! Here and not in the reconcile function: this function already holds the Stripe key and the
//! account's token bucket, and it runs right after the catch-up has stored what Stripe failed to
//! deliver, so what the pass still finds is what the catch-up could not heal. The reconcile
//! function stays without the Stripe key and reads the table only. The pass only reads the
//! table ([`wallet_ledger::ledger::reads::stripe_reconcile_reads`]).

use inbox_core::metrics::Metric;
use inbox_core::outbox::bucket::shared::SharedBucket;
use inbox_core::store::ItemStore;
use serde_json::{json, Value};
use std::collections::HashSet;
use stripe_charges::reconcile::StripePayments;
use stripe_charges::transport::Transport;
use wallet_ledger::reconcile::provider::pass::{compare_after, Options, ProviderReport};
use wallet_ledger::{Ledger, METRICS_NAMESPACE};

/// The metric of a pass that could not finish.
pub const FAILED: &str = "StripeReconcileFailed";

/// Whether the run starting at `now_ms` reconciles: the one in the first 15 minutes of each
/// hour (the catch-up runs every 15 minutes), so a 7-day window is listed 24 times a day, not 96.
pub fn due(now_ms: i64) -> bool {
    now_ms.rem_euclid(3_600_000) < 900_000
}

/// What the pass works with.
#[derive(Debug)]
pub struct Against<T, B> {
    pub payments: StripePayments<T, B>,
    pub options: Options,
}

/// One pass at `now_ms`, right after a catch-up run that stored the events of the intents
/// `in_flight` (not yet credited: the stream is processing them): its report (or why none) and
/// its metrics.
pub async fn run<T: Transport, B: SharedBucket, S: ItemStore>(
    against: &Against<T, B>,
    store: &S,
    now_ms: i64,
    in_flight: &HashSet<String>,
) -> (Result<ProviderReport, String>, Vec<Metric>) {
    let ledger = Ledger::new(store);
    let done = compare_after(
        &against.payments,
        &ledger,
        now_ms / 1000,
        against.options,
        in_flight,
    )
    .await
    .map_err(|e| e.to_string());
    let mut metrics = against.payments.take_metrics();
    match &done {
        Ok(report) => metrics.extend(report.metrics()),
        Err(why) => {
            tracing::warn!(why = %why, "the reconciliation against Stripe could not finish");
            metrics.push(Metric::count(METRICS_NAMESPACE, FAILED, 1));
        }
    }
    (done, metrics)
}

/// The pass as the invocation's result: counts, and the differences' ids and kinds.
pub fn summary(done: &Result<ProviderReport, String>) -> Value {
    match done {
        Ok(r) => json!({
            "created_gte": r.created_gte,
            "listed": r.listed,
            "product": r.product,
            "retrieved": r.retrieved,
            "counts": r.counts,
            "differences": r.differences.iter().map(|d| json!({"kind": d.kind, "payment": d.payment, "tenant": d.tenant})).collect::<Vec<_>>(),
            "waiting": r.waiting,
            "unchecked": r.unchecked.len(),
            "registry_complete": r.registry_complete,
            "stripe_requests": r.requests,
        }),
        Err(why) => json!({"failed": why}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_an_hour_reconciles() {
        let hour = 3_600_000;
        let runs: Vec<bool> = (0..8)
            .map(|q| due(7 * hour + q * 900_000 + 1_000))
            .collect();
        assert_eq!(runs, [true, false, false, false, true, false, false, false]);
    }
}
