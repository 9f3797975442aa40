//! The handler on the wallet crate's fakes: a run charges what is due and emits the metrics of
//! what committed; the invocation's deadline is honoured; a failed write fails the invocation.

use super::*;
use inbox_core::clock::ManualClock;
use inbox_core::metrics::RecordingSink;
use std::collections::BTreeMap;
use wallet_ledger::autopay::fakes::{MemoryAttempts, ScriptedCharger, Step};
use wallet_ledger::autopay::{
    Attempt, AttemptState, Autopay, AutopayStatus, ChargeOutcome, Ladder, Reason, SavedMethod,
};
use wallet_ledger::{Currency, TenantId};

const T0: i64 = 1_800_000_000_000;

type Fakes =
    Service<MemoryAttempts, ScriptedCharger, Arc<ManualClock>, wallet_ledger::autopay::ReportOnly>;

fn service(steps: Vec<Step>) -> (Fakes, Arc<RecordingSink>) {
    let tenant = TenantId::parse("acme").expect("tenant");
    let store = MemoryAttempts::new();
    store.put_autopay(Autopay {
        tenant: tenant.clone(),
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
        updated_at: Millis::new(T0),
        version: None,
    });
    store.put_attempt(Attempt {
        id: "thr-1".into(),
        tenant,
        reason: Reason::Threshold,
        amount: Currency::parse("USD").expect("usd").amount(4000),
        state: AttemptState::Due,
        try_no: 0,
        rung: 0,
        first_failure: None,
        due: Millis::new(T0),
        idempotency_key: None,
        claimed_at: None,
        provider_ref: None,
        tries: Vec::new(),
        created_at: Millis::new(T0),
        version: None,
    });
    let clock = Arc::new(ManualClock::at_millis(T0));
    let sink = Arc::new(RecordingSink::default());
    let mut s = compose(
        store,
        ScriptedCharger::new(steps),
        clock,
        PassConfig::default(),
    );
    s.metrics = sink.clone();
    (s, sink)
}

fn event(deadline: i64) -> LambdaEvent<Value> {
    let mut context = lambda_runtime::Context::default();
    context.deadline = u64::try_from(deadline).expect("deadline");
    LambdaEvent::new(serde_json::json!({"source": "aws.scheduler"}), context)
}

#[tokio::test]
async fn a_run_charges_what_is_due_and_emits_what_committed() {
    let (s, sink) = service(vec![Step::Answer(ChargeOutcome::DeclinedSoft {
        code: "insufficient_funds".into(),
    })]);
    let out = handle(&s, event(T0 + 60_000)).await.expect("a run");
    assert_eq!(out["tries"], 1);
    assert_eq!(out["declined"], 1);
    let names: Vec<String> = sink.emitted().into_iter().map(|(_, m)| m.name).collect();
    assert_eq!(names, vec!["AutopayDeclined"]);
    assert_eq!(s.pass.store().event_types(), vec!["wallet.autopay_failed"]);
}

#[tokio::test]
async fn no_try_starts_past_the_invocations_deadline() {
    let (s, _sink) = service(vec![]);
    let out = handle(&s, event(T0 + 1_000)).await.expect("a run");
    assert_eq!(
        (out["tries"].as_u64(), out["deferred"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(s.pass.charger().requests().is_empty());
}

#[tokio::test]
async fn a_deadline_already_past_at_the_start_is_no_deadline() {
    // cargo lambda's emulator hands the function a context deadline that is not epoch ms: read
    // as a deadline, every try was deferred in `make dev` and nothing was ever charged.
    let (s, _sink) = service(vec![Step::Answer(ChargeOutcome::Succeeded)]);
    let out = handle(&s, event(4_200_000)).await.expect("a run");
    assert_eq!(
        (out["tries"].as_u64(), out["deferred"].as_u64()),
        (Some(1), Some(0))
    );
}

#[tokio::test]
async fn a_failed_write_fails_the_invocation() {
    let (s, _sink) = service(vec![]);
    s.pass
        .store()
        .fail_write(|a| a.state == AttemptState::Charging);
    let e = handle(&s, event(T0 + 60_000)).await.expect_err("an error");
    assert!(e.to_string().contains("the next run tries again"), "{e}");
}

#[test]
fn the_configuration_is_read_with_its_defaults() {
    let config = PassConfig::read(&Env::from_pairs([("AUTOPAY_BATCH", "5")])).expect("config");
    assert_eq!(
        (config.batch, config.ladder.days()),
        (5, &[0, 1, 3, 5, 7][..])
    );
}

#[tokio::test]
async fn the_run_sweeps_the_holds_past_their_expiry_and_emits_their_count() {
    use inbox_core::store::memory::MemoryStore;
    use wallet_ledger::email::holds::expiry::HoldSweep;
    use wallet_ledger::email::holds::{HoldOutcome, HoldRequest, Holds};
    let table = Arc::new(MemoryStore::new());
    let usd = Currency::parse("usd").expect("usd");
    let acme = TenantId::parse("acme").expect("tenant");
    let wallet =
        wallet_ledger::Wallet::new(acme.clone(), usd.amount(5), usd.amount(-1000), None, T0);
    wallet_ledger::Ledger::new(&*table)
        .create(&wallet)
        .await
        .expect("a wallet");
    let request = HoldRequest {
        tenant: acme,
        message_id: "m1".into(),
        amount: None,
        hold_id: "h1".into(),
        expires_in: Some(std::time::Duration::from_secs(60)),
    };
    let placed = Holds::new(&*table)
        .with_clock(Arc::new(ManualClock::at_millis(T0)))
        .place(&request, |_| Vec::new())
        .await
        .expect("a hold");
    assert!(matches!(placed, HoldOutcome::Held(_)));
    let (mut s, sink) = service(vec![Step::Answer(ChargeOutcome::Succeeded)]);
    s.holds = Some(Arc::new(HoldSweep {
        store: table.clone(),
        clock: Arc::new(ManualClock::at_millis(T0 + 60_000)),
        batch: 10,
    }));
    let out = handle(&s, event(T0 + 120_000)).await.expect("a run");
    assert_eq!(out["holds"]["expired"], 1, "{out}");
    let names: Vec<String> = sink.emitted().into_iter().map(|(_, m)| m.name).collect();
    assert!(names.contains(&"HoldsExpired".to_string()), "{names:?}");
    let wallet = wallet_ledger::Ledger::new(&*table)
        .wallet(&TenantId::parse("acme").expect("tenant"))
        .await
        .expect("read")
        .expect("a wallet");
    assert_eq!(wallet.held.minor(), 0, "released");
}
