//! `wallet.autopay_reconciled`, trusted no further than the record it names. The event is the
//! charging pass's word that the provider confirmed an attempt's charge whose webhook never came;
//! but any writer of a `wallet` message could say so, so its body is a claim, never the credit's
//! authority. The attempt the claim names is read as the product wrote it, and the credit is
//! applied (on the one path money moves on, [`crate::payments::handler::payment`]: the payment row credits
//! once, whichever of this event and the webhook comes first) only if:
//!
//! - the attempt exists, of the tenant the claim names;
//! - its amount and currency are the claim's;
//! - its charge (`provider_ref`, the PaymentIntent the pass found confirmed) is the claim's
//!   payment;
//! - it is `Charged` (the credit is due), or `Credited` already by that same payment (the webhook
//!   came first: the payment row credits nothing twice).
//!
//! Anything else is refused: the message fails permanently (quarantined, never retried) with the
//! reason, and `ForgedInternalEvent` is counted (alarmed in `template.yaml`). A body that cannot
//! be read as a claim is refused the same way.

use crate::autopay::{self, Attempt, AttemptState};
use crate::balance::events::{ReconciledClaim, RECONCILED};
use crate::balance::handler::{read_failed, Unhandled};
use crate::balance::rules::PaymentEvent;
use crate::payments::parse::PaymentNotice;
use crate::METRICS_NAMESPACE;
use inbox_core::message::StoredMessage;
use inbox_core::metrics::Metric;
use inbox_core::process::registry::HandlerOutcome;
use inbox_core::store::ItemStore;
use serde_json::Value;
use std::time::Duration;

/// The metric a refused internal event counts.
pub const FORGED_INTERNAL_EVENT: &str = "ForgedInternalEvent";

/// What a reconciled claim says that the attempt record does not.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Forgery {
    #[error("its body is not a reconciled credit: {0}")]
    Unreadable(String),
    #[error("no autopay attempt {attempt:?} of tenant {tenant:?} exists")]
    UnknownAttempt { tenant: String, attempt: String },
    #[error("the attempt is tenant {recorded:?}'s, the event names {claimed:?}")]
    Tenant { recorded: String, claimed: String },
    #[error("the attempt is for {recorded} minor units, the event says {claimed}")]
    Amount { recorded: i64, claimed: i64 },
    #[error("the attempt is in {recorded}, the event says {claimed}")]
    Currency { recorded: String, claimed: String },
    #[error("the attempt's charge is {recorded:?}, the event names {claimed:?}")]
    Intent {
        recorded: Option<String>,
        claimed: String,
    },
    #[error("the attempt is {state}: no credit of it is due")]
    NotDue { state: String },
}

impl Forgery {
    /// What did not match, as the metric's `Mismatch` property says it.
    pub(crate) fn field(&self) -> &'static str {
        match self {
            Self::Unreadable(_) => "body",
            Self::UnknownAttempt { .. } => "attempt",
            Self::Tenant { .. } => "tenant",
            Self::Amount { .. } => "amount",
            Self::Currency { .. } => "currency",
            Self::Intent { .. } => "intent",
            Self::NotDue { .. } => "state",
        }
    }
}

/// Whether `attempt` (as stored; `None`: no such attempt) is what `claim` says, with its credit
/// due (or made already by the same payment).
pub(crate) fn check(claim: &ReconciledClaim, attempt: Option<&Attempt>) -> Result<(), Forgery> {
    let Some(attempt) = attempt else {
        return Err(Forgery::UnknownAttempt {
            tenant: claim.tenant.as_str().to_owned(),
            attempt: claim.attempt.clone(),
        });
    };
    if attempt.tenant != claim.tenant {
        return Err(Forgery::Tenant {
            recorded: attempt.tenant.as_str().to_owned(),
            claimed: claim.tenant.as_str().to_owned(),
        });
    }
    let currency = attempt.amount.currency();
    if currency.as_str() != claim.currency {
        return Err(Forgery::Currency {
            recorded: currency.as_str().to_owned(),
            claimed: claim.currency.clone(),
        });
    }
    if attempt.amount.minor() != claim.amount {
        return Err(Forgery::Amount {
            recorded: attempt.amount.minor(),
            claimed: claim.amount,
        });
    }
    if attempt.provider_ref.as_deref() != Some(claim.payment.as_str()) {
        return Err(Forgery::Intent {
            recorded: attempt.provider_ref.clone(),
            claimed: claim.payment.clone(),
        });
    }
    match &attempt.state {
        AttemptState::Charged | AttemptState::Credited => Ok(()),
        other => Err(Forgery::NotDue {
            state: format!("{other:?}"),
        }),
    }
}

