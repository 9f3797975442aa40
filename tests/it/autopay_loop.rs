//! Autopay's whole loop on DynamoDB Local and the local Stripe stand-in, as deployed but in one
//! process: a burst of debits across the threshold makes one attempt, the charging pass (the
//! ledger's `TableAttempts`, the Stripe charger) charges it ONCE however often it runs, and the
//! stand-in's own `payment_intent.succeeded`, signed and ingested twice, credits it once and
//! closes the attempt; a declining card walks the dunning ladder with a new key per rung and an
//! event per failed try.

use inbox_core::clock::{Clock as _, ManualClock, Millis, SystemClock};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{Effect, ItemStore as _, ItemWriter};
use integration_tests::pipeline::{Pipeline, TestProcessor};
use integration_tests::stripe::{charger, Standin};
use serde_json::Value;
use std::sync::Arc;
use wallet_ledger::autopay::table::TableAttempts;
use wallet_ledger::autopay::{
    idempotency_key, AttemptState, ChargeReply, ChargeRequest, Charger, Find, Pass, PassConfig,
    ProviderUnavailable, SavedMethod, TopUpRule,
};
use wallet_ledger::balance::events::{SettleByEvent, WalletEvent};
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 7;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn send(p: &Pipeline, source: &str, id: &str, body: &Value) -> String {
    let body = body.to_string();
    let headers = p.harness.sign(source, body.as_bytes(), id);
    let event = integration_tests::api_event("POST", source, &headers, Some(&body), false);
    p.harness.send(&event).await.code().to_owned()
}

/// A wallet of 17.00 with autopay to 50.00 at 10.00 on the stand-in's customer with `card`, and
/// 150 debits of 0.07 sent and processed (the 100th reaches the threshold).
async fn drained(p: &Pipeline, s: &Standin, card: &str) -> DynamoTable {
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let ledger = Ledger::new(&store);
    let wallet = Wallet::new(
        acme(),
        usd().amount(PRICE),
        usd().amount(-1_000_000),
        None,
        0,
    );
    ledger.create(&wallet).await.unwrap();
    store
        .commit(vec![Effect::Adjust {
            pk: wallet_pk("acme"),
            sk: WALLET_SK.into(),
            add: vec![("balance".into(), 1000 + 100 * PRICE)],
            set: Vec::new(),
        }])
        .await
        .unwrap();
    let (customer, payment_method) = s.customer(card);
    ledger
        .set_autopay(&acme(), "ops", "set", Millis::new(0), |a| {
            a.top_up = Some(TopUpRule::to_target(usd().amount(1000), usd().amount(5000)).unwrap());
            a.method = Some(SavedMethod {
                customer,
                payment_method,
            });
            Ok("to 50.00 at 10.00".into())
        })
        .await
        .unwrap();
    for i in 0..150 {
        let body = serde_json::json!({"type": "message.accepted",
            "timestamp": "2026-11-30T10:00:00Z",
            "data": {"message_id": format!("m{i}"), "tenant": "acme"}});
        assert_eq!(
            send(p, "mailer", &format!("msg_acc_{i}"), &body).await,
            "accepted"
        );
    }
    store
}

async fn published(store: &DynamoTable, e: &WalletEvent) -> bool {
    let pk = format!("MSG#{}#{}", wallet_ledger::balance::events::SOURCE, e.id());
    store
        .get_item(&pk, inbox_core::store::schema::MESSAGE_SK)
        .await
        .unwrap()
        .is_some()
}

