//! `inboxctl wallet`: the tenants' prepaid wallets (`inbox_core::ledger`).
//!
//! - `create`: puts a new wallet item, conditioned on `attribute_not_exists(pk)` (never
//!   overwrites: an existing wallet's balance is the sum of its entries).
//! - `balance`: the wallet item, with amounts in minor units and formatted in the currency.
//! - `ledger`: the entries (every change of balance or held, with the webhook event that made it)
//!   and, with `--rows`, the per-email and per-payment rows.
//! - `reconcile`: `wallet_ledger::reconcile::reconcile` over every wallet; exit 1 when anything
//!   does not reconcile, so a cron job or CI step can alert on it.

use crate::cli::{
    WalletCommand, WalletCreateArgs, WalletLedgerArgs, WalletReconcileArgs, WalletTenantArgs,
};
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Error, Result};
use crate::output::{fields, or_dash, print_json, say, spinner, table, truncate};
use crate::when;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::store::dynamo::DynamoInbox;
use inbox_core::store::{Item, ItemStore as _};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use wallet_ledger::reconcile::{reconcile, ReconcileReport};
use wallet_ledger::rules::EntryKind;
use wallet_ledger::{
    month_of, wallet_pk, Entry, Wallet, EMAIL_PREFIX, ENTRY_PREFIX, PAYMENT_PREFIX, WALLET_SK,
};

const HOUR_MS: i64 = 3_600_000;
/// Longest tenant name `create` accepts (the wallet's key is `WALLET#{tenant}`).
const MAX_TENANT_CHARS: usize = 256;

pub async fn run(ctx: &Context, command: WalletCommand) -> Result<()> {
    match command {
        WalletCommand::Create(args) => create(ctx, args).await,
        WalletCommand::Balance(args) => balance(ctx, args).await,
        WalletCommand::Ledger(args) => ledger(ctx, args).await,
        WalletCommand::Reconcile(args) => reconcile_all(ctx, args).await,
    }
}

// ------------------------------------------------------------------ amounts

/// Digits of a currency's minor unit (ISO 4217, as Stripe counts them): 0 for `jpy`, `krw`, …,
/// 3 for `bhd`, `kwd`, …, 2 for every other currency.
pub fn minor_digits(currency: &str) -> u32 {
    const ZERO: [&str; 16] = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv",
        "xaf", "xof", "xpf",
    ];
    const THREE: [&str; 7] = ["bhd", "iqd", "jod", "kwd", "lyd", "omr", "tnd"];
    let c = currency.to_ascii_lowercase();
    if ZERO.contains(&c.as_str()) {
        0
    } else if THREE.contains(&c.as_str()) {
        3
    } else {
        2
    }
}

/// The amount without the currency code: `12.34`, `-0.05`, `500` (zero-decimal currencies).
fn decimal(minor: i64, currency: &str) -> String {
    let digits = minor_digits(currency);
    if digits == 0 {
        return minor.to_string();
    }
    let unit = 10_u64.pow(digits);
    let sign = if minor < 0 { "-" } else { "" };
    let abs = minor.unsigned_abs();
    format!(
        "{sign}{}.{:0width$}",
        abs / unit,
        abs % unit,
        width = digits as usize
    )
}

/// An amount in minor units, formatted: `12.34 USD`, `-0.05 EUR`, `500 JPY`.
pub fn money(minor: i64, currency: &str) -> String {
    format!(
        "{} {}",
        decimal(minor, currency),
        currency.to_ascii_uppercase()
    )
}

/// A change of an amount: `+20.00`, `-0.25`, or `0`.
fn delta(minor: i64, currency: &str) -> String {
    match minor {
        0 => "0".to_owned(),
        d if d > 0 => format!("+{}", decimal(d, currency)),
        d => decimal(d, currency),
    }
}

/// A difference in minor units: `+100`, `-25`, or `0`.
fn signed(n: i64) -> String {
    if n == 0 {
        "0".to_owned()
    } else {
        format!("{n:+}")
    }
}

