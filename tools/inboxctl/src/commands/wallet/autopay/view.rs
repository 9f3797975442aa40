//! A wallet's autopay as `show` (and every change) prints it: status, rules with amounts
//! formatted and in minor units, the next recurring charges from the anchor's calendar, the cap
//! with this month's autopay, the ladder, the saved method, the open attempt.

use super::super::money_and_minor;
use crate::error::Result;
use crate::output::{fields, or_dash, say};
use crate::when;
use inbox_core::clock::Millis;
use serde::Serialize;
use wallet_ledger::autopay::{Autopay, AutopayStatus, TopUpRule};
use wallet_ledger::{month_of, Money};

/// How many coming recurring charges are shown.
const UPCOMING: u32 = 3;

#[derive(Debug, Serialize)]
struct TopUpView {
    /// `to_target` or `fixed`.
    kind: &'static str,
    threshold: i64,
    target: Option<i64>,
    amount: Option<i64>,
    #[serde(skip)]
    text: String,
}

#[derive(Debug, Serialize)]
struct RecurringView {
    every: &'static str,
    anchor: String,
    amount: i64,
    /// The index of the next charge in the calendar (0: the anchor).
    next: u32,
    /// The next charges' dates (YYYY-MM-DD, due at 00:00 UTC).
    upcoming: Vec<String>,
    #[serde(skip)]
    text: String,
}

/// A wallet's autopay, ready to print.
#[derive(Debug, Serialize)]
pub(crate) struct AutopayView {
    tenant: String,
    currency: String,
    /// `active`, `paused` or `suspended`.
    status: &'static str,
    suspended_reason: Option<String>,
    top_up: Option<TopUpView>,
    recurring: Option<RecurringView>,
    monthly_cap: Option<i64>,
    /// The current month (UTC), `YYYY-MM`, and autopay charged in it.
    month: String,
    month_charged: i64,
    ladder_days: Vec<u32>,
    customer: Option<String>,
    payment_method: Option<String>,
    open_attempt: Option<String>,
    updated_at: String,
    version: Option<u64>,
    #[serde(skip)]
    formatted_cap: Option<String>,
    #[serde(skip)]
    formatted_month_charged: String,
}

fn top_up_view(rule: TopUpRule) -> TopUpView {
    match rule {
        TopUpRule::ToTarget { threshold, target } => TopUpView {
            kind: "to_target",
            threshold: threshold.minor(),
            target: Some(target.minor()),
            amount: None,
            text: format!(
                "at or below {}: up to {} in one charge",
                money_and_minor(threshold),
                money_and_minor(target)
            ),
        },
        TopUpRule::Fixed { threshold, amount } => TopUpView {
            kind: "fixed",
            threshold: threshold.minor(),
            target: None,
            amount: Some(amount.minor()),
            text: format!(
                "at or below {}: {}",
                money_and_minor(threshold),
                money_and_minor(amount)
            ),
        },
    }
}

impl AutopayView {
    pub(crate) fn new(a: &Autopay, now: Millis) -> Self {
        let (status, suspended_reason) = match &a.status {
            AutopayStatus::Active => ("active", None),
            AutopayStatus::Paused => ("paused", None),
            AutopayStatus::Suspended { reason } => ("suspended", Some(reason.clone())),
        };
        let currency = a
            .top_up
            .map(|r| r.threshold().currency())
            .or(a.recurring.as_ref().map(|r| r.amount.currency()))
            .or(a.cap.map(|c| c.cap().currency()));
        let recurring = a.recurring.as_ref().map(|r| {
            let upcoming: Vec<String> = (r.next..r.next.saturating_add(UPCOMING))
                .filter_map(|k| r.schedule.nth(k))
                .map(|d| d.to_string())
                .collect();
            RecurringView {
                every: r.schedule.every().as_str(),
                anchor: r.schedule.anchor().to_string(),
                amount: r.amount.minor(),
                next: r.next,
                text: format!(
                    "{} every {} from {}; next {}",
                    money_and_minor(r.amount),
                    r.schedule.every().as_str(),
                    r.schedule.anchor(),
                    if upcoming.is_empty() {
                        "none".to_owned()
                    } else {
                        upcoming.join(", ")
                    }
                ),
                upcoming,
            }
        });
        let month = month_of(now.get());
        let month_charged = a.month_charged.get(&month).copied().unwrap_or(0);
        Self {
            tenant: a.tenant.to_string(),
            currency: currency.map(|c| c.as_str().to_owned()).unwrap_or_default(),
            status,
            suspended_reason,
            top_up: a.top_up.map(top_up_view),
            recurring,
            monthly_cap: a.cap.map(|c| c.cap().minor()),
            month: month.replace('_', "-"),
            month_charged,
            ladder_days: a.ladder.days().to_vec(),
            customer: a.method.as_ref().map(|m| m.customer.clone()),
            payment_method: a.method.as_ref().map(|m| m.payment_method.clone()),
            open_attempt: a.open_attempt.clone(),
            updated_at: when::rfc3339(a.updated_at.get()),
            version: a.version,
            formatted_cap: a
                .cap
                .map(|c| format!("{} a month", money_and_minor(c.cap()))),
            formatted_month_charged: currency.map_or_else(
                || month_charged.to_string(),
                |c| money_and_minor(Money::new(month_charged, c)),
            ),
        }
    }

    pub(super) fn print(&self) -> Result<()> {
        let status = match &self.suspended_reason {
            Some(reason) => format!("{} ({reason})", self.status),
            None => self.status.to_owned(),
        };
        let ladder: Vec<String> = self.ladder_days.iter().map(u32::to_string).collect();
        say(format!("Autopay of {}", self.tenant))?;
        say(fields([
            ("status", status),
            ("top-up", or_dash(self.top_up.as_ref().map(|t| &t.text))),
            (
                "recurring",
                or_dash(self.recurring.as_ref().map(|r| &r.text)),
            ),
            ("monthly cap", or_dash(self.formatted_cap.as_ref())),
            (
                "autopay this month",
                format!("{} in {}", self.formatted_month_charged, self.month),
            ),
            (
                "dunning ladder",
                format!("days {} after the first failure", ladder.join(", ")),
            ),
            ("customer", or_dash(self.customer.as_ref())),
            ("payment method", or_dash(self.payment_method.as_ref())),
            ("open attempt", or_dash(self.open_attempt.as_ref())),
            ("updated", self.updated_at.clone()),
        ]))
    }
}
