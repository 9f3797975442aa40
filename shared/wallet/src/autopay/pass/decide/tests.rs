//! The decisions' table: a claim keeps its try's key, each reply's next state, refusals, the
//! recurring attempt's id.

use super::*;
use crate::autopay::attempt::{Reason, Recurring, SavedMethod};
use crate::autopay::calendar::{Every, Schedule};
use crate::autopay::pass::recurring::recurring_id;
use crate::autopay::pass::resend::{first_claim, resend, Resend, KEY_WINDOW};
use crate::money::Currency;
use crate::tenant::TenantId;
use std::collections::BTreeMap;

const T0: Millis = Millis::new(1_800_000_000_000);
const DAY: Duration = Duration::from_secs(86_400);

fn attempt() -> Attempt {
    Attempt {
        id: "a1".into(),
        tenant: TenantId::parse("acme").expect("tenant"),
        reason: Reason::Threshold,
        amount: Currency::parse("USD").expect("usd").amount(500),
        state: AttemptState::Due,
        try_no: 0,
        rung: 0,
        first_failure: None,
        due: T0,
        idempotency_key: None,
        claimed_at: None,
        provider_ref: None,
        tries: Vec::new(),
        created_at: T0,
        version: Some(3),
    }
}

fn autopay() -> Autopay {
    Autopay {
        tenant: TenantId::parse("acme").expect("tenant"),
        top_up: None,
        recurring: None,
        cap: None,
        ladder: Ladder::default(),
        method: Some(SavedMethod {
            customer: "cus".into(),
            payment_method: "pm".into(),
        }),
        status: AutopayStatus::Active,
        open_attempt: Some("a1".into()),
        month_charged: BTreeMap::new(),
        limit_reported: None,
        updated_at: T0,
        version: Some(1),
    }
}

fn timings() -> Timings {
    Timings {
        ladder: Ladder::default(),
        lease: Duration::from_secs(300),
        credit_within: Duration::from_secs(3600),
    }
}

fn reply(outcome: ChargeOutcome) -> ChargeReply {
    ChargeReply {
        outcome,
        provider_ref: Some("pi_1".into()),
        replayed: false,
        requests: 1,
    }
}

#[test]
fn a_claim_stores_the_tries_key_and_keeps_it_when_repeated() {
    let lease = Duration::from_secs(300);
    let claimed = claim(&attempt(), T0, lease);
    assert_eq!(claimed.state, AttemptState::Charging);
    let acme = TenantId::parse("acme").expect("tenant");
    assert_eq!(
        claimed.idempotency_key,
        Some(idempotency_key(&acme, "a1", 0))
    );
    assert_eq!(claimed.due, T0.plus(lease));
    assert_eq!(claimed.claimed_at, Some(T0), "the try's first claim");
    assert_eq!(claimed.version, Some(3), "written at the version read");
    let again = claim(&claimed, T0.plus(lease), lease);
    assert_eq!(again.idempotency_key, claimed.idempotency_key);
    assert_eq!(
        again.claimed_at,
        Some(T0),
        "the same try: its first claim kept"
    );
}

#[test]
fn a_claimed_try_is_resent_only_by_the_table() {
    let lease = Duration::from_secs(300);
    let claimed = claim(&attempt(), T0, lease);
    // Within the key's window: the same key again.
    assert_eq!(resend(&claimed, T0.plus(KEY_WINDOW / 2)), Resend::Send);
    // Past it: the provider's records first, from the try's first claim.
    assert_eq!(
        resend(&claimed, T0.plus(KEY_WINDOW)),
        Resend::FindFirst { since: T0 }
    );
    // An answer named its charge: looked up, whatever the time.
    let named = Attempt {
        provider_ref: Some("pi_9".into()),
        ..claimed.clone()
    };
    assert_eq!(resend(&named, T0), Resend::LookUp("pi_9".into()));
    assert_eq!(
        resend(&named, T0.plus(DAY * 30)),
        Resend::LookUp("pi_9".into())
    );
    // A new try (the next rung) never inherits a former try's charge.
    let next_rung = Attempt {
        state: AttemptState::Due,
        try_no: 1,
        ..named
    };
    let claimed = claim(&next_rung, T0.plus(DAY), lease);
    assert_eq!(claimed.provider_ref, None);
    assert_eq!(claimed.claimed_at, Some(T0.plus(DAY)));
    // A try claimed by an earlier version (no claim time): its first journaled answer.
    let old = Attempt {
        claimed_at: None,
        tries: vec![TryRecord {
            try_no: 0,
            at: T0.plus(lease),
            outcome: "indeterminate".into(),
            next_due: None,
        }],
        ..claim(&attempt(), T0, lease)
    };
    assert_eq!(first_claim(&old), Some(T0.plus(lease)));
}