/// `12.34 USD (1234)`: formatted, then minor units.
fn money_and_minor(minor: i64, currency: &str) -> String {
    format!("{} ({minor})", money(minor, currency))
}

// ------------------------------------------------------------------ inputs

/// A tenant for a new wallet: as the events will name it (they are trimmed), printable.
fn tenant_arg(tenant: &str) -> Result<&str> {
    if tenant.trim().is_empty() {
        return Err(usage("the tenant is empty"));
    }
    if tenant.trim() != tenant {
        return Err(usage(format!(
            "tenant {tenant:?} has leading or trailing spaces; events name tenants trimmed, so it could never match"
        )));
    }
    if tenant.chars().any(char::is_control) {
        return Err(usage(format!(
            "tenant {tenant:?} contains control characters"
        )));
    }
    if tenant.chars().count() > MAX_TENANT_CHARS {
        return Err(usage(format!(
            "the tenant is longer than {MAX_TENANT_CHARS} characters"
        )));
    }
    Ok(tenant)
}

/// A three-letter ISO 4217 code, lower-cased as Stripe writes it.
fn currency_arg(currency: &str) -> Result<String> {
    let c = currency.trim();
    if c.len() == 3 && c.chars().all(|ch| ch.is_ascii_alphabetic()) {
        Ok(c.to_ascii_lowercase())
    } else {
        Err(usage(format!(
            "currency {currency:?} is not a three-letter ISO 4217 code (usd, eur, jpy, …)"
        )))
    }
}

// ------------------------------------------------------------------ wallet view

/// `YYYY_MM` (the item's attribute suffix) → `YYYY-MM`.
fn month_label(key: &str) -> String {
    key.replace('_', "-")
}

/// Amounts of a wallet, formatted in its currency.
#[derive(Debug, Serialize)]
struct Formatted {
    balance: String,
    held: String,
    available: String,
    floor: String,
    message_price: String,
    review_threshold: Option<String>,
    month_debits: String,
}

/// A wallet as `balance` (and `create`) print it.
#[derive(Debug, Serialize)]
struct WalletView {
    tenant: String,
    currency: String,
    balance: i64,
    held: i64,
    available: i64,
    floor: i64,
    message_price: i64,
    review_threshold: Option<i64>,
    overdrawn: bool,
    review: bool,
    /// The current calendar month (UTC), `YYYY-MM`.
    month: String,
    /// Debits of the current month.
    month_debits: i64,
    /// Debits per month (`YYYY-MM`), every month recorded.
    debits_by_month: BTreeMap<String, i64>,
    created_at: String,
    created_at_ms: i64,
    formatted: Formatted,
}

impl WalletView {
    fn new(w: &Wallet, now_ms: i64) -> Self {
        let month = month_of(now_ms);
        let month_debits = w.month_debits.get(&month).copied().unwrap_or(0);
        let cur = w.currency.as_str();
        Self {
            tenant: w.tenant.clone(),
            currency: w.currency.clone(),
            balance: w.balance,
            held: w.held,
            available: w.available(),
            floor: w.floor,
            message_price: w.message_price,
            review_threshold: w.review_threshold,
            overdrawn: w.overdrawn,
            review: w.review,
            month: month_label(&month),
            month_debits,
            debits_by_month: w
                .month_debits
                .iter()
                .map(|(k, v)| (month_label(k), *v))
                .collect(),
            created_at: when::rfc3339(w.created_at),
            created_at_ms: w.created_at,
            formatted: Formatted {
                balance: money(w.balance, cur),
                held: money(w.held, cur),
                available: money(w.available(), cur),
                floor: money(w.floor, cur),
                message_price: money(w.message_price, cur),
                review_threshold: w.review_threshold.map(|t| money(t, cur)),
                month_debits: money(month_debits, cur),
            },
        }
    }

