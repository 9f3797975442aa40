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
//! | the charge exists and settles later (Stripe: `processing`) | `Pending` |
//! | nothing decisive after the module's own technical retries (5xx, timeouts, resets) | `Indeterminate` |
//!
//! A reply that names the provider's charge (`provider_ref`) says the charge EXISTS, whatever its
//! outcome: that try is never sent again, under its key or any other; it is looked up
//! ([`Charger::lookup`]). A try whose answer named nothing is repeated with its key while the
//! provider surely keeps the key; past that, only after [`Charger::find`] shows the provider has
//! no charge of that attempt and try (keys are pruned after 24 hours and a pruned key charges
//! anew).

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

    /// The charge `provider_ref` as the provider has it now (its status read as a reply).
    fn lookup(
        &self,
        provider_ref: &str,
    ) -> impl Future<Output = Result<ChargeReply, ProviderUnavailable>> + Send;

    /// The provider's own records of a try: its newest charge carrying our metadata for
    /// `find`'s attempt and try, if any. `Ok(None)` must be PROOF that no such charge exists
    /// (a strongly consistent read), because a try is sent again on it.
    fn find(
        &self,
        find: &Find,
    ) -> impl Future<Output = Result<Option<ChargeReply>, ProviderUnavailable>> + Send;

    /// The metrics of the calls made since the last take (requests, retries, throttling,
    /// declines by code), for the caller to emit once it committed what the calls decided: a
    /// provider's module emits nothing itself. None by default.
    fn take_metrics(&self) -> Vec<inbox_core::metrics::Metric> {
        Vec::new()
    }
}

/// What [`Charger::find`] looks for: the charges of one try of one attempt, made since `since`
/// (the try's first claim, less a margin) for `customer`, with our metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Find {
    pub tenant: TenantId,
    pub attempt: String,
    /// The try; `None`: any try of the attempt (reconciliation of a success).
    pub try_no: Option<u32>,
    /// The customer the try charges (the one its key was sent with).
    pub customer: String,
    /// Charges created before this (seconds since the epoch) are not the try's.
    pub since_secs: i64,
}

/// The provider could not be asked (down, throttling past the module's retries).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the payment provider could not be asked: {0}")]
pub struct ProviderUnavailable(pub String);

/// The idempotency key of try `try_no` of `attempt` of `tenant`: the same across crashes and
/// repeats of that try, new for each new try. A provider scopes keys to its ACCOUNT, which every
/// tenant shares, and attempt ids are unique only within a tenant (two tenants' recurring periods
/// on one date, two API callers' requests named alike): the key carries a stable hash of the
/// tenant, so two tenants never send the same key.
pub fn idempotency_key(tenant: &TenantId, attempt: &str, try_no: u32) -> String {
    format!("autopay-{}-{attempt}-try-{try_no}", tenant_tag(tenant))
}

/// A stable, short tag of a tenant (the first 12 bytes of SHA-256 of its id, hex): for ids and
/// keys that share a namespace with other tenants'.
pub fn tenant_tag(tenant: &TenantId) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(tenant.as_str().as_bytes())[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str) -> TenantId {
        TenantId::parse(id).unwrap()
    }

    #[test]
    fn a_key_is_stable_per_try_and_new_per_try_and_per_tenant() {
        let acme = t("acme");
        assert_eq!(
            idempotency_key(&acme, "a1", 0),
            idempotency_key(&acme, "a1", 0)
        );
        assert_ne!(
            idempotency_key(&acme, "a1", 0),
            idempotency_key(&acme, "a1", 1)
        );
        assert_ne!(
            idempotency_key(&acme, "a1", 0),
            idempotency_key(&acme, "a2", 0)
        );
        // The same attempt id of two tenants (one Stripe account): two keys.
        assert_ne!(
            idempotency_key(&acme, "rec-20261201-month-0", 0),
            idempotency_key(&t("globex"), "rec-20261201-month-0", 0)
        );
        // Well inside Stripe's 255 characters for the longest attempt ids made here.
        assert!(idempotency_key(&acme, &"x".repeat(64), 99).len() < 120);
    }
}
