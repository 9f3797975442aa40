//! An event's outbound deliveries on its page: each with its attempt journal (status, duration,
//! outcome, the start of the response, as `inboxctl deliveries show`), and the retry of a failed
//! one (`inboxctl deliveries retry DESTINATION SOURCE EVENT_ID`, journaled as the operator's).
//! They are read by key, never by a scan ([`of_event`]): a delivery's key names its destination
//! and event (`OUT#{destination}#{source}#{event id}`), so the event's deliveries are one
//! `GetItem` per destination listed. A removed destination's item is deleted, so its deliveries
//! are not found this way: the page says so and names the CLI command that still finds them
//! ([`REMOVED_NOTE`]).

use super::charts::read;
use super::copy::copy_button;
use super::curl;
use super::event::key_of;
use super::http::{query, Params, Reply};
use super::layout::{badge, csrf, local_time, opt};
use super::{Console, Session};
use crate::commands::deliveries::{queue, retry_each};
use crate::error::{usage, Result};
use crate::output::truncate;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::MessageKey;
use inbox_core::outbox::delivery::{
    DeliveryRef, DeliveryStatus, OutboundDelivery, BODY_HEAD_BYTES,
};
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::store::OutboxStore;
use maud::{html, Markup};

/// The deliveries of `key` to each of `destinations` (those it has), each read by its key
/// ([`read::deliveries`]: a few `GetItem`s at once): no scan, whatever the outbox's size.
pub async fn of_event<S: OutboxStore>(
    store: &S,
    destinations: &[Destination],
    key: &MessageKey,
) -> Result<Vec<OutboundDelivery>> {
    let refs: Vec<DeliveryRef> = destinations
        .iter()
        .map(|d| DeliveryRef {
            destination: d.id.clone(),
            source: key.source.clone(),
            event_id: key.event_id.clone(),
        })
        .collect();
    read::deliveries(store, &refs).await
}

/// What the page says of the deliveries it cannot find by key.
pub const REMOVED_NOTE: &str = "Deliveries to removed destinations are not listed here";

/// The event's deliveries, each with its attempts and, when it failed, its retry.
pub fn deliveries(session: &Session, key: &MessageKey, deliveries: &[OutboundDelivery]) -> Markup {
    html! {
        h2 { "Outbound deliveries (" (deliveries.len()) ")" }
        p.none #removed-deliveries { (REMOVED_NOTE) " (each is read by key per listed destination); "
            code { "inboxctl deliveries list --source " (key.source.as_str()) " --event-id " (key.event_id.as_str()) }
            " still finds them (a scan)." }
        div #deliveries { @for (i, d) in deliveries.iter().enumerate() {
            h3 { code { (d.destination.as_str()) } " " (badge(d.status.as_str())) " · " (d.attempts) " attempt(s)"
                @if let Some(e) = &d.last_error { " · " (truncate(e, 80)) } }
            p.delivery-ids {
                "webhook-id " code #{ "webhook-id-" (i) } { (d.webhook_id) } " " (copy_button(&format!("webhook-id-{i}"), "the webhook-id"))
                " · " (curl::link(d, &format!("curl-{i}")))
            }
            div.curl-box #{ "curl-" (i) } {}
            @if d.status == DeliveryStatus::Failed {
                form.actions method="post" action="/delivery/retry" {
                    (csrf(&session.csrf))
                    input type="hidden" name="destination" value=(d.destination.as_str());
                    input type="hidden" name="source" value=(d.source.as_str());
                    input type="hidden" name="id" value=(d.event_id.as_str());
                    button type="submit" data-action="retry-delivery" { "Retry this delivery" }
                }
            }
            @if !d.journal.is_empty() {
                table {
                    thead { tr { th { "at" } th.num { "#" } th { "status" } th.num { "ms" } th { "outcome" } th { "error" } th { "response" } } }
                    tbody {
                        @for a in &d.journal {
                            tr.attempt {
                                td { (local_time(a.at)) }
                                td.num { (a.attempt) }
                                td.code { (opt(a.status)) }
                                td.num { (a.duration_ms) }
                                td { (a.outcome) }
                                td { (opt(a.error.as_deref().map(|e| truncate(e, 60)))) }
                                td { (response(&a.body)) }
                            }
                        }
                    }
                }
            }
            @if d.journal_dropped > 0 { p.none { (d.journal_dropped) " older attempts not kept" } }
        } }
    }
}

