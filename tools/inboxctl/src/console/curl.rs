//! A ready `curl` that reproduces one delivery (`GET /delivery/curl`): the destination's URL,
//! the headers the deliver function sends (`outbox::send`: the Standard Webhooks three, then
//! `content-type`, `webhook-source`, `webhook-event-type`; `user-agent` from the deliver
//! function's client) and the event's body as stored, the exact bytes. The signature is never
//! computed here nor shown: `webhook-signature` is masked (the secrets are never rendered), so
//! the command reproduces the request's shape, not a request the receiver would verify. Its
//! `webhook-timestamp` is that of the delivery's last attempt (the receiver's tolerance, 5
//! minutes in the Standard Webhooks libraries, refuses an old one anyway).
//!
//! The page is whole (it works without JavaScript); the event page's link takes only its
//! `#curl` part in with htmx (`hx-select`), read on demand since the body may come from S3.

use super::copy::copy_button;
use super::event::key_of;
use super::events::event_href;
use super::http::{query, Params, Reply};
use super::{layout, Console};
use crate::error::{failed, usage, Result};
use inbox_core::outbox::admin;
use inbox_core::outbox::delivery::{DeliveryRef, OutboundDelivery};
use inbox_core::outbox::destination::DestinationId;
use inbox_core::outbox::sign::{
    SOURCE_HEADER, TYPE_HEADER, WEBHOOK_ID, WEBHOOK_SIGNATURE, WEBHOOK_TIMESTAMP,
};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::MessageStore as _;
use maud::{html, Markup};

/// What stands in for the signature in the command.
pub const MASKED_SIGNATURE: &str = "v1,MASKED-sign-id.timestamp.body-with-the-destination-secret";

/// The user agent the deliver function's client sends (`functions/deliver/src/http.rs`).
const USER_AGENT: &str = "webhook-ingestor-outbox/1";

/// `text` as one shell word: in single quotes, each `'` written `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The headers `d` was sent with, in the deliver function's order, its signature masked;
/// `timestamp` in seconds.
pub fn headers(d: &OutboundDelivery, timestamp: i64) -> Vec<(String, String)> {
    let mut h = vec![
        (WEBHOOK_ID.to_owned(), d.webhook_id.clone()),
        (WEBHOOK_TIMESTAMP.to_owned(), timestamp.to_string()),
        (WEBHOOK_SIGNATURE.to_owned(), MASKED_SIGNATURE.to_owned()),
        ("content-type".to_owned(), "application/json".to_owned()),
        (SOURCE_HEADER.to_owned(), d.source.to_string()),
    ];
    if let Some(t) = &d.event_type {
        h.push((TYPE_HEADER.to_owned(), t.to_string()));
    }
    h.push(("user-agent".to_owned(), USER_AGENT.to_owned()));
    h
}

/// The command: a POST of `body` to `url` with `headers`, every value shell-quoted.
pub fn command(url: &str, headers: &[(String, String)], body: &[u8]) -> String {
    let mut out = format!("curl -sS -X POST {}", shell_quote(url));
    for (name, value) in headers {
        out.push_str(" \\\n  -H ");
        out.push_str(&shell_quote(&format!("{name}: {value}")));
    }
    out.push_str(" \\\n  --data-binary ");
    out.push_str(&shell_quote(&String::from_utf8_lossy(body)));
    out
}

/// The link to the curl of delivery `d` (the event page's, one per delivery).
pub fn link(d: &OutboundDelivery, target: &str) -> Markup {
    let href = format!(
        "/delivery/curl?{}",
        query(&[
            ("destination", d.destination.as_str()),
            ("source", d.source.as_str()),
            ("id", d.event_id.as_str()),
        ])
    );
    html! {
        a.curl-link href=(href) hx-get=(href) hx-select="#curl" hx-target={ "#" (target) }
            hx-swap="innerHTML" { "Reproduce with curl" }
    }
}

/// `GET /delivery/curl`: the command reproducing a delivery, with its copy button.
pub async fn page(console: &Console<'_>, params: &Params) -> Result<Reply> {
    let key = key_of(params)?;
    let named = params
        .get("destination")
        .ok_or_else(|| usage("name a destination: destination=…"))?;
    let destination =
        DestinationId::parse(named).map_err(|e| usage(format!("destination {named:?}: {e}")))?;
    let target = DeliveryRef {
        destination: destination.clone(),
        source: key.source.clone(),
        event_id: key.event_id.clone(),
    };
    let d = console
        .store
        .delivery(&target)
        .await?
        .ok_or_else(|| failed(format!("no delivery {target}")))?;
    let dest = admin::get(&console.store, &destination)
        .await?
        .ok_or_else(|| failed(format!("no destination {destination}")))?;
    let m = console
        .store
        .get(&key)
        .await?
        .ok_or_else(|| failed(format!("no event {}/{}", key.source, key.event_id)))?;
    let sent_at = d.journal.last().map_or(d.created_at, |a| a.at);
    let text = command(&dest.url, &headers(&d, sent_at.div_euclid(1000)), &m.body);
    let title = format!("curl for {target}");
    let body = html! {
        h1 { "Reproduce " code { (target) } }
        div #curl {
            p.none { "The request as the deliver function sent it (last attempt's timestamp); "
                code { (WEBHOOK_SIGNATURE) } " is masked: sign " code { "webhook-id.webhook-timestamp.body" }
                " with the destination's secret to make it verifiable." }
            pre.curl #curl-text { (text) }
            (copy_button("curl-text", "the curl command"))
        }
        p { a href=(event_href(key.source.as_str(), key.event_id.as_str())) { "Back to the event" } }
    };
    Ok(Reply::html(
        200,
        layout::page(&console.frame(), "/events", &title, body),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery() -> OutboundDelivery {
        serde_json::from_value(serde_json::json!({
            "destination": "billing", "source": "stripe", "event_id": "evt_1",
            "event_type": "invoice.paid", "webhook_id": "msg_abc", "status": "failed",
            "created_at": 1_000,
        }))
        .unwrap()
    }

    #[test]
    fn the_command_carries_the_sent_headers_the_body_exactly_and_no_signature() {
        let h = headers(&delivery(), 1_765_000_000);
        let names: Vec<&str> = h.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "webhook-id",
                "webhook-timestamp",
                "webhook-signature",
                "content-type",
                "webhook-source",
                "webhook-event-type",
                "user-agent"
            ]
        );
        let body = br#"{"id":"evt_1","note":"it's <b>"}"#;
        let c = command("https://hooks.example/in?a=1&b=2", &h, body);
        assert!(c.starts_with("curl -sS -X POST 'https://hooks.example/in?a=1&b=2' \\\n"));
        assert!(c.contains("-H 'webhook-id: msg_abc'"), "{c}");
        assert!(c.contains("-H 'webhook-timestamp: 1765000000'"), "{c}");
        assert!(c.contains(&format!("-H 'webhook-signature: {MASKED_SIGNATURE}'")));
        assert!(
            c.ends_with(r#"--data-binary '{"id":"evt_1","note":"it'\''s <b>"}'"#),
            "{c}"
        );
    }

    #[test]
    fn a_quote_cannot_end_the_word() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
        assert_eq!(shell_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
