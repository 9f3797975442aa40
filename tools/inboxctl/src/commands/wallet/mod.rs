//! `inboxctl wallet`: the tenants' prepaid wallets, through the ledger's own API
//! ([`wallet_ledger::Ledger`]; the ledger owns its item layout, this module only presents).
//!
//! - `create`: [`Ledger::create`] (never overwrites: an existing wallet's balance is the sum of
//!   its entries); the floor and review threshold not given are the stage's defaults
//!   (`WALLET_DEFAULT_FLOOR`, `WALLET_DEFAULT_REVIEW_THRESHOLD`).
//! - `set`: [`Ledger::set_limits`], a wallet's floor or review threshold changed later
//!   (journaled; its amounts are left alone).
//! - `balance`: the wallet, with amounts in minor units and formatted in the currency.
//! - `ledger`: the entries (every change of balance or held, with the webhook event that made it)
//!   and, with `--rows`, the per-email and per-payment rows.
//! - `reconcile`: [`wallet_ledger::reconcile::reconcile`] over every wallet; exit 1 when anything does not
//!   reconcile, so a cron job or CI step can alert on it.
//! - `reindex`: [`Ledger::reindex`], registers the wallets created before the wallet registry.
//! - `backfill-hold-expiry`: [`backfill`], an expiry for the holds placed before holds expired.
//! - `autopay …`: a wallet's automatic top-ups and recurring charge ([`autopay`]).
//! - `unmatched`, `bind`: the payments that named no tenant, and binding one to a tenant
//!   ([`unmatched`]: [`Ledger::unmatched`], [`Ledger::bind`], then `replay`'s own code).
//!
//! This module: the command dispatch, input checks, amount formatting, `create`, `set`,
//! `balance` and `reindex`;
//! [`view`] presents a wallet, [`ledger`] the entries and rows, [`reconcile`] the report.

pub(crate) mod against;
pub(crate) mod autopay;
mod backfill;
pub(crate) mod ledger;
mod reconcile;
pub(crate) mod unmatched;
pub(crate) mod view;

use crate::cli::{WalletCommand, WalletCreateArgs, WalletSetArgs, WalletTenantArgs};
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{print_json, say};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::store::dynamo::DynamoTable;
use serde_json::json;
use view::WalletView;
use wallet_ledger::config::DefaultLimits;
use wallet_ledger::{
    CreateOutcome, Currency, Ledger, LedgerError, LimitsChange, Money, ShardsError, ShardsSet,
    TenantId, Wallet,
};

pub async fn run(ctx: &Context, command: WalletCommand) -> Result<()> {
    match command {
        WalletCommand::Create(args) => create(ctx, args).await,
        WalletCommand::Set(args) => set(ctx, args).await,
        WalletCommand::Balance(args) => balance(ctx, args).await,
        WalletCommand::Ledger(args) => ledger::ledger(ctx, args).await,
        WalletCommand::Reconcile(args) => reconcile::reconcile_all(ctx, args).await,
        WalletCommand::Reindex => reindex(ctx).await,
        WalletCommand::BackfillHoldExpiry(args) => backfill::backfill(ctx, args).await,
        WalletCommand::Autopay(command) => autopay::run(ctx, command).await,
        WalletCommand::Unmatched(args) => unmatched::run(ctx, args).await,
        WalletCommand::Bind(args) => unmatched::bind(ctx, args).await,
    }
}

// ------------------------------------------------------------------ amounts

/// `12.34 USD (1234)`: formatted, then minor units.
pub(crate) fn money_and_minor(m: Money) -> String {
    format!("{m} ({})", m.minor())
}

// ------------------------------------------------------------------ inputs

/// A tenant for a command that writes (create, set, autopay set/resume, bind): the grammar
/// (1 to 128 of `A-Z a-z 0-9 . _ : -`), refused with the reason before anything is written.
fn tenant_arg(tenant: &str) -> Result<TenantId> {
    TenantId::parse(tenant).map_err(|e| usage(e.to_string()))
}

/// A tenant for a command that reads a wallet or stops something (balance, ledger, autopay
/// show/pause/rm): also one stored before the grammar ([`TenantId::stored`]), so such a
/// wallet stays readable and its autopay can be stopped.
fn stored_tenant_arg(tenant: &str) -> Result<TenantId> {
    TenantId::stored(tenant).map_err(|e| usage(e.to_string()))
}

/// An amount of a new wallet (price, floor, review threshold): its size at most `max`
/// (`WALLET_MAX_AMOUNT`).
fn amount_arg(what: &str, minor: i64, max: i64) -> Result<i64> {
    if minor.unsigned_abs() > max.unsigned_abs() {
        return Err(usage(format!(
            "{what} {minor} is beyond the largest accepted amount, {max} minor units (WALLET_MAX_AMOUNT)"
        )));
    }
    Ok(minor)
}

/// A three-letter ISO 4217 code, lower-cased as Stripe writes it.
fn currency_arg(currency: &str) -> Result<Currency> {
    Currency::parse(currency).map_err(|e| usage(e.to_string()))
}

