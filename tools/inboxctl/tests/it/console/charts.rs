//! The console's charts in a real browser (`console_charts.py`): events per minute by status on
//! the Events page, a destination's success rate and p50/p99 on the Destinations page, a
//! wallet's balance on its page, each with the number of bars or points its seeded data makes.

use super::{checkout_processor, key, processor_with, start_console, Rig};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::{EventId, EventType, MessageKey, SourceName};
use inbox_core::outbox::admin;
use inbox_core::outbox::delivery::{AttemptRecord, DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::pattern::Pattern;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::process::registry::Registry;
use inbox_core::store::{Inbox as _, NewMessage};
use serde_json::json;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use wallet_ledger::{Currency, Ledger, TenantId, Wallet, WalletConfig, WalletHandler};

const MIN: i64 = 60_000;
/// The most events the events chart reads (the console's `EVENT_CAP`, charts/read.rs).
const CAP: usize = 500;

/// Stores Stripe event `id` of `kind` received at `at` (the ingest path's own write).
async fn stored(rig: &Rig, id: &str, kind: &str, body: String, at: i64) {
    rig.store
        .put_if_absent(&NewMessage {
            key: MessageKey::new(
                SourceName::parse("stripe").expect("source"),
                EventId::parse(id).expect("id"),
            ),
            event_type: Some(EventType::parse(kind).expect("type")),
            received_at_ms: at,
            body: body.into_bytes(),
            body_digest: None,
            headers: Vec::new(),
            provider_id: None,
            unidentified: None,
            batch: None,
        })
        .await
        .expect("store");
}

/// A delivery of event `id` to `destination` with attempts `(at, status, duration ms)`.
async fn delivery(rig: &Rig, destination: &DestinationId, id: &str, attempts: &[(i64, u16, u64)]) {
    let first = attempts.first().map_or(0, |a| a.0);
    let mut d = OutboundDelivery::new(destination, &key("stripe", id), None, first - 1_000);
    for (i, &(at, status, duration_ms)) in attempts.iter().enumerate() {
        d.journal_attempt(AttemptRecord {
            at,
            attempt: u32::try_from(i).expect("few") + 1,
            status: Some(status),
            duration_ms,
            error: (status >= 300).then(|| format!("HTTP {status}")),
            body: String::new(),
            outcome: if status < 300 { "delivered" } else { "retry" }.into(),
        });
    }
    d.attempts = u32::try_from(attempts.len()).expect("few");
    d.status = DeliveryStatus::Delivered;
    d.delivered_at = attempts.last().map(|a| a.0);
    rig.store.save_delivery(&d, None).await.expect("save");
}

#[tokio::test]
async fn the_charts_draw_what_the_table_holds() {
    let rig = Rig::new().await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let now = SystemClock.now_millis();
    let minute = now.div_euclid(MIN) * MIN;
    let id = |name: &str| format!("evt_{name}_{}", &suffix[..8]);

    // Events: 10 minutes ago two failed checkouts and an ignored invoice; 5 minutes ago a
    // pending invoice; 2 hours ago an ignored invoice; 4 hours ago one out of the window.
    // Bars: failed and ignored at −10, pending at −5, ignored at −120: 4, of 5 events (and the
    // wallet's three top-ups below, processed at −90, −60 and −30: 7 bars of 8 events).
    let failing = Arc::new(AtomicBool::new(true));
    let processor = checkout_processor(
        &rig.store,
        &rig.sqs,
        &rig.retry_url,
        &rig.quarantine_url,
        failing,
    );
    let seeded = [
        (
            "f1",
            "checkout.session.completed",
            minute - 10 * MIN + 1_000,
            true,
        ),
        (
            "f2",
            "checkout.session.completed",
            minute - 10 * MIN + 2_000,
            true,
        ),
        ("i1", "invoice.paid", minute - 10 * MIN + 3_000, true),
        ("p1", "invoice.paid", minute - 5 * MIN + 1_000, false),
        ("i2", "invoice.paid", minute - 120 * MIN + 1_000, true),
        ("old", "invoice.paid", minute - 240 * MIN, true),
    ];
    for (name, kind, at, process) in seeded {
        let body = integration_tests::stripe_event(&id(name), kind, 0);
        stored(&rig, &id(name), kind, body, at).await;
        if process {
            processor
                .process_key(&key("stripe", &id(name)))
                .await
                .expect("process");
        }
    }

    // A destination wanting them, and deliveries with attempts in three 15-minute buckets:
    // 503 (100 ms) then 200 (40 ms) in one, a 200 (20 ms) an hour before, a 200 (10 ms) four
    // hours before. Points: 3 on each line.
    let dest_id = DestinationId::parse(&format!("charts-{}", &suffix[..8])).expect("id");
    let dest = Destination::new(
        &dest_id,
        "http://127.0.0.1:9/hook",
        vec![Pattern::parse("stripe:*").expect("pattern")],
        None,
        now,
    );
    admin::add(&rig.store, &dest, "setup", true)
        .await
        .expect("add destination");
    let quarter = 15 * MIN;
    let b = now.div_euclid(quarter) * quarter;
    delivery(
        &rig,
        &dest_id,
        &id("f1"),
        &[
            (b - quarter + 1_000, 503, 100),
            (b - quarter + 2_000, 200, 40),
        ],
    )
    .await;
    delivery(
        &rig,
        &dest_id,
        &id("i1"),
        &[(b - 4 * quarter + 1_000, 200, 20)],
    )
    .await;
    delivery(
        &rig,
        &dest_id,
        &id("old"),
        &[(b - 16 * quarter + 1_000, 200, 10)],
    )
    .await;

    // A wallet with three top-ups: three entries and the balance now, 4 points.
    let tenant = format!("charts-{}", &suffix[..8]);
    let usd = Currency::parse("usd").expect("usd");
    Ledger::new(&rig.store)
        .create(&Wallet::new(
            TenantId::parse(&tenant).expect("tenant"),
            usd.amount(25),
            usd.amount(0),
            None,
            now,
        ))
        .await
        .expect("create wallet");
    let wallets = processor_with(
        &rig.store,
        &rig.sqs,
        &rig.retry_url,
        &rig.quarantine_url,
        WalletHandler::new(rig.store.clone(), WalletConfig::default()).register(Registry::new()),
    );
    for (i, ago) in [90, 60, 30].into_iter().enumerate() {
        let name = format!("topup{i}");
        let body = integration_tests::stripe_event(&id(&name), "checkout.session.completed", 0)
            .replace(r#""tenant":"acme""#, &format!(r#""tenant":"{tenant}""#))
            .replace("pi_123", &format!("pi_{i}_{}", &suffix[..8]))
            .replace("cs_test_a1b2c3", &format!("cs_{i}_{}", &suffix[..8]));
        stored(
            &rig,
            &id(&name),
            "checkout.session.completed",
            body,
            now - ago * MIN,
        )
        .await;
        wallets
            .process_key(&key("stripe", &id(&name)))
            .await
            .expect("process a top-up");
    }

    let (console, url, login) = start_console(&rig.h.table, &rig.retry_url, &rig.quarantine_url);
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let screenshots = std::env::var("CONSOLE_CHARTS_SCREENSHOT").ok();
    let config = json!({
        "url": url, "login": login, "destination": dest_id.as_str(), "tenant": tenant,
        "chromium": chromium, "screenshot": screenshots,
        "events": {"rects": 7, "total": 8, "failed": 2},
        "points": {"rate": 3, "p50": 3, "p99": 3, "balance": 4},
    });
    let script = integration_tests::root().join("tools/inboxctl/tests/it/console_charts.py");
    let status = Command::new(integration_tests::python())
        .arg(&script)
        .arg(config.to_string())
        .status()
        .expect("run the Playwright script (scripts/requirements-dev.txt installs Playwright)");
    drop(console);
    assert!(
        status.success(),
        "the charts' browser script failed: {status}"
    );
}

/// The sum of a chart's `data-count`s in `html`.
fn counted(html: &str) -> u64 {
    html.split(r#"data-count=""#)
        .skip(1)
        .map(|rest| {
            rest[..rest.find('"').expect("closing quote")]
                .parse::<u64>()
                .expect("a count")
        })
        .sum()
}

#[tokio::test]
async fn past_its_cap_the_events_chart_says_where_it_stopped() {
    let rig = Rig::new().await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let now = SystemClock.now_millis();
    // 20 more than the cap, one every 5 s over the last 43 minutes: the newest 500 are read
    // (5 pages), the 20 oldest are not.
    let total = CAP + 20;
    let mut pending = Vec::new();
    for i in 0..total {
        let id = format!("evt_cap_{i:04}_{}", &suffix[..8]);
        let body = integration_tests::stripe_event(&id, "invoice.paid", 0);
        let at = now - 1_000 - i64::try_from(i).expect("few") * 5_000;
        let rig = &rig;
        pending.push(async move { stored(rig, &id, "invoice.paid", body, at).await });
        if pending.len() == 16 || i + 1 == total {
            futures_util::future::join_all(pending.drain(..)).await;
        }
    }

    let (_console, url, login_url) =
        start_console(&rig.h.table, &rig.retry_url, &rig.quarantine_url);
    let agent = super::agent();
    let cookie = super::login(&agent, &login_url);
    let mut reply = agent
        .get(format!("{url}events/chart?part=1"))
        .header("Cookie", &cookie)
        .call()
        .expect("answered");
    assert_eq!(reply.status().as_u16(), 200);
    let html = reply.body_mut().read_to_string().expect("html");
    assert_eq!(counted(&html), 500, "the newest 500 events are drawn");
    assert_eq!(html.matches(r#"<rect class="unread""#).count(), 1, "{html}");
    assert!(html.contains("the newest 500 only, sampled"), "{html}");
    assert!(
        html.contains("85 requests"),
        "five pages of 17 requests: {html}"
    );
}
