//! Autopay's ledger rules, pure: whether a hold or debit that leaves `available` where it is makes
//! a top-up attempt, and what the monthly cap says of it. Level-triggered: a wallet AT or below
//! its threshold with autopay active, a saved method and no open attempt gets one, whatever the
//! state it was read in, so a stale read (two debits each reading the balance before the other)
//! can delay an attempt to the next hold or debit but never skip it; the one-open-attempt rule
//! (the settings item written at the version read, in the same transaction) makes a burst of
//! debits one attempt.
//!
//! | autopay | available (after the movement) | open attempt | cap | decision |
//! |---|---|---|---|---|
//! | active, method, to target 50.00 at 10.00 | 10.01 | — | — | [`TopUp::Nothing`] |
//! | same | 10.00 | none | — | [`TopUp::Attempt`] of 40.00 |
//! | same | 3.00 | one | — | [`TopUp::Nothing`] (it is in flight) |
//! | same | 3.00 | none | 100.00, 80.00 charged | [`TopUp::Refused`], reported once a month |
//! | paused, suspended, or no method | any | any | any | [`TopUp::Nothing`] |

use crate::autopay::{Autopay, AutopayStatus, CapRefusal};
use crate::balance::model::month_of;
use crate::money::Money;

/// What a hold or debit decides for autopay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopUp {
    Nothing,
    /// Make one attempt of `amount`, counted in `month` (`YYYY_MM`).
    Attempt {
        amount: Money,
        month: String,
    },
    /// The monthly cap refused the charge; `report`: the first refusal of `month` (a metric
    /// and `wallet.autopay_limit_reached`), later ones are not reported again.
    Refused {
        refusal: CapRefusal,
        month: String,
        report: bool,
    },
}

/// The decision for a wallet whose `available` is now `available`, at `now_ms`.
pub fn top_up(autopay: &Autopay, available: Money, now_ms: i64) -> TopUp {
    let ready = autopay.status == AutopayStatus::Active
        && autopay.method.is_some()
        && autopay.open_attempt.is_none();
    let Some(rule) = autopay.top_up.filter(|_| ready) else {
        return TopUp::Nothing;
    };
    if rule.threshold().currency() != available.currency() {
        return TopUp::Nothing;
    }
    let Some(amount) = rule.charge(available, available.currency().amount(0)) else {
        return TopUp::Nothing;
    };
    let month = month_of(now_ms);
    let charged = autopay.month_charged.get(&month).copied().unwrap_or(0);
    match autopay
        .cap
        .map(|cap| cap.allows(amount.currency().amount(charged), amount))
    {
        Some(Err(refusal)) => TopUp::Refused {
            refusal,
            report: autopay.limit_reported.as_deref() != Some(month.as_str()),
            month,
        },
        _ => TopUp::Attempt { amount, month },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autopay::{MonthlyCap, SavedMethod, TopUpRule};
    use crate::money::Currency;
    use crate::tenant::TenantId;
    use inbox_core::clock::Millis;

    const NOW: i64 = 1_795_000_000_000; // 2026-11

    fn usd(minor: i64) -> Money {
        Currency::parse("usd").unwrap().amount(minor)
    }

    fn autopay() -> Autopay {
        let mut a = Autopay::new(TenantId::parse("acme").unwrap(), Millis::new(0));
        a.top_up = Some(TopUpRule::to_target(usd(1000), usd(5000)).unwrap());
        a.method = Some(SavedMethod {
            customer: "cus_1".into(),
            payment_method: "pm_1".into(),
        });
        a
    }

    #[test]
    fn at_or_below_the_threshold_with_nothing_open_makes_one_attempt() {
        let a = autopay();
        assert_eq!(top_up(&a, usd(1001), NOW), TopUp::Nothing);
        assert_eq!(
            top_up(&a, usd(1000), NOW),
            TopUp::Attempt {
                amount: usd(4000),
                month: "2026_11".into()
            }
        );
        assert_eq!(
            top_up(&a, usd(-300), NOW),
            TopUp::Attempt {
                amount: usd(5300),
                month: "2026_11".into()
            },
            "on credit: enough to reach the target"
        );
        let open = Autopay {
            open_attempt: Some("thr_1".into()),
            ..a.clone()
        };
        assert_eq!(top_up(&open, usd(0), NOW), TopUp::Nothing);
        for status in [
            AutopayStatus::Paused,
            AutopayStatus::Suspended { reason: "x".into() },
        ] {
            let off = Autopay {
                status,
                ..a.clone()
            };
            assert_eq!(top_up(&off, usd(0), NOW), TopUp::Nothing);
        }
        let no_method = Autopay {
            method: None,
            ..a.clone()
        };
        assert_eq!(top_up(&no_method, usd(0), NOW), TopUp::Nothing);
        let eur = Currency::parse("eur").unwrap().amount(0);
        assert_eq!(top_up(&a, eur, NOW), TopUp::Nothing, "another currency");
    }

    #[test]
    fn the_cap_refuses_and_is_reported_once_a_month() {
        let mut a = autopay();
        a.cap = Some(MonthlyCap::new(usd(10_000)).unwrap());
        a.month_charged.insert("2026_11".into(), 8_000);
        let refused = top_up(&a, usd(0), NOW);
        assert!(
            matches!(&refused, TopUp::Refused { report: true, month, refusal }
                if month == "2026_11" && refusal.wanted == usd(5000) && refusal.charged == usd(8000)),
            "{refused:?}"
        );
        a.limit_reported = Some("2026_11".into());
        assert!(matches!(
            top_up(&a, usd(0), NOW),
            TopUp::Refused { report: false, .. }
        ));
        a.month_charged.insert("2026_11".into(), 5_000);
        assert!(
            matches!(top_up(&a, usd(0), NOW), TopUp::Attempt { .. }),
            "fits exactly"
        );
        a.month_charged.insert("2026_10".into(), 10_000);
        a.month_charged.insert("2026_11".into(), 0);
        assert!(
            matches!(top_up(&a, usd(0), NOW), TopUp::Attempt { .. }),
            "a new month"
        );
    }
}