    fn print(&self) -> Result<()> {
        let cur = self.currency.as_str();
        let flag = |on: bool, yes: &str| if on { yes.to_owned() } else { "no".to_owned() };
        let over_review = self.review_threshold.is_some_and(|t| self.month_debits > t);
        say(format!(
            "Wallet of {} ({})",
            self.tenant,
            cur.to_ascii_uppercase()
        ))?;
        say(fields([
            ("balance", money_and_minor(self.balance, cur)),
            ("held", money_and_minor(self.held, cur)),
            (
                "available",
                format!(
                    "{}{}",
                    money_and_minor(self.available, cur),
                    if self.available < self.floor {
                        "  BELOW THE FLOOR"
                    } else {
                        ""
                    }
                ),
            ),
            ("floor", money_and_minor(self.floor, cur)),
            ("price per email", money_and_minor(self.message_price, cur)),
            (
                "review threshold",
                or_dash(
                    self.review_threshold
                        .map(|t| format!("{} per month", money_and_minor(t, cur))),
                ),
            ),
            (
                "debits this month",
                format!(
                    "{} in {}{}",
                    money_and_minor(self.month_debits, cur),
                    self.month,
                    if over_review {
                        "  OVER THE REVIEW THRESHOLD"
                    } else {
                        ""
                    }
                ),
            ),
            (
                "overdrawn",
                flag(
                    self.overdrawn,
                    "YES (a hold took available below the floor)",
                ),
            ),
            (
                "review",
                flag(self.review, "YES (monthly debits passed the threshold)"),
            ),
            ("created (UTC)", when::human(self.created_at_ms)),
        ]))
    }
}

/// The wallet of `tenant`, or an error saying how to create it.
async fn load_wallet(store: &DynamoInbox, tenant: &str) -> Result<Wallet> {
    let item = store
        .get_item(&wallet_pk(tenant), WALLET_SK)
        .await
        .context(format!("reading the wallet of {tenant:?}"))?;
    let Some(item) = item else {
        return Err(failed(format!(
            "no wallet for tenant {tenant:?} in table {} (create one with: inboxctl wallet create {tenant} --currency … --price …)",
            store.table()
        )));
    };
    Wallet::from_item(&item).ok_or_else(|| {
        failed(format!(
            "the wallet item of tenant {tenant:?} is unreadable (no tenant or currency attribute)"
        ))
    })
}

// ------------------------------------------------------------------ create

async fn create(ctx: &Context, args: WalletCreateArgs) -> Result<()> {
    let tenant = tenant_arg(&args.tenant)?;
    let currency = currency_arg(&args.currency)?;
    let table = ctx.table()?.to_owned();
    let now = SystemClock.now_millis();
    let wallet = Wallet::new(
        tenant,
        &currency,
        args.price,
        args.floor,
        args.review_threshold,
        now,
    );
    let put = ctx
        .dynamodb()
        .await
        .put_item()
        .table_name(&table)
        .set_item(Some(wallet.to_item()))
        .condition_expression("attribute_not_exists(pk)")
        .send()
        .await;
    match put {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.as_service_error(),
                Some(PutItemError::ConditionalCheckFailedException(_))
            ) =>
        {
            return Err(failed(format!(
                "tenant {tenant:?} already has a wallet in table {table}; it was left unchanged (inboxctl wallet balance {tenant} shows it)"
            )));
        }
        Err(e) => {
            return Err(Error::Failed(anyhow::Error::new(e).context(format!(
                "creating the wallet of {tenant:?} in table {table}"
            ))))
        }
    }
    let view = WalletView::new(&wallet, now);
    if ctx.json() {
        return print_json(&json!({ "created": true, "wallet": view }));
    }
    say(format!("created the wallet of {tenant} in table {table}"))?;
    view.print()
}

// ------------------------------------------------------------------ balance

async fn balance(ctx: &Context, args: WalletTenantArgs) -> Result<()> {
    let store = ctx.store().await?;
    let wallet = load_wallet(&store, &args.tenant).await?;
    let view = WalletView::new(&wallet, SystemClock.now_millis());
    if ctx.json() {
        print_json(&view)
    } else {
        view.print()
    }
}

