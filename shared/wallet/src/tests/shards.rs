//! A wallet split over K shards behaves exactly as the wallet of one item: the reference-model
//! property tests again with K > 1 (webhooks in any order; API holds and releases with them, the
//! holds' shards refilled from the others), a differential property test (one plan of top-ups,
//! holds, releases and webhooks on a tight wallet of one shard and of K: the same outcome at every
//! step, the same figures and notices at the end), and the operator's raise of K.

use super::*;
use crate::balance::items::shards::{pick, shard_key, KIND_WALLET_SHARD};
use crate::email::holds::{HoldOutcome, HoldRequest, Holds, ReleaseOutcome};
use crate::ShardsError;

impl World {
    /// The same world with `acme`'s wallet split over `k` shards.
    fn sharded(self, k: u32) -> Self {
        let set = futures_block(Ledger::new(&*self.store).set_shards(&tid("acme"), k)).unwrap();
        assert_eq!(set.after, k);
        self
    }

    /// The wallet as the ledger reads it (its shards summed).
    fn total(&self) -> Wallet {
        futures_block(Ledger::new(&*self.store).wallet(&tid("acme")))
            .unwrap()
            .unwrap()
    }

    /// The same, from within a runtime.
    async fn shard(self, k: u32) -> Self {
        let set = Ledger::new(&*self.store).set_shards(&tid("acme"), k).await;
        assert_eq!(set.unwrap().after, k);
        self
    }

    async fn total_async(&self) -> Wallet {
        Ledger::new(&*self.store)
            .wallet(&tid("acme"))
            .await
            .unwrap()
            .unwrap()
    }

    /// A Stripe top-up of `amount` (payment `pi`), through the processor.
    async fn top_up(&self, pi: &str, amount: i64) -> Outcome {
        let intent = json!({"id": pi, "amount_received": amount.to_string(), "currency": "usd",
            "metadata": {"tenant": "acme"}});
        self.send(
            "stripe",
            &format!("evt_{pi}"),
            "payment_intent.succeeded",
            stripe_body("payment_intent.succeeded", intent),
        )
        .await
    }
}

fn holds(store: &MemoryStore) -> Holds<'_, MemoryStore> {
    Holds::new(store)
        .with_clock(Arc::new(ManualClock::at_millis(T0)))
        .with_pause(Arc::new(|_| Box::pin(async {})), Arc::new(|| 0.0))
}

async fn place(w: &World, message_id: &str, hold_id: &str, amount: Option<i64>) -> HoldOutcome {
    let request = HoldRequest {
        tenant: tid("acme"),
        message_id: message_id.into(),
        amount,
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

async fn row_of(w: &World, message_id: &str) -> EmailRow {
    Ledger::new(&*w.store)
        .email_row(&tid("acme"), message_id)
        .await
        .unwrap()
        .unwrap()
}

/// Every shard keeps `available ≥ its floor` (no webhook debit overdrew one).
fn shards_within_floors(w: &Wallet) -> bool {
    w.shards
        .iter()
        .all(|p| p.surplus().is_ok_and(|s| s.get() >= 0))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn sharded_email_events_in_any_order_with_duplicates_match_the_model(
        plan in email_plan(),
        k in 2u32..6,
    ) {
        let w = World::new().wallet("acme", -1_000_000, None).sharded(k);
        futures_block(async {
            for (m, kind, i) in &plan {
                let (kind, extra) = kind.event();
                w.email(&format!("evt_{i}"), kind, &format!("m{m}"), extra).await;
            }
        });
        let wallet = w.total();
        prop_assert_eq!(
            (wallet.balance.minor(), wallet.held.minor()),
            model(&distinct(&plan))
        );
        prop_assert_eq!(wallet.shard_count(), k);
        let report = futures_block(reconcile(&*w.store, T0, opts(i64::MAX)));
        prop_assert!(report.unwrap().is_clean());
    }
}

/// One step of the differential plan.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A Stripe top-up of this many prices.
    TopUp(i64),
    /// The API's hold of email `m` (at this many prices).
    Hold(u8, i64),
    /// The API's release of email `m`'s hold.
    Release(u8),
    /// A delivery webhook of email `m`.
    Webhook(u8, Kind),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (1i64..8).prop_map(Op::TopUp),
        4 => (0u8..12, 1i64..4).prop_map(|(m, n)| Op::Hold(m, n)),
        1 => (0u8..12).prop_map(Op::Release),
        4 => (0u8..12, kind()).prop_map(|(m, k)| Op::Webhook(m, k)),
    ]
}

/// What a step came to, as a caller sees it.
fn outcome_of_hold(h: &HoldOutcome) -> String {
    match h {
        HoldOutcome::Held(held) => format!("held {} → {}", held.amount, held.available),
        HoldOutcome::InsufficientFunds { available, .. } => format!("402 at {available}"),
        other => format!("{other:?}"),
    }
}

fn outcome_of_release(r: &ReleaseOutcome) -> String {
    match r {
        ReleaseOutcome::Released(r) => format!("released {} → {}", r.amount, r.available),
        other => format!("{other:?}"),
    }
}