/// The wallet of `tenant`, or an error saying how to create it.
pub(crate) async fn load_wallet(store: &DynamoTable, tenant: &str) -> Result<Wallet> {
    let missing = || {
        failed(format!(
            "no wallet for tenant {tenant:?} in table {} (create one with: inboxctl wallet create {tenant} --currency … --price …)",
            store.table()
        ))
    };
    // What is not a tenant has no wallet (one stored before the grammar is still read).
    let Ok(id) = TenantId::stored(tenant) else {
        return Err(missing());
    };
    match Ledger::new(store).wallet(&id).await {
        Ok(Some(wallet)) => Ok(wallet),
        Ok(None) => Err(missing()),
        Err(e @ LedgerError::Unreadable(_)) => Err(failed(e)),
        Err(LedgerError::Store(e)) => Err(e).context(format!("reading the wallet of {tenant:?}")),
    }
}

// ------------------------------------------------------------------ create

async fn create(ctx: &Context, args: WalletCreateArgs) -> Result<()> {
    let tenant = tenant_arg(&args.tenant)?;
    let currency = currency_arg(&args.currency)?;
    let max = wallet_ledger::config::max_amount(ctx.env()).map_err(|e| usage(e.to_string()))?;
    let defaults = DefaultLimits::read(ctx.env()).map_err(|e| usage(e.to_string()))?;
    let change = args.limits.change();
    let floor = change.floor.unwrap_or(defaults.floor);
    let review_threshold = change
        .review_threshold
        .unwrap_or(Some(defaults.review_threshold));
    amount_arg("the price", args.price, max)?;
    amount_arg("the floor", floor, max)?;
    if let Some(t) = review_threshold {
        amount_arg("the review threshold", t, max)?;
    }
    let store = ctx.store().await?;
    let table = store.table().to_owned();
    let now = SystemClock.now_millis();
    let wallet = Wallet::new(
        tenant.clone(),
        currency.amount(args.price),
        currency.amount(floor),
        review_threshold.map(|t| currency.amount(t)),
        now,
    );
    let created = Ledger::new(&store).create(&wallet).await.context(format!(
        "creating the wallet of {tenant:?} in table {table}"
    ))?;
    if created == CreateOutcome::AlreadyExists {
        return Err(failed(format!(
            "tenant {tenant:?} already has a wallet in table {table}; it was left unchanged (inboxctl wallet balance {tenant} shows it)"
        )));
    }
    let view = WalletView::new(&wallet, now)?;
    if ctx.json() {
        return print_json(&json!({ "created": true, "wallet": view }));
    }
    say(format!("created the wallet of {tenant} in table {table}"))?;
    view.print()
}

// ------------------------------------------------------------------ set

/// `set --shards K`: raises the wallet's count of shards (a lower one is refused).
async fn set_shards(ctx: &Context, tenant: &TenantId, k: u32) -> Result<ShardsSet> {
    let store = ctx.store().await?;
    match Ledger::new(&store).set_shards(tenant, k).await {
        Ok(set) => {
            if !ctx.json() {
                say(format!(
                    "the wallet of {tenant} has {} shards (was {})",
                    set.after, set.before
                ))?;
            }
            Ok(set)
        }
        Err(ShardsError::NoWallet(_)) => load_wallet(&store, tenant.as_str())
            .await
            .and_then(|_| Err(failed(format!("no wallet for tenant {tenant:?}")))),
        Err(ShardsError::Ledger(LedgerError::Store(e))) => {
            Err(e).context(format!("setting the shards of {tenant:?}"))
        }
        Err(e @ (ShardsError::Lower { .. } | ShardsError::OutOfRange(_))) => {
            Err(usage(e.to_string()))
        }
        Err(e) => Err(failed(e)),
    }
}

/// The JSON of a change of shards.
fn shards_json(set: Option<ShardsSet>) -> serde_json::Value {
    set.map_or(
        serde_json::Value::Null,
        |s| json!({"before": s.before, "after": s.after}),
    )
}

