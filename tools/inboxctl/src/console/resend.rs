//! Resend one event to one chosen destination, from the event's page: `outbox::resend::replay`
//! limited to that destination, as `inboxctl deliveries replay SOURCE EVENT_ID --dest ID` (its
//! delivery, if it has one, back to pending with the same `webhook-id` whatever its status,
//! unless it is being delivered right now; else a new delivery), journaled as the operator's.
//! A resend that does not happen answers an error status naming why (404, 409, 410), never 200.

use super::event::key_of;
use super::events::event_href;
use super::http::{query, Params, Reply};
use super::layout::{self, csrf};
use super::{Console, Session};
use crate::commands::deliveries::{outcome_text, queue};
use crate::error::{usage, Result};
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::MessageKey;
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::resend::{self, RetryOutcome};
use maud::{html, Markup};

/// The form: every destination to choose from (its state beside it: a paused one parks it).
pub fn form(session: &Session, key: &MessageKey, destinations: &[Destination]) -> Markup {
    html! {
        @if destinations.is_empty() {
            p.none #resend { "No destination to resend it to." }
        } @else {
            form.actions #resend method="post" action="/event/resend" {
                (csrf(&session.csrf))
                input type="hidden" name="source" value=(key.source.as_str());
                input type="hidden" name="id" value=(key.event_id.as_str());
                label { "Resend to "
                    select name="destination" {
                        @for d in destinations {
                            option value=(d.id.as_str()) { (d.id.as_str()) " (" (d.state.as_str()) ")" }
                        }
                    }
                }
                " "
                button type="submit" data-action="resend" { "Resend to this destination" }
            }
        }
    }
}

/// The HTTP status of a resend that did not happen.
pub fn refusal_status(outcome: &RetryOutcome) -> Option<u16> {
    match outcome {
        RetryOutcome::Retried | RetryOutcome::Created => None,
        RetryOutcome::Missing => Some(404),
        RetryOutcome::NotRetryable(_) | RetryOutcome::Conflict => Some(409),
        RetryOutcome::BodyGone => Some(410),
    }
}

/// `POST /event/resend`: the event to the destination named, as the operator.
pub async fn resend(console: &Console<'_>, form: &Params) -> Result<Reply> {
    let key = key_of(form)?;
    let named = form
        .get("destination")
        .ok_or_else(|| usage("name a destination: destination=…"))?;
    let destination =
        DestinationId::parse(named).map_err(|e| usage(format!("destination {named:?}: {e}")))?;
    let queue = queue(console.ctx).await;
    let now = SystemClock.now_millis();
    let results = resend::replay(
        &console.store,
        queue.as_ref(),
        &key,
        Some(&destination),
        &console.operator,
        now,
    )
    .await?;
    let (status, why) = match results.first() {
        None => (
            404,
            format!(
                "no event {}/{} or no destination {destination}",
                key.source, key.event_id
            ),
        ),
        Some((_, outcome)) => match refusal_status(outcome) {
            None => {
                return Ok(Reply::redirect(format!(
                    "/event?{}",
                    query(&[
                        ("source", key.source.as_str()),
                        ("id", key.event_id.as_str()),
                        ("done", "resent"),
                        ("to", destination.as_str()),
                    ])
                )))
            }
            Some(status) => (status, outcome_text(outcome)),
        },
    };
    let body = html! {
        h1 { "Not resent" }
        p.error #resend-refused role="alert" {
            (key.source.as_str()) "/" (key.event_id.as_str()) " to " (destination.as_str()) ": " (why)
        }
        p { a href=(event_href(key.source.as_str(), key.event_id.as_str())) { "Back to the event" } }
    };
    Ok(Reply::html(
        status,
        layout::page(&console.frame(), "/events", "Not resent", body),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::outbox::delivery::DeliveryStatus;

    #[test]
    fn only_a_resend_that_happened_is_a_success() {
        assert_eq!(refusal_status(&RetryOutcome::Retried), None);
        assert_eq!(refusal_status(&RetryOutcome::Created), None);
        assert_eq!(refusal_status(&RetryOutcome::Missing), Some(404));
        assert_eq!(
            refusal_status(&RetryOutcome::NotRetryable(DeliveryStatus::Delivering)),
            Some(409)
        );
        assert_eq!(refusal_status(&RetryOutcome::Conflict), Some(409));
        assert_eq!(refusal_status(&RetryOutcome::BodyGone), Some(410));
    }
}
