//! Unmatched payments on the in-memory store through the real processor: a Checkout top-up whose
//! session names no tenant is kept (listed, counted only after the window), bound by an operator
//! (its messages replayed: credited once, the refund already waiting applied with it), and a
//! second bind — to the same tenant or another — refused with the reason; a payment that is not
//! ours dismissed with a reason (off the list and the alarm, listed as dismissed, still bindable).

use super::stripe::{charge, session};
use super::*;
use crate::payments::unmatched::Resolution;
use crate::{BindError, DismissError};
use inbox_core::clock::ManualClock;
use inbox_core::ops::{self, ReplayOutcome};

const MINUTE: i64 = 60_000;

/// Replays `keys` as an operator would (they are processed: forced), and processes each.
async fn replay(w: &World, keys: &[MessageKey]) {
    for key in keys {
        let replayed = ops::replay(
            &*w.store,
            w.p.retry_queue(),
            &ManualClock::at_millis(T0),
            key,
            "alice",
            true,
        )
        .await
        .unwrap();
        assert_eq!(replayed, ReplayOutcome::Replayed);
        assert_eq!(w.p.process_key(key).await.unwrap(), Outcome::Processed);
    }
}

#[tokio::test]
async fn an_unmatched_top_up_is_listed_counted_after_the_window_and_bound_once() {
    let w = World::new().wallet("acme", 0, None).wallet("beta", 0, None);
    let ledger = Ledger::new(&*w.store);
    // A misconfigured payment link: no metadata on the session (nor on its intent).
    let mut paid = session("cs_1", "pi_1", 2000, "paid", None);
    paid["customer_details"] = json!({"email": "payer@example.com", "name": "P. Ayer"});
    assert_eq!(
        w.stripe("evt_cs", "checkout.session.completed", paid).await,
        Outcome::Processed
    );
    // A partial refund of it arrives while nobody knows whose it is: recorded on the index.
    assert_eq!(
        w.stripe("evt_re", "charge.refunded", charge("pi_1", 2000, 500))
            .await,
        Outcome::Processed
    );
    let listed = ledger.unmatched(i64::MAX).await.unwrap();
    assert_eq!(listed.len(), 1);
    let p = &listed[0];
    assert_eq!(
        (
            p.payment_key.as_str(),
            p.amount,
            p.currency.as_deref(),
            p.customer.as_deref(),
            p.email.as_deref(),
            p.messages.clone(),
            p.first_seen
        ),
        (
            "pi_1",
            2000,
            Some("usd"),
            Some("cus_1"),
            Some("payer@example.com"),
            vec!["stripe/evt_cs".to_owned()],
            T0
        )
    );
    let body: serde_json::Value = serde_json::from_str(p.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["data"]["object"]["id"], "cs_1", "the raw body is kept");
    let index = w
        .store
        .item(
            &crate::balance::items::payment_index_key("pi_1").0,
            "PAYMENT",
        )
        .unwrap();
    assert!(
        !index.contains_key("expires_at"),
        "the index of an unmatched payment never expires"
    );
    assert_eq!(w.balance("acme").balance.minor(), 0);

    // The gauge: only once it has waited longer than the window.
    let counted = |at: i64| {
        let store = w.store.clone();
        async move {
            reconcile(
                &*store,
                at,
                opts(i64::MAX).with_unmatched_after(60 * MINUTE),
            )
            .await
            .unwrap()
        }
    };
    assert!(counted(T0 + 60 * MINUTE)
        .await
        .unmatched_payments
        .is_empty());
    let late = counted(T0 + 60 * MINUTE + 1).await;
    assert_eq!(
        late.unmatched_payments
            .iter()
            .map(|u| (u.payment_key.as_str(), u.email.as_deref()))
            .collect::<Vec<_>>(),
        vec![("pi_1", Some("payer@example.com"))]
    );
    assert!(!late.is_clean());
    assert_eq!(
        late.metrics()
            .iter()
            .find(|m| m.name == "UnmatchedPayments")
            .map(|m| m.value),
        Some(1)
    );

    // Refused before anything is written: no wallet.
    assert!(matches!(
        ledger.bind("pi_1", &tid("ghost"), "alice", T0).await,
        Err(BindError::NoWallet(t)) if t.as_str() == "ghost"
    ));
    assert!(matches!(
        ledger.bind("pi_nobody", &tid("acme"), "alice", T0).await,
        Err(BindError::NotUnmatched(p)) if p == "pi_nobody"
    ));

    let bound = ledger
        .bind("pi_1", &tid("acme"), "alice", T0 + 2 * 60 * MINUTE)
        .await
        .unwrap();
    assert_eq!(bound.refund_total, 500);
    assert_eq!(bound.messages, vec![bound.messages[0].clone()]);
    assert_eq!(bound.messages[0].to_string(), "stripe/evt_cs");
    let index = ledger.payment_index("pi_1").await.unwrap().unwrap();
    assert_eq!(
        (
            index.tenant.clone(),
            index.refund_total.get(),
            index.unmatched
        ),
        (Some(tid("acme")), 500, false),
        "the index names the tenant and keeps the refund it recorded"
    );
    assert!(ledger.unmatched(i64::MAX).await.unwrap().is_empty());
    assert!(counted(T0 + 3 * 60 * MINUTE)
        .await
        .unmatched_payments
        .is_empty());
    assert_eq!(
        ledger
            .unmatched_payment("pi_1")
            .await
            .unwrap()
            .unwrap()
            .resolution,
        Resolution::Bound {
            tenant: tid("acme"),
            at: T0 + 2 * 60 * MINUTE,
            by: "alice".into()
        }
    );

    // Its message, replayed through the processor, credits the tenant once, the refund with it.
    replay(&w, &bound.messages).await;
    assert_eq!(w.balance("acme").balance.minor(), 1500);
    let kinds: Vec<_> = w
        .entries("acme")
        .await
        .iter()
        .map(|e| (e.kind.as_str(), e.event_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("topup", "evt_cs".to_owned()),
            ("topup_refund", "evt_cs".to_owned())
        ],
        "one transaction: the credit and the refund that waited"
    );
    // Replayed again (an operator's second try): nothing more.
    replay(&w, &bound.messages).await;
    assert_eq!(w.balance("acme").balance.minor(), 1500);
    assert_eq!(w.balance("beta").balance.minor(), 0);

    // Binding twice, or to a second tenant: refused, naming the tenant it is bound to.
    let twice = ledger
        .bind("pi_1", &tid("acme"), "bob", T0)
        .await
        .unwrap_err();
    assert!(matches!(twice, BindError::AlreadyBound { .. }));
    assert_eq!(
        twice.to_string(),
        "payment pi_1 is already bound to tenant \"acme\" (by alice): binding twice is refused"
    );
    let other = ledger
        .bind("pi_1", &tid("beta"), "bob", T0)
        .await
        .unwrap_err();
    assert_eq!(
        other.to_string(),
        "payment pi_1 is bound to tenant \"acme\" (by alice), not to \"beta\": refused"
    );
    assert_eq!(w.balance("beta").balance.minor(), 0);
    let report = reconcile(&*w.store, T0 + 3 * 60 * MINUTE, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.mismatched_wallets.is_empty() && report.unmatched_payments.is_empty());
}

