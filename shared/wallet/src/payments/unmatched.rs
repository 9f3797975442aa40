//! Unmatched payments: a Stripe payment that succeeded (a paid Checkout Session, its
//! `async_payment_succeeded`, a `payment_intent.succeeded`) but names no tenant and matches no
//! payment a wallet knows. It is kept for a human instead of being ignored: [`UnmatchedPayment`]
//! records what the events said (amount, currency, customer, email, first seen, the messages that
//! reported it, the first one's raw body up to [`BODY_CAP`] bytes) until
//!
//! - a later event of the same payment names the tenant (the ordinary case: a card's intent whose
//!   session arrives a moment later): the transaction of that event marks it
//!   [`Resolution::Matched`];
//! - or an operator binds it to a tenant ([`crate::Ledger::bind`], `inboxctl wallet bind`):
//!   [`Resolution::Bound`], and its messages are replayed through the normal pipeline, which now
//!   finds the tenant in the payment's index;
//! - or an operator dismisses it ([`crate::Ledger::dismiss`], `inboxctl wallet unmatched dismiss`)
//!   with a reason, as not the product's (another product's payment on a shared Stripe account, a
//!   test): [`Resolution::Dismissed`]. It leaves the open list and the alarm's count, keeps its
//!   body, is listed with the dismissed ones, and can still be bound (or matched by a later event
//!   naming the tenant) if it turns out to be ours.
//!
//! While open it is listed ([`crate::Ledger::unmatched`]) and counted by reconciliation once it
//! has waited longer than the configured window (`UnmatchedPayments`). Its layout:
//! [`crate::balance::items`].

use crate::tenant::TenantId;
use inbox_core::domain::MessageKey;
use serde::Serialize;
use serde_json::Value;

/// The most bytes of a message's raw body an unmatched payment keeps (the first message's; a
/// longer body is cut at a character boundary and marked truncated). The message itself stays
/// in the inbox for the retention (`DELIVERY_RETENTION_DAYS`).
pub const BODY_CAP: usize = 16 * 1024;

/// What became of an unmatched payment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Resolution {
    /// Waiting for a human (or for a later event naming the tenant).
    Open,
    /// A later event of the payment named the tenant.
    Matched {
        tenant: TenantId,
        at: i64,
        /// The event that named it (`source/event id`).
        by_event: String,
    },
    /// An operator bound it to the tenant.
    Bound {
        tenant: TenantId,
        at: i64,
        /// The operator, as `inboxctl replay` journals it.
        by: String,
    },
    /// An operator said it is not the product's, and why.
    Dismissed {
        at: i64,
        /// The operator, as `inboxctl replay` journals it.
        by: String,
        reason: String,
    },
}

/// The longest reason a dismissal keeps, in characters.
pub const MAX_REASON_CHARS: usize = 500;

/// A payment kept because nobody could say whose it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnmatchedPayment {
    /// The payment intent (or the session's id when it has none).
    pub payment_key: String,
    /// What the payment paid, in the minor unit of `currency`.
    pub amount: i64,
    /// Lower-case ISO currency, as the event said it.
    pub currency: Option<String>,
    /// The Stripe customer (`cus_…`), if an event named one.
    pub customer: Option<String>,
    /// The payer's email: a session's `customer_details.email`, an intent's `receipt_email`.
    pub email: Option<String>,
    /// When the first message reporting it was received (ms).
    pub first_seen: i64,
    /// The messages that reported it (`source/event id`), in processing order.
    pub messages: Vec<String>,
    /// The first message's raw body, at most [`BODY_CAP`] bytes (dropped once matched).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Whether `body` was cut at [`BODY_CAP`].
    pub body_truncated: bool,
    #[serde(flatten)]
    pub resolution: Resolution,
    #[serde(skip)]
    pub version: Option<u64>,
}

/// A payment unmatched for longer than the window: what an operator needs to find its tenant
/// (`inboxctl wallet unmatched` shows the rest, `inboxctl wallet bind` binds it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LongUnmatched {
    pub payment_key: String,
    pub amount: i64,
    pub currency: Option<String>,
    pub customer: Option<String>,
    pub email: Option<String>,
    pub first_seen: i64,
}

impl From<UnmatchedPayment> for LongUnmatched {
    fn from(p: UnmatchedPayment) -> Self {
        Self {
            payment_key: p.payment_key,
            amount: p.amount,
            currency: p.currency,
            customer: p.customer,
            email: p.email,
            first_seen: p.first_seen,
        }
    }
}

/// The payer a Stripe payment object names: `customer` (an id or an expanded object) and the
/// email (a session's `customer_details.email`, else an intent's `receipt_email`).
pub fn payer(body: &Value) -> (Option<String>, Option<String>) {
    let obj = &body["data"]["object"];
    let customer = crate::parse::id_of(&obj["customer"]);
    let email = crate::parse::text(&obj["customer_details"]["email"])
        .or_else(|| crate::parse::text(&obj["receipt_email"]));
    (customer, email)
}

