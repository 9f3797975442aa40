//! The wallet ledger through the real pipeline against the emulator: signed webhooks → ingest →
//! stream → process (the deployed registry) → one transaction per event. Property tests with
//! fewer cases than the in-memory ones, concurrency, re-drives of committed messages, and Stripe's
//! delayed-payment flow as Stripe sends it.

use aws_sdk_dynamodb::types::AttributeValue;
use inbox_core::clock::SystemClock;
use inbox_core::domain::{EventId, MessageKey, SourceName, Status};
use inbox_core::store::attr::{self, s};
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{Applied, Effect, Item, ItemStore, ItemWriter};
use integration_tests::pipeline::{Pipeline, TestProcessor};
use proptest::prelude::*;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use wallet_ledger::balance::items::{wallet_pk, WALLET_SK};
use wallet_ledger::reconcile::{reconcile, ReconcileOptions};
use wallet_ledger::{CreateOutcome, Currency, Entry, Funds, Ledger, Wallet, WalletSources};

const PRICE: i64 = 7;

fn usd() -> Currency {
    Currency::parse("usd").unwrap()
}

/// Reconciliation with `stale_after_ms` and the default retention (30 days).
fn opts(stale_after_ms: i64) -> ReconcileOptions {
    ReconcileOptions::new(stale_after_ms, std::time::Duration::from_secs(30 * 86_400))
}

async fn setup() -> (Pipeline, TestProcessor<SystemClock>, DynamoTable) {
    let p = Pipeline::new().await;
    let store = DynamoTable::new(p.harness.client.clone(), p.harness.table.clone());
    let registry = process_function::registry(store.clone(), WalletSources::default());
    let processor = p.processor(registry, SystemClock).await;
    let wallet = Wallet::new(
        wallet_ledger::TenantId::parse("acme").unwrap(),
        usd().amount(PRICE),
        usd().amount(-1_000_000),
        Some(usd().amount(1_000_000)),
        0,
    );
    assert_eq!(
        Ledger::new(&store).create(&wallet).await.unwrap(),
        CreateOutcome::Created
    );
    (p, processor, store)
}

async fn mail(
    p: &Pipeline,
    webhook_id: &str,
    kind: &str,
    message_id: &str,
    extra: serde_json::Value,
) -> integration_tests::Reply {
    let mut data = json!({"message_id": message_id, "tenant": "acme"});
    if let (Some(d), Some(e)) = (data.as_object_mut(), extra.as_object()) {
        d.extend(e.clone());
    }
    let body = json!({"type": kind, "timestamp": "2026-11-30T10:00:00Z", "data": data}).to_string();
    let headers = p.harness.sign("mailer", body.as_bytes(), webhook_id);
    p.harness
        .send(&integration_tests::api_event(
            "POST",
            "mailer",
            &headers,
            Some(&body),
            false,
        ))
        .await
}

async fn wallet(store: &DynamoTable) -> Wallet {
    Ledger::new(store)
        .wallet(&wallet_ledger::TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .unwrap()
}

async fn entries(store: &DynamoTable) -> Vec<Entry> {
    let ledger = Ledger::new(store);
    let entries = ledger.entries(&wallet(store).await).await.unwrap();
    assert_eq!(entries.unreadable, 0);
    entries.entries
}

#[tokio::test]
async fn fifty_concurrent_deliveries_of_one_accepted_event_debit_once() {
    let (p, processor, store) = setup().await;
    let p = Arc::new(p);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move {
                mail(&p, "msg_accepted_1", "message.accepted", "m1", json!({})).await
            })
        })
        .collect();
    let mut codes: HashMap<String, usize> = HashMap::new();
    for t in tasks {
        *codes.entry(t.await.unwrap().code().to_owned()).or_default() += 1;
    }
    assert_eq!(
        (codes.get("accepted"), codes.get("duplicate")),
        (Some(&1), Some(&49)),
        "{codes:?}"
    );
    let batch = p.read_stream().await;
    assert_eq!(batch.records.len(), 1);
    processor.handle_stream_batch(batch.clone()).await;
    processor.handle_stream_batch(batch).await; // and the stream redelivers it
    let w = wallet(&store).await;
    assert_eq!((w.balance.minor(), w.held.minor()), (-PRICE, 0));
    let e = entries(&store).await;
    assert_eq!(e.len(), 1, "one debit");
    assert_eq!(
        (e[0].event_source.as_str(), e[0].event_id.as_str()),
        ("mailer", "msg_accepted_1")
    );
}