// ------------------------------------------------------------------ ledger

/// One ledger entry as printed.
#[derive(Debug, Serialize)]
struct EntryView {
    id: String,
    /// RFC 3339, UTC (the time the webhook event was received).
    at: String,
    at_ms: i64,
    kind: EntryKind,
    amount: i64,
    balance_delta: i64,
    held_delta: i64,
    /// The email's message id (hold, hold release, debit, bounce refund).
    email_id: Option<String>,
    /// The payment's id (top-up, top-up refund).
    payment_id: Option<String>,
    event_source: String,
    event_id: String,
}

fn is_payment(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::Topup | EntryKind::TopupRefund)
}

impl From<Entry> for EntryView {
    fn from(e: Entry) -> Self {
        let (email_id, payment_id) = if is_payment(e.kind) {
            (None, Some(e.subject))
        } else {
            (Some(e.subject), None)
        };
        Self {
            id: e.id,
            at: when::rfc3339(e.at),
            at_ms: e.at,
            kind: e.kind,
            amount: e.amount,
            balance_delta: e.balance_delta,
            held_delta: e.held_delta,
            email_id,
            payment_id,
            event_source: e.event_source,
            event_id: e.event_id,
        }
    }
}

fn attr_s(item: &Item, k: &str) -> Option<String> {
    item.get(k).and_then(|v| v.as_s().ok()).cloned()
}

fn attr_n(item: &Item, k: &str) -> Option<i64> {
    item.get(k)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
}

fn attr_list(item: &Item, k: &str) -> Vec<String> {
    item.get(k)
        .and_then(|v| v.as_l().ok())
        .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
        .unwrap_or_default()
}

/// A per-email row (`EMAIL#{message id}`).
#[derive(Debug, Serialize)]
struct EmailRowView {
    message_id: String,
    /// new, held, debited, released, refunded.
    state: String,
    amount: i64,
    /// The webhook event ids that moved it, in processing order.
    events: Vec<String>,
    held_at: Option<String>,
    held_at_ms: Option<i64>,
    updated_at: Option<String>,
    updated_at_ms: Option<i64>,
    version: Option<i64>,
}

impl EmailRowView {
    fn from_item(item: &Item) -> Self {
        Self {
            message_id: attr_s(item, "message_id").unwrap_or_default(),
            state: attr_s(item, "state").unwrap_or_default(),
            amount: attr_n(item, "amount").unwrap_or(0),
            events: attr_list(item, "events"),
            held_at: attr_n(item, "held_at").map(when::rfc3339),
            held_at_ms: attr_n(item, "held_at"),
            updated_at: attr_n(item, "updated_at").map(when::rfc3339),
            updated_at_ms: attr_n(item, "updated_at"),
            version: attr_n(item, "version"),
        }
    }
}

/// A per-payment row (`PAY#{payment intent}`).
#[derive(Debug, Serialize)]
struct PaymentRowView {
    payment_key: String,
    credited: i64,
    refunded: i64,
    events: Vec<String>,
    updated_at: Option<String>,
    updated_at_ms: Option<i64>,
    version: Option<i64>,
}

impl PaymentRowView {
    fn from_item(item: &Item) -> Self {
        Self {
            payment_key: attr_s(item, "payment_key").unwrap_or_default(),
            credited: attr_n(item, "credited").unwrap_or(0),
            refunded: attr_n(item, "refunded").unwrap_or(0),
            events: attr_list(item, "events"),
            updated_at: attr_n(item, "updated_at").map(when::rfc3339),
            updated_at_ms: attr_n(item, "updated_at"),
            version: attr_n(item, "version"),
        }
    }
}

/// The last `limit` of `v` (most recent last).
fn last<T>(mut v: Vec<T>, limit: usize) -> Vec<T> {
    let skip = v.len().saturating_sub(limit);
    v.split_off(skip)
}

