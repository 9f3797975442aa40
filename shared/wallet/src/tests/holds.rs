//! Holds the wallet API placed, settled by the delivery webhooks through the real processor:
//! `accepted` captures the hold (one debit), a hard bounce releases it, a second `sent` holds
//! nothing; and a property test: API holds and releases mixed with every webhook in any order
//! match a reference model, and reconcile.

use super::*;
use crate::balance::rules::{EmailState, EntryKind};
use crate::email::holds::expiry::{HoldSweep, SweepReport};
use crate::email::holds::{HoldOutcome, HoldRequest, Holds, ReleaseOutcome};
use inbox_core::clock::Millis;

/// A day: the default validity of a hold.
const DAY: i64 = 86_400_000;

/// Holds at `T0` that never sleep between tries.
fn holds(store: &MemoryStore) -> Holds<'_, MemoryStore> {
    Holds::new(store)
        .with_clock(Arc::new(ManualClock::at_millis(T0)))
        .with_pause(Arc::new(|_| Box::pin(async {})), Arc::new(|| 0.0))
}

async fn place(w: &World, message_id: &str, hold_id: &str) -> HoldOutcome {
    let request = HoldRequest {
        tenant: tid("acme"),
        message_id: message_id.into(),
        amount: None,
        hold_id: hold_id.into(),
        expires_in: None,
    };
    holds(&w.store)
        .place(&request, |_| Vec::new())
        .await
        .unwrap()
}

async fn release(w: &World, hold_id: &str) -> ReleaseOutcome {
    holds(&w.store)
        .release(&tid("acme"), hold_id, |_| Vec::new())
        .await
        .unwrap()
}

async fn row(w: &World, message_id: &str) -> EmailRow {
    Ledger::new(&*w.store)
        .email_row(&tid("acme"), message_id)
        .await
        .unwrap()
        .unwrap()
}

/// A wallet of 100.00 above a floor of 0, at 0.05 an email.
fn funded() -> World {
    let w = World::new().wallet("acme", 0, None);
    let mut item = w.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    item.insert("balance".into(), attr::n(10_000));
    w.store.put_item(item);
    w.store
        .put_item(crate::email::holds::tests::old_topup(10_000));
    w
}

fn moved(w: &World) -> (i64, i64) {
    let wallet = w.balance("acme");
    (wallet.balance.minor() - 10_000, wallet.held.minor())
}

#[tokio::test]
async fn an_api_hold_then_accepted_is_one_debit_that_captures_it() {
    let w = funded();
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    assert_eq!(moved(&w), (0, PRICE));
    assert_eq!(
        w.email("e1", "message.sent", "m1", json!({})).await,
        Outcome::Processed
    );
    assert_eq!(
        moved(&w),
        (0, PRICE),
        "a `sent` after the hold holds nothing"
    );
    w.email("e2", "message.accepted", "m1", json!({})).await;
    w.email("e3", "message.accepted", "m1", json!({})).await;
    assert_eq!(moved(&w), (-PRICE, 0), "one debit, the hold captured");
    let row = row(&w, "m1").await;
    assert_eq!(
        (row.state, row.hold_id.as_deref()),
        (EmailState::Debited, Some("h1")),
        "the webhooks keep the hold's id"
    );
    assert_eq!(row.events, vec!["e1", "e2", "e3"]);
    let kinds: Vec<_> = w.entries("acme").await.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![EntryKind::Topup, EntryKind::Hold, EntryKind::Debit]
    );
    assert_eq!(
        release(&w, "h1").await,
        ReleaseOutcome::Settled {
            state: EmailState::Debited
        },
        "a delivered send is not released"
    );
    assert_eq!(moved(&w), (-PRICE, 0));
}

#[tokio::test]
async fn an_api_hold_then_a_hard_bounce_is_released() {
    let w = funded();
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    w.email(
        "e1",
        "message.bounced",
        "m1",
        json!({"bounce_type": "hard"}),
    )
    .await;
    assert_eq!(moved(&w), (0, 0));
    assert_eq!(row(&w, "m1").await.state, EmailState::Released);
    w.email("e2", "message.accepted", "m1", json!({})).await;
    assert_eq!(moved(&w), (0, 0), "a late `accepted` debits nothing");
    assert_eq!(
        release(&w, "h1").await,
        ReleaseOutcome::Settled {
            state: EmailState::Released
        }
    );
    assert_eq!(
        place(&w, "m1", "h2").await,
        HoldOutcome::AlreadyExists {
            hold_id: Some("h1".into()),
            state: EmailState::Released
        },
        "the message is never held twice"
    );
}

