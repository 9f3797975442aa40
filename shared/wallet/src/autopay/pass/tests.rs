//! The charging pass on the fakes with a manual clock: the dunning ladder on its days (and after
//! a scheduler outage), the ends of the ladder, the same key after a crash, conflicts, recurring
//! periods over years, the monthly cap, late credits, the invocation's deadline.

use super::*;
use crate::autopay::attempt::{AutopayStatus, Reason, Recurring, SavedMethod};
use crate::autopay::calendar::{Every, Schedule};
use crate::autopay::charge::idempotency_key;
use crate::autopay::fakes::{self, MemoryAttempts, ScriptedCharger, Step};
use crate::autopay::ladder::Ladder;
use crate::autopay::threshold::MonthlyCap;
use crate::money::{Currency, Money};
use crate::tenant::TenantId;
use inbox_core::clock::ManualClock;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const T0: Millis = Millis::new(1_800_000_000_000);
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

type TestPass = Pass<MemoryAttempts, ScriptedCharger, Arc<ManualClock>>;

fn tenant() -> TenantId {
    TenantId::parse("acme").expect("tenant")
}

fn usd(minor: i64) -> Money {
    Currency::parse("USD").expect("usd").amount(minor)
}

fn at(ms: i64) -> Millis {
    Millis::new(T0.get() + ms)
}

fn autopay() -> Autopay {
    Autopay {
        tenant: tenant(),
        top_up: None,
        recurring: None,
        cap: None,
        ladder: Ladder::default(),
        method: Some(SavedMethod {
            customer: "cus_1".into(),
            payment_method: "pm_1".into(),
        }),
        status: AutopayStatus::Active,
        open_attempt: Some("thr-1".into()),
        month_charged: BTreeMap::new(),
        limit_reported: None,
        updated_at: T0,
        version: None,
    }
}

fn attempt(id: &str, due: Millis) -> Attempt {
    Attempt {
        id: id.into(),
        tenant: tenant(),
        reason: Reason::Threshold,
        amount: usd(4000),
        state: AttemptState::Due,
        try_no: 0,
        rung: 0,
        first_failure: None,
        due,
        idempotency_key: None,
        claimed_at: None,
        provider_ref: None,
        tries: Vec::new(),
        created_at: due,
        version: None,
    }
}

fn soft() -> Step {
    Step::Answer(ChargeOutcome::DeclinedSoft {
        code: "insufficient_funds".into(),
    })
}

/// A pass over one wallet with the threshold attempt `thr-1` due at T0, answering `steps`.
fn setup(steps: Vec<Step>) -> (TestPass, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_millis(T0.get()));
    let store = MemoryAttempts::new();
    store.put_autopay(autopay());
    store.put_attempt(attempt("thr-1", T0));
    let charger = ScriptedCharger::new(steps).timed(clock.clone());
    let pass = Pass::new(store, charger, clock.clone(), PassConfig::default());
    (pass, clock)
}

fn thr(pass: &TestPass) -> Attempt {
    pass.store().get_attempt("acme", "thr-1").expect("thr-1")
}

/// Runs the pass at each time (ms after T0).
async fn run_at(pass: &TestPass, clock: &ManualClock, times: &[i64]) -> Vec<PassReport> {
    let mut reports = Vec::new();
    for t in times {
        clock.set_millis(T0.get() + t);
        reports.push(pass.run(None).await);
    }
    reports
}

/// Runs the pass every hour for `days` days.
async fn run_hourly(pass: &TestPass, clock: &ManualClock, days: i64) {
    let times: Vec<i64> = (0..=days * 24).map(|h| h * HOUR).collect();
    run_at(pass, clock, &times).await;
}

/// The times of the requests, in ms after T0.
fn request_times(pass: &TestPass) -> Vec<i64> {
    let requests = pass.charger().requests();
    requests.iter().map(|(t, _)| t.get() - T0.get()).collect()
}

fn names(report: &PassReport) -> Vec<&str> {
    report.metrics.iter().map(|m| m.name.as_str()).collect()
}

