//! Threshold top-ups and the monthly cap: how much ONE charge must be for a wallet that fell to
//! its threshold, and whether a charge still fits the month's cap.
//!
//! A wallet is at its threshold when `available + in_flight <= threshold`, counting the top-ups
//! already charged but not yet credited (`in_flight`): a burst of debits that crosses it asks for
//! one charge, and the debits after it see that charge in flight and ask for none.
//!
//! | rule | available + in flight | charge |
//! |---|---|---|
//! | to target 50.00 at 10.00 | 10.01 | none |
//! | to target 50.00 at 10.00 | 10.00 | 40.00 (to reach the target) |
//! | to target 50.00 at 10.00 | −3.00 (on credit) | 53.00 |
//! | fixed 25.00 at 10.00 | 4.00 | 25.00 |
//!
//! A cap of 100.00 a month with 80.00 charged this month refuses a charge of 25.00 (it is
//! reported, never dropped silently: [`CapRefusal`]) and allows one of 20.00.

use crate::money::{Currency, Money};

/// A rule that cannot work: amounts of other currencies, not positive, or a target not above
/// the threshold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid autopay rule: {0}")]
pub struct InvalidRule(pub String);

/// When to top a wallet up, and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopUpRule {
    /// Charge enough to bring `available` back to `target`.
    ToTarget { threshold: Money, target: Money },
    /// Charge `amount`.
    Fixed { threshold: Money, amount: Money },
}

fn same_currency(a: Money, b: Money) -> Result<Currency, InvalidRule> {
    if a.currency() == b.currency() {
        Ok(a.currency())
    } else {
        Err(InvalidRule(format!(
            "{a} and {b} are in different currencies"
        )))
    }
}

impl TopUpRule {
    pub fn to_target(threshold: Money, target: Money) -> Result<Self, InvalidRule> {
        same_currency(threshold, target)?;
        if target.minor() <= threshold.minor() || target.minor() <= 0 {
            return Err(InvalidRule(format!(
                "the target {target} must be positive and above the threshold {threshold}"
            )));
        }
        Ok(Self::ToTarget { threshold, target })
    }

    pub fn fixed(threshold: Money, amount: Money) -> Result<Self, InvalidRule> {
        same_currency(threshold, amount)?;
        if amount.minor() <= 0 {
            return Err(InvalidRule(format!("the amount {amount} must be positive")));
        }
        Ok(Self::Fixed { threshold, amount })
    }

    pub fn threshold(self) -> Money {
        match self {
            Self::ToTarget { threshold, .. } | Self::Fixed { threshold, .. } => threshold,
        }
    }

    /// The one charge to make now, or `None` while `available + in_flight` is above the
    /// threshold. Amounts are in the rule's currency (a wallet has one).
    pub fn charge(self, available: Money, in_flight: Money) -> Option<Money> {
        let level = available.minor().saturating_add(in_flight.minor());
        if level > self.threshold().minor() {
            return None;
        }
        match self {
            Self::ToTarget { target, .. } => Some(Money::new(
                target.minor().saturating_sub(level),
                target.currency(),
            )),
            Self::Fixed { amount, .. } => Some(amount),
        }
    }
}

/// The most autopay may charge a wallet in one calendar month (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonthlyCap {
    cap: Money,
}

/// A charge the cap refused: what was charged this month, the cap, the charge asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("autopay limit reached: {charged} charged this month, cap {cap}, {wanted} asked for")]
pub struct CapRefusal {
    pub charged: Money,
    pub cap: Money,
    pub wanted: Money,
}

impl MonthlyCap {
    pub fn new(cap: Money) -> Result<Self, InvalidRule> {
        if cap.minor() <= 0 {
            return Err(InvalidRule(format!(
                "the monthly cap {cap} must be positive"
            )));
        }
        Ok(Self { cap })
    }

    pub fn cap(self) -> Money {
        self.cap
    }

    /// Whether `wanted` fits beside what was charged this month.
    pub fn allows(self, charged: Money, wanted: Money) -> Result<(), CapRefusal> {
        if charged.minor().saturating_add(wanted.minor()) <= self.cap.minor() {
            Ok(())
        } else {
            Err(CapRefusal {
                charged,
                cap: self.cap,
                wanted,
            })
        }
    }
}

#[cfg(test)]
mod tests;
