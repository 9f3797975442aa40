//! Stripe's events, listed: what `inboxctl stripe catch-up` reads to find the events whose
//! webhooks never reached the inbox. As Stripe documents "List all events"
//! (https://docs.stripe.com/api/events/list): `GET /v1/events`, newest first, "going back up to
//! 30 days"; `types[]` ("An array of up to 20 strings containing specific event names", not with
//! `type`), `created[gte]`, `created[lte]`, `delivery_success` ("If false, events which are still pending or
//! have failed all delivery attempts to a webhook endpoint will be returned"); pages of `limit`
//! up to 100, the next one `starting_after` the last id while `has_more`. "Process undelivered
//! webhook events" (https://docs.stripe.com/webhooks/process-undelivered-events) is this list
//! with `delivery_success=false`. Every page is one call of the [`StripeClient`]: a token of the
//! account's shared bucket first, retried as [`crate::retry`] says (a `GET` is always safe to
//! repeat). Each event's JSON is kept as Stripe wrote it in the page.

use crate::client::{Ended, StripeClient};
use crate::metrics::Tally;
use crate::transport::{Request, Transport};
use inbox_core::outbox::bucket::shared::SharedBucket;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// The path of events.
pub const EVENTS: &str = "/v1/events";
/// The most names `types[]` takes.
pub const MAX_TYPES: usize = 20;
/// The largest page Stripe gives.
pub const PAGE_LIMIT: u32 = 100;
/// How far back Stripe keeps events.
pub const RETENTION_SECS: i64 = 30 * 86_400;

/// Which events to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventQuery {
    /// 1 to [`MAX_TYPES`] event types.
    pub types: Vec<String>,
    /// Created at or after (Unix seconds).
    pub created_gte: i64,
    /// Created at or before (Unix seconds; `None`: up to now).
    pub created_lte: Option<i64>,
    /// `Some(false)`: only the events Stripe has not delivered (pending or failed).
    pub delivery_success: Option<bool>,
}

/// The request for one page of `query`, after `starting_after` when given.
pub fn list_events(query: &EventQuery, starting_after: Option<&str>) -> Request {
    let since = query.created_gte.to_string();
    let limit = PAGE_LIMIT.to_string();
    let mut pairs: Vec<(&str, &str)> = query
        .types
        .iter()
        .map(|t| ("types[]", t.as_str()))
        .collect();
    pairs.push(("created[gte]", since.as_str()));
    let until = query.created_lte.map(|t| t.to_string());
    if let Some(until) = &until {
        pairs.push(("created[lte]", until.as_str()));
    }
    pairs.push(("limit", limit.as_str()));
    match query.delivery_success {
        Some(true) => pairs.push(("delivery_success", "true")),
        Some(false) => pairs.push(("delivery_success", "false")),
        None => {}
    }
    if let Some(after) = starting_after {
        pairs.push(("starting_after", after));
    }
    Request::get(&format!("{EVENTS}?{}", crate::form::encode(pairs)))
}

/// One event as listed: what catch-up decides on, and its JSON exactly as the page had it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEvent {
    pub id: String,
    pub event_type: String,
    pub created: i64,
    /// `None` when the event does not say.
    pub livemode: Option<bool>,
    /// A Connect event's connected account (`None` for the account's own events).
    pub account: Option<String>,
    pub body: Vec<u8>,
}

/// One page: its events (newest first) and whether more follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPage {
    pub events: Vec<ListedEvent>,
    pub has_more: bool,
}

/// Why a page could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// No answer, or Stripe failed (retries spent, the account's rate): try again later.
    #[error("Stripe is unavailable: {0}")]
    Unavailable(String),
    /// Stripe refused the request (a 4xx: a key without the right, a bad parameter).
    #[error("Stripe refused the list ({status} {code}): {message}")]
    Refused {
        status: u16,
        code: String,
        message: String,
    },
    /// A 200 that is not a list of events.
    #[error("Stripe's answer is not a list of events: {0}")]
    NotAList(String),
}

/// Stripe's events, listed through a [`StripeClient`].
#[derive(Debug)]
pub struct StripeEvents<T, B> {
    client: StripeClient<T, B>,
}

impl<T: Transport, B: SharedBucket> StripeEvents<T, B> {
    pub fn on(client: StripeClient<T, B>) -> Self {
        Self { client }
    }

    /// The page of `query` after `starting_after` (the first page without it).
    pub async fn page(
        &self,
        query: &EventQuery,
        starting_after: Option<&str>,
        tally: &mut Tally,
    ) -> Result<EventPage, ListError> {
        let request = list_events(query, starting_after);
        match self.client.call(&request, tally).await {
            Ended::Answer(a) if a.status == 200 => parse_page(&a.body),
            Ended::Answer(a) if (400..500).contains(&a.status) && a.status != 429 => {
                let json: Value = serde_json::from_slice(&a.body).unwrap_or(Value::Null);
                Err(ListError::Refused {
                    status: a.status,
                    code: crate::answer::error_code(&a.body).unwrap_or_default(),
                    message: json["error"]["message"]
                        .as_str()
                        .unwrap_or_default()
                        .chars()
                        .take(300)
                        .collect(),
                })
            }
            Ended::Answer(a) => Err(ListError::Unavailable(format!("HTTP {}", a.status))),
            Ended::GaveUp(why) => Err(ListError::Unavailable(why)),
        }
    }

    /// Every event of `query`, newest first, page after page until Stripe says there are no
    /// more; `progress` is told the count after each page.
    pub async fn all(
        &self,
        query: &EventQuery,
        tally: &mut Tally,
        mut progress: impl FnMut(usize),
    ) -> Result<Vec<ListedEvent>, ListError> {
        let mut out: Vec<ListedEvent> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.page(query, after.as_deref(), tally).await?;
            let next = page.events.last().map(|e| e.id.clone());
            out.extend(page.events);
            progress(out.len());
            match next {
                Some(id) if page.has_more => after = Some(id),
                _ => return Ok(out),
            }
        }
    }
}

/// A page's events, each kept as the bytes Stripe wrote.
fn parse_page(body: &[u8]) -> Result<EventPage, ListError> {
    let not_a_list = |why: String| ListError::NotAList(why);
    let fields: BTreeMap<String, Box<RawValue>> =
        serde_json::from_slice(body).map_err(|e| not_a_list(e.to_string()))?;
    let data = fields
        .get("data")
        .ok_or_else(|| not_a_list("no `data`".into()))?;
    let raw: Vec<Box<RawValue>> =
        serde_json::from_str(data.get()).map_err(|e| not_a_list(format!("`data`: {e}")))?;
    let has_more = match fields.get("has_more").map(|v| v.get()) {
        Some("true") => true,
        Some("false") | None => false,
        Some(other) => return Err(not_a_list(format!("`has_more` is {other}"))),
    };
    let events = raw
        .into_iter()
        .map(|r| {
            let v: Value = serde_json::from_str(r.get()).map_err(|e| not_a_list(e.to_string()))?;
            let text = |k: &str| v[k].as_str().map(str::to_owned);
            let id = text("id")
                .filter(|id| !id.is_empty())
                .ok_or_else(|| not_a_list("an event without an `id`".into()))?;
            Ok(ListedEvent {
                event_type: text("type").unwrap_or_default(),
                created: v["created"].as_i64().unwrap_or(0),
                livemode: v["livemode"].as_bool(),
                account: text("account"),
                id,
                body: r.get().as_bytes().to_vec(),
            })
        })
        .collect::<Result<Vec<_>, ListError>>()?;
    Ok(EventPage { events, has_more })
}

#[cfg(test)]
mod tests;