#[tokio::test]
async fn a_soft_decline_walks_the_ladder_on_its_days_then_suspends() {
    let (pass, clock) = setup(vec![soft(), soft(), soft(), soft(), soft()]);
    run_hourly(&pass, &clock, 10).await;
    assert_eq!(
        request_times(&pass),
        vec![0, DAY, 3 * DAY, 5 * DAY, 7 * DAY],
        "the rungs of 0,1,3,5,7 days from the first failure"
    );
    let keys: Vec<String> = pass
        .charger()
        .requests()
        .into_iter()
        .map(|(_, r)| r.idempotency_key)
        .collect();
    assert_eq!(
        pass.charger().distinct_keys(),
        5,
        "a new key per rung: {keys:?}"
    );
    let a = thr(&pass);
    assert_eq!(
        a.state,
        AttemptState::Ended {
            reason: "ladder_exhausted: insufficient_funds after 5 tries".into()
        }
    );
    assert_eq!(a.first_failure, Some(T0));
    let next: Vec<Option<Millis>> = a.tries.iter().map(|t| t.next_due).collect();
    assert_eq!(
        next,
        vec![
            Some(at(DAY)),
            Some(at(3 * DAY)),
            Some(at(5 * DAY)),
            Some(at(7 * DAY)),
            None
        ]
    );
    let w = pass.store().get_autopay("acme").expect("autopay");
    assert!(
        matches!(w.status, AutopayStatus::Suspended { .. }),
        "{:?}",
        w.status
    );
    assert_eq!(w.open_attempt, None);
    assert!(pass.store().tables().flagged.contains("WALLET#acme"));
    let mut expected = vec!["wallet.autopay_failed"; 5];
    expected.push("wallet.autopay_suspended");
    assert_eq!(pass.store().event_types(), expected);
}

#[tokio::test]
async fn a_hard_decline_and_authentication_required_end_it_at_once() {
    for (outcome, reason) in [
        (
            ChargeOutcome::DeclinedHard {
                code: "expired_card".into(),
            },
            "hard_decline: expired_card",
        ),
        (
            ChargeOutcome::NeedsCustomer {
                code: "authentication_required".into(),
            },
            "needs_customer: authentication_required",
        ),
    ] {
        let (pass, clock) = setup(vec![Step::Answer(outcome)]);
        let first = run_at(&pass, &clock, &[0]).await.remove(0);
        run_hourly(&pass, &clock, 10).await;
        assert_eq!(request_times(&pass), vec![0], "{reason}: not retried");
        assert_eq!(
            thr(&pass).state,
            AttemptState::Ended {
                reason: reason.into()
            }
        );
        let w = pass.store().get_autopay("acme").expect("autopay");
        assert_eq!(
            w.status,
            AutopayStatus::Suspended {
                reason: reason.into()
            }
        );
        assert_eq!(w.open_attempt, None);
        assert!(pass.store().tables().flagged.contains("WALLET#acme"));
        assert_eq!(
            pass.store().event_types(),
            vec!["wallet.autopay_failed", "wallet.autopay_suspended"]
        );
        assert_eq!((first.ended, first.suspended), (1, 1));
        assert_eq!(names(&first), vec!["AutopayDeclined", "AutopaySuspended"]);
    }
}

#[tokio::test]
async fn a_scheduler_down_for_two_days_fires_the_missed_rungs_at_once() {
    let (pass, clock) = setup(vec![
        soft(),
        soft(),
        soft(),
        Step::Answer(ChargeOutcome::Succeeded),
    ]);
    run_at(&pass, &clock, &[0]).await;
    // Down from the first failure until day 3 + 1 h: rungs 1 (day 1) and 2 (day 3) missed.
    let back = 3 * DAY + HOUR;
    run_at(&pass, &clock, &[back, back + MINUTE, back + 2 * MINUTE]).await;
    assert_eq!(
        request_times(&pass),
        vec![0, back, back + MINUTE],
        "both missed rungs at once"
    );
    assert_eq!(
        thr(&pass).due,
        at(5 * DAY),
        "rung 3 still on day 5, not stretched"
    );
    run_at(&pass, &clock, &[5 * DAY - MINUTE, 5 * DAY]).await;
    assert_eq!(request_times(&pass), vec![0, back, back + MINUTE, 5 * DAY]);
    assert_eq!(thr(&pass).state, AttemptState::Charged);
}

