//! A hosted top-up (`POST /wallets/{tenant}/checkout-sessions`): the wallet's currency and the
//! customer autopay saved, the provider's session under a key derived from the request's own,
//! and the provider's refusals and outages as answers.

use super::{ledger, Ran, WalletApi};
use crate::error::{outcome, ApiError};
use crate::idempotency::Claim;
use crate::request::CheckoutBody;
use crate::response::ApiResponse;
use http::StatusCode;
use inbox_core::clock::Clock;
use inbox_core::store::{ItemStore, ItemWriter};
use serde_json::json;
use sha2::{Digest, Sha256};
use wallet_ledger::payments::checkout::{Checkout, CheckoutError, CheckoutRequest};

impl<S, K, C> WalletApi<S, K, C>
where
    S: ItemStore + ItemWriter,
    K: Checkout,
    C: Clock + Clone + 'static,
{
    /// `POST /wallets/{tenant}/checkout-sessions`.
    pub(super) async fn create_checkout(
        &self,
        claim: &Claim,
        body: CheckoutBody,
    ) -> Result<Ran, ApiError> {
        let ledger_view = wallet_ledger::Ledger::new(&self.store);
        let wallet = ledger_view
            .wallet(&claim.tenant)
            .await
            .map_err(ledger)?
            .ok_or_else(|| ApiError::NoWallet(claim.tenant.as_str().to_owned()))?;
        let customer = ledger_view
            .autopay(&claim.tenant)
            .await
            .map_err(ledger)?
            .and_then(|a| a.method)
            .map(|m| m.customer);
        let request = CheckoutRequest {
            tenant: claim.tenant.clone(),
            amount: wallet.currency.amount(body.amount),
            success_url: body.success_url,
            cancel_url: body.cancel_url,
            save_payment_method: body.save_payment_method,
            customer,
            idempotency_key: provider_key(claim),
        };
        match self.checkout.create_session(&request).await {
            Ok(session) => Ok(Ran::Unstored(ApiResponse::json(
                StatusCode::CREATED,
                &json!({
                    "id": session.id,
                    "url": session.url,
                    "amount": body.amount,
                    "currency": wallet.currency.as_str(),
                }),
            ))),
            Err(CheckoutError::Refused(reason)) => Ok(Ran::Unstored(outcome(
                StatusCode::BAD_REQUEST,
                "checkout_refused",
                &format!("the payment provider refused the checkout: {reason}"),
                json!({}),
            ))),
            Err(CheckoutError::Unavailable(reason)) => Err(ApiError::ProviderUnavailable(reason)),
        }
    }
}

/// The provider's idempotency key of a checkout: one per tenant, key and request (a key given
/// back after a 5xx and used with another body asks the provider for another session).
pub fn provider_key(claim: &Claim) -> String {
    let digest = Sha256::new()
        .chain_update(claim.tenant.as_str().as_bytes())
        .chain_update(b"\n")
        .chain_update(claim.key.as_str().as_bytes())
        .chain_update(b"\n")
        .chain_update(claim.fingerprint.as_str().as_bytes())
        .finalize();
    format!("wallet-api-checkout-{}", hex::encode(digest))
}
