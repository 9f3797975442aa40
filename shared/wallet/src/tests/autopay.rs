//! Autopay on the ledger's side, through the real processor on the in-memory store: a burst of
//! debits across the threshold makes one attempt (and two handlers deciding on the same read
//! conflict), the monthly cap reported once, the credit that closes an attempt exactly once
//! whether the charging pass's write comes before or after the webhook, the saved method and its
//! detach in either order — and a property test over any order and duplication of the autopay
//! webhooks against a reference model; holds on a sharded wallet's view that never expires make
//! one attempt too, decided on the settings read strongly (a stale copy would conflict on its
//! version and leave the holds busy).

use super::*;
use crate::autopay::table::TableAttempts;
use crate::autopay::Settle as _;
use crate::autopay::{
    AttemptState, AttemptStore, AutopayStatus, MonthlyCap, SavedMethod, TopUpRule, Written,
};
use crate::balance::events::WalletEvent;
use inbox_core::clock::Millis;
use inbox_core::process::registry::{Handler, HandlerOutcome};
use inbox_core::store::{Applied, ItemWriter};

const START: i64 = 3_000;

impl World {
    /// A wallet of `START` with autopay to 50.00 at 10.00, and a saved method unless `method` is
    /// false.
    pub(super) async fn autopay(self, method: bool, cap: Option<i64>) -> Self {
        let mut wallet = Wallet::new(
            tid("acme"),
            usd().amount(PRICE),
            usd().amount(-1_000_000),
            None,
            T0,
        );
        wallet.balance = usd().amount(START);
        self.store.put_item(wallet.to_item());
        Ledger::new(&*self.store)
            .set_autopay(&tid("acme"), "ops", "set", Millis::new(T0), |a| {
                a.top_up =
                    Some(TopUpRule::to_target(usd().amount(1000), usd().amount(5000)).unwrap());
                a.cap = cap.map(|c| MonthlyCap::new(usd().amount(c)).unwrap());
                if method {
                    a.method = Some(SavedMethod {
                        customer: "cus_1".into(),
                        payment_method: "pm_1".into(),
                    });
                }
                Ok("threshold 10.00, target 50.00".into())
            })
            .await
            .unwrap();
        self
    }

    pub(super) async fn settings(&self) -> crate::autopay::Autopay {
        Ledger::new(&*self.store)
            .autopay(&tid("acme"))
            .await
            .unwrap()
            .unwrap()
    }

    pub(super) async fn attempts(&self) -> Vec<crate::autopay::Attempt> {
        Ledger::new(&*self.store)
            .attempts(&tid("acme"))
            .await
            .unwrap()
    }

    /// Whether the wallet published this event.
    fn published(&self, e: &WalletEvent) -> bool {
        let key = MessageKey::new(
            SourceName::parse(crate::balance::events::SOURCE).unwrap(),
            EventId::parse(&e.id()).unwrap(),
        );
        let pk = inbox_core::store::schema::message_pk(&key);
        self.store
            .item(&pk, inbox_core::store::schema::MESSAGE_SK)
            .is_some()
    }

    pub(super) async fn debits(&self, from: usize, n: usize) {
        for i in from..from + n {
            let o = self
                .email(
                    &format!("acc_{i}"),
                    "message.accepted",
                    &format!("m{i}"),
                    json!({}),
                )
                .await;
            assert_eq!(o, Outcome::Processed);
        }
    }

    /// `payment_intent.succeeded` of the attempt's charge.
    pub(super) async fn charge_succeeded(
        &self,
        event: &str,
        attempt: &str,
        amount: i64,
    ) -> Outcome {
        let pi = json!({"id": format!("pi_{attempt}"), "object": "payment_intent", "amount": amount,
            "amount_received": amount, "currency": "usd", "customer": "cus_1",
            "payment_method": "pm_1", "livemode": false, "status": "succeeded", "off_session": true,
            "metadata": {"tenant": "acme", "attempt": attempt}});
        self.send(
            "stripe",
            event,
            "payment_intent.succeeded",
            stripe_body("payment_intent.succeeded", pi),
        )
        .await
    }
}

fn topped_up(attempt: &str, amount: i64) -> WalletEvent {
    WalletEvent::ToppedUp {
        tenant: tid("acme"),
        attempt: attempt.into(),
        amount: usd().amount(amount),
        payment: format!("pi_{attempt}"),
    }
}