#[tokio::test]
async fn a_crash_after_the_call_repeats_the_same_key_and_charges_once() {
    // The reply's write is lost (the function died after the call).
    let (pass, clock) = setup(vec![Step::Answer(ChargeOutcome::Succeeded)]);
    pass.store()
        .fail_write(|a| a.state == AttemptState::Charged);
    let lease = i64::try_from(pass.config().lease.as_millis()).expect("lease");
    let reports = run_at(&pass, &clock, &[0, MINUTE, lease - 1, lease]).await;
    assert_eq!(reports[0].errors, 1, "{:?}", reports[0]);
    assert_eq!(
        request_times(&pass),
        vec![0, lease],
        "repeated once its lease lapsed"
    );
    let keys: Vec<String> = pass
        .charger()
        .requests()
        .into_iter()
        .map(|(_, r)| r.idempotency_key)
        .collect();
    assert_eq!(keys[0], keys[1], "the same Idempotency-Key");
    assert_eq!(pass.charger().charged_keys().len(), 1, "one charge");
    assert_eq!(thr(&pass).state, AttemptState::Charged);
    assert_eq!(names(&reports[3]), vec!["AutopayCharged"]);
}

#[tokio::test]
async fn a_pass_killed_in_the_call_is_re_driven_at_its_lease_and_charges_once() {
    use futures_util::FutureExt as _;
    let lease = i64::try_from(pass_lease()).expect("lease");
    for reached in [false, true] {
        let (pass, clock) = setup(vec![Step::Killed { reached }]);
        // The run dies in the call, after its claim was stored (before or after the request
        // reached the provider): nothing records an answer.
        assert!(
            pass.run(None).now_or_never().is_none(),
            "killed in the call"
        );
        let claimed = thr(&pass);
        assert_eq!(claimed.state, AttemptState::Charging, "reached {reached}");
        assert_eq!(claimed.due, at(lease), "due again at its lease's end");
        // No run before the lease ends touches it; the first one at its end re-drives it, with
        // the same key: the bound is the lease plus the runs' period.
        run_at(&pass, &clock, &[MINUTE, lease - 1]).await;
        let sent_before = usize::from(reached);
        assert_eq!(
            pass.charger().requests().len(),
            sent_before,
            "reached {reached}"
        );
        run_at(&pass, &clock, &[lease]).await;
        let keys: std::collections::BTreeSet<String> = pass
            .charger()
            .requests()
            .into_iter()
            .map(|(_, r)| r.idempotency_key)
            .collect();
        assert_eq!(keys.len(), 1, "one key, reached {reached}");
        assert_eq!(
            pass.charger().charged_keys().len(),
            1,
            "one charge, reached {reached}"
        );
        assert_eq!(thr(&pass).state, AttemptState::Charged, "reached {reached}");
    }
}

fn pass_lease() -> u128 {
    PassConfig::default().lease.as_millis()
}

#[tokio::test]
async fn a_wallet_from_before_the_tenant_grammar_is_never_charged_and_is_reported() {
    let (pass, clock) = setup(Vec::new());
    let old = TenantId::stored("Acme Corp").expect("a stored id");
    let mut settings = autopay();
    settings.tenant = old.clone();
    pass.store().put_autopay(settings);
    let mut legacy = attempt("old-1", T0);
    legacy.tenant = old;
    pass.store().put_attempt(legacy);
    let report = run_at(&pass, &clock, &[0]).await.remove(0);
    assert_eq!(report.unreadable, 1, "{report:?}");
    assert!(
        report.unreadable_samples[0].contains("\"Acme Corp\""),
        "{:?}",
        report.unreadable_samples
    );
    let charged: Vec<String> = pass
        .charger()
        .requests()
        .into_iter()
        .map(|(_, r)| r.attempt)
        .collect();
    assert_eq!(
        charged,
        vec!["thr-1"],
        "only the wallet that fits the grammar"
    );
}

