//! The ladder: its table, rungs counted from the first failure, a scheduler that was down, and the
//! ladder's own validation.

use super::*;

const T0: Millis = Millis::new(1_800_000_000_000);
const DAY_MS: i64 = 86_400_000;

fn soft() -> ChargeOutcome {
    ChargeOutcome::DeclinedSoft {
        code: "insufficient_funds".into(),
    }
}

fn at(days: i64) -> Millis {
    Millis::new(T0.get() + days * DAY_MS)
}

#[test]
fn the_documented_table() {
    let l = Ladder::default();
    assert_eq!(
        l.after(0, &ChargeOutcome::Succeeded, T0),
        NextTry::End(LadderEnd::Succeeded)
    );
    assert_eq!(
        l.after(0, &soft(), T0),
        NextTry::Rung {
            rung: 1,
            due: at(1)
        }
    );
    assert_eq!(
        l.after(
            0,
            &ChargeOutcome::DeclinedHard {
                code: "expired_card".into()
            },
            T0
        ),
        NextTry::End(LadderEnd::HardDecline {
            code: "expired_card".into()
        })
    );
    assert_eq!(
        l.after(
            2,
            &ChargeOutcome::NeedsCustomer {
                code: "authentication_required".into()
            },
            T0
        ),
        NextTry::End(LadderEnd::NeedsCustomer {
            code: "authentication_required".into()
        })
    );
    assert_eq!(
        l.after(3, &ChargeOutcome::Indeterminate, T0),
        NextTry::Repeat
    );
    assert_eq!(
        l.after(4, &soft(), T0),
        NextTry::End(LadderEnd::Exhausted {
            tries: 5,
            code: "insufficient_funds".into()
        })
    );
}

/// Every rung is due on its day from the first failure, however late the tries before it ran.
#[test]
fn rungs_are_counted_from_the_first_failure() {
    let l = Ladder::default();
    let mut rung = 0;
    let mut dues = Vec::new();
    while let NextTry::Rung { rung: next, due } = l.after(rung, &soft(), T0) {
        dues.push(due);
        rung = next;
    }
    assert_eq!(dues, [at(1), at(3), at(5), at(7)]);
}

/// A scheduler down from day 0 to day 4: rungs 1 (day 1) and 2 (day 3) are past when it returns
/// and fire at once, one after the other; rung 3 stays on day 5. The ladder is not stretched.
#[test]
fn a_scheduler_that_was_down_fires_the_missed_rungs_at_once() {
    let l = Ladder::default();
    let back = Millis::new(at(4).get() + 3_600_000);
    let mut fired = Vec::new();
    let mut now = back;
    let mut rung = 0;
    while let NextTry::Rung { rung: next, due } = l.after(rung, &soft(), T0) {
        if due > now {
            now = due; // the scheduler wakes when the rung is due
        }
        fired.push((next, now));
        rung = next;
    }
    assert_eq!(fired, [(1, back), (2, back), (3, at(5)), (4, at(7))]);
}

#[test]
fn ladders_start_at_zero_and_increase() {
    assert_eq!(Ladder::parse("0, 1,3,5,7").unwrap(), Ladder::default());
    assert_eq!(Ladder::parse("0").unwrap().days(), [0]);
    for bad in ["", "1,2", "0,0,1", "0,3,2", "0,x", "0,-1"] {
        assert!(Ladder::parse(bad).is_err(), "{bad:?}");
    }
    let one = Ladder::parse("0").unwrap();
    assert_eq!(
        one.after(0, &soft(), T0),
        NextTry::End(LadderEnd::Exhausted {
            tries: 1,
            code: "insufficient_funds".into()
        })
    );
}