#[tokio::test]
async fn a_payment_matched_by_its_session_or_of_another_currency_is_not_bound() {
    let w = World::new().wallet("acme", 0, None);
    let ledger = Ledger::new(&*w.store);
    let mut yen = super::stripe::intent("pi_jpy", 500, None);
    yen["currency"] = json!("jpy");
    w.stripe("evt_jpy", "payment_intent.succeeded", yen).await;
    let refused = ledger
        .bind("pi_jpy", &tid("acme"), "alice", T0)
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, BindError::Currency { currency, .. } if currency == "jpy"),
        "{refused}"
    );
    assert_eq!(
        ledger.unmatched(i64::MAX).await.unwrap().len(),
        1,
        "still open"
    );

    w.stripe(
        "evt_pi",
        "payment_intent.succeeded",
        super::stripe::intent("pi_1", 2000, None),
    )
    .await;
    w.stripe(
        "evt_cs",
        "checkout.session.completed",
        session("cs_1", "pi_1", 2000, "paid", Some("acme")),
    )
    .await;
    let matched = ledger
        .bind("pi_1", &tid("acme"), "alice", T0)
        .await
        .unwrap_err();
    assert_eq!(
        matched.to_string(),
        "payment pi_1 was matched to tenant \"acme\" by its event stripe/evt_cs: nothing to bind"
    );
    // A payment that named its tenant from the start was never unmatched.
    w.stripe(
        "evt_2",
        "checkout.session.completed",
        session("cs_2", "pi_2", 700, "paid", Some("acme")),
    )
    .await;
    assert!(matches!(
        ledger.bind("pi_2", &tid("acme"), "alice", T0).await,
        Err(BindError::Belongs { tenant, .. }) if tenant.as_str() == "acme"
    ));
    assert_eq!(w.balance("acme").balance.minor(), 2700);
}