#[tokio::test]
async fn an_indeterminate_answer_repeats_the_same_key_and_charges_once() {
    // A 500 after the charge was made: indeterminate, then the saved success.
    let (pass, clock) = setup(vec![Step::ChargedButLost]);
    let lease = i64::try_from(pass.config().lease.as_millis()).expect("lease");
    let reports = run_at(&pass, &clock, &[0, MINUTE, lease + MINUTE]).await;
    assert_eq!(reports[0].indeterminate, 1);
    assert_eq!(request_times(&pass), vec![0, lease + MINUTE]);
    assert_eq!(pass.charger().distinct_keys(), 1);
    assert_eq!(pass.charger().charged_keys().len(), 1);
    let a = thr(&pass);
    assert_eq!((a.state, a.try_no), (AttemptState::Charged, 0));
    assert!(
        pass.store().event_types().is_empty(),
        "an indeterminate try is not a failure"
    );
}

#[tokio::test]
async fn a_conflict_is_read_again_and_a_credited_attempt_left_alone() {
    let (pass, clock) = setup(vec![Step::Answer(ChargeOutcome::Succeeded)]);
    // The payment's webhook credits the attempt between the call and the write of its reply.
    pass.store().race(
        |a| a.state == AttemptState::Charged,
        |t| fakes::credit(t, "acme", "thr-1"),
    );
    let report = run_at(&pass, &clock, &[0]).await.remove(0);
    assert_eq!((report.conflicts, report.left_alone), (1, 1), "{report:?}");
    assert_eq!(thr(&pass).state, AttemptState::Credited);
    assert!(
        report.metrics.is_empty(),
        "nothing counted for a write that lost"
    );
    run_hourly(&pass, &clock, 2).await;
    assert_eq!(pass.charger().requests().len(), 1);
}

#[tokio::test]
async fn a_try_claimed_by_another_run_is_not_charged_twice() {
    let (pass, clock) = setup(vec![]);
    pass.store().race(
        |a| a.state == AttemptState::Charging,
        |t| {
            let a = t
                .attempts
                .get_mut(&("acme".into(), "thr-1".into()))
                .expect("thr-1");
            a.state = AttemptState::Charging;
            a.idempotency_key = Some(idempotency_key(&tenant(), "thr-1", 0));
            a.due = at(5 * MINUTE);
            a.version = a.version.map(|v| v + 1);
        },
    );
    let report = run_at(&pass, &clock, &[0]).await.remove(0);
    assert_eq!(report.conflicts, 1);
    assert!(pass.charger().requests().is_empty(), "the other run's try");
}

/// The id of acme's recurring period 0 anchored on 2027-03-15.
fn rec_0315() -> String {
    format!(
        "rec-{}-20270315-month-0",
        crate::autopay::tenant_tag(&tenant())
    )
}

fn recurring_autopay(anchor: jiff::civil::Date, cap: Option<MonthlyCap>) -> Autopay {
    Autopay {
        recurring: Some(Recurring {
            schedule: Schedule::new(anchor, Every::Month),
            amount: usd(2000),
            next: 0,
        }),
        cap,
        open_attempt: None,
        ..autopay()
    }
}

fn recurring_setup(w: Autopay, steps: Vec<Step>, start: Millis) -> (TestPass, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_millis(start.get()));
    let store = MemoryAttempts::new();
    store.put_autopay(w);
    let charger = ScriptedCharger::new(steps).timed(clock.clone());
    (
        Pass::new(store, charger, clock.clone(), PassConfig::default()),
        clock,
    )
}

fn utc(date: jiff::civil::Date) -> Millis {
    Schedule::new(date, Every::Month).due_at(0).expect("a date")
}

/// The UTC date of a time.
fn at_date(ms: Millis) -> jiff::civil::Date {
    let ts = jiff::Timestamp::from_millisecond(ms.get()).expect("a time");
    jiff::tz::Offset::UTC.to_datetime(ts).date()
}