/// An attempt's response body as journaled (its first [`BODY_HEAD_BYTES`] bytes; emptied on
/// older attempts past the journal's budget): its start, and the whole kept text on demand.
fn response(body: &str) -> Markup {
    html! {
        @if body.is_empty() {
            span.none { "-" }
        } @else if body.chars().count() <= 80 {
            code { (body) }
        } @else {
            details.response {
                summary { code { (truncate(body, 80)) } }
                pre { (body) }
                p.none { (body.len()) " bytes kept (at most " (BODY_HEAD_BYTES) ")" }
            }
        }
    }
}

/// `POST /delivery/retry`: one delivery of this event, retried whatever its status
/// (`inboxctl deliveries retry DESTINATION SOURCE EVENT_ID`), journaled as the operator's.
pub async fn retry(console: &Console<'_>, form: &Params) -> Result<Reply> {
    let key = key_of(form)?;
    let destination = form
        .get("destination")
        .ok_or_else(|| usage("name a destination: destination=…"))?;
    let destination = DestinationId::parse(destination)
        .map_err(|e| usage(format!("destination {destination:?}: {e}")))?;
    let target = DeliveryRef {
        destination,
        source: key.source.clone(),
        event_id: key.event_id.clone(),
    };
    let queue = queue(console.ctx).await;
    let now = SystemClock.now_millis();
    retry_each(
        &console.store,
        queue.as_ref(),
        &[target],
        &console.operator,
        true,
        now,
        || {},
    )
    .await?;
    Ok(Reply::redirect(format!(
        "/event?{}",
        query(&[
            ("source", key.source.as_str()),
            ("id", key.event_id.as_str()),
            ("done", "retried")
        ])
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::outbox::admin;
    use inbox_core::outbox::pattern::Pattern;
    use inbox_core::store::memory::MemoryStore;

    #[tokio::test]
    async fn an_events_deliveries_are_read_by_key_per_listed_destination() {
        let store = MemoryStore::new();
        let id = |s: &str| DestinationId::parse(s).unwrap();
        for d in ["crm", "erp"] {
            let d = Destination::new(
                &id(d),
                &format!("https://{d}.example/h"),
                vec![Pattern::parse("*").unwrap()],
                None,
                0,
            );
            admin::add(&store, &d, "test", false).await.unwrap();
        }
        let key = crate::commands::parse_key("stripe", "evt_1").unwrap();
        let other = crate::commands::parse_key("stripe", "evt_2").unwrap();
        // crm has this event's delivery and another event's; erp none; a removed destination's
        // delivery is left over (what a scan would find, and a key read cannot).
        for (d, k) in [("crm", &key), ("crm", &other), ("gone", &key)] {
            let delivery = OutboundDelivery::new(&id(d), k, None, 0);
            store.ensure_delivery(&delivery).await.unwrap();
        }
        let destinations = admin::list(&store).await.unwrap();
        let found = of_event(&store, &destinations, &key).await.unwrap();
        let got: Vec<String> = found.iter().map(|d| d.reference().to_string()).collect();
        assert_eq!(got, ["crm ← stripe/evt_1"]);
        let html = deliveries(&Session { csrf: "t".into() }, &key, &found).into_string();
        assert!(
            html.contains("inboxctl deliveries list --source stripe --event-id evt_1"),
            "{html}"
        );
    }

    #[test]
    fn a_long_response_shows_its_start_and_the_whole_kept_text_on_demand() {
        assert!(response("").into_string().contains('-'));
        let short = response("upstream down").into_string();
        assert_eq!(short, "<code>upstream down</code>");
        let long = format!("{}<b>end</b>", "x".repeat(200));
        let html = response(&long).into_string();
        assert!(html.starts_with("<details class=\"response\"><summary><code>xxx"));
        assert!(html.contains("…</code></summary>"), "{html}");
        assert!(
            html.contains("&lt;b&gt;end&lt;/b&gt;</pre>"),
            "escaped, whole: {html}"
        );
        assert!(html.contains("210 bytes kept (at most 4096)"), "{html}");
    }
}