#[derive(Debug, Serialize)]
struct LedgerView {
    tenant: String,
    currency: String,
    /// Every entry of the wallet.
    total_entries: usize,
    /// Entries that could not be read (missing attributes), left out of `entries`.
    unreadable_entries: usize,
    limit: u32,
    /// Whether older entries were left out (`--limit`).
    truncated: bool,
    /// Oldest first.
    entries: Vec<EntryView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    emails: Option<Vec<EmailRowView>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payments: Option<Vec<PaymentRowView>>,
}

async fn ledger(ctx: &Context, args: WalletLedgerArgs) -> Result<()> {
    let store = ctx.store().await?;
    let tenant = args.tenant.as_str();
    let wallet = load_wallet(&store, tenant).await?;
    let pk = wallet_pk(tenant);
    let items = store
        .query_items(&pk, ENTRY_PREFIX)
        .await
        .context(format!("reading the entries of {tenant:?}"))?;
    let total = items.len();
    let entries: Vec<Entry> = items.iter().filter_map(Entry::from_item).collect();
    let unreadable = total - entries.len();
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let truncated = entries.len() > limit;
    let entries: Vec<EntryView> = last(entries, limit)
        .into_iter()
        .map(EntryView::from)
        .collect();
    let (emails, payments) = if args.rows {
        let by_update = |a: &Option<i64>, b: &Option<i64>| a.cmp(b);
        let mut emails: Vec<EmailRowView> = store
            .query_items(&pk, EMAIL_PREFIX)
            .await
            .context(format!("reading the email rows of {tenant:?}"))?
            .iter()
            .map(EmailRowView::from_item)
            .collect();
        emails.sort_by(|a, b| by_update(&a.updated_at_ms, &b.updated_at_ms));
        let mut payments: Vec<PaymentRowView> = store
            .query_items(&pk, PAYMENT_PREFIX)
            .await
            .context(format!("reading the payment rows of {tenant:?}"))?
            .iter()
            .map(PaymentRowView::from_item)
            .collect();
        payments.sort_by(|a, b| by_update(&a.updated_at_ms, &b.updated_at_ms));
        (Some(last(emails, limit)), Some(last(payments, limit)))
    } else {
        (None, None)
    };
    let view = LedgerView {
        tenant: wallet.tenant.clone(),
        currency: wallet.currency.clone(),
        total_entries: total,
        unreadable_entries: unreadable,
        limit: args.limit,
        truncated,
        entries,
        emails,
        payments,
    };
    if ctx.json() {
        return print_json(&view);
    }
    print_ledger(&view, &wallet)
}