/// The claim as the payment its webhook would have reported.
fn notice(claim: &ReconciledClaim) -> PaymentNotice {
    PaymentNotice {
        tenant: Some(claim.tenant.clone()),
        payment_key: claim.payment.clone(),
        currency: Some(claim.currency.clone()),
        event: PaymentEvent::Paid {
            amount: claim.amount,
        },
        attempt: Some(claim.attempt.clone()),
        method: None,
    }
}

/// The refusal of message `m` for `forgery`: quarantined at once, the metric counted once that
/// is recorded.
fn refused(m: &StoredMessage, tenant: Option<&str>, forgery: &Forgery) -> Unhandled {
    let mut metric = Metric::count(METRICS_NAMESPACE, FORGED_INTERNAL_EVENT, 1)
        .with_property("Mismatch", forgery.field())
        .with_property("Message", m.key().to_string())
        .with_note("an internal wallet event its records contradict; refused, nothing credited");
    if let Some(tenant) = tenant {
        metric = metric.with_property("Tenant", tenant);
    }
    Unhandled::Refused {
        reason: format!(
            "refused: {RECONCILED} {}: {forgery}; nothing credited (a reconciled credit must \
             match the autopay attempt the charging pass recorded: tenant, amount, currency, \
             payment intent)",
            m.key()
        ),
        metrics: vec![metric],
    }
}

/// A charge the charging pass found confirmed at the provider, its webhook missing: credited if
/// the attempt it names agrees (see the module), refused otherwise.
pub(super) async fn reconciled<S: ItemStore>(
    store: &S,
    retention: Duration,
    m: &StoredMessage,
    body: &Value,
) -> Result<HandlerOutcome, Unhandled> {
    let claim =
        ReconciledClaim::parse(body).map_err(|e| refused(m, None, &Forgery::Unreadable(e)))?;
    let attempt = autopay::ledger::attempt(store, &claim.tenant, &claim.attempt)
        .await
        .map_err(read_failed("the autopay attempt"))?;
    check(&claim, attempt.as_ref()).map_err(|f| refused(m, Some(claim.tenant.as_str()), &f))?;
    crate::payments::handler::payment(store, retention, m, notice(&claim)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autopay::Reason;
    use crate::money::Currency;
    use crate::tenant::TenantId;
    use inbox_core::clock::Millis;

    fn claim() -> ReconciledClaim {
        ReconciledClaim {
            tenant: TenantId::parse("acme").unwrap(),
            attempt: "a1".into(),
            amount: 4000,
            currency: "usd".into(),
            payment: "pi_1".into(),
        }
    }

    fn attempt(state: AttemptState) -> Attempt {
        Attempt {
            id: "a1".into(),
            tenant: TenantId::parse("acme").unwrap(),
            reason: Reason::Threshold,
            amount: Currency::parse("usd").unwrap().amount(4000),
            state,
            try_no: 0,
            rung: 0,
            first_failure: None,
            due: Millis::new(0),
            idempotency_key: None,
            claimed_at: None,
            provider_ref: Some("pi_1".into()),
            tries: Vec::new(),
            created_at: Millis::new(0),
            version: Some(1),
        }
    }

    #[test]
    fn a_claim_is_credited_only_as_the_attempt_was_recorded() {
        assert_eq!(
            check(&claim(), Some(&attempt(AttemptState::Charged))),
            Ok(())
        );
        assert_eq!(
            check(&claim(), Some(&attempt(AttemptState::Credited))),
            Ok(()),
            "credited by the same payment: the payment row credits nothing twice"
        );
        let refused = |a: Option<&Attempt>| check(&claim(), a).map_err(|f| f.field());
        assert_eq!(refused(None), Err("attempt"));
        let mut other = attempt(AttemptState::Charged);
        other.tenant = TenantId::parse("globex").unwrap();
        assert_eq!(refused(Some(&other)), Err("tenant"));
        let mut other = attempt(AttemptState::Charged);
        other.amount = Currency::parse("usd").unwrap().amount(400);
        assert_eq!(refused(Some(&other)), Err("amount"));
        let mut other = attempt(AttemptState::Charged);
        other.amount = Currency::parse("eur").unwrap().amount(4000);
        assert_eq!(refused(Some(&other)), Err("currency"));
        let mut other = attempt(AttemptState::Charged);
        other.provider_ref = Some("pi_2".into());
        assert_eq!(refused(Some(&other)), Err("intent"));
        other.provider_ref = None;
        assert_eq!(refused(Some(&other)), Err("intent"));
        for state in [
            AttemptState::Due,
            AttemptState::Charging,
            AttemptState::Pending,
            AttemptState::Ended {
                reason: "declined".into(),
            },
        ] {
            assert_eq!(
                refused(Some(&attempt(state.clone()))),
                Err("state"),
                "{state:?}"
            );
        }
    }
}
