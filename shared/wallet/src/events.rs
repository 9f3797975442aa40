//! The wallet's own events, published through the outbox: each is written as a message of the
//! source [`SOURCE`] (`wallet`) in the same transaction as the change it reports, so it exists
//! exactly when that change committed, once however often the transaction is re-run (its id is
//! derived from what it reports). The processor has no handler for it: it is `ignored` and its
//! deliveries go to the destinations subscribed to its source and type, like any event.
//!
//! | type | when | data |
//! |---|---|---|
//! | `wallet.topped_up` | an autopay charge was credited | tenant, attempt, amount, currency, payment |
//! | `wallet.autopay_failed` | a try of an attempt failed (one per try) | tenant, attempt, try, code, next_try_at (ms, absent at the end) |
//! | `wallet.autopay_suspended` | autopay stopped itself (the ladder ended, the method was detached) | tenant, reason |
//! | `wallet.autopay_limit_reached` | the monthly cap refused a charge | tenant, wanted, charged, cap, currency, month |

use crate::money::Money;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::domain::{EventId, EventType, InvalidValue, MessageKey, SourceName};
use inbox_core::store::dynamo::{message_item, StoredBody};
use inbox_core::store::{Effect, NewMessage};
use serde_json::{json, Value};

/// The source of the wallet's own events.
pub const SOURCE: &str = "wallet";

/// One event the wallet publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalletEvent {
    ToppedUp {
        tenant: TenantId,
        attempt: String,
        amount: Money,
        payment: String,
    },
    AutopayFailed {
        tenant: TenantId,
        attempt: String,
        try_no: u32,
        code: String,
        next_try_at: Option<Millis>,
    },
    AutopaySuspended {
        tenant: TenantId,
        /// What it is about (an attempt, a payment method): makes the event's id.
        subject: String,
        reason: String,
    },
    LimitReached {
        tenant: TenantId,
        /// The month (`YYYY_MM`): one event per wallet and month.
        month: String,
        wanted: Money,
        charged: Money,
        cap: Money,
    },
}

impl WalletEvent {
    /// Its type, as destinations subscribe to it.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::ToppedUp { .. } => "wallet.topped_up",
            Self::AutopayFailed { .. } => "wallet.autopay_failed",
            Self::AutopaySuspended { .. } => "wallet.autopay_suspended",
            Self::LimitReached { .. } => "wallet.autopay_limit_reached",
        }
    }

    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::ToppedUp { tenant, .. }
            | Self::AutopayFailed { tenant, .. }
            | Self::AutopaySuspended { tenant, .. }
            | Self::LimitReached { tenant, .. } => tenant,
        }
    }

    /// Its id: derived from what it reports, so a re-run makes the same event.
    pub fn id(&self) -> String {
        let t = self.tenant().as_str();
        match self {
            Self::ToppedUp { attempt, .. } => format!("wevt_{t}_{attempt}_topped_up"),
            Self::AutopayFailed {
                attempt, try_no, ..
            } => format!("wevt_{t}_{attempt}_failed_{try_no}"),
            Self::AutopaySuspended { subject, .. } => format!("wevt_{t}_{subject}_suspended"),
            Self::LimitReached { month, .. } => format!("wevt_{t}_limit_{month}"),
        }
    }

    /// The event as its receivers read it: `{id, type, created (ms), data}`.
    pub fn body(&self, now: Millis) -> Value {
        let tenant = self.tenant().as_str();
        let data = match self {
            Self::ToppedUp {
                attempt,
                amount,
                payment,
                ..
            } => json!({"tenant": tenant, "attempt": attempt, "amount": amount.minor(),
                        "currency": amount.currency().as_str(), "payment": payment}),
            Self::AutopayFailed {
                attempt,
                try_no,
                code,
                next_try_at,
                ..
            } => json!({"tenant": tenant, "attempt": attempt, "try": try_no, "code": code,
                        "next_try_at": next_try_at.map(Millis::get)}),
            Self::AutopaySuspended { reason, .. } => json!({"tenant": tenant, "reason": reason}),
            Self::LimitReached {
                month,
                wanted,
                charged,
                cap,
                ..
            } => json!({"tenant": tenant, "month": month, "wanted": wanted.minor(),
                        "charged": charged.minor(), "cap": cap.minor(),
                        "currency": cap.currency().as_str()}),
        };
        json!({"id": self.id(), "type": self.event_type(), "created": now.get(), "data": data})
    }

    /// The write that publishes it: a new message of [`SOURCE`], created unless it exists (a
    /// re-run or a racer that lost writes nothing twice, and never touches the message: one
    /// already processed stays as it is, out of the open index), to be committed with the change
    /// it reports.
    pub fn publish(&self, now: Millis) -> Result<Effect, InvalidValue> {
        let key = MessageKey::new(SourceName::parse(SOURCE)?, EventId::parse(&self.id())?);
        let body = self.body(now).to_string().into_bytes();
        let msg = NewMessage {
            key,
            event_type: Some(EventType::parse(self.event_type())?),
            received_at_ms: now.get(),
            body_digest: None,
            headers: vec![("content-type".into(), "application/json".into())],
            provider_id: None,
            unidentified: None,
            batch: None,
            body: Vec::new(),
        };
        let stored = StoredBody::inline(&body);
        let msg = NewMessage { body, ..msg };
        Ok(Effect::CreateIfAbsent(message_item(&msg, "wallet", stored)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;

    fn tenant() -> TenantId {
        TenantId::parse("acme").expect("tenant")
    }

    #[test]
    fn an_event_is_the_same_on_a_rerun_and_new_per_try() {
        let failed = |try_no| WalletEvent::AutopayFailed {
            tenant: tenant(),
            attempt: "a1".into(),
            try_no,
            code: "insufficient_funds".into(),
            next_try_at: Some(Millis::new(5)),
        };
        assert_eq!(failed(1).id(), failed(1).id());
        assert_ne!(failed(1).id(), failed(2).id());
        assert_eq!(failed(1).event_type(), "wallet.autopay_failed");
        assert_eq!(
            failed(1).body(Millis::new(9))["data"]["next_try_at"],
            json!(5)
        );
    }

    #[test]
    fn publishing_writes_a_wallet_message_only_if_absent() {
        let usd = Currency::parse("USD").expect("usd");
        let e = WalletEvent::ToppedUp {
            tenant: tenant(),
            attempt: "a1".into(),
            amount: usd.amount(4000),
            payment: "pi_1".into(),
        };
        let Ok(Effect::CreateIfAbsent(item)) = e.publish(Millis::new(7)) else {
            panic!("a creation of the message item unless it exists");
        };
        assert_eq!(
            item.get("source")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str),
            Some(SOURCE)
        );
        assert_eq!(
            item.get("event_type")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str),
            Some("wallet.topped_up")
        );
    }
}