#[tokio::test]
async fn an_email_held_by_a_webhook_is_not_the_apis_to_release() {
    let w = funded();
    w.email("e1", "message.sent", "m1", json!({})).await;
    assert_eq!(
        place(&w, "m1", "h1").await,
        HoldOutcome::AlreadyExists {
            hold_id: None,
            state: EmailState::Held
        }
    );
    assert_eq!(release(&w, "h1").await, ReleaseOutcome::NotFound);
    assert_eq!(moved(&w), (0, PRICE));
}

/// One expiry sweep at `at`.
async fn sweep(w: &World, at: i64) -> SweepReport {
    HoldSweep {
        store: w.store.clone(),
        clock: Arc::new(ManualClock::at_millis(at)),
        batch: 100,
    }
    .run()
    .await
}

fn metric_names(report: &SweepReport) -> Vec<String> {
    report.metrics.iter().map(|m| m.name.to_string()).collect()
}

#[tokio::test]
async fn an_api_hold_past_its_expiry_is_released_once_by_the_sweep_and_published() {
    let w = funded();
    let HoldOutcome::Held(held) = place(&w, "m1", "h1").await else {
        panic!("not held")
    };
    assert_eq!(held.expires_at, T0 + DAY, "the default: a day");
    let early = sweep(&w, T0 + DAY - 1).await;
    assert_eq!(
        (early.due, early.expired),
        (0, 0),
        "not due before its expiry"
    );
    assert_eq!(moved(&w), (0, PRICE));
    let report = sweep(&w, T0 + DAY).await;
    assert_eq!((report.due, report.expired, report.errors), (1, 1, 0));
    assert!(metric_names(&report).contains(&"HoldsExpired".to_string()));
    assert_eq!(moved(&w), (0, 0), "the held amount is available again");
    let row = row(&w, "m1").await;
    assert_eq!(row.state, EmailState::Expired);
    let kinds: Vec<_> = row.entries.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EntryKind::Hold, EntryKind::HoldRelease]);
    // Published through the outbox, with the entry's origin.
    let event = &row.entries[1];
    assert_eq!(event.event_source, events::SOURCE);
    let key = MessageKey::new(
        SourceName::parse(events::SOURCE).unwrap(),
        EventId::parse(&event.event_id).unwrap(),
    );
    let msg = w
        .store
        .item(
            &inbox_core::store::schema::message_pk(&key),
            inbox_core::store::schema::MESSAGE_SK,
        )
        .expect("published");
    assert_eq!(
        attr::get_s(&msg, inbox_core::store::schema::EVENT_TYPE),
        Some(events::HOLD_EXPIRED)
    );
    // Out of the index: a second sweep finds nothing; a release finds it settled.
    assert_eq!(sweep(&w, T0 + 2 * DAY).await.due, 0);
    assert_eq!(
        release(&w, "h1").await,
        ReleaseOutcome::Settled {
            state: EmailState::Expired
        }
    );
    let report = reconcile(&*w.store, T0 + 2 * DAY, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// A clock that moves a second each time it is read: work takes time.
struct Ticking(std::sync::atomic::AtomicI64);

impl inbox_core::clock::Clock for Ticking {
    fn now_millis(&self) -> i64 {
        self.0.fetch_add(1_000, std::sync::atomic::Ordering::SeqCst)
    }
}

#[tokio::test]
async fn a_sweep_stops_before_the_invocations_deadline_and_the_next_run_takes_the_rest() {
    use crate::email::holds::expiry::SWEEP_MARGIN_MS;
    let w = funded();
    for i in 0..12 {
        let placed = place(&w, &format!("m{i}"), &format!("h{i}")).await;
        assert!(matches!(placed, HoldOutcome::Held(_)));
    }
    let start = T0 + DAY;
    let ticking = HoldSweep {
        store: w.store.clone(),
        clock: Arc::new(Ticking(std::sync::atomic::AtomicI64::new(start))),
        batch: 100,
    };
    // Twenty seconds of clock: the sweep stops five before, with holds still due.
    let first = ticking
        .run_until(Some(inbox_core::clock::Millis::new(start + 20_000)))
        .await;
    assert!(first.stopped_at_deadline, "{first:?}");
    assert!(
        (1..12).contains(&first.expired),
        "some, not all, expired: {first:?}"
    );
    assert_eq!(first.errors, 0);
    let held_after_first = 12 - first.expired;
    assert_eq!(
        moved(&w),
        (0, PRICE * i64::try_from(held_after_first).unwrap())
    );
    // Already inside the margin: nothing is read at all.
    let none = ticking
        .run_until(Some(inbox_core::clock::Millis::new(
            start + SWEEP_MARGIN_MS,
        )))
        .await;
    assert_eq!(
        (none.due, none.expired, none.stopped_at_deadline),
        (0, 0, true)
    );
    // The next run, with time: the rest, each once.
    let rest = sweep(&w, start + 60_000).await;
    assert_eq!(
        (rest.expired, rest.stopped_at_deadline),
        (held_after_first, false)
    );
    assert_eq!(moved(&w), (0, 0), "every hold released once");
    let report = reconcile(&*w.store, start + 120_000, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_hold_from_before_expiry_is_given_one_once_and_then_swept() {
    use crate::email::holds::backfill::backfill_expiry;
    let w = funded();
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    assert!(matches!(place(&w, "m2", "h2").await, HoldOutcome::Held(_)));
    // m1 as a version without expiry wrote it: no expiry, not in the index.
    let pk = wallet_pk("acme");
    let sk = crate::balance::items::email_sk("m1");
    let mut item = w.store.item(&pk, &sk).unwrap();
    for attribute in ["expires_at", "open_shard", "open_due"] {
        assert!(item.remove(attribute).is_some(), "{attribute}");
    }
    w.store.put_item(item);
    assert_eq!(sweep(&w, T0 + 2 * DAY).await.expired, 1, "only m2 is found");
    assert_eq!(moved(&w), (0, PRICE), "m1 stays held for good");
    let now = T0 + 3 * DAY;
    let dry = backfill_expiry(&*w.store, std::time::Duration::from_secs(86_400), now, true)
        .await
        .unwrap();
    assert_eq!(
        (dry.wallets, dry.found, dry.given, dry.already_due),
        (1, 1, 0, 1)
    );
    assert_eq!(
        row(&w, "m1").await.expires_at,
        None,
        "a dry run writes nothing"
    );
    let done = backfill_expiry(
        &*w.store,
        std::time::Duration::from_secs(86_400),
        now,
        false,
    )
    .await
    .unwrap();
    assert_eq!((done.found, done.given, done.busy), (1, 1, 0));
    assert_eq!(
        row(&w, "m1").await.expires_at,
        Some(Millis::new(T0 + DAY)),
        "held_at + a day"
    );
    let again = backfill_expiry(
        &*w.store,
        std::time::Duration::from_secs(86_400),
        now,
        false,
    )
    .await
    .unwrap();
    assert_eq!((again.found, again.given), (0, 0), "idempotent");
    let swept = sweep(&w, now).await;
    assert_eq!((swept.due, swept.expired), (1, 1), "{swept:?}");
    assert_eq!(moved(&w), (0, 0), "released once");
    let report = reconcile(&*w.store, now, opts(i64::MAX)).await.unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// The store, with the first commit held at a gate: the test acts while a writer has read and
/// not yet written.
struct Gated {
    inner: Arc<MemoryStore>,
    armed: std::sync::atomic::AtomicBool,
    reached: tokio::sync::Notify,
    go: tokio::sync::Notify,
}

impl inbox_core::store::ItemStore for Gated {
    async fn get_item(
        &self,
        pk: &str,
        sk: &str,
    ) -> Result<Option<inbox_core::store::Item>, inbox_core::store::StoreError> {
        self.inner.get_item(pk, sk).await
    }

    async fn query_items(
        &self,
        pk: &str,
        sk_prefix: &str,
    ) -> Result<Vec<inbox_core::store::Item>, inbox_core::store::StoreError> {
        self.inner.query_items(pk, sk_prefix).await
    }

    async fn items_of_kind(
        &self,
        kind: &str,
    ) -> Result<Vec<inbox_core::store::Item>, inbox_core::store::StoreError> {
        self.inner.items_of_kind(kind).await
    }
}

impl inbox_core::store::DueIndex for Gated {
    async fn due_items(
        &self,
        shard: &str,
        now: inbox_core::clock::Millis,
        limit: usize,
    ) -> Result<Vec<inbox_core::store::Item>, inbox_core::store::StoreError> {
        self.inner.due_items(shard, now, limit).await
    }
}

impl inbox_core::store::ItemWriter for Gated {
    async fn commit(
        &self,
        effects: Vec<inbox_core::store::Effect>,
    ) -> Result<inbox_core::store::Applied, inbox_core::store::StoreError> {
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            self.reached.notify_one();
            self.go.notified().await;
        }
        self.inner.commit(effects).await
    }
}

#[tokio::test]
async fn a_capture_committed_between_the_sweeps_read_and_write_wins_and_the_sweep_moves_nothing() {
    let w = funded();
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    let gated = Arc::new(Gated {
        inner: w.store.clone(),
        armed: true.into(),
        reached: tokio::sync::Notify::new(),
        go: tokio::sync::Notify::new(),
    });
    let sweeper = HoldSweep {
        store: gated.clone(),
        clock: Arc::new(ManualClock::at_millis(T0 + DAY)),
        batch: 100,
    };
    let race = async {
        // The sweep read the row `held` and due; before its write, the email is delivered.
        gated.reached.notified().await;
        w.email("e1", "message.accepted", "m1", json!({})).await;
        gated.go.notify_one();
    };
    let (report, ()) = tokio::join!(sweeper.run(), race);
    assert_eq!(
        (report.due, report.expired, report.not_due, report.errors),
        (1, 0, 1, 0),
        "the sweep's write lost, it read again and found it captured: {report:?}"
    );
    assert_eq!(moved(&w), (-PRICE, 0), "one debit, nothing released");
    let row = row(&w, "m1").await;
    assert_eq!(row.state, EmailState::Debited);
    let kinds: Vec<_> = row.entries.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![EntryKind::Hold, EntryKind::Debit],
        "no release entry"
    );
    let report = reconcile(&*w.store, T0 + DAY, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_hold_asks_for_its_own_validity_within_the_bounds() {
    let w = funded();
    let mut request = HoldRequest {
        tenant: tid("acme"),
        message_id: "m1".into(),
        amount: None,
        hold_id: "h1".into(),
        expires_in: Some(std::time::Duration::from_secs(600)),
    };
    let HoldOutcome::Held(held) = holds(&w.store)
        .place(&request, |_| Vec::new())
        .await
        .unwrap()
    else {
        panic!("not held")
    };
    assert_eq!(held.expires_at, T0 + 600_000);
    assert_eq!(sweep(&w, T0 + 600_000).await.expired, 1);
    request.message_id = "m2".into();
    request.hold_id = "h2".into();
    request.expires_in = Some(std::time::Duration::from_secs(8 * 86_400));
    assert!(
        holds(&w.store)
            .place(&request, |_| Vec::new())
            .await
            .is_err(),
        "past the bound: refused, nothing written"
    );
    assert_eq!(moved(&w), (0, 0));
}

#[tokio::test]
async fn a_capture_after_the_expiry_is_debited_once_even_below_the_floor_and_flagged() {
    // A wallet of exactly one send: the expired hold's money is held again by another send.
    let w = World::new().wallet("acme", 0, None);
    let mut item = w.store.item(&wallet_pk("acme"), WALLET_SK).unwrap();
    item.insert("balance".into(), attr::n(PRICE));
    w.store.put_item(item);
    w.store
        .put_item(crate::email::holds::tests::old_topup(PRICE));
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    assert_eq!(sweep(&w, T0 + DAY).await.expired, 1);
    assert!(matches!(place(&w, "m2", "h2").await, HoldOutcome::Held(_)));
    assert!(!w.balance("acme").overdrawn);
    // m1 was sent after all: its `accepted` comes late.
    w.email("e1", "message.accepted", "m1", json!({})).await;
    w.email("e2", "message.accepted", "m1", json!({})).await;
    let wallet = w.balance("acme");
    assert_eq!(
        (wallet.balance.minor(), wallet.held.minor()),
        (0, PRICE),
        "debited once, directly: available is below the floor"
    );
    assert!(wallet.overdrawn, "and the wallet is flagged");
    let row = row(&w, "m1").await;
    assert_eq!(row.state, EmailState::Debited);
    assert_eq!(
        row.expires_at,
        Some(Millis::new(T0 + DAY)),
        "the row keeps its expiry"
    );
    let kinds: Vec<_> = row.entries.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        vec![EntryKind::Hold, EntryKind::HoldRelease, EntryKind::Debit]
    );
    let report = reconcile(&*w.store, T0 + DAY, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn a_capture_before_the_expiry_leaves_the_sweep_nothing() {
    let w = funded();
    assert!(matches!(place(&w, "m1", "h1").await, HoldOutcome::Held(_)));
    w.email("e1", "message.accepted", "m1", json!({})).await;
    let report = sweep(&w, T0 + 2 * DAY).await;
    assert_eq!(
        (report.due, report.expired),
        (0, 0),
        "captured: out of the index"
    );
    assert_eq!(moved(&w), (-PRICE, 0), "one debit, nothing released");
    assert_eq!(row(&w, "m1").await.state, EmailState::Debited);
}

#[tokio::test]
async fn a_webhook_hold_gets_the_stages_default_and_expires_after_a_soft_bounce() {
    let w = funded();
    w.email("e1", "message.sent", "m1", json!({})).await;
    w.email(
        "e2",
        "message.bounced",
        "m1",
        json!({"bounce_type": "soft"}),
    )
    .await;
    let held = row(&w, "m1").await;
    assert_eq!(held.state, EmailState::Held);
    let expires_at = held.expires_at.unwrap().get();
    assert_eq!(expires_at, held.held_at.unwrap().get() + DAY);
    let stale = reconcile(&*w.store, expires_at + 600_001, opts(i64::MAX))
        .await
        .unwrap();
    assert_eq!(
        stale.expired_holds.len(),
        1,
        "past its expiry and not released"
    );
    assert!(stale.metrics().iter().any(|m| m.name == "ExpiredHolds"));
    assert_eq!(sweep(&w, expires_at).await.expired, 1);
    assert_eq!(moved(&w), (0, 0));
    let report = reconcile(&*w.store, expires_at + 600_001, opts(i64::MAX))
        .await
        .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// One step of a plan: a webhook of one email, or the API's hold (first) or release of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    Webhook(Kind),
    Release,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![4 => kind().prop_map(Step::Webhook), 1 => Just(Step::Release)]
}

/// The reference model of one email's steps (in order), after an API hold when `held`: the first
/// of acceptance, hard bounce and release decides (acceptance debits, and a later hard bounce
/// refunds it; a bounce or a release first frees the hold); none: still held. Without the hold,
/// a release finds nothing and the webhooks' own model applies.
fn model_with_hold(held: bool, steps: &[Step]) -> (i64, i64) {
    if !held {
        let kinds: Vec<(u8, Kind)> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Webhook(k) => Some((0, *k)),
                Step::Release => None,
            })
            .collect();
        return model(&kinds);
    }
    let decisive = steps.iter().position(|s| {
        matches!(
            s,
            Step::Webhook(Kind::Accepted | Kind::Hard) | Step::Release
        )
    });
    match decisive.map(|i| (i, steps[i])) {
        None => (0, PRICE),
        Some((i, Step::Webhook(Kind::Accepted))) => {
            let refunded = steps[i..].contains(&Step::Webhook(Kind::Hard));
            (if refunded { 0 } else { -PRICE }, 0)
        }
        Some(_) => (0, 0),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn api_holds_and_releases_with_webhooks_in_any_order_match_the_model(
        emails in prop::collection::vec(
            (any::<bool>(), prop::collection::vec(step(), 0..6)),
            1..4,
        ),
    ) {
        let w = funded();
        let mut expected = (0, 0);
        futures_block(async {
            for (m, (held, steps)) in emails.iter().enumerate() {
                let message_id = format!("m{m}");
                let hold_id = format!("h{m}");
                if *held {
                    assert!(matches!(place(&w, &message_id, &hold_id).await, HoldOutcome::Held(_)));
                }
                for (i, s) in steps.iter().enumerate() {
                    match s {
                        Step::Webhook(k) => {
                            let (kind, extra) = k.event();
                            w.email(&format!("evt_{m}_{i}"), kind, &message_id, extra).await;
                        }
                        Step::Release => {
                            release(&w, &hold_id).await;
                        }
                    }
                }
                let (b, h) = model_with_hold(*held, steps);
                expected = (expected.0 + b, expected.1 + h);
            }
        });
        prop_assert_eq!(moved(&w), expected);
        let report = futures_block(reconcile(&*w.store, T0, opts(i64::MAX)));
        let report = report.unwrap();
        prop_assert!(report.is_clean(), "{:?}", report);
    }
}

/// One operation of an interleaved plan over a few emails: the API's hold or release of one, a
/// webhook of one, or the expiry sweep (of every hold due, far in the future).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Hold(u8),
    Release(u8),
    Webhook(u8, Kind),
    Sweep,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u8..3).prop_map(Op::Hold),
        1 => (0u8..3).prop_map(Op::Release),
        4 => ((0u8..3), kind()).prop_map(|(m, k)| Op::Webhook(m, k)),
        1 => Just(Op::Sweep),
    ]
}

/// Where one email stands in the reference model (written from the product's rules in words,
/// not from `rules::email`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stands {
    New,
    /// Held; `api`: by the wallet API (its release can free it).
    Held {
        api: bool,
    },
    Expired,
    Debited,
    /// Released, refunded or void: nothing moves any more.
    Done,
}