/// `body` as text, at most [`BODY_CAP`] bytes (cut at a character boundary), and whether it was
/// cut.
pub fn capped_body(body: &[u8]) -> (String, bool) {
    let text = String::from_utf8_lossy(body);
    if text.len() <= BODY_CAP {
        return (text.into_owned(), false);
    }
    let mut end = BODY_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

impl UnmatchedPayment {
    /// A payment first reported by `message` (received at `at`, with `body`).
    pub fn first(
        payment_key: &str,
        amount: i64,
        currency: Option<String>,
        message: &MessageKey,
        at: i64,
        body: &[u8],
    ) -> Self {
        let (body, body_truncated) = capped_body(body);
        Self {
            payment_key: payment_key.to_owned(),
            amount,
            currency,
            customer: None,
            email: None,
            first_seen: at,
            messages: vec![message.to_string()],
            body: Some(body),
            body_truncated,
            resolution: Resolution::Open,
            version: None,
        }
    }

    pub fn is_open(&self) -> bool {
        self.resolution == Resolution::Open
    }

    /// Whether nobody has said whose it is: open, or dismissed (a dismissed payment can still be
    /// bound, or matched by a later event naming its tenant).
    pub fn awaits_tenant(&self) -> bool {
        matches!(
            self.resolution,
            Resolution::Open | Resolution::Dismissed { .. }
        )
    }

    /// Adds what another message of the payment says: itself (once), and the customer, email
    /// and currency where none was known yet.
    pub fn reported_by(
        mut self,
        message: &MessageKey,
        currency: Option<String>,
        customer: Option<String>,
        email: Option<String>,
    ) -> Self {
        let name = message.to_string();
        if !self.messages.contains(&name) {
            self.messages.push(name);
        }
        self.currency = self.currency.or(currency);
        self.customer = self.customer.or(customer);
        self.email = self.email.or(email);
        self
    }

    /// The messages as keys (what cannot be read as a key is left out).
    pub fn message_keys(&self) -> Vec<MessageKey> {
        self.messages
            .iter()
            .filter_map(|m| {
                let (source, id) = m.split_once('/')?;
                Some(MessageKey::new(
                    inbox_core::domain::SourceName::parse(source).ok()?,
                    inbox_core::domain::EventId::parse(id).ok()?,
                ))
            })
            .collect()
    }

    /// How long it has waited at `now` (ms).
    pub fn age(&self, now: i64) -> i64 {
        now.saturating_sub(self.first_seen)
    }
}

pub mod items;

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::domain::{EventId, SourceName};
    use serde_json::json;

    fn key(id: &str) -> MessageKey {
        MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(id).unwrap(),
        )
    }

    #[test]
    fn the_payer_is_the_sessions_customer_details_or_the_intents_receipt_email() {
        let session = json!({"data": {"object": {"customer": "cus_1",
            "customer_details": {"email": " a@example.com "}, "receipt_email": "b@example.com"}}});
        assert_eq!(
            payer(&session),
            (Some("cus_1".into()), Some("a@example.com".into()))
        );
        let intent = json!({"data": {"object": {"customer": {"id": "cus_2"},
            "receipt_email": "b@example.com"}}});
        assert_eq!(
            payer(&intent),
            (Some("cus_2".into()), Some("b@example.com".into()))
        );
        assert_eq!(payer(&json!({"data": {"object": {}}})), (None, None));
    }

    #[test]
    fn bodies_are_capped_at_a_character_boundary() {
        assert_eq!(capped_body(b"{}"), ("{}".to_owned(), false));
        let long = "é".repeat(BODY_CAP); // two bytes each
        let (text, cut) = capped_body(long.as_bytes());
        assert!(cut);
        assert_eq!(text.len(), BODY_CAP);
        let odd = format!("x{long}");
        let (text, cut) = capped_body(odd.as_bytes());
        assert!(cut && text.len() == BODY_CAP - 1 && text.is_char_boundary(text.len()));
        let exact = "x".repeat(BODY_CAP);
        assert_eq!(capped_body(exact.as_bytes()), (exact, false));
    }

    #[test]
    fn later_messages_add_themselves_once_and_fill_what_was_unknown() {
        let p = UnmatchedPayment::first("pi_1", 2000, None, &key("evt_1"), 7, b"{}")
            .reported_by(&key("evt_2"), Some("usd".into()), None, Some("a@x".into()))
            .reported_by(
                &key("evt_2"),
                Some("eur".into()),
                Some("cus_1".into()),
                Some("b@x".into()),
            );
        assert_eq!(p.messages, vec!["stripe/evt_1", "stripe/evt_2"]);
        assert_eq!(
            (
                p.currency.as_deref(),
                p.customer.as_deref(),
                p.email.as_deref()
            ),
            (Some("usd"), Some("cus_1"), Some("a@x"))
        );
        assert_eq!(p.message_keys(), vec![key("evt_1"), key("evt_2")]);
        assert_eq!((p.age(10), p.age(0)), (3, -7));
        assert!(p.is_open());
    }
}