async fn set(ctx: &Context, args: WalletSetArgs) -> Result<()> {
    let tenant = tenant_arg(&args.tenant)?;
    let max = wallet_ledger::config::max_amount(ctx.env()).map_err(|e| usage(e.to_string()))?;
    let change = args.limits.change();
    if change == LimitsChange::default() {
        let Some(k) = args.shards else {
            return Err(usage(
                "nothing to change: give --floor, --review-threshold, --no-review-threshold or --shards",
            ));
        };
        let set = set_shards(ctx, &tenant, k).await?;
        let store = ctx.store().await?;
        let view = WalletView::new(
            &load_wallet(&store, tenant.as_str()).await?,
            SystemClock.now_millis(),
        )?;
        if ctx.json() {
            return print_json(&json!({"shards": shards_json(Some(set)), "wallet": view}));
        }
        return view.print();
    }
    let shards = match args.shards {
        Some(k) => Some(set_shards(ctx, &tenant, k).await?),
        None => None,
    };
    if let Some(f) = change.floor {
        amount_arg("the floor", f, max)?;
    }
    if let Some(Some(t)) = change.review_threshold {
        amount_arg("the review threshold", t, max)?;
    }
    let store = ctx.store().await?;
    let now = SystemClock.now_millis();
    let set = match Ledger::new(&store)
        .set_limits(&tenant, &args.operator, now, change)
        .await
    {
        Ok(Some(set)) => set,
        Ok(None) => return load_wallet(&store, tenant.as_str()).await.map(|_| ()),
        Err(e @ LedgerError::Unreadable(_)) => return Err(failed(e)),
        Err(LedgerError::Store(e)) => {
            return Err(e).context(format!("setting the limits of {tenant:?}"))
        }
    };
    let wallet = load_wallet(&store, tenant.as_str()).await?;
    let view = WalletView::new(&wallet, now)?;
    let threshold = |t: Option<Money>| t.map(Money::minor);
    if ctx.json() {
        return print_json(&json!({
            "before": {"floor": set.before.floor.minor(),
                       "review_threshold": threshold(set.before.review_threshold)},
            "after": {"floor": set.after.floor.minor(),
                      "review_threshold": threshold(set.after.review_threshold)},
            "shards": shards_json(shards),
            "wallet": view,
        }));
    }
    let shown = |t: Option<Money>| t.map_or_else(|| "none".to_owned(), money_and_minor);
    say(format!(
        "set the limits of {tenant} (journaled as {}): floor {} → {}, review threshold {} → {}",
        args.operator,
        money_and_minor(set.before.floor),
        money_and_minor(set.after.floor),
        shown(set.before.review_threshold),
        shown(set.after.review_threshold),
    ))?;
    view.print()
}

// ------------------------------------------------------------------ balance

async fn balance(ctx: &Context, args: WalletTenantArgs) -> Result<()> {
    let store = ctx.store().await?;
    let wallet = load_wallet(&store, &args.tenant).await?;
    let view = WalletView::new(&wallet, SystemClock.now_millis())?;
    if ctx.json() {
        print_json(&view)
    } else {
        view.print()
    }
}

// ------------------------------------------------------------------ reindex

async fn reindex(ctx: &Context) -> Result<()> {
    let store = ctx.store().await?;
    let done = Ledger::new(&store)
        .reindex(SystemClock.now_millis())
        .await
        .context(format!(
            "registering the wallets in table {}",
            store.table()
        ))?;
    if ctx.json() {
        return print_json(&json!({
            "wallets": done.wallets,
            "newly_registered": done.newly_registered,
            "registry_complete": true,
        }));
    }
    say(format!(
        "{} wallet(s) in table {}, {} newly registered; the registry is complete: reconciliation no longer scans the table",
        done.wallets,
        store.table(),
        done.newly_registered
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn usd() -> Currency {
        Currency::parse("usd").unwrap()
    }

    #[test]
    fn amounts_are_formatted_in_the_currency() {
        assert_eq!(money_and_minor(usd().amount(1975)), "19.75 USD (1975)");
        assert_eq!(
            money_and_minor(Currency::parse("jpy").unwrap().amount(-500)),
            "-500 JPY (-500)"
        );
    }

    #[test]
    fn inputs_are_checked() {
        assert_eq!(
            currency_arg("USD").ok().map(|c| c.as_str().to_owned()),
            Some("usd".to_owned())
        );
        assert_eq!(
            currency_arg(" eur ").ok().map(|c| c.as_str().to_owned()),
            Some("eur".to_owned())
        );
        for bad in ["", "us", "usdx", "u$d", "€€€"] {
            assert!(matches!(currency_arg(bad), Err(Error::Usage(_))), "{bad}");
        }
        assert_eq!(tenant_arg("acme").ok().unwrap().as_str(), "acme");
        assert_eq!(
            tenant_arg("org:acme.eu_2-b").ok().unwrap().as_str(),
            "org:acme.eu_2-b"
        );
        for bad in [
            "",
            " ",
            " acme",
            "acme\n",
            "a\u{7}b",
            "Acme Corp #2",
            "a/b",
            "..",
            "é",
        ] {
            assert!(
                matches!(tenant_arg(bad), Err(Error::Usage(m)) if m.contains("tenant")),
                "{bad:?}"
            );
        }
        assert!(tenant_arg(&"x".repeat(wallet_ledger::MAX_TENANT_CHARS + 1)).is_err());
        // Reads take a tenant stored before the grammar; never what could not be stored.
        assert_eq!(
            stored_tenant_arg("Acme Corp #2").ok().unwrap().as_str(),
            "Acme Corp #2"
        );
        for bad in ["", " acme", "a\u{7}b"] {
            assert!(
                matches!(stored_tenant_arg(bad), Err(Error::Usage(_))),
                "{bad:?}"
            );
        }
        assert_eq!(amount_arg("the floor", -100, 100).ok(), Some(-100));
        assert!(matches!(
            amount_arg("the price", 101, 100),
            Err(Error::Usage(m)) if m.contains("WALLET_MAX_AMOUNT")
        ));
        assert!(amount_arg("the floor", i64::MIN, i64::MAX).is_err());
    }
}