/// The reference model with expiry: the wallet's (balance, held) moves and the count of ledger
/// entries the plan makes.
fn model_with_expiry(ops: &[Op]) -> ((i64, i64), usize) {
    let mut emails = [Stands::New; 3];
    // Whether a webhook wrote the email's row: the API then never holds it (already exists).
    let mut rowed = [false; 3];
    let (mut balance, mut held, mut entries) = (0, 0, 0);
    let mut moved = |b: i64, h: i64| {
        balance += b;
        held += h;
        entries += 1;
    };
    for op in ops {
        let targets: Vec<usize> = match op {
            Op::Sweep => (0..3).collect(),
            Op::Hold(m) | Op::Release(m) | Op::Webhook(m, _) => vec![usize::from(*m)],
        };
        for m in targets {
            let s = emails[m];
            let was_rowed = rowed[m];
            rowed[m] = was_rowed || matches!(op, Op::Webhook(..) | Op::Hold(_));
            emails[m] = match (s, op) {
                (Stands::New, Op::Hold(_)) if was_rowed => s,
                (Stands::New, Op::Hold(_)) => {
                    moved(0, PRICE);
                    Stands::Held { api: true }
                }
                (Stands::New, Op::Webhook(_, Kind::Sent)) => {
                    moved(0, PRICE);
                    Stands::Held { api: false }
                }
                (Stands::New, Op::Webhook(_, Kind::Accepted)) => {
                    moved(-PRICE, 0);
                    Stands::Debited
                }
                (Stands::New, Op::Webhook(_, Kind::Hard)) => Stands::Done,
                (Stands::Held { .. }, Op::Webhook(_, Kind::Accepted)) => {
                    moved(-PRICE, -PRICE);
                    Stands::Debited
                }
                (Stands::Held { .. }, Op::Webhook(_, Kind::Hard))
                | (Stands::Held { api: true }, Op::Release(_)) => {
                    moved(0, -PRICE);
                    Stands::Done
                }
                (Stands::Held { .. }, Op::Sweep) => {
                    moved(0, -PRICE);
                    Stands::Expired
                }
                // The email was sent after all: debited once, directly.
                (Stands::Expired, Op::Webhook(_, Kind::Accepted)) => {
                    moved(-PRICE, 0);
                    Stands::Debited
                }
                (Stands::Expired, Op::Webhook(_, Kind::Hard)) => Stands::Done,
                (Stands::Debited, Op::Webhook(_, Kind::Hard)) => {
                    moved(PRICE, 0);
                    Stands::Done
                }
                _ => s,
            };
        }
    }
    ((balance, held), entries)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn holds_sweeps_captures_bounces_and_releases_in_any_interleaving_match_the_model(
        ops in prop::collection::vec(op(), 0..14),
    ) {
        let w = funded();
        futures_block(async {
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Hold(m) => {
                        place(&w, &format!("m{m}"), &format!("h{m}")).await;
                    }
                    Op::Release(m) => {
                        release(&w, &format!("h{m}")).await;
                    }
                    Op::Webhook(m, k) => {
                        let (kind, extra) = k.event();
                        w.email(&format!("evt_{i}"), kind, &format!("m{m}"), extra).await;
                    }
                    Op::Sweep => {
                        let report = sweep(&w, T0 + 3 * DAY).await;
                        assert_eq!(report.errors, 0, "{report:?}");
                    }
                }
            }
        });
        let (expected, entries) = model_with_expiry(&ops);
        prop_assert_eq!(moved(&w), expected);
        let made = futures_block(w.entries("acme")).len() - 1;
        prop_assert_eq!(made, entries, "one entry per movement");
        let report = futures_block(reconcile(&*w.store, T0, opts(i64::MAX))).unwrap();
        prop_assert!(report.is_clean(), "{:?}", report);
    }
}