#[tokio::test]
async fn recurring_charges_stay_on_the_anchor_for_three_years() {
    use jiff::civil::date;
    let anchor = date(2027, 1, 31);
    // The first period succeeds on its fourth try (day 5): the next still falls on Feb 28.
    let (pass, clock) = recurring_setup(
        recurring_autopay(anchor, None),
        vec![soft(), soft(), soft()],
        utc(anchor),
    );
    let end = utc(date(2030, 2, 1));
    let mut day = utc(anchor).get() + 5 * MINUTE;
    while day < end.get() {
        clock.set_millis(day);
        let report = pass.run(None).await;
        assert_eq!(report.errors, 0, "{report:?}");
        let charged: Vec<String> = pass
            .store()
            .tables()
            .attempts
            .values()
            .filter(|a| a.state == AttemptState::Charged)
            .map(|a| a.id.clone())
            .collect();
        for id in charged {
            pass.store().credit("acme", &id);
        }
        day += DAY;
    }
    let t = pass.store().tables();
    let mut made: Vec<(u32, jiff::civil::Date)> = t
        .attempts
        .values()
        .filter_map(|a| match a.reason {
            Reason::Recurring { period } => Some((period, at_date(a.created_at))),
            _ => None,
        })
        .collect();
    made.sort();
    // Every month's last day (the anchor is the 31st), Jan 2027 to Jan 2030: leap Feb 2028.
    let expected: Vec<(u32, jiff::civil::Date)> = (0..37u32)
        .map(|k| {
            let (y, m) = (
                2027 + i16::try_from(k / 12).expect("year"),
                i8::try_from(k % 12 + 1).expect("month"),
            );
            (k, date(y, m, 1).last_of_month())
        })
        .collect();
    assert_eq!(made, expected);
    assert!(made.contains(&(13, date(2028, 2, 29))));
    assert!(t
        .attempts
        .values()
        .all(|a| a.state == AttemptState::Credited));
    drop(t);
    let firsts: Vec<i64> = pass
        .charger()
        .requests()
        .iter()
        .map(|(at, _)| at.get())
        .collect();
    assert_eq!(
        firsts.len(),
        37 + 3,
        "one try a period, plus the first period's three declines"
    );
    assert_eq!(
        firsts[3],
        utc(date(2027, 2, 5)).get() + 5 * MINUTE,
        "paid on day 5"
    );
    assert_eq!(
        firsts[4],
        utc(date(2027, 2, 28)).get() + 5 * MINUTE,
        "next on the anchor"
    );
}

#[tokio::test]
async fn the_monthly_cap_refuses_a_recurring_charge_and_reports_it() {
    use jiff::civil::date;
    let anchor = date(2027, 3, 15);
    let cap = MonthlyCap::new(usd(3000)).expect("cap");
    let mut w = recurring_autopay(anchor, Some(cap));
    w.month_charged.insert("2027_03".into(), 2000);
    let (pass, clock) = recurring_setup(w, vec![], utc(anchor));
    let report = pass.run(None).await;
    assert_eq!(
        (report.limit_reached, report.recurring_made),
        (1, 0),
        "{report:?}"
    );
    assert_eq!(names(&report), vec!["AutopayLimitReached"]);
    assert_eq!(
        pass.store().event_types(),
        vec!["wallet.autopay_limit_reached"]
    );
    assert!(pass.charger().requests().is_empty());
    let refused = pass
        .store()
        .get_attempt("acme", &rec_0315())
        .expect("journaled");
    assert!(
        matches!(&refused.state, AttemptState::Ended { reason } if reason.starts_with("limit_reached"))
    );
    // Next month the cap has room again.
    clock.set_millis(utc(date(2027, 4, 15)).get());
    let report = pass.run(None).await;
    assert_eq!(
        (report.recurring_made, report.succeeded),
        (1, 1),
        "{report:?}"
    );
    let w = pass.store().get_autopay("acme").expect("autopay");
    assert_eq!(w.month_charged.get("2027_04"), Some(&2000));
}