#[test]
fn a_pending_reply_waits_and_an_ended_attempt_gives_its_reservation_back() {
    let charging = claim(&attempt(), T0, Duration::from_secs(300));
    let t = record(
        &charging,
        Some(&autopay()),
        &reply(ChargeOutcome::Pending),
        &timings(),
        T0,
    );
    assert_eq!(t.attempt.state, AttemptState::Pending);
    assert_eq!(t.attempt.provider_ref.as_deref(), Some("pi_1"));
    assert_eq!(t.attempt.due, T0.plus(PENDING_LOOK));
    assert!(t.events.is_empty());
    // Looked up again still pending: one journal line, no second metric.
    let again = record(
        &t.attempt,
        Some(&autopay()),
        &reply(ChargeOutcome::Pending),
        &timings(),
        T0.plus(PENDING_LOOK),
    );
    assert_eq!(again.attempt.tries.len(), 1);
    assert!(again.metrics.is_empty());
    // Still pending past the longest settlement: reported.
    let late = record(
        &t.attempt,
        Some(&autopay()),
        &reply(ChargeOutcome::Pending),
        &timings(),
        T0.plus(PENDING_LONG),
    );
    let names: Vec<&str> = late.metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, vec!["AutopayPendingLong"]);
    // A hard decline ends it: the month's reservation is given back.
    let mut w = autopay();
    let month = crate::balance::model::month_of(T0.get());
    w.month_charged.insert(month.clone(), 1500);
    let hard = reply(ChargeOutcome::DeclinedHard {
        code: "lost_card".into(),
    });
    let t = record(&charging, Some(&w), &hard, &timings(), T0);
    let back = t.autopay.expect("autopay written");
    assert_eq!(
        back.month_charged.get(&month),
        Some(&1000),
        "500 given back"
    );
    // Never below zero, and never twice (the open attempt is cleared with it).
    w.month_charged.insert(month.clone(), 100);
    let t = record(&charging, Some(&w), &hard, &timings(), T0);
    let back = t.autopay.expect("autopay written");
    assert_eq!(back.month_charged.get(&month), Some(&0));
    let t = record(&charging, Some(&back), &hard, &timings(), T0);
    assert_eq!(
        t.autopay.expect("autopay").month_charged.get(&month),
        Some(&0)
    );
}

#[test]
fn each_reply_is_recorded_by_the_ladder() {
    let charging = claim(&attempt(), T0, Duration::from_secs(300));
    let w = autopay();
    let soft = ChargeOutcome::DeclinedSoft {
        code: "insufficient_funds".into(),
    };
    let hard = ChargeOutcome::DeclinedHard {
        code: "lost_card".into(),
    };
    let cases = [
        (
            ChargeOutcome::Succeeded,
            AttemptState::Charged,
            T0.plus(Duration::from_secs(3600)),
            0,
            0,
        ),
        (
            ChargeOutcome::Indeterminate,
            AttemptState::Charging,
            T0.plus(Duration::from_secs(300)),
            0,
            0,
        ),
        (soft, AttemptState::Due, T0.plus(DAY), 1, 1),
        (
            hard,
            AttemptState::Ended {
                reason: "hard_decline: lost_card".into(),
            },
            T0.plus(Duration::from_secs(300)),
            0,
            2,
        ),
    ];
    for (outcome, state, due, try_no, events) in cases {
        let t = record(&charging, Some(&w), &reply(outcome.clone()), &timings(), T0);
        assert_eq!(t.attempt.state, state, "{outcome:?}");
        assert_eq!(t.attempt.due, due, "{outcome:?}");
        assert_eq!(t.attempt.try_no, try_no, "{outcome:?}");
        assert_eq!(t.events.len(), events, "{outcome:?}");
        assert_eq!(t.attempt.tries.len(), 1, "journaled: {outcome:?}");
        let ended = matches!(t.attempt.state, AttemptState::Ended { .. });
        assert_eq!(t.flag_wallet, ended, "{outcome:?}");
        assert_eq!(t.autopay.is_some(), ended, "{outcome:?}");
    }
}