#[tokio::test]
async fn one_burst_one_charge_its_own_webhook_credits_once() {
    let s = Standin::start();
    let p = Pipeline::new().await;
    let store = drained(&p, &s, "pm_card_visa").await;
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let ledger = Ledger::new(&store);
    let attempts = ledger.attempts(&acme()).await.unwrap();
    assert_eq!(attempts.len(), 1, "one attempt for the burst: {attempts:?}");
    let attempt = attempts[0].clone();

    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis() + 1_000));
    let pass = Pass::new(
        TableAttempts::new(store.clone()),
        charger(&s),
        clock.clone(),
        PassConfig::default(),
    )
    .settling_with(SettleByEvent {
        writer: store.clone(),
        clock: clock.clone(),
    });
    let first = pass.run(None).await;
    assert_eq!(
        (first.tries, first.succeeded, first.errors),
        (1, 1, 0),
        "{first:?}"
    );
    // Runs after it (a minute apart) charge nothing more: the attempt waits for its webhook.
    for _ in 0..3 {
        clock.advance_millis(60_000);
        let again = pass.run(None).await;
        assert_eq!(again.tries, 0, "{again:?}");
    }
    assert_eq!(s.charges(), (1, 0), "one charge");
    let keys: Vec<Value> = s
        .intent_requests()
        .iter()
        .map(|r| r["idempotency_key"].clone())
        .collect();
    assert_eq!(
        keys,
        vec![Value::from(idempotency_key(&acme(), &attempt.id, 0))]
    );
    let charged = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
    assert_eq!(charged.state, AttemptState::Charged);

    // The stand-in's own event of that charge, ingested twice: credited once.
    let events = s.call(
        "GET",
        "/_standin/events?type=payment_intent.succeeded",
        None,
    );
    let event = events["data"][0].clone();
    let event = event.get("event").cloned().unwrap_or(event);
    let id = event["id"].as_str().expect("an event id").to_owned();
    assert_eq!(
        event["data"]["object"]["metadata"]["attempt"],
        attempt.id.as_str()
    );
    assert_eq!(send(&p, "stripe", &id, &event).await, "accepted");
    assert_eq!(send(&p, "stripe", &id, &event).await, "duplicate");
    processor.handle_stream_batch(p.read_stream().await).await;
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(
        w.balance.minor(),
        1000 - 50 * PRICE + attempt.amount.minor(),
        "150 debits and one credit of {}",
        attempt.amount
    );
    let closed = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
    assert_eq!(closed.state, AttemptState::Credited);
    let payment = charged.provider_ref.clone().expect("the intent's id");
    assert!(
        published(
            &store,
            &WalletEvent::ToppedUp {
                tenant: acme(),
                attempt: attempt.id.clone(),
                amount: attempt.amount,
                payment,
            }
        )
        .await
    );
}

#[tokio::test]
async fn a_declining_card_walks_the_ladder_with_a_new_key_per_rung() {
    let s = Standin::start();
    let p = Pipeline::new().await;
    let store = drained(&p, &s, "pm_card_visa_chargeDeclinedInsufficientFunds").await;
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let ledger = Ledger::new(&store);
    let attempt = ledger.attempts(&acme()).await.unwrap().remove(0);
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis() + 1_000));
    let pass = Pass::new(
        TableAttempts::new(store.clone()),
        charger(&s),
        clock.clone(),
        PassConfig::default(),
    );
    let first = pass.run(None).await;
    assert_eq!((first.tries, first.declined), (1, 1), "{first:?}");
    // Not due again within the day; due at the first failure + 1 day (rung 1 of 0,1,3,5,7).
    clock.advance_millis(23 * 3_600_000);
    assert_eq!(pass.run(None).await.tries, 0);
    clock.advance_millis(3_600_000);
    assert_eq!(pass.run(None).await.declined, 1);
    let keys: Vec<Value> = s
        .intent_requests()
        .iter()
        .map(|r| r["idempotency_key"].clone())
        .collect();
    assert_eq!(
        keys,
        vec![
            Value::from(idempotency_key(&acme(), &attempt.id, 0)),
            Value::from(idempotency_key(&acme(), &attempt.id, 1))
        ]
    );
    assert_eq!(s.charges(), (0, 2));
    let walked = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
    assert_eq!(walked.state, AttemptState::Due);
    for try_no in [0, 1] {
        let failed = walked
            .tries
            .iter()
            .find(|t| t.try_no == try_no)
            .expect("the try journaled");
        assert_eq!(failed.outcome, "insufficient_funds");
        let event = WalletEvent::AutopayFailed {
            tenant: acme(),
            attempt: attempt.id.clone(),
            try_no,
            code: failed.outcome.clone(),
            next_try_at: failed.next_due,
        };
        assert!(
            published(&store, &event).await,
            "wallet.autopay_failed of try {try_no}"
        );
    }
}

/// Ingests (once each, as Stripe delivers) the stand-in's events not ingested yet, then
/// processes what arrived.
async fn deliver_new_events(
    p: &Pipeline,
    s: &Standin,
    processor: &TestProcessor<SystemClock>,
    seen: &mut std::collections::BTreeSet<String>,
) {
    let all = s.call("GET", "/_standin/events", None);
    for e in all["data"].as_array().cloned().unwrap_or_default() {
        let event = e.get("event").cloned().unwrap_or(e);
        let id = event["id"].as_str().expect("an event id").to_owned();
        if seen.insert(id.clone()) {
            assert_eq!(send(p, "stripe", &id, &event).await, "accepted");
        }
    }
    processor.handle_stream_batch(p.read_stream().await).await;
}

/// The PaymentIntents the stand-in created (each POST it ran, not a replay).
fn intents_created(s: &Standin) -> usize {
    s.intent_requests()
        .iter()
        .filter(|r| {
            r["method"] == "POST" && r["path"] == "/v1/payment_intents" && r["replayed"] != true
        })
        .filter(|r| r["status"].as_u64().is_some_and(|st| st < 500))
        .count()
}