#[tokio::test]
async fn a_thousand_debits_across_the_threshold_make_one_attempt() {
    let w = World::new().autopay(true, None).await;
    w.debits(0, 399).await;
    assert!(
        w.attempts().await.is_empty(),
        "10.05 available: above the threshold"
    );
    w.debits(399, 601).await;
    let attempts = w.attempts().await;
    assert_eq!(attempts.len(), 1, "one attempt: {attempts:?}");
    let a = &attempts[0];
    assert_eq!(
        (a.state.clone(), a.amount.minor()),
        (AttemptState::Due, 4000),
        "to the target from 10.00"
    );
    assert_eq!(
        a.due.get(),
        T0 + 399,
        "due at once, made by the debit that reached 10.00"
    );
    let settings = w.settings().await;
    assert_eq!(settings.open_attempt.as_deref(), Some(a.id.as_str()));
    assert_eq!(settings.month_charged.get("2026_11"), Some(&4000));
    let due = TableAttempts::new(w.store.clone())
        .due_attempts(Millis::new(T0 + 10_000), 10)
        .await
        .unwrap();
    assert_eq!(
        due.items.iter().map(|a| a.id.clone()).collect::<Vec<_>>(),
        vec![a.id.clone()],
        "in the due index"
    );
}

#[tokio::test]
async fn two_debits_deciding_on_the_same_read_conflict_and_the_rerun_sees_the_attempt() {
    let w = World::new().autopay(true, None).await;
    w.debits(0, 400).await;
    // Credit the attempt so the wallet's autopay is free again, then read twice before writing.
    let first = w.attempts().await[0].id.clone();
    w.charge_succeeded("evt_pi", &first, 4000).await;
    let mut wallet = w.balance("acme");
    wallet.balance = usd().amount(1000);
    w.store.put_item(wallet.to_item());
    let handler = WalletHandler::new(w.store.clone(), WalletSources::default());
    let mut commits = Vec::new();
    for i in 0..2 {
        let key = w.deliver("mailer", &format!("burst_{i}"), "message.accepted",
            json!({"type": "message.accepted", "data": {"message_id": format!("b{i}"), "tenant": "acme"}})).await.unwrap();
        let msg = w.store.message(&key).unwrap();
        match handler.handle(&msg).await {
            HandlerOutcome::Commit(c) => commits.push(c.effects),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        w.store.commit(commits.remove(0)).await.unwrap(),
        Applied::Done
    );
    assert_eq!(
        w.store.commit(commits.remove(0)).await.unwrap(),
        Applied::EffectConflict,
        "the settings at the version both read"
    );
    assert_eq!(
        w.attempts().await.len(),
        2,
        "the first attempt (credited) and one more"
    );
}

#[tokio::test]
async fn the_monthly_cap_refuses_and_is_reported_once_a_month() {
    let w = World::new().autopay(true, Some(3000)).await;
    w.debits(0, 450).await;
    assert!(
        w.attempts().await.is_empty(),
        "40.00 does not fit a cap of 30.00"
    );
    let settings = w.settings().await;
    assert_eq!(settings.limit_reported.as_deref(), Some("2026_11"));
    let reported = WalletEvent::LimitReached {
        tenant: tid("acme"),
        month: "2026_11".into(),
        wanted: usd().amount(4000),
        charged: usd().amount(0),
        cap: usd().amount(3000),
    };
    assert!(w.published(&reported));
    assert_eq!(
        settings.version,
        Some(1),
        "the settings written once more, for the report only"
    );
}

#[tokio::test]
async fn no_method_no_attempt() {
    let w = World::new().autopay(false, None).await;
    w.debits(0, 500).await;
    assert!(w.attempts().await.is_empty());
}

/// The charging pass's write of `id`'s charge (as read before the webhook, when `stale`).
pub(super) async fn pass_charged(w: &World, id: &str, read: crate::autopay::Attempt) -> Written {
    let mut a = read;
    a.state = AttemptState::Charged;
    a.try_no = 0;
    a.provider_ref = Some(format!("pi_{id}"));
    TableAttempts::new(w.store.clone())
        .write(&a, None, Vec::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_credit_closes_the_attempt_once_whether_the_pass_writes_before_or_after() {
    for pass_first in [true, false] {
        let w = World::new().autopay(true, None).await;
        w.debits(0, 400).await;
        let read = w.attempts().await.remove(0);
        let id = read.id.clone();
        if pass_first {
            assert_eq!(pass_charged(&w, &id, read.clone()).await, Written::Done);
        }
        assert_eq!(
            w.charge_succeeded("evt_pi_1", &id, 4000).await,
            Outcome::Processed
        );
        assert_eq!(
            w.charge_succeeded("evt_pi_2", &id, 4000).await,
            Outcome::Processed,
            "another event of the same intent"
        );
        w.charge_succeeded("evt_pi_1", &id, 4000).await;
        if !pass_first {
            assert_eq!(
                pass_charged(&w, &id, read).await,
                Written::Conflict,
                "the pass read before the credit: it must read again"
            );
        }
        let attempt = Ledger::new(&*w.store)
            .attempt(&tid("acme"), &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(attempt.state, AttemptState::Credited);
        assert_eq!(w.settings().await.open_attempt, None);
        assert_eq!(
            w.balance("acme").balance.minor(),
            START - 400 * PRICE + 4000,
            "credited once"
        );
        assert!(w.published(&topped_up(&id, 4000)));
        let due = TableAttempts::new(w.store.clone())
            .due_attempts(Millis::new(i64::MAX / 2), 10)
            .await
            .unwrap()
            .items;
        assert!(due.is_empty(), "out of the due index");
    }
}

#[tokio::test]
async fn a_failed_payment_webhook_counts_no_try() {
    let w = World::new().autopay(true, None).await;
    w.debits(0, 400).await;
    let before = w.attempts().await;
    let pi = json!({"id": "pi_x", "object": "payment_intent", "amount": 4000, "currency": "usd",
        "livemode": false, "status": "requires_payment_method",
        "metadata": {"tenant": "acme", "attempt": before[0].id}});
    let o = w
        .send(
            "stripe",
            "evt_f",
            "payment_intent.payment_failed",
            stripe_body("payment_intent.payment_failed", pi),
        )
        .await;
    assert_eq!(o, Outcome::Ignored);
    assert_eq!(w.attempts().await, before);
}

#[tokio::test]
async fn a_pending_charges_failure_or_cancel_makes_its_attempt_due_for_the_pass() {
    for (n, event) in ["payment_intent.payment_failed", "payment_intent.canceled"]
        .into_iter()
        .enumerate()
    {
        let w = World::new().autopay(true, None).await;
        w.debits(0, 400).await;
        let mut a = w.attempts().await.remove(0);
        a.state = AttemptState::Pending;
        a.provider_ref = Some("pi_sepa".into());
        a.due = Millis::new(T0 + 86_400_000);
        let written = TableAttempts::new(w.store.clone())
            .write(&a, None, Vec::new())
            .await
            .unwrap();
        assert_eq!(written, Written::Done);
        // Another intent of the attempt (an earlier try's) moves nothing.
        let other = json!({"id": "pi_old", "object": "payment_intent", "amount": 4000,
            "currency": "usd", "livemode": false, "status": "canceled",
            "metadata": {"tenant": "acme", "attempt": a.id}});
        let o = w
            .send(
                "stripe",
                &format!("evt_o{n}"),
                event,
                stripe_body(event, other),
            )
            .await;
        assert_eq!(o, Outcome::Ignored, "{event}");
        let pi = json!({"id": "pi_sepa", "object": "payment_intent", "amount": 4000,
            "currency": "usd", "livemode": false, "status": "requires_payment_method",
            "last_payment_error": {"code": "payment_method_provider_decline"},
            "metadata": {"tenant": "acme", "attempt": a.id}});
        let o = w
            .send(
                "stripe",
                &format!("evt_p{n}"),
                event,
                stripe_body(event, pi),
            )
            .await;
        assert_eq!(o, Outcome::Processed, "{event}");
        let after = w.attempts().await.remove(0);
        assert_eq!(after.state, AttemptState::Pending, "the pass decides it");
        assert!(
            after.due.get() < T0 + 86_400_000,
            "due now: {:?}",
            after.due
        );
    }
}

#[tokio::test]
async fn one_unreadable_attempt_is_listed_apart_and_the_others_still_listed() {
    let w = World::new().autopay(true, None).await;
    w.debits(0, 400).await;
    let good = w.attempts().await.remove(0);
    // A second tenant's attempt whose item is corrupt (an unknown state), due first.
    let mut bad = good.clone();
    bad.tenant = tid("globex");
    bad.id = "thr_bad".into();
    bad.due = Millis::new(T0);
    let mut item = bad.to_item();
    item.insert("state".into(), inbox_core::store::attr::s("exploded"));
    w.store.put_item(item);
    let due = TableAttempts::new(w.store.clone())
        .due_attempts(Millis::new(T0 + 10_000), 1)
        .await
        .unwrap();
    assert_eq!(
        due.items.iter().map(|a| a.id.clone()).collect::<Vec<_>>(),
        vec![good.id.clone()]
    );
    assert_eq!(due.unreadable.len(), 1, "{:?}", due.unreadable);
    assert!(
        due.unreadable[0].contains("globex") && due.unreadable[0].contains("exploded"),
        "{:?}",
        due.unreadable
    );
}

#[tokio::test]
async fn a_pass_skips_an_unreadable_attempt_counts_it_and_charges_the_rest() {
    use crate::autopay::fakes::ScriptedCharger;
    use crate::autopay::{Pass, PassConfig};
    let w = World::new().autopay(true, None).await;
    w.debits(0, 400).await;
    let good = w.attempts().await.remove(0);
    let mut bad = good.clone();
    bad.tenant = tid("globex");
    bad.id = "thr_bad".into();
    bad.due = Millis::new(T0);
    let mut item = bad.to_item();
    item.insert("amount".into(), inbox_core::store::attr::s("lots"));
    w.store.put_item(item);
    let clock = std::sync::Arc::new(inbox_core::clock::ManualClock::at_millis(T0 + 10_000));
    let pass = Pass::new(
        TableAttempts::new(w.store.clone()),
        ScriptedCharger::new(vec![]),
        clock,
        PassConfig::default(),
    );
    let report = pass.run(None).await;
    assert_eq!(
        (
            report.unreadable,
            report.tries,
            report.succeeded,
            report.errors
        ),
        (1, 1, 1, 0),
        "{report:?}"
    );
    let names: Vec<&str> = report.metrics.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"AutopayUnreadable"), "{names:?}");
    assert!(report.unreadable_samples[0].contains("thr_bad"));
}

fn setup_intent(pm: &str) -> serde_json::Value {
    json!({"id": format!("seti_{pm}"), "object": "setup_intent", "customer": "cus_9",
        "payment_method": pm, "status": "succeeded", "usage": "off_session", "livemode": false,
        "metadata": {"tenant": "acme"}})
}

fn detached(pm: &str) -> serde_json::Value {
    json!({"id": pm, "object": "payment_method", "customer": null, "type": "card", "livemode": false})
}

#[tokio::test]
async fn a_setup_saves_the_method_and_its_detach_suspends_in_either_order() {
    for detach_first in [false, true] {
        let w = World::new().autopay(false, None).await;
        let setup = || w.stripe("evt_setup", "setup_intent.succeeded", setup_intent("pm_9"));
        let detach = || w.stripe("evt_detach", "payment_method.detached", detached("pm_9"));
        if detach_first {
            assert_eq!(detach().await, Outcome::Processed);
            assert_eq!(setup().await, Outcome::Processed);
        } else {
            assert_eq!(setup().await, Outcome::Processed);
            let s = w.settings().await;
            assert_eq!(
                s.method,
                Some(SavedMethod {
                    customer: "cus_9".into(),
                    payment_method: "pm_9".into()
                })
            );
            assert_eq!(s.status, AutopayStatus::Active);
            assert_eq!(detach().await, Outcome::Processed);
        }
        let s = w.settings().await;
        let reason = "payment method pm_9 was detached".to_string();
        assert_eq!(
            (s.method, s.status),
            (
                None,
                AutopayStatus::Suspended {
                    reason: reason.clone()
                }
            ),
            "detach first: {detach_first}"
        );
        assert!(w.published(&WalletEvent::AutopaySuspended {
            tenant: tid("acme"),
            subject: "pm_9".into(),
            reason
        }));
        let log = Ledger::new(&*w.store)
            .autopay_journal(&tid("acme"))
            .await
            .unwrap();
        // The operator's set and the provider's changes may share a millisecond (then the
        // journal's order between them is its unique suffix's): each is there.
        assert!(log.iter().any(|l| l.action == "set"), "{log:?}");
        assert!(
            log.iter()
                .any(|l| l.action == "suspended" && l.actor == "stripe"),
            "{log:?}"
        );
    }
}

#[tokio::test]
async fn a_checkout_with_setup_future_usage_saves_the_intents_method() {
    let w = World::new().autopay(false, None).await;
    let session = json!({"id": "cs_1", "object": "checkout.session", "mode": "payment",
        "amount_total": 2000, "currency": "usd", "customer": "cus_5", "payment_status": "paid",
        "status": "complete", "livemode": false, "metadata": {"tenant": "acme"},
        "payment_intent": {"id": "pi_cs", "object": "payment_intent", "customer": "cus_5",
            "payment_method": "pm_5", "setup_future_usage": "off_session"}});
    assert_eq!(
        w.stripe("evt_cs", "checkout.session.completed", session)
            .await,
        Outcome::Processed
    );
    assert_eq!(
        w.settings().await.method,
        Some(SavedMethod {
            customer: "cus_5".into(),
            payment_method: "pm_5".into()
        })
    );
    assert_eq!(
        w.balance("acme").balance.minor(),
        START + 2000,
        "and the top-up credited"
    );
    let index = Ledger::new(&*w.store)
        .method_index("pm_5")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(index.tenant, Some(tid("acme")));
    let no_tenant = json!({"id": "seti_x", "object": "setup_intent", "customer": "cus_1", "payment_method": "pm_x", "metadata": {}});
    assert_eq!(
        w.stripe("evt_s2", "setup_intent.succeeded", no_tenant)
            .await,
        Outcome::Ignored,
        "not ours"
    );
}

// ---- Property test: the autopay webhooks in any order, duplicated, against a model. ----

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Hook {
    Setup,
    Detach,
    Succeeded,
    Failed,
}

fn hooks() -> impl Strategy<Value = (Vec<Hook>, Vec<(usize, Hook)>)> {
    let all = [Hook::Setup, Hook::Detach, Hook::Succeeded, Hook::Failed];
    (
        prop::collection::vec(any::<bool>(), 4),
        prop::collection::vec(1usize..4, 4),
    )
        .prop_flat_map(move |(on, copies)| {
            let chosen: Vec<Hook> = all
                .iter()
                .zip(&on)
                .filter(|(_, on)| **on)
                .map(|(h, _)| *h)
                .collect();
            let plan: Vec<(usize, Hook)> = chosen
                .iter()
                .enumerate()
                .flat_map(|(i, h)| std::iter::repeat_n((i, *h), copies[i]))
                .collect();
            (Just(chosen), Just(plan).prop_shuffle())
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn autopay_webhooks_in_any_order_with_duplicates_match_the_model((chosen, plan) in hooks()) {
        let has = |h| chosen.contains(&h);
        let (w, id) = futures_block(async {
            let w = World::new().autopay(false, None).await;
            // An open attempt (made before the method was replaced: the webhooks below race it).
            Ledger::new(&*w.store).set_autopay(&tid("acme"), "ops", "set", Millis::new(T0), |a| {
                a.method = Some(SavedMethod { customer: "cus_1".into(), payment_method: "pm_1".into() });
                Ok("method".into())
            }).await.unwrap();
            let mut wallet = w.balance("acme");
            wallet.balance = usd().amount(1000 + PRICE);
            w.store.put_item(wallet.to_item());
            w.debits(0, 1).await;
            let id = w.attempts().await[0].id.clone();
            (w, id)
        });
        futures_block(async {
            for (i, hook) in &plan {
                let event = format!("evt_{i}");
                let o = match hook {
                    Hook::Setup => w.stripe(&event, "setup_intent.succeeded", setup_intent("pm_9")).await,
                    Hook::Detach => w.stripe(&event, "payment_method.detached", detached("pm_9")).await,
                    Hook::Succeeded => w.charge_succeeded(&event, &id, 4000).await,
                    Hook::Failed => {
                        let pi = json!({"id": format!("pi_{id}"), "object": "payment_intent", "amount": 4000,
                            "currency": "usd", "livemode": false, "metadata": {"tenant": "acme", "attempt": id}});
                        w.stripe(&event, "payment_intent.payment_failed", pi).await
                    }
                };
                assert!(matches!(o, Outcome::Processed | Outcome::Ignored | Outcome::Skipped(_)), "{hook:?}: {o:?}");
            }
        });
        // The model: credited once iff the charge succeeded (the attempt closed with it); the new
        // method saved iff set up and not detached; suspended iff set up and detached, in either
        // order; a detach alone concerns no wallet; a failure moves nothing.
        let succeeded = has(Hook::Succeeded);
        let (setup, detach) = (has(Hook::Setup), has(Hook::Detach));
        prop_assert_eq!(w.balance("acme").balance.minor(), 1000 + if succeeded { 4000 } else { 0 });
        let attempt = futures_block(Ledger::new(&*w.store).attempt(&tid("acme"), &id)).unwrap().unwrap();
        prop_assert_eq!(attempt.state == AttemptState::Credited, succeeded);
        let s = futures_block(w.settings());
        prop_assert_eq!(s.open_attempt.is_none(), succeeded);
        let pm = |p: &str| Some(SavedMethod { customer: if p == "pm_1" { "cus_1" } else { "cus_9" }.into(), payment_method: p.into() });
        let (method, status) = match (setup, detach) {
            (true, true) => (None, AutopayStatus::Suspended { reason: "payment method pm_9 was detached".into() }),
            (true, false) => (pm("pm_9"), AutopayStatus::Active),
            (false, _) => (pm("pm_1"), AutopayStatus::Active),
        };
        prop_assert_eq!((s.method, s.status), (method, status));
        prop_assert_eq!(w.published(&topped_up(&id, 4000)), succeeded);
        prop_assert!(w.p.quarantine().quarantined().is_empty());
    }
}

#[tokio::test]
async fn operators_changes_are_checked_versioned_and_journaled() {
    let w = World::new().autopay(true, None).await;
    let ledger = Ledger::new(&*w.store);
    let paused = ledger
        .set_autopay(
            &tid("acme"),
            "ops",
            "pause",
            Millis::new(T0 + 1),
            crate::ledger::pause,
        )
        .await
        .unwrap();
    assert_eq!(
        (paused.status, paused.version),
        (AutopayStatus::Paused, Some(1))
    );
    w.debits(0, 500).await;
    assert!(w.attempts().await.is_empty(), "paused: no attempt");
    let resumed = ledger
        .set_autopay(
            &tid("acme"),
            "ops",
            "resume",
            Millis::new(T0 + 2),
            crate::ledger::resume,
        )
        .await
        .unwrap();
    assert_eq!(resumed.status, AutopayStatus::Active);
    w.debits(500, 1).await;
    assert_eq!(
        w.attempts().await.len(),
        1,
        "level-triggered: the next debit below the threshold"
    );
    let eur = Currency::parse("eur").unwrap();
    let wrong = ledger
        .set_autopay(&tid("acme"), "ops", "set", Millis::new(T0 + 3), |a| {
            a.cap = Some(MonthlyCap::new(eur.amount(100)).unwrap());
            Ok("cap".into())
        })
        .await;
    assert!(
        matches!(wrong, Err(crate::ledger::AutopayError::Invalid(_))),
        "{wrong:?}"
    );
    let refused = ledger
        .set_autopay(&tid("acme"), "ops", "set", Millis::new(T0 + 3), |_| {
            Err("no".into())
        })
        .await;
    assert!(matches!(
        refused,
        Err(crate::ledger::AutopayError::Invalid(_))
    ));
    let none = ledger
        .set_autopay(&tid("nobody"), "ops", "set", Millis::new(T0), |_| {
            Ok(String::new())
        })
        .await;
    assert!(matches!(
        none,
        Err(crate::ledger::AutopayError::NoWallet(_))
    ));
    let log = ledger.autopay_journal(&tid("acme")).await.unwrap();
    let actions: Vec<_> = log
        .iter()
        .map(|l| (l.actor.as_str(), l.action.as_str()))
        .collect();
    assert_eq!(
        actions,
        vec![("ops", "set"), ("ops", "pause"), ("ops", "resume")]
    );
    assert_eq!(log[2].detail, "resumed (was paused)");
    // A change against a stale read is refused, nothing written.
    let stale = w.settings().await;
    ledger
        .set_autopay(
            &tid("acme"),
            "ops",
            "pause",
            Millis::new(T0 + 4),
            crate::ledger::pause,
        )
        .await
        .unwrap();
    let mut item = stale.to_item();
    item.insert("status".into(), inbox_core::store::attr::s("active"));
    let conflict = w
        .store
        .commit(vec![inbox_core::store::Effect::Replace {
            item,
            expected_version: stale.version,
        }])
        .await
        .unwrap();
    assert_eq!(conflict, Applied::EffectConflict);
}

#[tokio::test]
async fn a_recurring_charge_waits_in_the_index_only_while_it_can_be_made() {
    let w = World::new().autopay(true, None).await;
    let ledger = Ledger::new(&*w.store);
    let set = ledger
        .set_autopay(&tid("acme"), "ops", "set", Millis::new(T0), |a| {
            a.recurring = Some(crate::autopay::Recurring {
                schedule: crate::autopay::Schedule::new(
                    jiff::civil::date(2026, 11, 30),
                    crate::autopay::Every::Month,
                ),
                amount: usd().amount(9900),
                next: 0,
            });
            Ok("every month from 2026-11-30".into())
        })
        .await
        .unwrap();
    let pass = TableAttempts::new(w.store.clone());
    let due_at = set.recurring_due().unwrap();
    assert!(pass
        .due_recurring(Millis::new(due_at.get() - 1), 10)
        .await
        .unwrap()
        .items
        .is_empty());
    let due = pass.due_recurring(due_at, 10).await.unwrap().items;
    assert_eq!(
        due.iter().map(|a| a.tenant.clone()).collect::<Vec<_>>(),
        vec![tid("acme")]
    );
    w.debits(0, 400).await;
    assert!(
        pass.due_recurring(due_at, 10)
            .await
            .unwrap()
            .items
            .is_empty(),
        "an attempt is open: the next charge waits for it"
    );
}

#[tokio::test]
async fn a_checkout_saving_its_method_is_saved_whichever_of_intent_and_session_comes_first() {
    for intent_first in [true, false] {
        let w = World::new().autopay(false, None).await;
        let session = json!({"id": "cs_7", "object": "checkout.session", "mode": "payment",
            "amount_total": 2000, "currency": "usd", "customer": "cus_7", "payment_status": "paid",
            "status": "complete", "livemode": false, "metadata": {"tenant": "acme"},
            "payment_intent": "pi_7"});
        // As Stripe sends it: the session's metadata is not the intent's.
        let intent = json!({"id": "pi_7", "object": "payment_intent", "amount": 2000,
            "amount_received": 2000, "currency": "usd", "customer": "cus_7",
            "payment_method": "pm_7", "setup_future_usage": "off_session", "livemode": false,
            "status": "succeeded", "metadata": {}});
        let (pi, cs) = (
            ("evt_pi", "payment_intent.succeeded", intent),
            ("evt_cs", "checkout.session.completed", session),
        );
        let order = if intent_first { [pi, cs] } else { [cs, pi] };
        for (id, kind, object) in order {
            assert_eq!(
                w.stripe(id, kind, object).await,
                Outcome::Processed,
                "{kind}"
            );
        }
        let saved = Some(SavedMethod {
            customer: "cus_7".into(),
            payment_method: "pm_7".into(),
        });
        assert_eq!(
            w.settings().await.method,
            saved,
            "intent first: {intent_first}"
        );
        assert_eq!(
            w.balance("acme").balance.minor(),
            START + 2000,
            "credited once"
        );
    }
}

#[tokio::test]
async fn a_charge_reconciled_without_its_webhook_is_credited_once_whichever_comes_first() {
    for settle_first in [true, false] {
        let w = World::new().autopay(true, None).await;
        w.debits(0, 400).await;
        let read = w.attempts().await.remove(0);
        let id = read.id.clone();
        assert_eq!(pass_charged(&w, &id, read).await, Written::Done);
        if !settle_first {
            assert_eq!(
                w.charge_succeeded("evt_pi_1", &id, 4000).await,
                Outcome::Processed
            );
        }
        // The pass finds the charge confirmed at the provider and settles it by an event.
        let settle = crate::balance::events::SettleByEvent {
            writer: w.store.clone(),
            clock: inbox_core::clock::ManualClock::at_millis(T0),
        };
        let charge = crate::autopay::Uncredited {
            tenant: "acme".into(),
            attempt: id.clone(),
            amount: 4000,
            currency: "usd".into(),
            provider_ref: Some(format!("pi_{id}")),
            succeeded: true,
        };
        assert!(settle.settle(&charge).await.unwrap(), "published");
        let reconciled = WalletEvent::Reconciled {
            tenant: tid("acme"),
            attempt: id.clone(),
            amount: usd().amount(4000),
            payment: format!("pi_{id}"),
        };
        assert!(w.published(&reconciled));
        assert_eq!(
            w.send(
                crate::balance::events::SOURCE,
                &reconciled.id(),
                crate::balance::events::RECONCILED,
                reconciled.body(Millis::new(T0)),
            )
            .await,
            Outcome::Processed
        );
        if settle_first {
            assert_eq!(
                w.charge_succeeded("evt_pi_1", &id, 4000).await,
                Outcome::Processed
            );
        }
        assert_eq!(
            w.balance("acme").balance.minor(),
            START - 400 * PRICE + 4000,
            "credited once (settled first: {settle_first})"
        );
        let attempt = Ledger::new(&*w.store)
            .attempt(&tid("acme"), &id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(attempt.state, AttemptState::Credited);
        assert_eq!(w.settings().await.open_attempt, None);
    }
    // Nothing to settle for a charge the provider does not confirm.
    let w = World::new().autopay(true, None).await;
    let settle = crate::balance::events::SettleByEvent {
        writer: w.store.clone(),
        clock: inbox_core::clock::ManualClock::at_millis(T0),
    };
    let unconfirmed = crate::autopay::Uncredited {
        tenant: "acme".into(),
        attempt: "a1".into(),
        amount: 4000,
        currency: "usd".into(),
        provider_ref: Some("pi_a1".into()),
        succeeded: false,
    };
    assert!(!settle.settle(&unconfirmed).await.unwrap());
}

#[tokio::test]
async fn the_wallet_apis_holds_across_the_threshold_make_one_attempt_as_webhook_holds_do() {
    let w = World::new().autopay(true, None).await;
    let holds = crate::email::holds::Holds::new(&*w.store);
    let mut placed = 0;
    for i in 0..100 {
        let request = crate::email::holds::HoldRequest {
            tenant: tid("acme"),
            message_id: format!("api{i}"),
            amount: Some(25),
            hold_id: format!("hold_{i}"),
            expires_in: None,
        };
        match holds.place(&request, |_| Vec::new()).await.unwrap() {
            crate::email::holds::HoldOutcome::Held(_) => placed += 1,
            other => panic!("hold {i}: {other:?}"),
        }
        let expected = usize::from((i + 1) * 25 >= START - 1000);
        assert_eq!(
            w.attempts().await.len(),
            expected,
            "after hold {i} (available {})",
            START - (i + 1) * 25
        );
    }
    assert_eq!(placed, 100);
    let attempts = w.attempts().await;
    let a = &attempts[0];
    assert_eq!(
        (a.state.clone(), a.amount.minor()),
        (AttemptState::Due, 4000),
        "to the target from the 10.00 the hold left"
    );
    let settings = w.settings().await;
    assert_eq!(settings.open_attempt.as_deref(), Some(a.id.as_str()));
}

#[tokio::test]
async fn holds_on_a_sharded_wallets_warm_view_make_one_attempt_decided_on_the_stored_settings() {
    let w = World::new().autopay(true, None).await;
    Ledger::new(&*w.store)
        .set_shards(&tid("acme"), 4)
        .await
        .unwrap();
    // A view that never expires: every hold after the first sees the settings as first read
    // (no open attempt), however many attempts were made since.
    let clock = Arc::new(inbox_core::clock::ManualClock::at_millis(T0));
    let views =
        crate::balance::views::WalletViews::new(std::time::Duration::from_secs(3600), clock);
    let holds = crate::email::holds::Holds::new(&*w.store).with_views(views);
    // Messages of shard 0, where the money is: each hold reads that shard strongly (the wallet's
    // amounts exact), the settings come from the view.
    let mut messages = (0..)
        .map(|i| format!("api{i}"))
        .filter(|m| crate::balance::items::shards::pick(m, 4) == 0);
    for i in 0..100 {
        let request = crate::email::holds::HoldRequest {
            tenant: tid("acme"),
            message_id: messages.next().unwrap(),
            amount: Some(25),
            hold_id: format!("hold_{i}"),
            expires_in: None,
        };
        let outcome = holds.place(&request, |_| Vec::new()).await.unwrap();
        assert!(
            matches!(outcome, crate::email::holds::HoldOutcome::Held(_)),
            "hold {i}: {outcome:?}"
        );
        let expected = usize::from((i + 1) * 25 >= START - 1000);
        assert_eq!(w.attempts().await.len(), expected, "after hold {i}");
    }
    let attempts = w.attempts().await;
    let settings = w.settings().await;
    assert_eq!(
        settings.open_attempt.as_deref(),
        Some(attempts[0].id.as_str())
    );
}

async fn reconciled_at(w: &World, ms: i64) -> crate::reconcile::ReconcileReport {
    reconcile(&*w.store, ms, opts(i64::MAX)).await.unwrap()
}

#[tokio::test]
async fn a_try_whose_pass_died_is_reported_overdue_until_a_pass_re_drives_it() {
    use crate::autopay::fakes::{ScriptedCharger, Step};
    use crate::autopay::{Pass, PassConfig};
    use crate::reconcile::OVERDUE_GRACE_MS;
    use futures_util::FutureExt as _;
    let w = World::new().autopay(true, None).await;
    w.debits(0, 400).await;
    let clock = std::sync::Arc::new(inbox_core::clock::ManualClock::at_millis(T0 + 10_000));
    let pass = Pass::new(
        TableAttempts::new(w.store.clone()),
        ScriptedCharger::new(vec![Step::Killed { reached: true }]),
        clock.clone(),
        PassConfig::default(),
    );
    // The run dies in the call after storing its claim; no other run comes.
    assert!(
        pass.run(None).now_or_never().is_none(),
        "killed in the call"
    );
    let claimed = w.attempts().await.remove(0);
    assert_eq!(claimed.state, AttemptState::Charging);
    let lease_end = claimed.due.get();
    let within = reconciled_at(&w, lease_end + OVERDUE_GRACE_MS - 1).await;
    assert!(within.overdue_attempts.is_empty(), "{within:?}");
    let overdue = reconciled_at(&w, lease_end + OVERDUE_GRACE_MS).await;
    assert_eq!(
        overdue
            .overdue_attempts
            .iter()
            .map(|a| (a.attempt_id.as_str(), a.state, a.try_no, a.due))
            .collect::<Vec<_>>(),
        vec![(claimed.id.as_str(), "charging", 0, lease_end)],
        "its lease ended {OVERDUE_GRACE_MS} ms ago and no pass took it"
    );
    assert!(!overdue.is_clean());
    assert!(overdue
        .metrics()
        .iter()
        .any(|m| m.name == "OverdueAutopayAttempts" && m.value == 1));
    // A pass at last: the same key meets the provider's saved success; nothing overdue.
    clock.set_millis(lease_end);
    let report = pass.run(None).await;
    assert_eq!((report.tries, report.succeeded), (1, 1), "{report:?}");
    assert_eq!(pass.charger().charged_keys().len(), 1, "charged once");
    let after = reconciled_at(&w, lease_end + OVERDUE_GRACE_MS).await;
    assert!(after.overdue_attempts.is_empty(), "{after:?}");
}