#[tokio::test]
async fn a_recurring_period_waits_for_the_open_attempt_and_is_made_once() {
    use jiff::civil::date;
    let anchor = date(2027, 3, 15);
    let mut w = recurring_autopay(anchor, None);
    w.open_attempt = Some("thr-1".into());
    let (pass, _clock) = recurring_setup(w, vec![], utc(anchor));
    let report = pass.run(None).await;
    assert_eq!((report.recurring_waiting, report.recurring_made), (1, 0));
    pass.store().credit("acme", "thr-1");
    // Another run makes the same period first: this one meets its write and reads again.
    pass.store().race(
        |a| a.id == rec_0315(),
        |t| {
            let w = t.autopays.get_mut("acme").expect("autopay");
            w.recurring.as_mut().expect("recurring").next = 1;
            w.version = w.version.map(|v| v + 1);
        },
    );
    let report = pass.run(None).await;
    assert_eq!(
        (report.conflicts, report.recurring_made),
        (1, 0),
        "{report:?}"
    );
    assert!(pass.store().get_attempt("acme", &rec_0315()).is_none());
}

struct Counting(std::sync::atomic::AtomicUsize);

impl Settle for Counting {
    async fn settle(&self, _charge: &Uncredited) -> Result<bool, StoreError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(true)
    }
}

#[tokio::test]
async fn a_late_credit_is_reported_and_never_charged_again() {
    let (pass, clock) = setup(vec![Step::Answer(ChargeOutcome::Succeeded)]);
    let pass = pass.settling_with(Counting(Default::default()));
    clock.set_millis(T0.get());
    pass.run(None).await;
    let within = i64::try_from(pass.config().credit_within.as_millis()).expect("ms");
    pass.charger().set_found(
        "thr-1",
        Some(ChargeReply {
            outcome: ChargeOutcome::Succeeded,
            provider_ref: Some("pi_1".into()),
            replayed: false,
            requests: 1,
        }),
    );
    clock.set_millis(T0.get() + within - 1);
    assert!(pass.run(None).await.uncredited.is_empty(), "not late yet");
    clock.set_millis(T0.get() + within);
    let report = pass.run(None).await;
    assert_eq!(report.uncredited.len(), 1);
    assert!(report.uncredited[0].succeeded);
    assert_eq!(report.settled, 1);
    assert_eq!(names(&report), vec!["AutopayUncredited"]);
    assert_eq!(pass.charger().requests().len(), 1, "never a second charge");
    let a = pass.store().get_attempt("acme", "thr-1").expect("thr-1");
    assert!(a
        .tries
        .last()
        .is_some_and(|t| t.outcome.starts_with("uncredited")));
    assert_eq!(
        a.due,
        at(2 * within),
        "looked at again after another deadline"
    );
    clock.set_millis(T0.get() + within + MINUTE);
    assert!(pass.run(None).await.uncredited.is_empty());
}

#[tokio::test]
async fn no_try_starts_that_would_outlast_the_invocation() {
    let (pass, clock) = setup(vec![]);
    let budget = pass.config().call_budget;
    let report = pass.run(Some(T0.plus(budget / 2))).await;
    assert_eq!((report.deferred, report.tries), (1, 0));
    assert_eq!(thr(&pass).state, AttemptState::Due);
    clock.set_millis(T0.get());
    let report = pass.run(Some(T0.plus(budget * 2))).await;
    assert_eq!(report.tries, 1);
}

#[tokio::test]
async fn nothing_is_charged_without_a_saved_method_and_autopay_suspends() {
    let (pass, clock) = setup(vec![]);
    let mut w = pass.store().get_autopay("acme").expect("autopay");
    w.method = None;
    pass.store().tables().autopays.insert("acme".into(), w);
    run_at(&pass, &clock, &[0]).await;
    assert!(pass.charger().requests().is_empty());
    assert!(matches!(thr(&pass).state, AttemptState::Ended { .. }));
    assert_eq!(pass.store().event_types(), vec!["wallet.autopay_suspended"]);
}

