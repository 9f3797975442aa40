//! An event's outbound deliveries on its page: each with its attempt journal (status, duration,
//! outcome, the start of the response, as `inboxctl deliveries show`), and the retry of a failed
//! one (`inboxctl deliveries retry DESTINATION SOURCE EVENT_ID`, journaled as the operator's).

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
use inbox_core::outbox::delivery::{
    DeliveryRef, DeliveryStatus, OutboundDelivery, BODY_HEAD_BYTES,
};
use inbox_core::outbox::destination::DestinationId;
use maud::{html, Markup};

/// The event's deliveries, each with its attempts and, when it failed, its retry.
pub fn deliveries(session: &Session, deliveries: &[OutboundDelivery]) -> Markup {
    html! {
        h2 { "Outbound deliveries (" (deliveries.len()) ")" }
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
