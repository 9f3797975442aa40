//! Recurring charge dates. The k-th charge of a schedule is the anchor plus k periods, computed
//! from the anchor every time and clamped to the month's last day, as Stripe bills a
//! `billing_cycle_anchor` on the 31st: Jan 31 → Feb 28 (29 in a leap year) → Mar 31 → Apr 30.
//! Never from the previous charge (Feb 28 + 1 month would drift to Mar 28) and never from the day a
//! charge finally succeeded (a renewal paid on the 7th after retries is still due next on the
//! anchor day).
//!
//! | anchor | every | charges 0, 1, 2, 3 |
//! |---|---|---|
//! | 2027-01-31 | month | 01-31, 02-28, 03-31, 04-30 |
//! | 2028-01-31 | month | 01-31, 02-29 (leap), 03-31, 04-30 |
//! | 2027-12-31 | month | 2027-12-31, 2028-01-31, 2028-02-29, 2028-03-31 |
//! | 2028-02-29 | year | 2028-02-29, 2029-02-28, 2030-02-28, 2031-02-28, then 2032-02-29 |
//!
//! Charges are due at 00:00 UTC of their date ([`Schedule::due_at`]).

use inbox_core::clock::Millis;
use jiff::civil::{Date, DateTime};
use jiff::tz::Offset;

/// How often a recurring charge repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    Month,
    Year,
}

impl Every {
    /// `month` or `year`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "month" => Some(Self::Month),
            "year" => Some(Self::Year),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    fn months(self) -> i64 {
        match self {
            Self::Month => 1,
            Self::Year => 12,
        }
    }
}

/// A recurring charge's calendar: its anchor (the first charge's date) and its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    anchor: Date,
    every: Every,
}

impl Schedule {
    pub fn new(anchor: Date, every: Every) -> Self {
        Self { anchor, every }
    }

    pub fn anchor(self) -> Date {
        self.anchor
    }

    pub fn every(self) -> Every {
        self.every
    }

    /// The date of charge `k` (0: the anchor), or `None` past the calendar's end (year 9999).
    pub fn nth(self, k: u32) -> Option<Date> {
        let months = i64::from(self.anchor.month()) - 1 + i64::from(k) * self.every.months();
        let year = i64::from(self.anchor.year()) + months.div_euclid(12);
        let month = months.rem_euclid(12) + 1;
        let first = Date::new(i16::try_from(year).ok()?, i8::try_from(month).ok()?, 1).ok()?;
        let day = self.anchor.day().min(first.days_in_month());
        Date::new(first.year(), first.month(), day).ok()
    }

    /// When charge `k` is due: 00:00 UTC of its date.
    pub fn due_at(self, k: u32) -> Option<Millis> {
        let date = self.nth(k)?;
        let ts = Offset::UTC.to_timestamp(DateTime::from(date)).ok()?;
        Some(Millis::new(ts.as_millisecond()))
    }

    /// The first charge due at or after `at`: its index and due time (`None` past the calendar's
    /// end). A scheduler that was down finds the charge it missed first (the smallest index not
    /// yet charged is the caller's business: pass the time it last charged, plus one).
    pub fn first_due_at_or_after(self, at: Millis) -> Option<(u32, Millis)> {
        // Charge k is at most k longest periods after the anchor: start below, then step.
        let anchor = self.due_at(0)?;
        let span = at.get().saturating_sub(anchor.get());
        if span <= 0 {
            return Some((0, anchor));
        }
        let longest = match self.every {
            Every::Month => 31,
            Every::Year => 366,
        } * 86_400_000;
        let mut k = u32::try_from(span / longest).ok()?;
        loop {
            let due = self.due_at(k)?;
            if due >= at {
                return Some((k, due));
            }
            k = k.checked_add(1)?;
        }
    }
}

#[cfg(test)]
mod tests;
