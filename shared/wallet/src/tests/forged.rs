//! Issue 32, "nobody moves money without authority": a `wallet.autopay_reconciled` message is a
//! claim, credited only as the attempt it names was recorded (tenant, amount, currency, payment
//! intent, a state whose credit is due); anything else is refused (quarantined at once, never
//! retried), credits nothing, and counts `ForgedInternalEvent`.

use super::autopay::pass_charged;
use super::*;
use crate::autopay::AttemptState;
use crate::balance::events::{WalletEvent, RECONCILED, SOURCE};
use crate::handler::FORGED_INTERNAL_EVENT;
use inbox_core::clock::Millis;
use inbox_core::domain::Status;
use inbox_core::metrics::RecordingSink;

/// A world whose processor records its metrics, with acme's autopay attempt `Charged` by
/// `pi_{id}` for 40.00 (its webhook missing), and a second wallet, globex's. Returns the
/// attempt's id.
async fn charged() -> (World, Arc<RecordingSink>, Arc<MemoryQuarantine>, String) {
    let store = Arc::new(MemoryStore::new());
    let metrics = Arc::new(RecordingSink::new());
    let quarantine = Arc::new(MemoryQuarantine::new());
    let registry =
        WalletHandler::new(store.clone(), WalletSources::default()).register(Registry::new());
    let p = Processor::new(
        store.clone(),
        Arc::new(MemoryRetryQueue::new()),
        quarantine.clone(),
        Arc::new(ManualClock::at_millis(T0)),
        registry,
        ProcessorConfig::default(),
    )
    .with_jitter(|| 0.0)
    .with_metrics(metrics.clone());
    let w = World {
        store,
        p,
        next: std::sync::atomic::AtomicI64::new(0),
    }
    .autopay(true, None)
    .await
    .wallet("globex", -1000, None);
    w.debits(0, 400).await;
    let read = w.attempts().await.remove(0);
    let id = read.id.clone();
    assert_eq!(read.amount, usd().amount(4000));
    assert_eq!(
        pass_charged(&w, &id, read).await,
        crate::autopay::Written::Done
    );
    (w, metrics, quarantine, id)
}

/// What acme's wallet holds after the debits, before any top-up.
const DEBITED: i64 = 3_000 - 400 * PRICE;

fn reconciled(tenant: &str, attempt: &str, amount: Money, payment: &str) -> WalletEvent {
    WalletEvent::Reconciled {
        tenant: tid(tenant),
        attempt: attempt.into(),
        amount,
        payment: payment.into(),
    }
}

impl World {
    /// Delivers `event` as message `event_id` of the wallet's source and processes it.
    async fn internal(&self, event_id: &str, event: &WalletEvent) -> Outcome {
        self.send(SOURCE, event_id, RECONCILED, event.body(Millis::new(T0)))
            .await
    }

    async fn attempt_state(&self, id: &str) -> AttemptState {
        Ledger::new(&*self.store)
            .attempt(&tid("acme"), id)
            .await
            .unwrap()
            .unwrap()
            .state
    }

    fn status(&self, event_id: &str) -> Status {
        let key = MessageKey::new(
            SourceName::parse(SOURCE).unwrap(),
            EventId::parse(event_id).unwrap(),
        );
        self.store.message(&key).unwrap().status
    }
}

#[tokio::test]
async fn a_reconciled_credit_matching_its_attempt_is_credited_once() {
    let (w, metrics, _, id) = charged().await;
    let pi = format!("pi_{id}");
    let genuine = reconciled("acme", &id, usd().amount(4000), &pi);
    assert_eq!(
        w.internal(&genuine.id(), &genuine).await,
        Outcome::Processed
    );
    assert_eq!(w.balance("acme").balance.minor(), DEBITED + 4000);
    assert_eq!(w.attempt_state(&id).await, AttemptState::Credited);
    // The same message again, the same claim under another id, and the late webhook: nothing
    // more (the payment row credits once), and none of them is a forgery.
    assert_eq!(
        w.internal(&genuine.id(), &genuine).await,
        Outcome::Skipped(inbox_core::process::Skip::Terminal)
    );
    assert_eq!(w.internal("again", &genuine).await, Outcome::Processed);
    assert_eq!(
        w.charge_succeeded("evt_pi", &id, 4000).await,
        Outcome::Processed
    );
    assert_eq!(w.balance("acme").balance.minor(), DEBITED + 4000);
    assert_eq!(metrics.count(FORGED_INTERNAL_EVENT), 0);
}

