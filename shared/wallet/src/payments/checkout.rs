//! The neutral face of a payment provider's hosted checkout, as the wallet API sees it: a
//! [`CheckoutRequest`] (a top-up of a tenant's wallet) and the [`CheckoutSession`] the payer is
//! sent to. The provider's module (Stripe: `stripe_charges::checkout`) implements [`Checkout`]
//! and puts the tenant where every payment event of the session carries it (Stripe: the
//! session's `metadata` and `payment_intent_data.metadata`), so a top-up started this way is
//! never unmatched.

use crate::money::Money;
use crate::tenant::TenantId;
use std::future::Future;

/// A hosted checkout for a top-up of `tenant`'s wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutRequest {
    pub tenant: TenantId,
    pub amount: Money,
    pub success_url: String,
    pub cancel_url: String,
    /// Save the payment method for autopay (Stripe: `setup_future_usage=off_session`).
    pub save_payment_method: bool,
    /// The provider's customer of the wallet, when autopay saved one.
    pub customer: Option<String>,
    /// Sent as the provider's idempotency key: the same key creates one session.
    pub idempotency_key: String,
}

/// The session the payer is sent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutSession {
    pub id: String,
    pub url: String,
}

/// Why a session was not created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckoutError {
    /// The provider refused the request (its message; a 400 to the caller).
    #[error("the payment provider refused the checkout: {0}")]
    Refused(String),
    /// The provider could not be asked or did not answer decisively (a 503 to the caller).
    #[error("the payment provider is unavailable: {0}")]
    Unavailable(String),
}

/// A payment provider that creates hosted checkout sessions.
pub trait Checkout: Send + Sync {
    fn create_session(
        &self,
        request: &CheckoutRequest,
    ) -> impl Future<Output = Result<CheckoutSession, CheckoutError>> + Send;
}
