//! `inboxctl wallet reconcile`: the ledger's reconciliation of every wallet, as a report; exit 1
//! when anything does not reconcile, or a payment waited unmatched longer than
//! `RECONCILE_UNMATCHED_AFTER_MINUTES`. Entries are checked against the inbox within
//! `DELIVERY_RETENTION_DAYS` (the messages' retention), as the reconcile function does. With
//! `--stripe`, the ledger is also compared with Stripe's own payments ([`super::against`]).

use crate::cli::WalletReconcileArgs;
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{print_json, say, spinner, table, truncate};
use crate::when;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::config::catalog::DELIVERY_RETENTION_DAYS;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use wallet_ledger::reconcile::{reconcile, ReconcileOptions, ReconcileReport, OVERDUE_GRACE_MS};
use wallet_ledger::TenantId;

const HOUR_MS: i64 = 3_600_000;

/// A difference in minor units: `+100`, `-25`, or `0`.
fn signed(n: i64) -> String {
    if n == 0 {
        "0".to_owned()
    } else {
        format!("{n:+}")
    }
}

/// The tenants a report names, in order, without repeats.
fn tenants_named(report: &ReconcileReport) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    report
        .mismatched_wallets
        .iter()
        .map(|m| m.tenant.as_str())
        .chain(report.unreadable_wallets.iter().map(|u| u.tenant.as_str()))
        .chain(report.stale_holds.iter().map(|h| h.tenant.as_str()))
        .chain(report.expired_holds.iter().map(|h| h.tenant.as_str()))
        .chain(report.orphan_entries.iter().map(|o| o.tenant.as_str()))
        .filter(|t| seen.insert(*t))
        .collect()
}

/// The report about the wallets alone: without the payments waiting unmatched and the overdue
/// autopay attempts (problems of their own: no wallet is wrong).
fn wallets_only(report: &ReconcileReport) -> ReconcileReport {
    ReconcileReport {
        unmatched_payments: Vec::new(),
        overdue_attempts: Vec::new(),
        ..report.clone()
    }
}

/// The one-line verdict of a report that is not clean (the error `reconcile` exits with).
fn verdict(report: &ReconcileReport) -> String {
    let mut parts = Vec::new();
    if !wallets_only(report).is_clean() {
        parts.push(wallet_verdict(report));
    }
    let unmatched = report.unmatched_payments.len();
    if unmatched > 0 {
        parts.push(format!(
            "{unmatched} payment(s) unmatched longer than the window: find their tenant (inboxctl wallet unmatched) and bind them (inboxctl wallet bind PAYMENT TENANT)"
        ));
    }
    let overdue = report.overdue_attempts.len();
    if overdue > 0 {
        parts.push(format!(
            "{overdue} autopay attempt(s) overdue by more than {} min: the charge function is not taking them (see its errors and logs)",
            OVERDUE_GRACE_MS / 60_000
        ));
    }
    parts.join("; ")
}

/// The verdict on the wallets themselves.
fn wallet_verdict(report: &ReconcileReport) -> String {
    let tenants = tenants_named(report);
    let shown: Vec<&str> = tenants.iter().take(10).copied().collect();
    format!(
        "wallets do not reconcile: {} mismatched wallet(s), {} unreadable wallet(s), {} stale hold(s), {} hold(s) past their expiry, {} orphan entr{} (tenant(s): {}{})",
        report.mismatched_wallets.len(),
        report.unreadable_wallets.len(),
        report.stale_holds.len(),
        report.expired_holds.len(),
        report.orphan_entries.len(),
        if report.orphan_entries.len() == 1 { "y" } else { "ies" },
        shown.join(", "),
        if tenants.len() > shown.len() {
            format!(" and {} more", tenants.len() - shown.len())
        } else {
            String::new()
        }
    )
}

pub(super) async fn reconcile_all(ctx: &Context, args: WalletReconcileArgs) -> Result<()> {
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let stale_after_ms = i64::from(args.stale_after_hours) * HOUR_MS;
    let days: u32 = ctx
        .env()
        .parse(&DELIVERY_RETENTION_DAYS)
        .map_err(|e| usage(e.to_string()))?;
    let unmatched_after_ms = super::unmatched::window_ms(ctx)?;
    let options = ReconcileOptions::new(
        stale_after_ms,
        Duration::from_secs(u64::from(days) * 86_400),
    )
    .with_unmatched_after(unmatched_after_ms);
    let bar = spinner(ctx.json(), "reconciling wallets");
    let result = reconcile(&store, now, options).await;
    bar.finish_and_clear();
    let report = result.context(format!(
        "reconciling the wallets in table {}",
        store.table()
    ))?;
    let stripe = match args.stripe {
        true => Some(super::against::compare_with_stripe(ctx, &store, now, args.days).await?),
        false => None,
    };
    if ctx.json() {
        let mut out = json!({
            "clean": report.is_clean(),
            "checked_at": when::rfc3339(now),
            "checked_at_ms": now,
            "stale_after_hours": args.stale_after_hours,
            "retention_days": days,
            "unmatched_after_minutes": unmatched_after_ms / 60_000,
        });
        if let (Some(o), Value::Object(r)) = (out.as_object_mut(), serde_json::to_value(&report)?) {
            o.extend(r);
        }
        if let Some(s) = &stripe {
            out["clean"] = json!(report.is_clean() && s.is_clean());
            out["stripe"] = serde_json::to_value(s)?;
            out["stripe"]["days"] = json!(args.days);
        }
        print_json(&out)?;
    } else {
        print_report(&report, now, args.stale_after_hours)?;
        print_unmatched(&report, now, unmatched_after_ms)?;
        print_overdue(&report, now)?;
        if let Some(s) = &stripe {
            super::against::print(s, args.days)?;
        }
    }
    let mut problems = Vec::new();
    if !report.is_clean() {
        problems.push(verdict(&report));
    }
    if let Some(s) = stripe.as_ref().filter(|s| !s.is_clean()) {
        problems.push(super::against::verdict(s));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(failed(problems.join("; ")))
    }
}