#[tokio::test]
async fn a_reconciled_credit_its_attempt_contradicts_is_refused_and_counted() {
    let (w, metrics, quarantine, id) = charged().await;
    let pi = format!("pi_{id}");
    let eur = Currency::parse("eur").unwrap();
    let forged = [
        // Another tenant's wallet, naming acme's attempt: no such attempt of globex's.
        ("tenant", reconciled("globex", &id, usd().amount(4000), &pi)),
        (
            "amount",
            reconciled("acme", &id, usd().amount(400_000), &pi),
        ),
        ("currency", reconciled("acme", &id, eur.amount(4000), &pi)),
        (
            "intent",
            reconciled("acme", &id, usd().amount(4000), "pi_forged"),
        ),
        (
            "attempt",
            reconciled("acme", "thr_made_up", usd().amount(4000), "pi_x"),
        ),
    ];
    let entries = w.entries("acme").await.len();
    for (n, (what, event)) in forged.iter().enumerate() {
        let event_id = format!("forged_{what}");
        assert_eq!(
            w.internal(&event_id, event).await,
            Outcome::Failed {
                attempts: 1,
                permanent: true
            },
            "{what}: refused at once, never retried"
        );
        assert_eq!(w.status(&event_id), Status::Failed, "{what}");
        assert_eq!(quarantine.quarantined().len(), n + 1, "{what}: quarantined");
        assert_eq!(
            metrics.count(FORGED_INTERNAL_EVENT),
            n + 1,
            "{what}: counted once"
        );
        assert_eq!(w.balance("acme").balance.minor(), DEBITED, "{what}");
        assert_eq!(w.balance("globex").balance.minor(), 0, "{what}");
        assert_eq!(w.entries("acme").await.len(), entries, "{what}");
        assert_eq!(w.entries("globex").await.len(), 0, "{what}");
        assert_eq!(w.attempt_state(&id).await, AttemptState::Charged, "{what}");
    }
    let named: Vec<String> = metrics
        .emitted()
        .iter()
        .flat_map(|(_, m)| m.properties.clone())
        .filter(|(k, _)| k == "Mismatch")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        named,
        ["attempt", "amount", "currency", "intent", "attempt"],
        "a tenant the attempt is not of finds no attempt of that tenant"
    );
    let reason = w
        .store
        .message(&MessageKey::new(
            SourceName::parse(SOURCE).unwrap(),
            EventId::parse("forged_amount").unwrap(),
        ))
        .unwrap()
        .last_error
        .unwrap();
    assert!(
        reason.contains("refused") && reason.contains("400000") && reason.contains("4000"),
        "{reason}"
    );
    // The genuine claim still credits, once; a forgery after it still credits nothing.
    let genuine = reconciled("acme", &id, usd().amount(4000), &pi);
    assert_eq!(
        w.internal(&genuine.id(), &genuine).await,
        Outcome::Processed
    );
    let late = reconciled("acme", &id, usd().amount(4000), "pi_other");
    assert!(matches!(
        w.internal("forged_late", &late).await,
        Outcome::Failed { .. }
    ));
    assert_eq!(w.balance("acme").balance.minor(), DEBITED + 4000);
    assert_eq!(metrics.count(FORGED_INTERNAL_EVENT), forged.len() + 1);
}

#[tokio::test]
async fn a_reconciled_body_that_is_no_claim_is_refused_and_counted() {
    let (w, metrics, _, id) = charged().await;
    let body = json!({"id": "x", "type": RECONCILED, "created": T0,
        "data": {"tenant": "acme", "attempt": id, "currency": "usd", "payment": "pi_1"}});
    assert!(matches!(
        w.send(SOURCE, "no_amount", RECONCILED, body).await,
        Outcome::Failed {
            permanent: true,
            ..
        }
    ));
    assert_eq!(metrics.count(FORGED_INTERNAL_EVENT), 1);
    assert_eq!(w.balance("acme").balance.minor(), DEBITED);
}