fn print_ledger(view: &LedgerView, wallet: &Wallet) -> Result<()> {
    let cur = wallet.currency.as_str();
    say(format!(
        "Ledger of {} ({}): balance {}, held {}, available {}",
        view.tenant,
        cur.to_ascii_uppercase(),
        money(wallet.balance, cur),
        money(wallet.held, cur),
        money(wallet.available(), cur)
    ))?;
    if view.entries.is_empty() {
        say("no entries")?;
    } else {
        let mut t = table([
            "time (UTC)",
            "kind",
            "amount",
            "balance Δ",
            "held Δ",
            "email / payment",
            "event (source/id)",
        ]);
        for e in &view.entries {
            let subject = match (&e.email_id, &e.payment_id) {
                (Some(m), _) => format!("email {m}"),
                (None, Some(p)) => format!("payment {p}"),
                (None, None) => "-".to_owned(),
            };
            t.add_row(vec![
                when::human(e.at_ms),
                e.kind.as_str().to_owned(),
                money(e.amount, cur),
                delta(e.balance_delta, cur),
                delta(e.held_delta, cur),
                truncate(&subject, 48),
                format!("{}/{}", e.event_source, e.event_id),
            ]);
        }
        say(t)?;
    }
    if view.truncated {
        eprintln!(
            "showing the last {} of {} entries (--limit)",
            view.entries.len(),
            view.total_entries
        );
    }
    if view.unreadable_entries > 0 {
        eprintln!(
            "warning: {} entry item(s) could not be read and are not shown",
            view.unreadable_entries
        );
    }
    let events = |ids: &[String]| truncate(&ids.join(", "), 80);
    if let Some(emails) = &view.emails {
        say(format!("\nEmails ({})", emails.len()))?;
        if !emails.is_empty() {
            let mut t = table([
                "message id",
                "state",
                "amount",
                "held since (UTC)",
                "updated (UTC)",
                "events",
            ]);
            for r in emails {
                t.add_row(vec![
                    truncate(&r.message_id, 48),
                    r.state.clone(),
                    money(r.amount, cur),
                    or_dash(r.held_at_ms.map(when::human)),
                    or_dash(r.updated_at_ms.map(when::human)),
                    events(&r.events),
                ]);
            }
            say(t)?;
        }
    }
    if let Some(payments) = &view.payments {
        say(format!("\nPayments ({})", payments.len()))?;
        if !payments.is_empty() {
            let mut t = table(["payment", "credited", "refunded", "updated (UTC)", "events"]);
            for r in payments {
                t.add_row(vec![
                    truncate(&r.payment_key, 48),
                    money(r.credited, cur),
                    money(r.refunded, cur),
                    or_dash(r.updated_at_ms.map(when::human)),
                    events(&r.events),
                ]);
            }
            say(t)?;
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ reconcile

/// The tenants a report names, in order, without repeats.
fn tenants_named(report: &ReconcileReport) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    report
        .mismatched_wallets
        .iter()
        .map(|m| m.tenant.as_str())
        .chain(report.stale_holds.iter().map(|h| h.tenant.as_str()))
        .chain(report.orphan_entries.iter().map(|o| o.tenant.as_str()))
        .filter(|t| seen.insert(*t))
        .collect()
}

/// The one-line verdict of a report that is not clean (the error `reconcile` exits with).
fn verdict(report: &ReconcileReport) -> String {
    let tenants = tenants_named(report);
    let shown: Vec<&str> = tenants.iter().take(10).copied().collect();
    format!(
        "wallets do not reconcile: {} mismatched wallet(s), {} stale hold(s), {} orphan entr{} (tenant(s): {}{})",
        report.mismatched_wallets.len(),
        report.stale_holds.len(),
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

async fn reconcile_all(ctx: &Context, args: WalletReconcileArgs) -> Result<()> {
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let stale_after_ms = i64::from(args.stale_after_hours) * HOUR_MS;
    let bar = spinner(ctx.json(), "reconciling wallets");
    let result = reconcile(&store, now, stale_after_ms).await;
    bar.finish_and_clear();
    let report = result.context(format!(
        "reconciling the wallets in table {}",
        store.table()
    ))?;
    if ctx.json() {
        let mut out = json!({
            "clean": report.is_clean(),
            "checked_at": when::rfc3339(now),
            "checked_at_ms": now,
            "stale_after_hours": args.stale_after_hours,
        });
        if let (Some(o), Value::Object(r)) = (out.as_object_mut(), serde_json::to_value(&report)?) {
            o.extend(r);
        }
        print_json(&out)?;
    } else {
        print_report(&report, now, args.stale_after_hours)?;
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(failed(verdict(&report)))
    }
}

fn print_report(report: &ReconcileReport, now: i64, stale_after_hours: u32) -> Result<()> {
    if report.is_clean() {
        return say(format!(
            "all {} wallet(s) reconcile ({} entries; no hold older than {stale_after_hours} h; every entry's event is in the inbox)",
            report.wallets, report.entries
        ));
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
                m.tenant.clone(),
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
                h.tenant.clone(),
                truncate(&h.message_id, 48),
                h.amount.to_string(),
                when::human(h.held_at),
                when::age(now - h.held_at),
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
                o.tenant.clone(),
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
    use wallet_ledger::reconcile::{Mismatch, OrphanEntry, StaleHold};

    #[test]
    fn amounts_are_formatted_in_the_currency() {
        assert_eq!(money(1234, "usd"), "12.34 USD");
        assert_eq!(money(5, "eur"), "0.05 EUR");
        assert_eq!(money(-5, "eur"), "-0.05 EUR");
        assert_eq!(money(-1234, "usd"), "-12.34 USD");
        assert_eq!(money(0, "usd"), "0.00 USD");
        assert_eq!(money(500, "jpy"), "500 JPY");
        assert_eq!(money(-500, "JPY"), "-500 JPY");
        assert_eq!(money(1234, "kwd"), "1.234 KWD");
        assert_eq!(money(i64::MIN, "usd"), "-92233720368547758.08 USD");
        assert_eq!(delta(2000, "usd"), "+20.00");
        assert_eq!(delta(-25, "usd"), "-0.25");
        assert_eq!(delta(0, "usd"), "0");
        assert_eq!(money_and_minor(1975, "usd"), "19.75 USD (1975)");
        assert_eq!(
            (signed(100), signed(-25), signed(0)),
            ("+100".to_owned(), "-25".to_owned(), "0".to_owned())
        );
    }

    #[test]
    fn inputs_are_checked() {
        assert_eq!(currency_arg("USD").ok(), Some("usd".to_owned()));
        assert_eq!(currency_arg(" eur ").ok(), Some("eur".to_owned()));
        for bad in ["", "us", "usdx", "u$d", "€€€"] {
            assert!(matches!(currency_arg(bad), Err(Error::Usage(_))), "{bad}");
        }
        assert_eq!(tenant_arg("acme").ok(), Some("acme"));
        assert_eq!(tenant_arg("Acme Corp #2").ok(), Some("Acme Corp #2"));
        for bad in ["", " ", " acme", "acme\n", "a\u{7}b"] {
            assert!(matches!(tenant_arg(bad), Err(Error::Usage(_))), "{bad:?}");
        }
        assert!(tenant_arg(&"x".repeat(MAX_TENANT_CHARS + 1)).is_err());
    }

    #[test]
    fn the_last_n() {
        assert_eq!(last(vec![1, 2, 3, 4], 2), vec![3, 4]);
        assert_eq!(last(vec![1, 2], 5), vec![1, 2]);
    }

    #[test]
    fn the_verdict_names_the_tenants() {
        let report = ReconcileReport {
            wallets: 3,
            entries: 9,
            stale_holds: vec![StaleHold {
                tenant: "beta".into(),
                message_id: "m1".into(),
                amount: 25,
                held_at: 0,
            }],
            mismatched_wallets: vec![Mismatch {
                tenant: "acme".into(),
                balance: 100,
                entries_balance: 0,
                held: 0,
                entries_held: 0,
            }],
            orphan_entries: vec![OrphanEntry {
                tenant: "acme".into(),
                entry_id: "e".into(),
                event_source: "stripe".into(),
                event_id: "evt".into(),
            }],
        };
        assert_eq!(
            verdict(&report),
            "wallets do not reconcile: 1 mismatched wallet(s), 1 stale hold(s), 1 orphan entry (tenant(s): acme, beta)"
        );
    }

    #[test]
    fn a_wallet_view_reports_this_month() {
        let now = 1_796_032_800_000; // 2026-11-30T10:00:00Z
        let mut w = Wallet::new("acme", "usd", 25, -100, Some(1000), 0);
        w.balance = 1975;
        w.held = 25;
        w.month_debits.insert("2026_11".into(), 50);
        w.month_debits.insert("2026_10".into(), 75);
        let v = WalletView::new(&w, now);
        assert_eq!((v.available, v.month_debits), (1950, 50));
        assert_eq!(v.month, "2026-11");
        assert_eq!(v.debits_by_month.get("2026-10"), Some(&75));
        assert_eq!(v.formatted.available, "19.50 USD");
        assert_eq!(v.formatted.floor, "-1.00 USD");
        assert_eq!(v.formatted.review_threshold.as_deref(), Some("10.00 USD"));
    }
}
