//! The wallet's own events, published through the outbox: each is written as a message of the
//! source [`SOURCE`] (`wallet`) in the same transaction as the change it reports, so it exists
//! exactly when that change committed, once however often the transaction is re-run (its id is
//! derived from what it reports). The processor has no handler for it: it is `ignored` and its
//! deliveries go to the destinations subscribed to its source and type, like any event. The
//! source name is reserved ([`PUBLISHED_SOURCES`], which the ingest function passes to the
//! core's `refuse_published`): no inbound webhook source may take it.
//!
//! | type | when | data |
//! |---|---|---|
//! | `wallet.topped_up` | an autopay charge was credited | tenant, attempt, amount, currency, payment |
//! | `wallet.autopay_failed` | a try of an attempt failed (one per try) | tenant, attempt, try, code, next_try_at (ms, absent at the end) |
//! | `wallet.autopay_suspended` | autopay stopped itself (the ladder ended, the method was detached) | tenant, reason |
//! | `wallet.autopay_limit_reached` | the monthly cap refused a charge | tenant, wanted, charged, cap, currency, month |
//! | `wallet.autopay_reconciled` | the provider confirms a charge whose webhook never came: the wallet's handler credits it (the same rules and payment row as the webhook, so whichever comes first credits, once) if the attempt it names, as the charging pass recorded it, has the same tenant, amount, currency and payment intent and is `Charged` (or `Credited` by that intent already: nothing more); otherwise it is refused, quarantined and counted (`ForgedInternalEvent`) | tenant, attempt, amount, currency, payment |
//! | `wallet.low_balance` | a movement took the wallet into "cannot afford one more send at its price" (`available − price < floor`), once per crossing ([`crate::balance::notices`]) | tenant, crossing (the wallet's count of crossings, which makes the id), available, floor, price, currency |
//! | `wallet.hold_expired` | the expiry sweep released a hold past its expiry ([`crate::email::holds`]) | tenant, message_id, hold_id (`null`: a webhook's hold), amount, currency, expires_at (ms) |
//! | `wallet.review_threshold_reached` | a month's debits passed the wallet's review threshold, once per wallet and month ([`crate::balance::notices`]) | tenant, month (`YYYY_MM`), debits, threshold, currency |

use crate::autopay::{Settle, Uncredited};
use crate::money::{Currency, Money};
use crate::tenant::TenantId;
use inbox_core::clock::{Clock, Millis};
use inbox_core::domain::{EventId, EventType, InvalidValue, MessageKey, SourceName};
use inbox_core::store::dynamo::{message_item, StoredBody};
use inbox_core::store::{Applied, Effect, ItemWriter, NewMessage, StoreError};
use serde_json::{json, Value};

/// The source of the wallet's own events.
pub const SOURCE: &str = "wallet";

/// Every source name the wallet publishes its own events under: the names no inbound webhook
/// source may take (the ingest function refuses a `WEBHOOK_SOURCES` naming one at start; the
/// wallet refuses a wallet source variable naming one), since its messages would be taken for
/// the wallet's own.
pub const PUBLISHED_SOURCES: [&str; 1] = [SOURCE];

/// The type of [`WalletEvent::Reconciled`], the one wallet event the wallet's handler handles.
pub const RECONCILED: &str = "wallet.autopay_reconciled";

/// The type of [`WalletEvent::LowBalance`].
pub const LOW_BALANCE: &str = "wallet.low_balance";

/// The type of [`WalletEvent::ReviewThresholdReached`].
pub const REVIEW_THRESHOLD_REACHED: &str = "wallet.review_threshold_reached";

