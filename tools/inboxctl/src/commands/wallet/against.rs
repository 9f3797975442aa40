//! `inboxctl wallet reconcile --stripe`: the ledger against Stripe's own payments
//! ([`wallet_ledger::reconcile::provider`]), as the catch-up function compares them hourly: the
//! PaymentIntents carrying the product's metadata created in the last `--days` days, and the
//! payment rows the ledger credited in that window, each difference with its kind.

use crate::context::Context;
use crate::error::{Context as _, Result};
use crate::output::{say, spinner, table};
use inbox_core::store::dynamo::DynamoTable;
use stripe_charges::reconcile::StripePayments;
use stripe_charges::{StripeClient, StripeConfig};
use wallet_ledger::reconcile::provider::pass::{compare, Difference, Options, ProviderReport};
use wallet_ledger::reconcile::provider::Kind;
use wallet_ledger::Ledger;

/// Compares the ledger in `store` with the Stripe account of the configured key at `now_ms`.
pub(crate) async fn compare_with_stripe(
    ctx: &Context,
    store: &DynamoTable,
    now_ms: i64,
    days: u32,
) -> Result<ProviderReport> {
    let config = StripeConfig::read(ctx.env(), ctx.sdk().await).await?;
    let payments = StripePayments::on(StripeClient::from_config(&config, store.clone())?);
    let options = Options {
        window_secs: i64::from(days) * 86_400,
        ..Options::default()
    };
    let bar = spinner(ctx.json(), "comparing the ledger with Stripe's payments");
    let done = compare(&payments, &Ledger::new(store), now_ms / 1000, options).await;
    bar.finish_and_clear();
    done.context("comparing the ledger with Stripe")
}

/// The one-line verdict of a report with differences.
pub(super) fn verdict(report: &ProviderReport) -> String {
    let counts: Vec<String> = Kind::ALL
        .iter()
        .filter_map(|k| report.counts.get(k).map(|n| format!("{n} {}", label(*k))))
        .collect();
    format!(
        "the ledger and Stripe differ: {} (inboxctl wallet reconcile --stripe lists them)",
        counts.join(", ")
    )
}

pub(crate) fn label(kind: Kind) -> &'static str {
    match kind {
        Kind::PaidNotCredited => "paid in Stripe, not credited",
        Kind::CreditedNotInStripe => "credited, not in Stripe",
        Kind::AmountsDiffer => "amounts differ",
        Kind::RefundsDiffer => "refunds differ",
    }
}

fn amount(n: Option<i64>, currency: Option<&str>) -> String {
    match n {
        Some(n) => format!("{n} {}", currency.unwrap_or_default()),
        None => "-".into(),
    }
}

/// One difference as a table row.
pub(crate) fn row(d: &Difference) -> Vec<String> {
    let s = d.stripe.as_ref();
    let l = d.ledger.as_ref();
    vec![
        label(d.kind).to_owned(),
        d.payment.clone(),
        d.tenant.as_ref().map_or("-".into(), ToString::to_string),
        d.attempt.clone().unwrap_or_else(|| "-".into()),
        s.map_or("none".into(), |s| format!("{:?}", s.status).to_lowercase()),
        amount(s.map(|s| s.received), s.map(|s| s.currency.as_str())),
        amount(l.map(|l| l.credited), l.map(|l| l.currency.as_str())),
        format!(
            "{} / {}",
            s.map_or("-".into(), |s| s.refunded.to_string()),
            l.map_or("-".into(), |l| l.refund_total.to_string())
        ),
    ]
}

/// The report as text.
pub(super) fn print(report: &ProviderReport, days: u32) -> Result<()> {
    let waiting: usize = report.waiting.values().sum();
    say(format!(
        "\nAgainst Stripe (intents created in the last {days} day(s)): {} listed, {} of the product's, {} ledger row(s) retrieved one by one, {} Stripe request(s)",
        report.listed, report.product, report.retrieved, report.requests
    ))?;
    if !report.registry_complete {
        say("note: the wallet registry is not complete: wallets created before it are not read (run `inboxctl wallet reindex` once)")?;
    }
    for (why, n) in &report.waiting {
        say(format!("not a difference yet: {n} ({why})"))?;
    }
    if !report.unchecked.is_empty() {
        say(format!(
            "not checked: {} payment(s) whose key is no PaymentIntent's: {}",
            report.unchecked.len(),
            report.unchecked.join(", ")
        ))?;
    }
    if report.is_clean() {
        return say(format!(
            "the ledger agrees with Stripe ({} in flight)",
            waiting
        ));
    }
    let mut t = table([
        "difference",
        "payment",
        "tenant",
        "attempt",
        "in Stripe",
        "received",
        "credited",
        "refunded (Stripe / ledger)",
    ]);
    for d in &report.differences {
        t.add_row(row(d));
    }
    say(t)?;
    for k in Kind::ALL.iter().filter(|k| report.counts.contains_key(k)) {
        say(format!("{}: {}", label(*k), k.meaning()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use wallet_ledger::reconcile::provider::{Booked, Reported, Status};
    use wallet_ledger::TenantId;

    #[test]
    fn the_verdict_counts_each_kind_and_a_row_shows_both_sides() {
        let report = ProviderReport {
            counts: BTreeMap::from([(Kind::PaidNotCredited, 2), (Kind::AmountsDiffer, 1)]),
            ..ProviderReport::default()
        };
        assert_eq!(
            verdict(&report),
            "the ledger and Stripe differ: 2 paid in Stripe, not credited, 1 amounts differ (inboxctl wallet reconcile --stripe lists them)"
        );
        let acme = TenantId::parse("acme").unwrap();
        let d = Difference {
            kind: Kind::AmountsDiffer,
            payment: "pi_1".into(),
            tenant: Some(acme.clone()),
            attempt: None,
            stripe: Some(Reported {
                id: "pi_1".into(),
                tenant: Some(acme.clone()),
                attempt: None,
                status: Status::Succeeded,
                received: 2500,
                currency: "usd".into(),
                created: 0,
                refunded: 0,
            }),
            ledger: Some(Booked {
                payment_key: "pi_1".into(),
                tenant: acme,
                currency: "usd".into(),
                credited: 2000,
                refund_total: 0,
                updated_at: None,
            }),
        };
        assert_eq!(
            row(&d),
            [
                "amounts differ",
                "pi_1",
                "acme",
                "-",
                "succeeded",
                "2500 usd",
                "2000 usd",
                "0 / 0"
            ]
        );
    }
}
