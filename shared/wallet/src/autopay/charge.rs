//! The neutral face of a payment provider, as autopay sees it: a [`ChargeRequest`] (one try of
//! one attempt, with the idempotency key stored on the attempt before the call) and the
//! [`ChargeReply`] the provider's module maps its answer onto. The provider's module implements
//! [`Charger`]; the composition root (the charging function's `main`) hands it to the charging
//! pass, so nothing here or in the pass names a provider. A second provider is a second module.
//!
//! | the provider answered | [`ChargeOutcome`] |
//! |---|---|
//! | the charge succeeded (money taken; the credit still comes from its webhook) | `Succeeded` |
//! | a decline worth retrying later (Stripe: `insufficient_funds`, `processing_error`, …) | `DeclinedSoft` |
//! | a decline that cannot succeed (Stripe: `expired_card`, `lost_card`, `stolen_card`, …) | `DeclinedHard` |
//! | the customer must act (Stripe: `authentication_required`, `requires_action`) | `NeedsCustomer` |
//! | nothing decisive after the module's own technical retries (5xx, timeouts, resets) | `Indeterminate` |

use super::ladder::ChargeOutcome;
use crate::money::Money;
use crate::tenant::TenantId;
use std::future::Future;

/// One try of one autopay attempt, as the provider is asked to charge it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeRequest {
    pub tenant: TenantId,
    /// The attempt's id (its metadata at the provider, so the payment's webhook finds it).
    pub attempt: String,
    /// The try of the attempt (0: the first; each rung of the dunning ladder is a new try).
    pub try_no: u32,
    pub amount: Money,
    /// The provider's customer and saved payment method.
    pub customer: String,
    pub payment_method: String,
    /// [`idempotency_key`] of the attempt and try: stored on the attempt before the call.
    pub idempotency_key: String,
}

/// The provider's answer to a [`ChargeRequest`], mapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeReply {
    pub outcome: ChargeOutcome,
    /// The provider's id of the charge (Stripe: the PaymentIntent), when it made one.
    pub provider_ref: Option<String>,
    /// Whether the provider answered from its idempotency store (a repeated key).
    pub replayed: bool,
    /// The provider's requests this try took (its technical retries included), for metrics.
    pub requests: u32,
}

/// A payment provider that charges saved payment methods off-session.
pub trait Charger: Send + Sync {
    /// Charges `request` once: the module retries what its provider documents as safe to retry
    /// (with the same idempotency key) and answers [`ChargeOutcome::Indeterminate`] when it
    /// cannot know. Never a new key: that is a new try, decided by the ladder.
    fn charge(&self, request: &ChargeRequest) -> impl Future<Output = ChargeReply> + Send;

    /// What the provider knows of an attempt's charges (for reconciliation: a charge whose
    /// webhook never came): the reply of its latest charge with our metadata, if any.
    fn find(
        &self,
        tenant: &TenantId,
        attempt: &str,
    ) -> impl Future<Output = Result<Option<ChargeReply>, ProviderUnavailable>> + Send;

    /// The metrics of the calls made since the last take (requests, retries, throttling,
    /// declines by code), for the caller to emit once it committed what the calls decided: a
    /// provider's module emits nothing itself. None by default.
    fn take_metrics(&self) -> Vec<inbox_core::metrics::Metric> {
        Vec::new()
    }
}

/// The provider could not be asked (down, throttling past the module's retries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the payment provider could not be asked: {0}")]
pub struct ProviderUnavailable(pub String);

/// The idempotency key of try `try_no` of `attempt`: the same across crashes and repeats of that
/// try, new for each new try.
pub fn idempotency_key(attempt: &str, try_no: u32) -> String {
    format!("autopay-{attempt}-try-{try_no}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_stable_per_try_and_new_per_try() {
        assert_eq!(idempotency_key("a1", 0), idempotency_key("a1", 0));
        assert_ne!(idempotency_key("a1", 0), idempotency_key("a1", 1));
        assert_ne!(idempotency_key("a1", 0), idempotency_key("a2", 0));
    }
}