#[tokio::test]
async fn an_answer_unknown_past_the_keys_lifetime_is_looked_up_not_charged_again() {
    // Charged, the answer lost; then the provider unreachable for 25 hours, longer than it keeps
    // the key: sending the key again then would charge again.
    let (pass, clock) = setup(vec![Step::ChargedButLost]);
    run_at(&pass, &clock, &[0]).await;
    pass.charger().set_down(true);
    let lease = i64::try_from(pass.config().lease.as_millis()).expect("lease");
    let times: Vec<i64> = (1..=25 * HOUR / lease).map(|k| k * lease).collect();
    run_at(&pass, &clock, &times).await;
    pass.charger().set_down(false);
    run_at(&pass, &clock, &[25 * HOUR + lease]).await;
    assert_eq!(pass.charger().charged_keys().len(), 1, "one charge");
    let a = thr(&pass);
    assert_eq!(a.state, AttemptState::Charged);
    assert_eq!(a.provider_ref.as_deref(), Some("pi_1"));
    let outcomes: Vec<&str> = a.tries.iter().map(|t| t.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        vec!["indeterminate", "succeeded"],
        "one line for the repeats"
    );
}

fn pending() -> Step {
    Step::Answer(ChargeOutcome::Pending)
}

#[tokio::test]
async fn a_pending_charge_is_never_sent_again_over_thirty_days_and_settles_once() {
    // A delayed-notification method (SEPA-like): `processing` for 4 days, then succeeded. The
    // pass runs every hour for 30 days, past the 24 hours the provider keeps the key.
    let (pass, clock) = setup(vec![pending()]);
    run_hourly(&pass, &clock, 4).await;
    assert_eq!(thr(&pass).state, AttemptState::Pending);
    let (lookups, finds) = pass.charger().lookups();
    assert_eq!(finds, 0, "its id was known: nothing searched");
    assert_eq!(lookups, 4, "looked up daily while pending, not hourly");
    let pi = thr(&pass).provider_ref.expect("the pending charge's id");
    pass.charger().settle(&pi, ChargeOutcome::Succeeded);
    let times: Vec<i64> = (4 * 24 + 1..=30 * 24).map(|h| h * HOUR).collect();
    run_at(&pass, &clock, &times).await;
    assert_eq!(pass.charger().intents().len(), 1, "one charge in 30 days");
    assert_eq!(request_times(&pass), vec![0], "one request to charge");
    let a = thr(&pass);
    assert_eq!(a.state, AttemptState::Charged, "{:?}", a.tries);
    let outcomes: Vec<&str> = a.tries.iter().map(|t| t.outcome.as_str()).collect();
    assert_eq!(outcomes[..2], ["pending", "succeeded"], "{outcomes:?}");
}

#[tokio::test]
async fn a_pending_charge_that_fails_walks_the_ladder_one_charge_per_try() {
    let (pass, clock) = setup(vec![pending(), pending()]);
    run_at(&pass, &clock, &[0, HOUR]).await;
    let pi = thr(&pass).provider_ref.expect("pending");
    // Its webhook (payment_intent.payment_failed) makes it due; the pass looks it up.
    pass.charger().settle(
        &pi,
        ChargeOutcome::DeclinedSoft {
            code: "insufficient_funds".into(),
        },
    );
    run_hourly(&pass, &clock, 30).await;
    let intents = pass.charger().intents();
    let tries: Vec<u32> = intents.iter().map(|i| i.try_no).collect();
    assert_eq!(tries, vec![0, 1], "one charge per try");
    assert_ne!(intents[0].key, intents[1].key, "a new key per rung");
    let a = thr(&pass);
    assert_eq!((a.state.clone(), a.try_no), (AttemptState::Pending, 1));
    assert_eq!(pass.store().event_types(), vec!["wallet.autopay_failed"]);
}