/// The type of [`WalletEvent::HoldExpired`].
pub const HOLD_EXPIRED: &str = "wallet.hold_expired";

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
    /// A charge the provider confirms whose webhook never came; handled by the wallet itself.
    Reconciled {
        tenant: TenantId,
        attempt: String,
        amount: Money,
        payment: String,
    },
    LimitReached {
        tenant: TenantId,
        /// The month (`YYYY_MM`): one event per wallet and month.
        month: String,
        wanted: Money,
        charged: Money,
        cap: Money,
    },
    /// The wallet can no longer afford one more send at its price.
    LowBalance {
        tenant: TenantId,
        /// The wallet's crossing count this crossing makes (one event per crossing).
        crossing: i64,
        /// `available` after the movement, as its commit read the wallet.
        available: Money,
        floor: Money,
        price: Money,
    },
    /// A month's debits passed the review threshold.
    ReviewThresholdReached {
        tenant: TenantId,
        /// The month (`YYYY_MM`): one event per wallet and month.
        month: String,
        /// The month's debits after the movement, as its commit read the wallet.
        debits: Money,
        threshold: Money,
    },
    /// A hold past its expiry, released by the sweep.
    HoldExpired {
        tenant: TenantId,
        message_id: String,
        hold_id: Option<String>,
        amount: Money,
        expires_at: i64,
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
            Self::Reconciled { .. } => RECONCILED,
            Self::LowBalance { .. } => LOW_BALANCE,
            Self::ReviewThresholdReached { .. } => REVIEW_THRESHOLD_REACHED,
            Self::HoldExpired { .. } => HOLD_EXPIRED,
        }
    }

    pub fn tenant(&self) -> &TenantId {
        match self {
            Self::ToppedUp { tenant, .. }
            | Self::AutopayFailed { tenant, .. }
            | Self::AutopaySuspended { tenant, .. }
            | Self::Reconciled { tenant, .. }
            | Self::LimitReached { tenant, .. }
            | Self::LowBalance { tenant, .. }
            | Self::ReviewThresholdReached { tenant, .. }
            | Self::HoldExpired { tenant, .. } => tenant,
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
            Self::Reconciled { attempt, .. } => format!("wevt_{t}_{attempt}_reconciled"),
            Self::LowBalance { crossing, .. } => format!("wevt_{t}_low_{crossing}"),
            Self::ReviewThresholdReached { month, .. } => format!("wevt_{t}_review_{month}"),
            // A message id is the provider's (any characters): its digest makes the id.
            Self::HoldExpired { message_id, .. } => {
                use sha2::{Digest, Sha256};
                let h = Sha256::digest(message_id.as_bytes());
                let hex: String = h[..12].iter().map(|b| format!("{b:02x}")).collect();
                format!("wevt_{t}_hold_{hex}_expired")
            }
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
            }
            | Self::Reconciled {
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
            Self::LowBalance {
                crossing,
                available,
                floor,
                price,
                ..
            } => json!({"tenant": tenant, "crossing": crossing, "available": available.minor(),
                        "floor": floor.minor(), "price": price.minor(),
                        "currency": floor.currency().as_str()}),
            Self::ReviewThresholdReached {
                month,
                debits,
                threshold,
                ..
            } => json!({"tenant": tenant, "month": month, "debits": debits.minor(),
                        "threshold": threshold.minor(),
                        "currency": threshold.currency().as_str()}),
            Self::HoldExpired {
                message_id,
                hold_id,
                amount,
                expires_at,
                ..
            } => json!({"tenant": tenant, "message_id": message_id, "hold_id": hold_id,
                        "amount": amount.minor(), "currency": amount.currency().as_str(),
                        "expires_at": expires_at}),
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

/// What a [`WalletEvent::Reconciled`] body claims. A claim only: the wallet's handler credits it
/// only if the attempt it names, as the charging pass recorded it, says the same
/// (`crate::handler`'s reconciled check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReconciledClaim {
    pub tenant: TenantId,
    pub attempt: String,
    /// Minor units, positive.
    pub amount: i64,
    /// Lower-case ISO currency.
    pub currency: String,
    /// The provider's id of the charge (the PaymentIntent).
    pub payment: String,
}

impl ReconciledClaim {
    /// Reads a [`RECONCILED`] body; `Err`: what it lacks.
    pub(crate) fn parse(body: &Value) -> Result<Self, String> {
        let data = &body["data"];
        let text = |k: &str| {
            data[k]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("a {RECONCILED} event without data.{k}"))
        };
        let tenant = TenantId::parse(&text("tenant")?).map_err(|e| e.to_string())?;
        let amount = data["amount"]
            .as_i64()
            .filter(|a| *a > 0)
            .ok_or_else(|| format!("a {RECONCILED} event without a positive data.amount"))?;
        Ok(Self {
            tenant,
            attempt: text("attempt")?,
            amount,
            currency: text("currency")?.to_ascii_lowercase(),
            payment: text("payment")?,
        })
    }
}

/// Settles a charge whose webhook never came by publishing [`WalletEvent::Reconciled`]: the
/// wallet's handler then credits it on the one path money moves on, once.
#[derive(Debug, Clone)]
pub struct SettleByEvent<W, C> {
    pub writer: W,
    pub clock: C,
}

impl<W: ItemWriter, C: Clock> Settle for SettleByEvent<W, C> {
    async fn settle(&self, charge: &Uncredited) -> Result<bool, StoreError> {
        let invalid = |e: String| StoreError::Invalid(e.into());
        let Some(payment) = charge.provider_ref.clone().filter(|_| charge.succeeded) else {
            return Ok(false);
        };
        let currency = Currency::parse(&charge.currency).map_err(|e| invalid(e.to_string()))?;
        let event = WalletEvent::Reconciled {
            tenant: TenantId::parse(&charge.tenant).map_err(|e| invalid(e.to_string()))?,
            attempt: charge.attempt.clone(),
            amount: currency.amount(charge.amount),
            payment,
        };
        let effect = event
            .publish(self.clock.now())
            .map_err(|e| invalid(e.to_string()))?;
        match self.writer.commit(vec![effect]).await? {
            Applied::Done => Ok(true),
            other => Err(invalid(format!("publishing {}: {other:?}", event.id()))),
        }
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
    fn a_hold_expired_event_is_one_per_email_whatever_its_message_id() {
        let usd = Currency::parse("USD").expect("usd");
        let expired = |message_id: &str, hold_id: Option<&str>| WalletEvent::HoldExpired {
            tenant: tenant(),
            message_id: message_id.into(),
            hold_id: hold_id.map(str::to_owned),
            amount: usd.amount(25),
            expires_at: 1_000,
        };
        let odd = expired("<0100abc@eu-west-1.amazonses.com> #1", Some("hold_1"));
        assert_eq!(
            odd.id(),
            expired("<0100abc@eu-west-1.amazonses.com> #1", None).id()
        );
        assert_ne!(odd.id(), expired("m2", Some("hold_1")).id());
        assert!(
            odd.publish(Millis::new(7)).is_ok(),
            "an id the inbox takes: {}",
            odd.id()
        );
        assert_eq!(odd.event_type(), HOLD_EXPIRED);
        let data = &odd.body(Millis::new(9))["data"];
        assert_eq!(
            (
                &data["message_id"],
                &data["hold_id"],
                &data["amount"],
                &data["currency"],
                &data["expires_at"]
            ),
            (
                &json!("<0100abc@eu-west-1.amazonses.com> #1"),
                &json!("hold_1"),
                &json!(25),
                &json!("usd"),
                &json!(1_000)
            )
        );
        assert_eq!(
            expired("m3", None).body(Millis::new(9))["data"]["hold_id"],
            Value::Null
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