#[tokio::test]
async fn a_row_and_entry_of_the_old_layout_settle_once_and_reconcile() {
    let (p, processor, store) = setup().await;
    let acme = wallet_ledger::TenantId::parse("acme").unwrap();
    mail(&p, "msg_old_s", "message.sent", "m1", json!({})).await;
    processor.handle_stream_batch(p.read_stream().await).await;
    // Rewritten as the layout before rows kept their entries: the row without `entries`, its
    // hold an `ENTRY#` item beside it.
    let ledger = Ledger::new(&store);
    let held = ledger.email_row(&acme, "m1").await.unwrap().unwrap();
    assert_eq!(held.entries.len(), 1, "the hold's entry is in the row");
    let mut row = store
        .get_item(
            &wallet_pk("acme"),
            &format!("{}m1", wallet_ledger::balance::items::EMAIL_PREFIX),
        )
        .await
        .unwrap()
        .unwrap();
    row.remove(wallet_ledger::balance::items::ROW_ENTRIES);
    let entry = Entry::of_row(&held.entries[0], &acme, "m1", usd()).to_item();
    for item in [row, entry] {
        p.harness
            .client
            .put_item()
            .table_name(&p.harness.table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
    }

    mail(&p, "msg_old_a", "message.accepted", "m1", json!({})).await;
    let batch = p.read_stream().await;
    processor.handle_stream_batch(batch.clone()).await;
    processor.handle_stream_batch(batch).await; // and the stream redelivers it
    let w = wallet(&store).await;
    assert_eq!(
        (w.balance.minor(), w.held.minor()),
        (-PRICE, 0),
        "one debit"
    );
    let kinds: Vec<_> = entries(&store)
        .await
        .iter()
        .map(|e| (e.kind, e.event_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (
                wallet_ledger::balance::rules::EntryKind::Hold,
                "msg_old_s".to_owned()
            ),
            (
                wallet_ledger::balance::rules::EntryKind::Debit,
                "msg_old_a".to_owned()
            )
        ]
    );
    let settled = ledger.email_row(&acme, "m1").await.unwrap().unwrap();
    assert_eq!(
        settled.state,
        wallet_ledger::balance::rules::EmailState::Debited
    );
    assert_eq!(settled.entries.len(), 1, "the debit in the row");
    let report = reconcile(
        &store,
        inbox_core::clock::Clock::now_millis(&SystemClock),
        opts(86_400_000),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.entries, 2);
}

#[tokio::test]
async fn re_driving_a_committed_message_cannot_debit_twice() {
    let (p, processor, store) = setup().await;
    // One batch each, so the hold comes before the debit (in one batch, at the deployed
    // concurrency, the two may be decided in either order: a different, equally valid ledger).
    mail(&p, "msg_s", "message.sent", "m1", json!({})).await;
    let mut batch = p.read_stream().await;
    let (response, _) = processor.handle_stream_batch(batch.clone()).await;
    assert!(response.batch_item_failures.is_empty());
    mail(&p, "msg_a", "message.accepted", "m1", json!({})).await;
    let second = p.read_stream().await;
    let (response, _) = processor.handle_stream_batch(second.clone()).await;
    assert!(response.batch_item_failures.is_empty());
    batch.records.extend(second.records);
    let after_commit = (wallet(&store).await, entries(&store).await.len());
    assert_eq!(
        (
            after_commit.0.balance.minor(),
            after_commit.0.held.minor(),
            after_commit.1
        ),
        (-PRICE, 0, 2)
    );

    // The invocation "crashes" after the transaction committed and before it reports: the stream
    // delivers the batch again, the reaper and an operator re-drive the messages.
    processor.handle_stream_batch(batch).await;
    let key = MessageKey::new(
        SourceName::parse("mailer").unwrap(),
        EventId::parse("msg_a").unwrap(),
    );
    assert_eq!(
        processor.process_key(&key).await.unwrap(),
        inbox_core::process::Outcome::Skipped(inbox_core::process::Skip::Terminal)
    );
    // Even a forced replay re-runs the handler on the committed state: the email row says debited.
    let replay = inbox_core::ops::replay(
        &store,
        processor.retry_queue(),
        &SystemClock,
        &key,
        "ops",
        true,
    )
    .await
    .unwrap();
    assert_eq!(replay, inbox_core::ops::ReplayOutcome::Replayed);
    assert!(p.drain_retry_once(&processor).await >= 1);
    assert_eq!(
        p.message_of("mailer", "msg_a").await.status,
        Status::Processed
    );
    let w = wallet(&store).await;
    assert_eq!((w.balance.minor(), w.held.minor()), (-PRICE, 0));
    assert_eq!(entries(&store).await.len(), 2, "no new entry");
    let report = reconcile(
        &store,
        inbox_core::clock::Clock::now_millis(&SystemClock),
        opts(86_400_000),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn stripe_top_up_and_refund_through_the_pipeline() {
    let (p, processor, store) = setup().await;
    let session = json!({"object": "checkout.session", "id": "cs_1", "payment_intent": "pi_1", "amount_total": 5000,
        "currency": "usd", "payment_status": "paid", "metadata": {"tenant": "acme"}});
    let intent = json!({"object": "payment_intent", "id": "pi_1", "amount_received": "5000", "currency": "usd", "metadata": {"tenant": "acme"}});
    let refund = json!({"object": "charge", "id": "ch_1", "payment_intent": "pi_1", "amount_refunded": 1500, "currency": "usd"});
    for (id, kind, object) in [
        ("evt_cs", "checkout.session.completed", session),
        ("evt_pi", "payment_intent.succeeded", intent),
        ("evt_re", "charge.refunded", refund),
    ] {
        let r = p
            .ingest(
                id,
                kind,
                json!({"livemode": false, "data": {"object": object}}),
            )
            .await;
        assert_eq!(r.code(), "accepted");
    }
    p.ingest(
        "evt_other",
        "customer.created",
        json!({"data": {"object": {"id": "cus_1"}}}),
    )
    .await;
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    // The batch runs at the deployed concurrency: the refund may be decided before the payment is
    // known (then it is recorded on the payment), or meet a conflict and wait for its retry
    // (jitter 0: due at once) — never a wrong balance.
    let first = summary.outcomes.get("processed").copied().unwrap_or(0);
    let waiting = summary.outcomes.get("retrying").copied().unwrap_or(0);
    assert_eq!((first + waiting, first >= 2), (3, true), "{summary:?}");
    assert_eq!(
        summary.outcomes.get("ignored"),
        Some(&1),
        "no handler for other Stripe events"
    );
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    for id in ["evt_cs", "evt_pi", "evt_re"] {
        while p.message(id).await.status != Status::Processed {
            assert!(tokio::time::Instant::now() < deadline, "{id} not processed");
            p.drain_retry_once(&processor).await;
        }
    }
    assert_eq!(wallet(&store).await.balance.minor(), 3500);
    let kinds: Vec<_> = entries(&store)
        .await
        .iter()
        .map(|e| (e.kind.as_str(), e.event_id.clone()))
        .collect();
    // The session and the intent credit the same payment once in total: whichever of the two
    // was decided first (they run concurrently) is the top-up.
    let topup_by = kinds.first().map(|(_, id)| id.clone()).unwrap_or_default();
    assert!(
        ["evt_cs", "evt_pi"].contains(&topup_by.as_str()),
        "{kinds:?}"
    );
    // A refund decided before its payment is known is recorded on the payment and taken back by
    // the payment's credit, in the same transaction: its entry then names the payment's event.
    let refund_by = kinds.get(1).map(|(_, id)| id.clone()).unwrap_or_default();
    assert!(refund_by == "evt_re" || refund_by == topup_by, "{kinds:?}");
    assert_eq!(
        kinds,
        vec![("topup", topup_by), ("topup_refund", refund_by)]
    );
}

/// A Checkout Session of `acme` as Stripe renders it, paid by a delayed method (ACH debit).
fn ach_session(id: &str, pi: &str, status: &str) -> serde_json::Value {
    json!({"id": id, "object": "checkout.session", "amount_subtotal": 2000, "amount_total": 2000,
        "currency": "usd", "customer": "cus_1", "livemode": false, "metadata": {"tenant": "acme"},
        "mode": "payment", "payment_intent": pi, "payment_method_types": ["us_bank_account"],
        "payment_status": status, "status": "complete"})
}

#[tokio::test]
async fn a_delayed_payment_through_the_pipeline_is_credited_once_when_its_funds_arrive() {
    let (p, processor, store) = setup().await;
    let send = |id: &'static str, kind: &'static str, object: serde_json::Value| {
        let p = &p;
        async move {
            let body = json!({"api_version": "2024-06-20", "created": 1_795_000_000,
                "livemode": false, "pending_webhooks": 1, "data": {"object": object}});
            p.ingest(id, kind, body).await.code().to_owned()
        }
    };
    // Day 0: checkout completes unpaid (ACH); another session of the same day will fail.
    send(
        "evt_cs",
        "checkout.session.completed",
        ach_session("cs_1", "pi_1", "unpaid"),
    )
    .await;
    send(
        "evt_cs2",
        "checkout.session.completed",
        ach_session("cs_2", "pi_2", "unpaid"),
    )
    .await;
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes.get("processed"), Some(&2), "{summary:?}");
    assert_eq!(wallet(&store).await.balance.minor(), 0, "awaiting funds");
    let row = Ledger::new(&store)
        .payment_row(&wallet_ledger::TenantId::parse("acme").unwrap(), "pi_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.funds, row.expected.get()), (Funds::Awaiting, 2000));

    // Days later: the funds arrive. The intent's event carries no metadata (Checkout does not
    // copy it), the session's async event is delivered twice; an intent of the same Stripe
    // account that names no tenant (kept as unmatched), and the other session's failure, arrive
    // too.
    let intent = json!({"id": "pi_1", "object": "payment_intent", "amount": 2000,
        "amount_received": 2000, "currency": "usd", "livemode": false, "metadata": {},
        "status": "succeeded"});
    let other = json!({"id": "pi_other", "object": "payment_intent", "amount": 999,
        "amount_received": 999, "currency": "usd", "livemode": false, "metadata": {},
        "status": "succeeded"});
    assert_eq!(
        send("evt_pi", "payment_intent.succeeded", intent).await,
        "accepted"
    );
    let succeeded = ach_session("cs_1", "pi_1", "paid");
    assert_eq!(
        send(
            "evt_async",
            "checkout.session.async_payment_succeeded",
            succeeded.clone()
        )
        .await,
        "accepted"
    );
    assert_eq!(
        send(
            "evt_async",
            "checkout.session.async_payment_succeeded",
            succeeded
        )
        .await,
        "duplicate"
    );
    send("evt_other", "payment_intent.succeeded", other).await;
    send(
        "evt_failed",
        "checkout.session.async_payment_failed",
        ach_session("cs_2", "pi_2", "unpaid"),
    )
    .await;
    let batch = p.read_stream().await;
    let (response, summary) = processor.handle_stream_batch(batch.clone()).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(
        (
            summary.outcomes.get("processed"),
            summary.outcomes.get("ignored")
        ),
        (Some(&4), None),
        "{summary:?}"
    );
    assert_eq!(wallet(&store).await.balance.minor(), 2000, "credited once");
    assert_eq!(
        p.message_of("stripe", "evt_other").await.status,
        Status::Processed
    );
    let kept: Vec<_> = Ledger::new(&store)
        .unmatched(i64::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|u| (u.payment_key, u.amount))
        .collect();
    assert_eq!(
        kept,
        vec![("pi_other".to_owned(), 999)],
        "kept for a human; pi_1's intent found its payment"
    );
    assert!(
        p.receive(&p.quarantine_url).await.records.is_empty(),
        "nothing quarantined: no alarm"
    );
    let failed = Ledger::new(&store)
        .payment_row(&wallet_ledger::TenantId::parse("acme").unwrap(), "pi_2")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((failed.funds, failed.credited.get()), (Funds::Failed, 0));

    // A refund of it later: the charge names no tenant; the payment index does.
    let refund = json!({"id": "ch_1", "object": "charge", "amount": 2000, "amount_refunded": 500,
        "currency": "usd", "livemode": false, "metadata": {}, "payment_intent": "pi_1",
        "refunded": false});
    assert_eq!(send("evt_re", "charge.refunded", refund).await, "accepted");
    processor.handle_stream_batch(p.read_stream().await).await;
    assert_eq!(wallet(&store).await.balance.minor(), 1500);
    // The stream redelivers the funds' batch.
    processor.handle_stream_batch(batch).await;
    assert_eq!(wallet(&store).await.balance.minor(), 1500);
    let kinds: Vec<_> = entries(&store)
        .await
        .iter()
        .map(|e| (e.kind.as_str(), e.amount.minor(), e.event_id.clone()))
        .collect();
    // The batch is processed 10 at a time, so either success event may be the one that credits.
    let credited_by = kinds.first().map(|k| k.2.clone()).unwrap_or_default();
    assert!(
        credited_by == "evt_pi" || credited_by == "evt_async",
        "{kinds:?}"
    );
    assert_eq!(
        kinds,
        vec![
            ("topup", 2000, credited_by),
            ("topup_refund", 500, "evt_re".to_string())
        ],
        "whichever success event came first credited; the others found the payment"
    );
    let report = reconcile(
        &store,
        inbox_core::clock::Clock::now_millis(&SystemClock),
        opts(86_400_000),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.wallets, 1);
}

#[tokio::test]
async fn the_readme_sample_events_move_the_money_the_readme_says() {
    let (p, processor, store) = setup().await;
    for file in [
        "top-up",
        "ach-completed",
        "ach-succeeded",
        "refund",
        "unmatched-top-up",
    ] {
        let path = integration_tests::root().join(format!("events/wallet/{file}.json"));
        let body = std::fs::read_to_string(&path).unwrap();
        let headers = p.harness.sign("stripe", body.as_bytes(), "");
        let reply = p
            .harness
            .send(&integration_tests::api_event(
                "POST",
                "stripe",
                &headers,
                Some(&body),
                false,
            ))
            .await;
        assert_eq!(reply.code(), "accepted", "{file}");
    }
    let (response, summary) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(summary.outcomes.get("processed"), Some(&5), "{summary:?}");
    assert_eq!(
        wallet(&store).await.balance.minor(),
        2000 + 5000 - 500,
        "+20.00, an ACH payment of 50.00 once its funds arrived, a refund of 5.00"
    );
    // The bind flow: the top-up without metadata waits, unmatched, until bound.
    let ledger = Ledger::new(&store);
    let waiting = ledger.unmatched(i64::MAX).await.unwrap();
    assert_eq!(
        waiting
            .iter()
            .map(|u| (u.payment_key.as_str(), u.amount, u.email.as_deref()))
            .collect::<Vec<_>>(),
        vec![("pi_demo_9", 3000, Some("payer@example.com"))]
    );
    let acme = wallet_ledger::TenantId::parse("acme").unwrap();
    let bound = ledger.bind("pi_demo_9", &acme, "you", 0).await.unwrap();
    for key in &bound.messages {
        inbox_core::ops::replay(
            &store,
            processor.retry_queue(),
            &SystemClock,
            key,
            "you",
            true,
        )
        .await
        .unwrap();
    }
    processed(&p, &processor, &["evt_demo_unmatched_1"]).await;
    assert_eq!(
        wallet(&store).await.balance.minor(),
        2000 + 5000 - 500 + 3000
    );
}

#[tokio::test]
async fn an_unknown_tenant_is_quarantined_and_replayable_once_the_wallet_exists() {
    let (p, processor, store) = setup().await;
    let body = json!({"type": "message.sent", "data": {"message_id": "m9", "tenant": "newco"}})
        .to_string();
    let headers = p.harness.sign("mailer", body.as_bytes(), "msg_newco");
    p.harness
        .send(&integration_tests::api_event(
            "POST",
            "mailer",
            &headers,
            Some(&body),
            false,
        ))
        .await;
    processor.handle_stream_batch(p.read_stream().await).await;
    let failed = p.message_of("mailer", "msg_newco").await;
    assert_eq!(failed.status, Status::Failed);
    assert!(failed
        .last_error
        .as_deref()
        .unwrap_or_default()
        .contains("no wallet for tenant \"newco\""));
    let notice = p.receive(&p.quarantine_url).await;
    assert_eq!(notice.records.len(), 1);

    let newco = Wallet::new(
        wallet_ledger::TenantId::parse("newco").unwrap(),
        usd().amount(3),
        usd().amount(0),
        None,
        0,
    );
    Ledger::new(&store).create(&newco).await.unwrap();
    let key = failed.key();
    inbox_core::ops::replay(
        &store,
        processor.retry_queue(),
        &SystemClock,
        &key,
        "ops",
        false,
    )
    .await
    .unwrap();
    p.drain_retry_once(&processor).await;
    let held = store
        .get_item(&wallet_pk("newco"), WALLET_SK)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(held.get("held"), Some(&AttributeValue::N("3".into())));
}

#[tokio::test]
async fn a_wallet_is_created_once_and_commits_are_all_or_nothing() {
    let (_p, _processor, store) = setup().await;
    let ledger = Ledger::new(&store);
    let again = Wallet::new(
        wallet_ledger::TenantId::parse("acme").unwrap(),
        Currency::parse("eur").unwrap().amount(99),
        Currency::parse("eur").unwrap().amount(0),
        None,
        1,
    );
    assert_eq!(
        ledger.create(&again).await.unwrap(),
        CreateOutcome::AlreadyExists
    );
    let w = wallet(&store).await;
    assert_eq!(
        (w.currency.as_str(), w.message_price.minor(), w.created_at),
        ("usd", PRICE, 0),
        "left unchanged"
    );

    // Several effects are one transaction: a failed condition on one writes none of them.
    let item = |pk: &str| Item::from([("pk".to_string(), s(pk)), ("sk".to_string(), s("X"))]);
    let fresh = Effect::Create(item("T#fresh"));
    let counter = Effect::Adjust {
        pk: "T#counter".into(),
        sk: "X".into(),
        add: vec![("n".into(), 2)],
        set: Vec::new(),
    };
    let taken = Effect::Create(w.to_item());
    assert_eq!(
        store
            .commit(vec![fresh.clone(), counter.clone(), taken])
            .await
            .unwrap(),
        Applied::EffectConflict
    );
    for pk in ["T#fresh", "T#counter"] {
        assert!(store.get_item(pk, "X").await.unwrap().is_none(), "{pk}");
    }
    assert_eq!(
        store.commit(vec![fresh, counter.clone()]).await.unwrap(),
        Applied::Done
    );
    assert!(store.get_item("T#fresh", "X").await.unwrap().is_some());
    // One effect is one conditional write: an update adds, a replace at a stale version conflicts.
    assert_eq!(store.commit(vec![counter]).await.unwrap(), Applied::Done);
    let n = store.get_item("T#counter", "X").await.unwrap().unwrap();
    assert_eq!(attr::get_n(&n, "n"), Some(4));
    let stale = Effect::Replace {
        item: item("T#fresh"),
        expected_version: Some(3),
    };
    assert_eq!(
        store.commit(vec![stale]).await.unwrap(),
        Applied::EffectConflict
    );
    let new = Effect::Replace {
        item: item("T#new"),
        expected_version: None,
    };
    assert_eq!(store.commit(vec![new]).await.unwrap(), Applied::Done);
    let stored = store.get_item("T#new", "X").await.unwrap().unwrap();
    assert_eq!(attr::get_n(&stored, "version"), Some(0));
    assert_eq!(store.commit(Vec::new()).await.unwrap(), Applied::Done);
}

// ---- Property test through the pipeline (fewer cases: each is a table, a stream and ~10 requests). ----

fn model(events: &[(u8, u8)]) -> (i64, i64) {
    let mut seen: HashMap<u8, HashSet<u8>> = HashMap::new();
    for (m, k) in events {
        seen.entry(*m).or_default().insert(*k);
    }
    seen.values().fold((0, 0), |(b, h), kinds| match () {
        _ if kinds.contains(&2) => (b, h),
        _ if kinds.contains(&1) => (b - PRICE, h),
        _ if kinds.contains(&0) => (b, h + PRICE),
        _ => (b, h),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn any_order_with_duplicates_through_the_pipeline_matches_the_model(
        plan in prop::collection::vec((0u8..2, 0u8..4, 1usize..3), 1..7).prop_flat_map(|events| {
            let deliveries: Vec<_> = events.iter().enumerate()
                .flat_map(|(i, (m, k, copies))| std::iter::repeat_n((*m, *k, i), *copies)).collect();
            Just(deliveries).prop_shuffle()
        })
    ) {
        // k: 0 sent, 1 accepted, 2 hard bounce, 3 soft bounce.
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let (balance, held, clean) = rt.block_on(async {
            let (p, processor, store) = setup().await;
            for (m, k, i) in &plan {
                let (kind, extra) = match k {
                    0 => ("message.sent", json!({})),
                    1 => ("message.accepted", json!({})),
                    2 => ("message.bounced", json!({"bounce_type": "hard"})),
                    _ => ("message.bounced", json!({"bounce_type": "soft"})),
                };
                let reply = mail(&p, &format!("msg_{i}"), kind, &format!("m{m}"), extra).await;
                assert_eq!(reply.status, 200);
            }
            let (response, _) = processor.handle_stream_batch(p.read_stream().await).await;
            assert!(response.batch_item_failures.is_empty());
            let w = wallet(&store).await;
            let report = reconcile(&store, 0, opts(i64::MAX)).await.unwrap();
            (w.balance.minor(), w.held.minor(), report.is_clean())
        });
        let distinct: Vec<(u8, u8)> = {
            let mut seen = HashSet::new();
            plan.iter().filter(|(_, _, i)| seen.insert(*i)).map(|(m, k, _)| (*m, *k)).collect()
        };
        prop_assert_eq!((balance, held), model(&distinct));
        prop_assert!(clean);
    }
}

/// Ingests a test-mode Stripe event carrying `object` and processes what the stream holds, then
/// the retries its conflicts left until every message named is processed.
async fn stripe_batch(
    p: &Pipeline,
    processor: &TestProcessor<SystemClock>,
    events: &[(&str, &str, serde_json::Value)],
) {
    for (id, kind, object) in events {
        let body =
            json!({"api_version": "2024-06-20", "livemode": false, "data": {"object": object}});
        assert_eq!(p.ingest(id, kind, body).await.code(), "accepted");
    }
    let (response, _) = processor.handle_stream_batch(p.read_stream().await).await;
    assert!(response.batch_item_failures.is_empty());
    processed(
        p,
        processor,
        &events.iter().map(|e| e.0).collect::<Vec<_>>(),
    )
    .await;
}

/// Drains the retry queue until every message named is processed.
async fn processed(p: &Pipeline, processor: &TestProcessor<SystemClock>, ids: &[&str]) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    for id in ids {
        while p.message(id).await.status != Status::Processed {
            assert!(tokio::time::Instant::now() < deadline, "{id} not processed");
            p.drain_retry_once(processor).await;
        }
    }
}

#[tokio::test]
async fn an_unmatched_checkout_top_up_is_listed_counted_after_the_window_and_bound_once() {
    let (p, processor, store) = setup().await;
    let ledger = Ledger::new(&store);
    let tenant = |t: &str| wallet_ledger::TenantId::parse(t).unwrap();
    let beta = Wallet::new(
        tenant("beta"),
        usd().amount(PRICE),
        usd().amount(0),
        None,
        0,
    );
    ledger.create(&beta).await.unwrap();
    // A top-up through a misconfigured payment link: its session carries no metadata. And the
    // ordinary card case: an intent without the tenant, its session a moment later.
    let lost = json!({"id": "cs_lost", "object": "checkout.session", "payment_intent": "pi_lost",
        "amount_total": 4000, "currency": "usd", "customer": "cus_9",
        "customer_details": {"email": "payer@example.com"}, "mode": "payment",
        "payment_status": "paid", "metadata": {}});
    let card_intent = json!({"id": "pi_card", "object": "payment_intent", "amount": 1500,
        "amount_received": 1500, "currency": "usd", "metadata": {}, "receipt_email": "c@example.com"});
    let card_session = json!({"id": "cs_card", "object": "checkout.session", "payment_intent": "pi_card",
        "amount_total": 1500, "currency": "usd", "payment_status": "paid", "metadata": {"tenant": "acme"}});
    let refund = json!({"id": "ch_lost", "object": "charge", "amount": 4000, "amount_refunded": 1000,
        "currency": "usd", "metadata": {}, "payment_intent": "pi_lost"});
    stripe_batch(
        &p,
        &processor,
        &[
            ("evt_lost", "checkout.session.completed", lost),
            ("evt_card_pi", "payment_intent.succeeded", card_intent),
        ],
    )
    .await;
    let waiting: HashSet<String> = ledger
        .unmatched(i64::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.payment_key)
        .collect();
    assert_eq!(
        waiting,
        HashSet::from(["pi_card".to_owned(), "pi_lost".to_owned()])
    );
    stripe_batch(
        &p,
        &processor,
        &[
            ("evt_card_cs", "checkout.session.completed", card_session),
            ("evt_lost_re", "charge.refunded", refund),
        ],
    )
    .await;
    let listed = ledger.unmatched(i64::MAX).await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|u| (
                u.payment_key.as_str(),
                u.amount,
                u.email.as_deref(),
                u.customer.as_deref()
            ))
            .collect::<Vec<_>>(),
        vec![("pi_lost", 4000, Some("payer@example.com"), Some("cus_9"))],
        "the card's intent was matched by its session; the lost top-up waits"
    );
    assert_eq!(wallet(&store).await.balance.minor(), 1500);

    // The gauge counts it only once it has waited longer than the window.
    let first_seen = listed[0].first_seen;
    let window = 60 * 60_000;
    let gauge = |at: i64| {
        let store = store.clone();
        async move {
            reconcile(&store, at, opts(i64::MAX).with_unmatched_after(window))
                .await
                .unwrap()
        }
    };
    assert!(gauge(first_seen + window)
        .await
        .unmatched_payments
        .is_empty());
    let late = gauge(first_seen + window + 1).await;
    assert_eq!(
        late.unmatched_payments
            .iter()
            .map(|u| u.payment_key.as_str())
            .collect::<Vec<_>>(),
        vec!["pi_lost"]
    );
    assert_eq!(
        late.metrics()
            .iter()
            .find(|m| m.name == "UnmatchedPayments")
            .map(|m| m.value),
        Some(1)
    );

    // Bound by an operator; its message replayed through the pipeline credits it once, with
    // the refund that waited on its index.
    let bound = ledger
        .bind("pi_lost", &tenant("acme"), "alice", first_seen + window + 2)
        .await
        .unwrap();
    assert_eq!(bound.refund_total, 1000);
    for key in &bound.messages {
        let replayed = inbox_core::ops::replay(
            &store,
            processor.retry_queue(),
            &SystemClock,
            key,
            "alice",
            true,
        )
        .await
        .unwrap();
        assert_eq!(replayed, inbox_core::ops::ReplayOutcome::Replayed);
    }
    assert_eq!(
        bound
            .messages
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec!["stripe/evt_lost"]
    );
    processed(&p, &processor, &["evt_lost"]).await;
    assert_eq!(wallet(&store).await.balance.minor(), 1500 + 4000 - 1000);
    let kinds: Vec<_> = entries(&store)
        .await
        .iter()
        .map(|e| (e.kind.as_str(), e.subject.clone(), e.event_id.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("topup", "pi_lost".to_owned(), "evt_lost".to_owned()),
            ("topup_refund", "pi_lost".to_owned(), "evt_lost".to_owned()),
            ("topup", "pi_card".to_owned(), "evt_card_cs".to_owned()),
        ],
        "as if it had matched at once: its entries at the time its event was received"
    );
    assert!(ledger.unmatched(i64::MAX).await.unwrap().is_empty());
    assert!(gauge(first_seen + 10 * window)
        .await
        .unmatched_payments
        .is_empty());

    // Twice, or to a second tenant: refused with the reason; nothing moves.
    let twice = ledger
        .bind("pi_lost", &tenant("acme"), "bob", first_seen)
        .await
        .unwrap_err();
    assert!(
        twice
            .to_string()
            .contains("already bound to tenant \"acme\" (by alice)"),
        "{twice}"
    );
    let other = ledger
        .bind("pi_lost", &tenant("beta"), "bob", first_seen)
        .await
        .unwrap_err();
    assert!(
        other.to_string().contains("bound to tenant \"acme\""),
        "{other}"
    );
    assert_eq!(wallet(&store).await.balance.minor(), 4500);
    let report = reconcile(
        &store,
        inbox_core::clock::Clock::now_millis(&SystemClock),
        opts(86_400_000),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
}