#[tokio::test]
async fn a_run_killed_mid_call_past_the_keys_lifetime_finds_the_charge_not_charges_again() {
    // The charge is made, the answer lost AND nothing recorded (the run died mid-call); the
    // provider is then unreachable for 30 hours: the key is pruned meanwhile, so sending it
    // again would charge again. The window counts from the try's claim.
    let (pass, clock) = setup(vec![Step::ChargedButLost]);
    pass.store().fail_write(|a| a.tries.len() == 1);
    run_at(&pass, &clock, &[0]).await;
    assert!(thr(&pass).tries.is_empty(), "nothing recorded");
    pass.charger().set_down(true);
    let lease = i64::try_from(pass.config().lease.as_millis()).expect("lease");
    let times: Vec<i64> = (1..=30 * HOUR / lease).map(|k| k * lease).collect();
    run_at(&pass, &clock, &times).await;
    pass.charger().set_down(false);
    run_at(&pass, &clock, &[30 * HOUR + lease]).await;
    assert_eq!(pass.charger().intents().len(), 1, "one charge");
    let a = thr(&pass);
    assert_eq!(a.state, AttemptState::Charged);
    assert_eq!(a.claimed_at, Some(T0), "the window measured from the claim");
}

#[tokio::test]
async fn a_try_with_no_charge_found_past_the_keys_lifetime_is_sent_again_and_charges_once() {
    // Stripe unreachable for 30 hours (nothing made): past the key's window each resend waits
    // for the records' proof of no charge; once they prove it, the try is sent and charges once.
    let (pass, clock) = setup(vec![]);
    pass.charger().set_down(true);
    let lease = i64::try_from(pass.config().lease.as_millis()).expect("lease");
    let times: Vec<i64> = (0..=30 * HOUR / lease).map(|k| k * lease).collect();
    run_at(&pass, &clock, &times).await;
    let sent = pass.charger().requests().len();
    assert_eq!(
        i64::try_from(sent).expect("count"),
        12 * HOUR / lease,
        "sent blindly only within the key's window"
    );
    pass.charger().set_down(false);
    let report = run_at(&pass, &clock, &[31 * HOUR]).await.remove(0);
    assert_eq!(report.resent_after_proof, 1, "{report:?}");
    assert_eq!(pass.charger().intents().len(), 1, "one charge");
    assert_eq!(thr(&pass).state, AttemptState::Charged);
}

#[tokio::test]
async fn two_tenants_on_one_anchor_date_send_two_keys_and_are_each_charged_on_the_day() {
    let anchor = jiff::civil::date(2027, 3, 1);
    let clock = Arc::new(ManualClock::at_millis(utc(anchor).get()));
    let store = MemoryAttempts::new();
    for t in ["acme", "globex"] {
        let mut w = recurring_autopay(anchor, None);
        w.tenant = TenantId::parse(t).expect("tenant");
        store.put_autopay(w);
    }
    let charger = ScriptedCharger::new(vec![]).timed(clock.clone());
    let pass = Pass::new(store, charger, clock.clone(), PassConfig::default());
    pass.run(None).await;
    pass.run(None).await;
    let intents = pass.charger().intents();
    let keys: BTreeSet<&str> = intents.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys.len(), 2, "two tenants, two keys: {intents:?}");
    let requests = pass.charger().requests();
    let tenants: BTreeSet<&str> = requests.iter().map(|(_, r)| r.tenant.as_str()).collect();
    assert_eq!(tenants.len(), 2);
    assert!(
        requests.iter().all(|(t, _)| *t == utc(anchor)),
        "on the day"
    );
}

#[tokio::test]
async fn a_declined_attempt_gives_its_months_reservation_back() {
    let (pass, clock) = setup(vec![Step::Answer(ChargeOutcome::DeclinedHard {
        code: "expired_card".into(),
    })]);
    let month = crate::balance::model::month_of(T0.get());
    let mut w = pass.store().get_autopay("acme").expect("autopay");
    w.month_charged.insert(month.clone(), 4000);
    pass.store().tables().autopays.insert("acme".into(), w);
    run_at(&pass, &clock, &[0]).await;
    let w = pass.store().get_autopay("acme").expect("autopay");
    assert_eq!(w.month_charged.get(&month), Some(&0), "given back");
    assert!(matches!(thr(&pass).state, AttemptState::Ended { .. }));
}
