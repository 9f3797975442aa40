//! A wallet as `balance` and `create` present it: amounts in minor units and formatted in its
//! currency, this month's debits, the flags.

use super::money_and_minor;
use crate::error::{failed, Result};
use crate::output::{fields, or_dash, say};
use crate::when;
use serde::Serialize;
use std::collections::BTreeMap;
use wallet_ledger::{month_of, Currency, Money, Wallet};

/// `YYYY_MM` (the item's attribute suffix) → `YYYY-MM`.
fn month_label(key: &str) -> String {
    key.replace('_', "-")
}

/// Amounts of a wallet, formatted in its currency.
#[derive(Debug, Serialize)]
pub(crate) struct Formatted {
    pub balance: String,
    pub held: String,
    pub available: String,
    pub floor: String,
    pub message_price: String,
    pub review_threshold: Option<String>,
    pub month_debits: String,
}

/// A wallet as `balance` (and `create`) print it.
#[derive(Debug, Serialize)]
pub(crate) struct WalletView {
    pub tenant: String,
    pub currency: String,
    pub balance: i64,
    pub held: i64,
    pub available: i64,
    pub floor: i64,
    pub message_price: i64,
    pub review_threshold: Option<i64>,
    pub overdrawn: bool,
    pub review: bool,
    /// It cannot afford one more send at its price (`wallet.low_balance` was published).
    pub low: bool,
    /// The current calendar month (UTC), `YYYY-MM`.
    pub month: String,
    /// Debits of the current month.
    pub month_debits: i64,
    /// Debits per month (`YYYY-MM`), every month recorded.
    pub debits_by_month: BTreeMap<String, i64>,
    pub created_at: String,
    pub created_at_ms: i64,
    /// How many shard items the balance is split over (the figures are their sums).
    pub shards: u32,
    pub formatted: Formatted,
    /// The currency, for printing.
    #[serde(skip)]
    pub cur: Currency,
}

impl WalletView {
    /// The view; an error if its figures overflow (`balance − held`).
    pub(crate) fn new(w: &Wallet, now_ms: i64) -> Result<Self> {
        let month = month_of(now_ms);
        let month_debits = w.debits_in(&month);
        let available = w.available().map_err(failed)?;
        Ok(Self {
            tenant: w.tenant.to_string(),
            currency: w.currency.as_str().to_owned(),
            balance: w.balance.minor(),
            held: w.held.minor(),
            available: available.minor(),
            floor: w.floor.minor(),
            message_price: w.message_price.minor(),
            review_threshold: w.review_threshold.map(Money::minor),
            overdrawn: w.overdrawn,
            review: w.review,
            low: w.low,
            month: month_label(&month),
            month_debits: month_debits.minor(),
            debits_by_month: w
                .month_debits
                .iter()
                .map(|(k, v)| (month_label(k), v.get()))
                .collect(),
            created_at: when::rfc3339(w.created_at),
            created_at_ms: w.created_at,
            shards: w.shard_count(),
            formatted: Formatted {
                balance: w.balance.to_string(),
                held: w.held.to_string(),
                available: available.to_string(),
                floor: w.floor.to_string(),
                message_price: w.message_price.to_string(),
                review_threshold: w.review_threshold.map(|t| t.to_string()),
                month_debits: month_debits.to_string(),
            },
            cur: w.currency,
        })
    }

    pub(super) fn print(&self) -> Result<()> {
        let amount = |minor: i64| money_and_minor(self.cur.amount(minor));
        let flag = |on: bool, yes: &str| if on { yes.to_owned() } else { "no".to_owned() };
        let over_review = self.review_threshold.is_some_and(|t| self.month_debits > t);
        say(format!("Wallet of {} ({})", self.tenant, self.cur))?;
        say(fields([
            ("balance", amount(self.balance)),
            ("held", amount(self.held)),
            (
                "available",
                format!(
                    "{}{}",
                    amount(self.available),
                    if self.available < self.floor {
                        "  BELOW THE FLOOR"
                    } else {
                        ""
                    }
                ),
            ),
            ("floor", amount(self.floor)),
            ("price per email", amount(self.message_price)),
            (
                "review threshold",
                or_dash(
                    self.review_threshold
                        .map(|t| format!("{} per month", amount(t))),
                ),
            ),
            (
                "debits this month",
                format!(
                    "{} in {}{}",
                    amount(self.month_debits),
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
            (
                "low",
                flag(
                    self.low,
                    "YES (cannot afford one more send; wallet.low_balance published)",
                ),
            ),
            ("shards", self.shards.to_string()),
            ("created (UTC)", when::human(self.created_at_ms)),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usd() -> Currency {
        Currency::parse("usd").unwrap()
    }

    #[test]
    fn a_wallet_view_reports_this_month() {
        let now = 1_796_032_800_000; // 2026-11-30T10:00:00Z
        let mut w = Wallet::new(
            wallet_ledger::TenantId::parse("acme").unwrap(),
            usd().amount(25),
            usd().amount(-100),
            Some(usd().amount(1000)),
            0,
        );
        w.balance = usd().amount(1975);
        w.held = usd().amount(25);
        w.month_debits
            .insert("2026_11".into(), wallet_ledger::Minor::new(50));
        w.month_debits
            .insert("2026_10".into(), wallet_ledger::Minor::new(75));
        let v = WalletView::new(&w, now).unwrap();
        assert_eq!((v.available, v.month_debits), (1950, 50));
        assert_eq!(v.month, "2026-11");
        assert_eq!(v.debits_by_month.get("2026-10"), Some(&75));
        assert_eq!(v.formatted.available, "19.50 USD");
        assert_eq!(v.formatted.floor, "-1.00 USD");
        assert_eq!(v.formatted.review_threshold.as_deref(), Some("10.00 USD"));
    }
}
