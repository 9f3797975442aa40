//! The Wallets page's comparison with Stripe (`/wallets/stripe`) over HTTP, the console started
//! with the Stripe stand-in's address and a test key: reached by the Wallets page's link, it says
//! the ledger agrees with Stripe in a clean state; a top-up paid in Stripe whose webhooks never
//! reached the inbox is listed with its kind; Stripe answering 500 (`Stripe-Should-Retry: false`,
//! so the client stops at once) gives the error box, never a clean verdict.

use super::{agent, login, start_console_with, Rig};
use integration_tests::stripe::Standin;
use serde_json::json;
use wallet_ledger::{Currency, Ledger, TenantId, Wallet};

/// The `href` of the link `id="ID"` in `html`.
fn link(html: &str, id: &str) -> String {
    let at = html
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in {html}"));
    let rest = &html[at..];
    let rest = &rest[rest.find(r#"href=""#).expect("an href") + 6..];
    rest[..rest.find('"').expect("closing quote")].to_owned()
}

#[tokio::test]
async fn the_comparison_with_stripe_says_clean_lists_a_difference_by_kind_and_shows_an_outage() {
    let rig = Rig::new().await;
    let s = Standin::start();
    let usd = Currency::parse("usd").expect("usd");
    Ledger::new(&rig.store)
        .create(&Wallet::new(
            TenantId::parse("acme").expect("tenant"),
            usd.amount(7),
            usd.amount(0),
            None,
            0,
        ))
        .await
        .expect("a wallet");
    let base = s.base();
    let (_console, url, login_url) = start_console_with(
        &rig.h.table,
        &rig.retry_url,
        &rig.quarantine_url,
        &[
            ("STRIPE_API_BASE", base.as_str()),
            ("STRIPE_SECRET_KEY", "sk_test_it"),
        ],
    );
    let agent = agent();
    let cookie = login(&agent, &login_url);
    let get = |path: &str| {
        let mut reply = agent
            .get(format!("{url}{}", path.trim_start_matches('/')))
            .header("Cookie", &cookie)
            .call()
            .expect("answered");
        let status = reply.status().as_u16();
        (status, reply.body_mut().read_to_string().expect("html"))
    };
    let (status, wallets) = get("wallets");
    assert_eq!(status, 200, "{wallets}");
    let compare = link(&wallets, "compare-stripe");
    assert_eq!(compare, "/wallets/stripe");

    let (status, clean) = get(&compare);
    assert_eq!(status, 200, "{clean}");
    assert!(
        clean.contains("The ledger agrees with Stripe."),
        "a clean state: {clean}"
    );
    assert!(!clean.contains("stripe-differences"), "{clean}");

    // A top-up paid two hours ago (past the grace for webhooks on their way) on the stand-in's
    // clock; its webhooks go nowhere: the ledger never heard of it.
    s.advance(-2 * 3600);
    let paid = s.call(
        "POST",
        "/_standin/checkout_sessions",
        Some(
            &json!({"amount": 1200, "currency": "usd", "metadata": {"tenant": "acme"},
            "payment_intent_metadata": {"tenant": "acme"}}),
        ),
    );
    s.advance(2 * 3600);
    let intent = paid["payment_intent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a paid intent: {paid}"))
        .to_owned();
    let (status, found) = get(&compare);
    assert_eq!(status, 200, "{found}");
    assert!(!found.contains("The ledger agrees with Stripe."), "{found}");
    assert!(
        found.contains(r#"data-kind="StripePaidNotCredited""#),
        "counted by kind: {found}"
    );
    let table = &found[found.find(r#"id="stripe-differences""#).expect("the table")..];
    let row = &table[table.find(&intent).expect("the intent listed")..];
    let row = &row[..row.find("</tr>").expect("its row's end")];
    assert!(row.contains("acme"), "its tenant: {row}");
    let before = &table[..table.find(&intent).expect("listed")];
    let row_start = &before[before.rfind("<tr>").expect("its row")..];
    assert!(
        row_start.contains("paid in Stripe, not credited"),
        "its kind on its row: {row_start}"
    );

    // Stripe fails: the error box, not a verdict.
    s.fault(
        json!({"method": "GET", "path": "/v1/payment_intents*", "status": 500,
        "should_retry": false, "times": 20}),
    );
    let (status, outage) = get(&compare);
    assert_eq!(status, 200, "{outage}");
    assert!(
        outage.contains("The comparison could not be made"),
        "the error box: {outage}"
    );
    assert!(
        !outage.contains("The ledger agrees with Stripe."),
        "{outage}"
    );
    assert!(!outage.contains("stripe-differences"), "{outage}");
}