/// What is worth knowing even when everything reconciles: busy wallets not compared this time,
/// wallets found only by the fallback scan.
fn print_notes(report: &ReconcileReport) -> Result<()> {
    if !report.unsettled_wallets.is_empty() {
        say(format!(
            "note: {} wallet(s) changed during every read and were not compared this time (busy, not a problem): {}",
            report.unsettled_wallets.len(),
            report
                .unsettled_wallets
                .iter()
                .map(TenantId::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ))?;
    }
    if !report.unregistered_wallets.is_empty() {
        say(format!(
            "note: {} wallet(s) created before the wallet registry were found by a table scan: run `inboxctl wallet reindex` once",
            report.unregistered_wallets.len()
        ))?;
    }
    Ok(())
}

/// The payments unmatched longer than the window (a problem of their own: no wallet is wrong).
fn print_unmatched(report: &ReconcileReport, now: i64, window_ms: i64) -> Result<()> {
    if report.unmatched_payments.is_empty() {
        return say(format!(
            "no payment unmatched longer than {} min",
            window_ms / 60_000
        ));
    }
    say(format!(
        "\nPayments unmatched longer than {} min ({}): inboxctl wallet unmatched, then inboxctl wallet bind PAYMENT TENANT",
        window_ms / 60_000,
        report.unmatched_payments.len()
    ))?;
    let mut t = table(["payment", "amount", "customer", "email", "age"]);
    for u in &report.unmatched_payments {
        t.add_row(vec![
            u.payment_key.clone(),
            super::unmatched::amount_text(u.amount, u.currency.as_deref()),
            u.customer.clone().unwrap_or_else(|| "-".into()),
            u.email.clone().unwrap_or_else(|| "-".into()),
            when::age(now - u.first_seen),
        ]);
    }
    say(t)
}

/// The autopay attempts the charging pass has not taken long after their due (a problem of
/// their own: the charge function is failing or behind).
fn print_overdue(report: &ReconcileReport, now: i64) -> Result<()> {
    if report.overdue_attempts.is_empty() {
        return say(format!(
            "no autopay attempt overdue by more than {} min",
            OVERDUE_GRACE_MS / 60_000
        ));
    }
    say(format!(
        "\nAutopay attempts overdue by more than {} min ({}): the charge function is not taking them",
        OVERDUE_GRACE_MS / 60_000,
        report.overdue_attempts.len()
    ))?;
    let mut t = table(["tenant", "attempt", "state", "try", "due (UTC)", "overdue"]);
    for a in &report.overdue_attempts {
        t.add_row(vec![
            a.tenant.to_string(),
            truncate(&a.attempt_id, 48),
            a.state.to_owned(),
            a.try_no.to_string(),
            when::human(a.due),
            when::age(now - a.due),
        ]);
    }
    say(t)
}

fn print_report(report: &ReconcileReport, now: i64, stale_after_hours: u32) -> Result<()> {
    print_notes(report)?;
    let wallets_clean = wallets_only(report).is_clean();
    if wallets_clean {
        return say(format!(
            "all {} wallet(s) reconcile ({} entries; no hold older than {stale_after_hours} h; every entry's event is in the inbox)",
            report.wallets, report.entries
        ));
    }
    if !report.unreadable_wallets.is_empty() {
        say(format!(
            "Wallets that cannot be read (an amount that is not a valid number, unreadable entries or rows) ({})",
            report.unreadable_wallets.len()
        ))?;
        let mut t = table(["tenant", "what is wrong"]);
        for u in &report.unreadable_wallets {
            t.add_row(vec![u.tenant.to_string(), u.reason.clone()]);
        }
        say(t)?;
    }
    if !report.mismatched_wallets.is_empty() {
        say(format!(
            "Wallets whose balance or held amount differs from the sum of their entries ({})",
            report.mismatched_wallets.len()
        ))?;
        let mut t = table([
            "tenant",
            "balance",
            "sum of entries",
            "difference",
            "held",
            "held by entries",
            "difference",
        ]);
        for m in &report.mismatched_wallets {
            t.add_row(vec![
                m.tenant.to_string(),
                m.balance.to_string(),
                m.entries_balance.to_string(),
                signed(m.balance - m.entries_balance),
                m.held.to_string(),
                m.entries_held.to_string(),
                signed(m.held - m.entries_held),
            ]);
        }
        say(t)?;
    }
    if !report.stale_holds.is_empty() {
        say(format!(
            "\nHolds older than {stale_after_hours} h with no terminal event ({})",
            report.stale_holds.len()
        ))?;
        let mut t = table([
            "tenant",
            "email",
            "amount (minor)",
            "held since (UTC)",
            "age",
        ]);
        for h in &report.stale_holds {
            t.add_row(vec![
                h.tenant.to_string(),
                truncate(&h.message_id, 48),
                h.amount.to_string(),
                when::human(h.held_at),
                when::age(now - h.held_at),
            ]);
        }
        say(t)?;
    }
    if !report.expired_holds.is_empty() {
        say(format!(
            "\nHolds past their expiry, not released by the sweep ({})",
            report.expired_holds.len()
        ))?;
        let mut t = table(["tenant", "email", "amount (minor)", "expired (UTC)", "ago"]);
        for h in &report.expired_holds {
            t.add_row(vec![
                h.tenant.to_string(),
                truncate(&h.message_id, 48),
                h.amount.to_string(),
                when::human(h.expires_at),
                when::age(now - h.expires_at),
            ]);
        }
        say(t)?;
    }
    if !report.orphan_entries.is_empty() {
        say(format!(
            "\nEntries whose webhook event is not in the inbox ({})",
            report.orphan_entries.len()
        ))?;
        let mut t = table(["tenant", "entry", "event (source/id)"]);
        for o in &report.orphan_entries {
            t.add_row(vec![
                o.tenant.to_string(),
                o.entry_id.clone(),
                format!("{}/{}", o.event_source, o.event_id),
            ]);
        }
        say(t)?;
    }
    say(format!(
        "\nchecked {} wallet(s) and {} entries",
        report.wallets, report.entries
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wallet_ledger::reconcile::{
        LongUnmatched, Mismatch, OrphanEntry, OverdueAttempt, StaleHold, UnreadableWallet,
    };

    #[test]
    fn differences_are_signed() {
        assert_eq!(
            (signed(100), signed(-25), signed(0)),
            ("+100".to_owned(), "-25".to_owned(), "0".to_owned())
        );
    }

    #[test]
    fn the_verdict_names_the_tenants() {
        let report = ReconcileReport {
            wallets: 3,
            entries: 9,
            stale_holds: vec![StaleHold {
                tenant: TenantId::parse("beta").unwrap(),
                message_id: "m1".into(),
                amount: 25,
                held_at: 0,
            }],
            mismatched_wallets: vec![Mismatch {
                tenant: TenantId::parse("acme").unwrap(),
                balance: 100,
                entries_balance: 0,
                held: 0,
                entries_held: 0,
            }],
            orphan_entries: vec![OrphanEntry {
                tenant: TenantId::parse("acme").unwrap(),
                entry_id: "e".into(),
                event_source: "stripe".into(),
                event_id: "evt".into(),
            }],
            unreadable_wallets: vec![UnreadableWallet {
                tenant: TenantId::parse("gamma").unwrap(),
                reason: "balance is not a number".into(),
            }],
            ..ReconcileReport::default()
        };
        assert_eq!(
            verdict(&report),
            "wallets do not reconcile: 1 mismatched wallet(s), 1 unreadable wallet(s), 1 stale hold(s), 0 hold(s) past their expiry, 1 orphan entry (tenant(s): acme, gamma, beta)"
        );
        let unmatched = LongUnmatched {
            payment_key: "pi_1".into(),
            amount: 2500,
            currency: Some("usd".into()),
            customer: None,
            email: None,
            first_seen: 0,
        };
        let both = ReconcileReport {
            unmatched_payments: vec![unmatched.clone()],
            ..report
        };
        assert!(verdict(&both).ends_with(
            "(tenant(s): acme, gamma, beta); 1 payment(s) unmatched longer than the window: find their tenant (inboxctl wallet unmatched) and bind them (inboxctl wallet bind PAYMENT TENANT)"
        ));
        let only = ReconcileReport {
            unmatched_payments: vec![unmatched],
            ..ReconcileReport::default()
        };
        assert!(verdict(&only).starts_with("1 payment(s) unmatched longer than the window"));
        let overdue = ReconcileReport {
            overdue_attempts: vec![OverdueAttempt {
                tenant: TenantId::parse("acme").unwrap(),
                attempt_id: "threshold-evt_1".into(),
                state: "charging",
                try_no: 0,
                due: 0,
            }],
            ..ReconcileReport::default()
        };
        assert!(!overdue.is_clean(), "an overdue attempt is a problem");
        assert_eq!(
            verdict(&overdue),
            "1 autopay attempt(s) overdue by more than 15 min: the charge function is not taking them (see its errors and logs)",
            "no wallet is wrong: the verdict names only the attempts"
        );
    }
}