#[tokio::test]
async fn a_sepa_debit_pending_for_days_is_charged_once_over_thirty_simulated_days() {
    // SEPA Direct Debit: `processing` for 4 days, then `payment_intent.succeeded`. The pass runs
    // every 2 simulated hours for 30 days on the stand-in's own clock, which prunes keys after
    // 24 hours as Stripe may: a resend of the key would make a second PaymentIntent.
    let s = Standin::start();
    s.configure(serde_json::json!({"settle_after_s": 4 * 86_400}));
    let p = Pipeline::new().await;
    let store = drained(&p, &s, "pm_sepa_debit").await;
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let ledger = Ledger::new(&store);
    let attempt = ledger.attempts(&acme()).await.unwrap().remove(0);
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis() + 1_000));
    let pass = Pass::new(
        TableAttempts::new(store.clone()),
        charger(&s),
        clock.clone(),
        PassConfig::default(),
    )
    .settling_with(SettleByEvent {
        writer: store.clone(),
        clock: clock.clone(),
    });
    let mut seen = std::collections::BTreeSet::new();
    let mut states = Vec::new();
    let step_hours = 6;
    for _ in 0..30 * 24 / step_hours {
        let report = pass.run(None).await;
        assert_eq!(report.errors, 0, "{report:?}");
        deliver_new_events(&p, &s, &processor, &mut seen).await;
        let a = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
        if states.last() != Some(&a.state) {
            states.push(a.state.clone());
        }
        clock.advance_millis(step_hours * 3_600_000);
        s.advance(step_hours * 3_600);
    }
    assert_eq!(intents_created(&s), 1, "one PaymentIntent in 30 days");
    let charges = s.call("GET", "/_standin/charges", None);
    assert_eq!(charges["succeeded"], 1, "{charges}");
    assert_eq!(
        states,
        vec![AttemptState::Pending, AttemptState::Credited],
        "pending for days, then credited by its webhook"
    );
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(
        w.balance.minor(),
        1000 - 50 * PRICE + attempt.amount.minor(),
        "credited once"
    );
    let lookups = s
        .requests("/v1/payment_intents/pi_")
        .iter()
        .filter(|r| r["method"] == "GET")
        .count();
    assert!(
        (3..=5).contains(&lookups),
        "looked up about daily while pending, never charged again: {lookups}"
    );
    integration_tests::faults::report::record(
        "9-stripe",
        "a SEPA Direct Debit charge `processing` for 4 days (Stripe prunes keys after 24 h)",
        format!(
            "the charging pass every {step_hours} h for 30 simulated days on the stand-in's clock"
        ),
        format!(
            "PaymentIntents made {}, charges {}; looked up {lookups} times while pending; the \
             attempt {:?}; credited once",
            intents_created(&s),
            charges["succeeded"],
            states
        ),
    );
}

#[tokio::test]
async fn a_lost_answer_is_found_on_stripe_after_its_key_is_pruned_not_charged_again() {
    // The charge is made and Stripe's answer is a 500, saved for the key (replayed on every
    // resend); the pass runs every 30 simulated minutes for 40 hours, past the 24 hours after
    // which the stand-in prunes the key and would charge it anew.
    let s = Standin::start();
    let p = Pipeline::new().await;
    let store = drained(&p, &s, "pm_card_visa").await;
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let ledger = Ledger::new(&store);
    let attempt = ledger.attempts(&acme()).await.unwrap().remove(0);
    s.fault(serde_json::json!({"kind": "error_after_charge"}));
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis() + 1_000));
    let pass = Pass::new(
        TableAttempts::new(store.clone()),
        charger(&s),
        clock.clone(),
        PassConfig::default(),
    );
    for _ in 0..80 {
        let report = pass.run(None).await;
        assert_eq!(report.errors, 0, "{report:?}");
        clock.advance_millis(1_800_000);
        s.advance(1_800);
    }
    let (succeeded, _) = s.charges();
    assert_eq!(succeeded, 1, "one charge");
    let a = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
    assert_eq!(a.state, AttemptState::Charged, "{:?}", a.tries);
    assert!(a.provider_ref.is_some(), "found on Stripe: {a:?}");
    integration_tests::faults::report::record(
        "9-stripe",
        "Stripe's 500 after the charge, saved for the key, past the key's 24 h",
        "the charging pass every 30 min for 40 simulated hours; the stand-in prunes the key at 24 h".into(),
        format!(
            "charges made {succeeded}; the try found on Stripe's records after 12 h and recorded {:?}",
            a.state
        ),
    );
}