async fn run(w: &World, i: usize, op: Op) -> String {
    match op {
        Op::TopUp(n) => format!("{:?}", w.top_up(&format!("pi_{i}"), n * PRICE).await),
        Op::Hold(m, n) => {
            let h = place(w, &format!("m{m}"), &format!("h{m}"), Some(n * PRICE)).await;
            outcome_of_hold(&h)
        }
        Op::Release(m) => outcome_of_release(&release(w, &format!("h{m}")).await),
        Op::Webhook(m, kind) => {
            let (kind, extra) = kind.event();
            format!(
                "{:?}",
                w.email(&format!("evt_{i}"), kind, &format!("m{m}"), extra)
                    .await
            )
        }
    }
}

/// The figures a user sees of a wallet (the shards' own are left out).
fn figures(w: &Wallet) -> Wallet {
    Wallet {
        shards: Vec::new(),
        ..w.clone()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn a_sharded_wallet_answers_every_step_as_the_wallet_of_one_item(
        ops in prop::collection::vec(op(), 1..40),
        k in 2u32..7,
    ) {
        // Floor −2 prices (a little credit), review past 6 prices of debits: both are crossed.
        let one = World::new().wallet("acme", -2 * PRICE, Some(6 * PRICE));
        let many = World::new().wallet("acme", -2 * PRICE, Some(6 * PRICE)).sharded(k);
        let mut held_ok = true;
        let (a, b) = futures_block(async {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (i, op) in ops.iter().enumerate() {
                a.push(run(&one, i, *op).await);
                let before = many.total_async().await;
                b.push(run(&many, i, *op).await);
                // A hold (and the refill before it) never takes a shard below its floor, nor
                // deeper below it if a webhook's debit already had (those may overdraw).
                if matches!(op, Op::Hold(..)) {
                    let after = many.total_async().await;
                    for (x, y) in before.shards.iter().zip(&after.shards) {
                        let (x, y) = (x.surplus().unwrap().get(), y.surplus().unwrap().get());
                        held_ok &= y >= x.min(0);
                    }
                }
            }
            (a, b)
        });
        prop_assert_eq!(a, b);
        prop_assert!(held_ok, "a hold took a shard below its floor");
        let (x, y) = (one.total(), many.total());
        prop_assert_eq!(figures(&x), figures(&y));
        prop_assert_eq!(y.shard_count(), k);
        let report = futures_block(reconcile(&*many.store, T0, opts(i64::MAX))).unwrap();
        prop_assert!(report.is_clean(), "{:?}", report);
    }
}

#[tokio::test]
async fn a_hold_stays_on_its_shard_and_refills_it_with_its_need_and_an_even_share() {
    let w = World::new().wallet("acme", 0, None).shard(4).await;
    // Two top-ups, each on the shard its payment hashes to: 60 and 40 prices on two shards.
    let pis: Vec<String> = (0..).map(|i| format!("pi_{i}")).take(50).collect();
    let a = &pis[0];
    let b = pis.iter().find(|p| pick(p, 4) != pick(a, 4)).unwrap();
    w.top_up(a, 60 * PRICE).await;
    w.top_up(b, 40 * PRICE).await;
    let (sa, sb) = (pick(a, 4), pick(b, 4));
    let message = (0..)
        .map(|i| format!("m{i}"))
        .find(|m| ![sa, sb].contains(&pick(m, 4)))
        .unwrap();
    let own = pick(&message, 4);
    // One price: its own shard is empty, so the others refill it in the hold's own transaction
    // with the need and an even share of the rest, richest first; the hold stays on its shard
    // (so a hot tenant's holds spread as its messages do, and so does its money).
    let writes = w.store.write_requests();
    let HoldOutcome::Held(_) = place(&w, &message, "h1", None).await else {
        panic!("the whole wallet affords it")
    };
    assert_eq!(
        w.store.write_requests() - writes,
        1,
        "the refill and the hold in one transaction"
    );
    assert_eq!(row_of(&w, &message).await.shard, own);
    let want = PRICE + (100 * PRICE - PRICE) / 4;
    let after = w.total_async().await;
    assert_eq!(
        (after.part(own).balance.get(), after.part(own).held.get()),
        (want, PRICE)
    );
    assert_eq!(
        after.part(sa).balance.get(),
        60 * PRICE - want,
        "from the richest"
    );
    assert_eq!(
        after.part(sb).balance.get(),
        40 * PRICE,
        "the richest had it all"
    );
    // Its capture moves that shard.
    w.email("e1", "message.accepted", &message, json!({})).await;
    let captured = w.total_async().await.part(own);
    assert_eq!(
        (captured.balance.get(), captured.held.get()),
        (want - PRICE, 0)
    );
    // 80 prices: no shard has them; the whole wallet (99) does. Its own shard is refilled with
    // the need and an even share of the rest, richest first, in the hold's transaction.
    let big = (0..)
        .map(|i| format!("big{i}"))
        .find(|m| ![sa, sb, own].contains(&pick(m, 4)))
        .unwrap();
    let target = pick(&big, 4);
    let before = w.total_async().await;
    assert_eq!(before.part(target).balance.get(), 0);
    let writes = w.store.write_requests();
    let HoldOutcome::Held(held) = place(&w, &big, "h2", Some(80 * PRICE)).await else {
        panic!("the whole wallet affords it")
    };
    assert_eq!(w.store.write_requests() - writes, 1);
    assert_eq!(held.available.minor(), 19 * PRICE);
    let after = w.total_async().await;
    assert_eq!(
        (after.balance.minor(), after.held.minor()),
        (99 * PRICE, 80 * PRICE)
    );
    let part = after.part(target);
    assert_eq!(
        (part.balance.get(), part.held.get()),
        (80 * PRICE + 19 * PRICE / 4, 80 * PRICE)
    );
    assert!(shards_within_floors(&after));
    assert_eq!(
        row_of(&w, &big).await.shard,
        target,
        "the row records its hold's shard"
    );
}

#[tokio::test]
async fn a_hold_is_refused_only_when_the_whole_wallet_cannot_afford_it() {
    let w = World::new().wallet("acme", 0, None).shard(8).await;
    w.top_up("pi_1", 10 * PRICE).await;
    // Ten holds of one price each across every shard: all placed, the eleventh refused.
    for m in 0..10 {
        let h = place(&w, &format!("m{m}"), &format!("h{m}"), None).await;
        assert!(matches!(h, HoldOutcome::Held(_)), "hold {m}: {h:?}");
    }
    let refused = place(&w, "m10", "h10", None).await;
    assert!(
        matches!(refused, HoldOutcome::InsufficientFunds { available, .. } if available.minor() == 0),
        "{refused:?}"
    );
    let wallet = w.total_async().await;
    assert_eq!(
        (wallet.balance.minor(), wallet.held.minor()),
        (10 * PRICE, 10 * PRICE)
    );
    assert!(shards_within_floors(&wallet));
}

#[tokio::test]
async fn shards_are_raised_never_lowered_and_one_is_the_wallet_item_alone() {
    let w = World::new().wallet("acme", 0, None);
    let ledger = Ledger::new(&*w.store);
    let one = ledger.wallet(&tid("acme")).await.unwrap().unwrap();
    assert_eq!((one.shard_count(), one.shards.len()), (1, 0));
    assert!(
        w.store
            .items_of_kind(KIND_WALLET_SHARD)
            .await
            .unwrap()
            .is_empty(),
        "one shard: no shard item"
    );
    let set = ledger.set_shards(&tid("acme"), 3).await.unwrap();
    assert_eq!((set.before, set.after), (1, 3));
    for n in 1..3 {
        let (pk, sk) = shard_key("acme", n);
        assert!(w.store.item(&pk, &sk).is_some(), "shard {n}");
    }
    assert_eq!(ledger.set_shards(&tid("acme"), 3).await.unwrap().after, 3);
    assert!(matches!(
        ledger.set_shards(&tid("acme"), 2).await,
        Err(ShardsError::Lower { have: 3, asked: 2 })
    ));
    assert!(matches!(
        ledger.set_shards(&tid("acme"), 0).await,
        Err(ShardsError::OutOfRange(0))
    ));
    assert!(matches!(
        ledger.set_shards(&tid("ghost"), 2).await,
        Err(ShardsError::NoWallet(_))
    ));
    assert_eq!(ledger.set_shards(&tid("acme"), 5).await.unwrap().before, 3);
    let wallet = ledger.wallet(&tid("acme")).await.unwrap().unwrap();
    assert_eq!(wallet.shard_count(), 5);
    // A shard that cannot be read is an unreadable wallet, never a zero.
    let (pk, sk) = shard_key("acme", 4);
    let mut bad = w.store.item(&pk, &sk).unwrap();
    bad.insert("balance".into(), attr::s("lots"));
    w.store.put_item(bad);
    assert!(matches!(
        ledger.wallet(&tid("acme")).await,
        Err(crate::LedgerError::Unreadable(_))
    ));
}

#[tokio::test]
async fn a_shard_below_its_floor_is_covered_before_a_hold_so_no_hold_can_spend_the_floor() {
    // A new wallet with a floor of 10 prices: shard 0 holds the floor and nothing yet; the top-up
    // lands on another shard, which alone would afford 20 holds while the wallet affords 10.
    let w = World::new().wallet("acme", 10 * PRICE, None).shard(4).await;
    let pi = (0..)
        .map(|i| format!("pi_{i}"))
        .find(|p| pick(p, 4) != 0)
        .unwrap();
    w.top_up(&pi, 20 * PRICE).await;
    assert!(!shards_within_floors(&w.total_async().await));
    let HoldOutcome::Held(_) = place(&w, "m0", "h0", None).await else {
        panic!("the wallet affords it")
    };
    let wallet = w.total_async().await;
    assert!(shards_within_floors(&wallet), "{:?}", wallet.shards);
    assert!(wallet.part(0).surplus().unwrap().get() >= 0);
}