#[tokio::test]
async fn a_dismissed_payment_leaves_the_alarm_keeps_its_record_and_can_still_be_bound() {
    let w = World::new().wallet("acme", 0, None);
    let ledger = Ledger::new(&*w.store);
    // Another product's payment on the shared Stripe account: no tenant, no known payment.
    w.stripe(
        "evt_a",
        "payment_intent.succeeded",
        super::stripe::intent("pi_shop", 4200, None),
    )
    .await;
    let late = |w: &World| {
        let store = w.store.clone();
        async move {
            reconcile(
                &*store,
                T0 + 2 * 60 * MINUTE,
                opts(i64::MAX).with_unmatched_after(MINUTE),
            )
            .await
            .unwrap()
            .unmatched_payments
            .len()
        }
    };
    assert_eq!(late(&w).await, 1, "counted by the alarm while open");

    // Refused before anything is written: no reason, an unknown payment.
    assert!(matches!(
        ledger.dismiss("pi_shop", "bob", "  ", T0).await,
        Err(DismissError::NoReason)
    ));
    assert!(matches!(
        ledger.dismiss("pi_shop", "bob", &"x".repeat(501), T0).await,
        Err(DismissError::LongReason(501))
    ));
    assert!(matches!(
        ledger.dismiss("pi_nobody", "bob", "n/a", T0).await,
        Err(DismissError::NotUnmatched(p)) if p == "pi_nobody"
    ));
    assert_eq!(ledger.unmatched(i64::MAX).await.unwrap().len(), 1);

    let at = T0 + MINUTE;
    let dismissed = ledger
        .dismiss("pi_shop", "bob", " the shop's sale, not a top-up ", at)
        .await
        .unwrap();
    let said = Resolution::Dismissed {
        at,
        by: "bob".into(),
        reason: "the shop's sale, not a top-up".into(),
    };
    assert_eq!(dismissed.resolution, said);
    assert!(ledger.unmatched(i64::MAX).await.unwrap().is_empty());
    assert_eq!(late(&w).await, 0, "the alarm no longer counts it");
    let listed = ledger.dismissed(i64::MAX).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].resolution.clone(), listed[0].body.is_some()),
        (said.clone(), true),
        "journaled with who, when and why; the body kept"
    );
    let twice = ledger
        .dismiss("pi_shop", "carol", "again", at)
        .await
        .unwrap_err();
    assert_eq!(
        twice.to_string(),
        "payment pi_shop was dismissed already by bob (\"the shop's sale, not a top-up\"): nothing to do"
    );

    // Another event of the payment, naming no tenant: kept with the others, still dismissed.
    let mut refunded = super::stripe::intent("pi_shop", 4200, None);
    refunded["id"] = json!("pi_shop");
    assert_eq!(
        w.stripe("evt_b", "payment_intent.succeeded", refunded)
            .await,
        Outcome::Processed
    );
    let record = ledger.unmatched_payment("pi_shop").await.unwrap().unwrap();
    assert_eq!(record.resolution, said);
    assert_eq!(record.messages, vec!["stripe/evt_a", "stripe/evt_b"]);

    // It turns out to be ours after all: bound, replayed, credited once.
    let bound = ledger
        .bind("pi_shop", &tid("acme"), "alice", at + MINUTE)
        .await
        .unwrap();
    assert!(ledger.dismissed(i64::MAX).await.unwrap().is_empty());
    replay(&w, &bound.messages).await;
    assert_eq!(w.balance("acme").balance.minor(), 4200);
    assert!(matches!(
        ledger.dismiss("pi_shop", "bob", "oops", at).await,
        Err(DismissError::Resolved { tenant, .. }) if tenant.as_str() == "acme"
    ));
}
