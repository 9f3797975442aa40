//! The autopay items read back as written, their open-index attributes, and strict reading.

use super::*;
use crate::autopay::{Attempt, AttemptState, Reason, TryRecord};
use inbox_core::store::attr::get_n;

fn usd(minor: i64) -> Money {
    Currency::parse("usd").unwrap().amount(minor)
}

fn settings() -> Autopay {
    let mut a = Autopay::new(TenantId::parse("acme").unwrap(), Millis::new(5));
    a.top_up = Some(TopUpRule::fixed(usd(1000), usd(2500)).unwrap());
    a.recurring = Some(Recurring {
        schedule: Schedule::new(jiff::civil::date(2027, 1, 31), Every::Month),
        amount: usd(9900),
        next: 2,
    });
    a.cap = Some(MonthlyCap::new(usd(50_000)).unwrap());
    a.ladder = Ladder::parse("0,2,4").unwrap();
    a.method = Some(SavedMethod {
        customer: "cus_1".into(),
        payment_method: "pm_1".into(),
    });
    a.month_charged.insert("2027_03".into(), 2500);
    a.limit_reported = Some("2027_02".into());
    // The version is the store's: it writes it on each `Replace`.
    a
}

fn attempt(state: AttemptState) -> Attempt {
    Attempt {
        id: "thr_1".into(),
        tenant: TenantId::parse("acme").unwrap(),
        reason: Reason::Recurring { period: 4 },
        amount: usd(4000),
        state,
        try_no: 2,
        rung: 1,
        first_failure: Some(Millis::new(100)),
        due: Millis::new(200),
        idempotency_key: Some("autopay-thr_1-try-2".into()),
        claimed_at: None,
        provider_ref: Some("pi_1".into()),
        tries: vec![TryRecord {
            try_no: 1,
            at: Millis::new(100),
            outcome: "insufficient_funds".into(),
            next_due: Some(Millis::new(200)),
        }],
        created_at: Millis::new(50),
        version: None,
    }
}

#[test]
fn settings_read_back_as_written_and_wait_in_the_recurring_shards() {
    let a = settings();
    let item = a.to_item();
    assert_eq!(Autopay::from_item(&item), Ok(a.clone()));
    assert!(get_s(&item, OPEN_SHARD).is_some_and(|s| s.starts_with(RECURRING_SHARD_PREFIX)));
    assert_eq!(get_n(&item, OPEN_DUE), a.recurring_due().map(Millis::get));
    for quiet in [
        Autopay {
            open_attempt: Some("thr_1".into()),
            ..a.clone()
        },
        Autopay {
            status: AutopayStatus::Suspended { reason: "r".into() },
            ..a.clone()
        },
        Autopay {
            method: None,
            ..a.clone()
        },
    ] {
        let item = quiet.to_item();
        assert_eq!(Autopay::from_item(&item), Ok(quiet.clone()));
        assert!(!item.contains_key(OPEN_SHARD), "{quiet:?}");
    }
    let bare = Autopay::new(TenantId::parse("acme").unwrap(), Millis::new(0));
    assert_eq!(Autopay::from_item(&bare.to_item()), Ok(bare));
}

#[test]
fn attempts_read_back_as_written_and_leave_the_index_when_terminal() {
    for state in [
        AttemptState::Due,
        AttemptState::Charging,
        AttemptState::Charged,
        AttemptState::Credited,
        AttemptState::Ended {
            reason: "expired_card".into(),
        },
    ] {
        let a = attempt(state.clone());
        let item = a.to_item();
        assert_eq!(Attempt::from_item(&item), Ok(a));
        assert_eq!(
            item.contains_key(OPEN_SHARD),
            !state.is_terminal(),
            "{state:?}"
        );
        if !state.is_terminal() {
            assert_eq!(get_n(&item, OPEN_DUE), Some(200));
        }
    }
}

#[test]
fn unknown_states_and_broken_rules_are_unreadable_never_a_default() {
    let mut item = attempt(AttemptState::Due).to_item();
    item.insert("state".into(), s("refunded"));
    assert!(Attempt::from_item(&item).unwrap_err().contains("refunded"));
    let mut item = settings().to_item();
    item.insert("status".into(), s("sleeping"));
    assert!(Autopay::from_item(&item).unwrap_err().contains("sleeping"));
    let mut item = settings().to_item();
    item.remove("status");
    assert!(Autopay::from_item(&item).is_err());
    let mut item = settings().to_item();
    item.insert("top_up".into(), s("maybe"));
    assert!(Autopay::from_item(&item).is_err());
    let mut item = settings().to_item();
    item.insert("top_up_amount".into(), n(-5));
    assert!(
        Autopay::from_item(&item).is_err(),
        "a rule that cannot work"
    );
    let mut item = settings().to_item();
    item.insert("ladder".into(), s("3,1"));
    assert!(Autopay::from_item(&item).is_err());
    let mut item = settings().to_item();
    item.remove("payment_method");
    assert!(
        Autopay::from_item(&item).is_err(),
        "a customer without its method"
    );
    let mut item = settings().to_item();
    item.insert("charged_2027_04".into(), s("lots"));
    assert!(Autopay::from_item(&item).is_err());
}

#[test]
fn derived_ids_are_stable_per_event() {
    let a = derived_attempt_id("thr", &["mailer", "evt_1"]);
    assert_eq!(a, derived_attempt_id("thr", &["mailer", "evt_1"]));
    assert_ne!(a, derived_attempt_id("thr", &["mailer", "evt_2"]));
    assert_ne!(
        derived_attempt_id("thr", &["ab", "c"]),
        derived_attempt_id("thr", &["a", "bc"])
    );
    assert!(a.starts_with("thr_") && a.len() == 28);
}
