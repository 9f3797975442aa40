//! Threshold top-ups and the cap: the table in the module docs, one charge for any burst, and the
//! rules' validation.

use super::*;
use proptest::prelude::*;

fn usd(minor: i64) -> Money {
    Currency::parse("usd").unwrap().amount(minor)
}

#[test]
fn the_documented_table() {
    let target = TopUpRule::to_target(usd(1000), usd(5000)).unwrap();
    let fixed = TopUpRule::fixed(usd(1000), usd(2500)).unwrap();
    assert_eq!(target.charge(usd(1001), usd(0)), None);
    assert_eq!(target.charge(usd(1000), usd(0)), Some(usd(4000)));
    assert_eq!(target.charge(usd(-300), usd(0)), Some(usd(5300)));
    assert_eq!(fixed.charge(usd(400), usd(0)), Some(usd(2500)));
    let cap = MonthlyCap::new(usd(10_000)).unwrap();
    assert_eq!(
        cap.allows(usd(8000), usd(2500)),
        Err(CapRefusal {
            charged: usd(8000),
            cap: usd(10_000),
            wanted: usd(2500)
        })
    );
    assert_eq!(cap.allows(usd(8000), usd(2000)), Ok(()));
}

#[test]
fn a_top_up_in_flight_counts() {
    let target = TopUpRule::to_target(usd(1000), usd(5000)).unwrap();
    assert_eq!(target.charge(usd(200), usd(4800)), None);
    assert_eq!(target.charge(usd(200), usd(500)), Some(usd(4300)));
}

#[test]
fn rules_that_cannot_work_are_refused() {
    let eur = Currency::parse("eur").unwrap().amount(5000);
    assert!(TopUpRule::to_target(usd(1000), eur).is_err());
    assert!(TopUpRule::to_target(usd(1000), usd(1000)).is_err());
    assert!(TopUpRule::to_target(usd(-500), usd(0)).is_err());
    assert!(TopUpRule::fixed(usd(1000), usd(0)).is_err());
    assert!(TopUpRule::fixed(usd(1000), eur).is_err());
    assert!(MonthlyCap::new(usd(0)).is_err());
}

proptest! {
    /// A burst of debits (less in all than the target above the threshold) that takes a wallet
    /// across its threshold asks for exactly one charge, of what brings it to the target, however
    /// the debits are sized: the debits after it see the charge in flight and ask for none.
    #[test]
    fn a_burst_across_the_threshold_asks_for_one_charge(
        start in 1_001i64..40_000,
        debits in proptest::collection::vec(1i64..200, 1..200),
    ) {
        let total: i64 = debits.iter().sum();
        let rule = TopUpRule::to_target(usd(1000), usd(50_000)).unwrap();
        let mut available = start;
        let mut in_flight = 0;
        let mut charges = Vec::new();
        for d in debits {
            available -= d;
            if let Some(c) = rule.charge(usd(available), usd(in_flight)) {
                charges.push((available, c.minor()));
                in_flight += c.minor();
            }
        }
        let crossed = start - total <= 1000;
        prop_assert_eq!(charges.len(), usize::from(crossed), "{:?}", charges);
        if let Some((at, c)) = charges.first() {
            prop_assert!(*at <= 1000);
            prop_assert_eq!(at + c, 50_000);
        }
    }
}