#[test]
fn a_later_rung_counts_from_the_first_failure() {
    let mut a = claim(&attempt(), T0.plus(DAY * 2), Duration::from_secs(300));
    a.rung = 1;
    a.try_no = 1;
    a.first_failure = Some(T0);
    let soft = ChargeOutcome::DeclinedSoft {
        code: "processing_error".into(),
    };
    let t = record(&a, None, &reply(soft), &timings(), T0.plus(DAY * 2));
    assert_eq!((t.attempt.rung, t.attempt.due), (2, T0.plus(DAY * 3)));
    assert_eq!(t.attempt.first_failure, Some(T0));
}

#[test]
fn refusals_before_any_call() {
    let mut w = autopay();
    assert_eq!(refusal(Some(&w)), None);
    assert!(refusal(None).is_some_and(|(_, suspend)| !suspend));
    w.status = AutopayStatus::Paused;
    assert_eq!(refusal(Some(&w)), Some(("autopay_paused".into(), false)));
    w.status = AutopayStatus::Active;
    w.method = None;
    assert!(refusal(Some(&w)).is_some_and(|(_, suspend)| suspend));
}

#[test]
fn a_recurring_attempt_is_named_by_its_anchor_and_period() {
    let r = Recurring {
        schedule: Schedule::new(jiff::civil::date(2027, 1, 31), Every::Month),
        amount: Currency::parse("USD").expect("usd").amount(100),
        next: 0,
    };
    let acme = TenantId::parse("acme").expect("tenant");
    let globex = TenantId::parse("globex").expect("tenant");
    assert_eq!(
        recurring_id(&acme, &r, 3),
        format!("rec-{}-20270131-month-3", crate::autopay::tenant_tag(&acme))
    );
    assert_eq!(recurring_id(&acme, &r, 3), recurring_id(&acme, &r, 3));
    assert_ne!(recurring_id(&acme, &r, 3), recurring_id(&acme, &r, 4));
    assert_ne!(
        recurring_id(&acme, &r, 3),
        recurring_id(&globex, &r, 3),
        "two tenants on one anchor date"
    );
}

#[test]
fn a_wallets_own_ladder_overrides_the_functions() {
    let charging = claim(&attempt(), T0, Duration::from_secs(300));
    let soft = reply(ChargeOutcome::DeclinedSoft {
        code: "insufficient_funds".into(),
    });
    let configured = Timings {
        ladder: Ladder::parse("0,2,4").unwrap(),
        ..timings()
    };
    // A wallet on the default follows the function's ladder: rung 1 two days on.
    let t = record(&charging, Some(&autopay()), &soft, &configured, T0);
    assert_eq!(t.attempt.due, T0.plus(DAY * 2));
    // One that set its own follows it: rung 1 three days on.
    let mut own = autopay();
    own.ladder = Ladder::parse("0,3").unwrap();
    let t = record(&charging, Some(&own), &soft, &configured, T0);
    assert_eq!(t.attempt.due, T0.plus(DAY * 3));
    assert_eq!(
        ladder_of(None, &configured.ladder),
        &configured.ladder,
        "no settings: the function's"
    );
}
