//! Autopay's ledger side on DynamoDB Local, through the ingest and the processor: a burst of
//! debits across the threshold, processed ten at a time as deployed, makes ONE attempt (the
//! settings item written at its version, the losers re-run), found through the open index's
//! autopay shards; its charge's `payment_intent.succeeded` credits once and closes it.

use inbox_core::clock::{Millis, SystemClock};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{Effect, ItemWriter};
use integration_tests::pipeline::Pipeline;
use serde_json::json;
use wallet_ledger::autopay::table::TableAttempts;
use wallet_ledger::autopay::{
    AttemptState, AttemptStore, Every, Recurring, SavedMethod, Schedule, TopUpRule,
};
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::{CreateOutcome, Currency, Ledger, TenantId, Wallet, WalletSources};

const PRICE: i64 = 7;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

fn acme() -> TenantId {
    TenantId::parse("acme").unwrap()
}

async fn send(p: &Pipeline, source: &str, id: &str, body: serde_json::Value) -> String {
    let body = body.to_string();
    let headers = p.harness.sign(source, body.as_bytes(), id);
    let event = integration_tests::api_event("POST", source, &headers, Some(&body), false);
    p.harness.send(&event).await.code().to_owned()
}

#[tokio::test]
async fn a_burst_of_debits_across_the_threshold_makes_one_attempt_credited_once() {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let wallet = Wallet::new(
        acme(),
        usd().amount(PRICE),
        usd().amount(-1_000_000),
        None,
        0,
    );
    let ledger = Ledger::new(&store);
    assert_eq!(
        ledger.create(&wallet).await.unwrap(),
        CreateOutcome::Created
    );
    // 17.00 in the wallet: the 100th debit of 0.07 reaches the threshold of 10.00.
    store
        .commit(vec![Effect::Adjust {
            pk: wallet_pk("acme"),
            sk: WALLET_SK.into(),
            add: vec![("balance".into(), 1000 + 100 * PRICE)],
            set: Vec::new(),
        }])
        .await
        .unwrap();
    ledger
        .set_autopay(&acme(), "ops", "set", Millis::new(0), |a| {
            a.top_up = Some(TopUpRule::to_target(usd().amount(1000), usd().amount(5000)).unwrap());
            a.method = Some(SavedMethod {
                customer: "cus_1".into(),
                payment_method: "pm_1".into(),
            });
            Ok("to 50.00 at 10.00".into())
        })
        .await
        .unwrap();
    for i in 0..200 {
        let body = json!({"type": "message.accepted", "timestamp": "2026-11-30T10:00:00Z",
            "data": {"message_id": format!("m{i}"), "tenant": "acme"}});
        assert_eq!(
            send(&p, "mailer", &format!("msg_acc_{i}"), body).await,
            "accepted"
        );
    }
    let batch = p.read_stream().await;
    assert_eq!(batch.records.len(), 200);
    processor.handle_stream_batch(batch).await;
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(w.balance.minor(), 1000 - 100 * PRICE, "every debit once");
    let attempts = ledger.attempts(&acme()).await.unwrap();
    assert_eq!(
        attempts.len(),
        1,
        "one attempt for the whole burst: {attempts:?}"
    );
    let attempt = &attempts[0];
    assert_eq!(attempt.state, AttemptState::Due);
    let settings = ledger.autopay(&acme()).await.unwrap().unwrap();
    assert_eq!(settings.open_attempt.as_deref(), Some(attempt.id.as_str()));
    let far = Millis::new(i64::MAX / 2);
    let pass = TableAttempts::new(store.clone());
    let due = pass.due_attempts(far, 10).await.unwrap().items;
    assert_eq!(
        due.len(),
        1,
        "found through the open index's autopay shards"
    );
    // Its charge's webhook, twice: credited once, the attempt closed.
    let amount = attempt.amount.minor();
    for id in ["evt_pi_a", "evt_pi_b"] {
        let pi = json!({"id": id, "object": "event", "type": "payment_intent.succeeded",
            "livemode": false, "data": {"object": {"id": "pi_auto", "object": "payment_intent",
            "amount": amount, "amount_received": amount, "currency": "usd", "livemode": false,
            "status": "succeeded", "metadata": {"tenant": "acme", "attempt": attempt.id}}}});
        assert_eq!(send(&p, "stripe", id, pi).await, "accepted");
    }
    processor.handle_stream_batch(p.read_stream().await).await;
    let w = ledger.wallet(&acme()).await.unwrap().unwrap();
    assert_eq!(
        w.balance.minor(),
        1000 - 100 * PRICE + amount,
        "credited once"
    );
    let closed = ledger.attempt(&acme(), &attempt.id).await.unwrap().unwrap();
    assert_eq!(closed.state, AttemptState::Credited);
    assert_eq!(
        ledger.autopay(&acme()).await.unwrap().unwrap().open_attempt,
        None
    );
    assert!(pass.due_attempts(far, 10).await.unwrap().items.is_empty());
    // The next recurring charge waits in its own shards once no attempt is open.
    assert!(pass.due_recurring(far, 10).await.unwrap().items.is_empty());
    ledger
        .set_autopay(&acme(), "ops", "set", Millis::new(0), |a| {
            a.recurring = Some(Recurring {
                schedule: Schedule::new(jiff::civil::date(2027, 1, 31), Every::Month),
                amount: usd().amount(9900),
                next: 0,
            });
            Ok("every month from 2027-01-31".into())
        })
        .await
        .unwrap();
    let waiting = pass.due_recurring(far, 10).await.unwrap().items;
    assert_eq!(
        waiting.len(),
        1,
        "found through the open index's recurring shards"
    );
}