/// A charger whose process dies in the call: when `reached`, after the request got to Stripe
/// (which made the charge and saved its answer under the key), else before it left. It never
/// returns; `died` says the run is now stuck in it, so the test drops the run there.
struct Dying<C> {
    inner: C,
    reached: bool,
    died: Arc<tokio::sync::Notify>,
}

impl<C: Charger> Charger for Dying<C> {
    async fn charge(&self, request: &ChargeRequest) -> ChargeReply {
        if self.reached {
            let _lost = self.inner.charge(request).await;
        }
        self.died.notify_one();
        std::future::pending().await
    }

    async fn lookup(&self, provider_ref: &str) -> Result<ChargeReply, ProviderUnavailable> {
        self.inner.lookup(provider_ref).await
    }

    async fn find(&self, find: &Find) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        self.inner.find(find).await
    }
}

#[tokio::test]
async fn a_charging_pass_killed_after_its_claim_is_reported_overdue_then_re_driven_once() {
    use wallet_ledger::reconcile::{reconcile, ReconcileOptions, OVERDUE_GRACE_MS};
    let options = || ReconcileOptions::new(i64::MAX, std::time::Duration::from_secs(30 * 86_400));
    let mut found = Vec::new();
    for reached in [false, true] {
        let s = Standin::start();
        let p = Pipeline::new().await;
        let store = drained(&p, &s, "pm_card_visa").await;
        let registry = process_function::registry(store.clone(), WalletSources::default());
        let processor = p.processor(registry, SystemClock).await;
        processor.handle_stream_batch(p.read_stream().await).await;
        let ledger = Ledger::new(&store);
        let attempt = ledger.attempts(&acme()).await.unwrap().remove(0);
        let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis() + 1_000));
        let died = Arc::new(tokio::sync::Notify::new());
        let dying = Pass::new(
            TableAttempts::new(store.clone()),
            Dying {
                inner: charger(&s),
                reached,
                died: died.clone(),
            },
            clock.clone(),
            PassConfig::default(),
        );
        tokio::select! {
            report = dying.run(None) => panic!("the run should have died in the call: {report:?}"),
            () = died.notified() => {}
        }
        let claimed = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
        assert_eq!(claimed.state, AttemptState::Charging, "reached {reached}");
        let lease_end = claimed.due.get();
        // No run comes: the hourly reconciliation names it once it is 15 minutes overdue.
        let early = reconcile(&store, lease_end + OVERDUE_GRACE_MS - 1, options())
            .await
            .unwrap();
        assert!(early.overdue_attempts.is_empty(), "{early:?}");
        let late = reconcile(&store, lease_end + OVERDUE_GRACE_MS, options())
            .await
            .unwrap();
        let overdue: Vec<_> = late
            .overdue_attempts
            .iter()
            .map(|a| (a.attempt_id.clone(), a.state))
            .collect();
        assert_eq!(
            overdue,
            vec![(attempt.id.clone(), "charging")],
            "reached {reached}"
        );
        // A run at last (at the lease's end, or later): the same key, one charge.
        clock.set_millis(lease_end + OVERDUE_GRACE_MS);
        let pass = Pass::new(
            TableAttempts::new(store.clone()),
            charger(&s),
            clock.clone(),
            PassConfig::default(),
        );
        let report = pass.run(None).await;
        assert_eq!((report.errors, report.succeeded), (0, 1), "{report:?}");
        let keys: std::collections::BTreeSet<String> = s
            .intent_requests()
            .iter()
            .filter_map(|r| r["idempotency_key"].as_str().map(str::to_owned))
            .collect();
        let (charges, _) = s.charges();
        assert_eq!(charges, 1, "one charge, reached {reached}");
        assert_eq!(keys.len(), 1, "one key, reached {reached}: {keys:?}");
        let a = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
        assert_eq!(a.state, AttemptState::Charged, "reached {reached}");
        let after = reconcile(&store, lease_end + OVERDUE_GRACE_MS, options())
            .await
            .unwrap();
        assert!(after.overdue_attempts.is_empty(), "{after:?}");
        found.push(format!(
            "{}: overdue reported {} (state charging); after the re-drive charges {charges}, \
             idempotency keys {}, PaymentIntents {}, the attempt {:?}, overdue {}",
            if reached {
                "after Stripe charged"
            } else {
                "before the call"
            },
            late.overdue_attempts.len(),
            keys.len(),
            intents_created(&s),
            a.state,
            after.overdue_attempts.len()
        ));
    }
    integration_tests::faults::report::record(
        "9-stripe",
        "the charging pass killed after its claim, before the call and after Stripe made the charge",
        "1 attempt claimed; the run dropped in the call; no run until 15 min past its lease (the \
         reconciliation at the grace's edge and after it), then one"
            .into(),
        found.join("; "),
    );
}
