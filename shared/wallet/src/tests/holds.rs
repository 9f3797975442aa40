//! Holds the wallet API placed, settled by the delivery webhooks through the real processor:
//! `accepted` captures the hold (one debit), a hard bounce releases it, a second `sent` holds
//! nothing; and a property test: API holds and releases mixed with every webhook in any order
//! match a reference model, and reconcile.

use super::*;
use crate::balance::rules::{EmailState, EntryKind};
use crate::email::holds::{HoldOutcome, HoldRequest, Holds, ReleaseOutcome};

fn holds(store: &MemoryStore) -> Holds<'_, MemoryStore> {
    Holds::new(store).with_clock(Arc::new(ManualClock::at_millis(T0)))
}

async fn place(w: &World, message_id: &str, hold_id: &str) -> HoldOutcome {
    let request = HoldRequest {
        tenant: tid("acme"),
        message_id: message_id.into(),
        amount: None,
        hold_id: hold_id.into(),
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
