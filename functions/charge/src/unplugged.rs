//! The stand-ins [`build`](crate::build) composes until the table's [`AttemptStore`] (the
//! ledger's) and the payment provider's [`Charger`] are plugged in there: every call fails with
//! the reason, so a function deployed without them fails its runs (its Errors alarm) and charges
//! nothing.

use inbox_core::clock::Millis;
use inbox_core::store::{Effect, StoreError};
use wallet_ledger::autopay::{
    Attempt, AttemptStore, Autopay, ChargeOutcome, ChargeReply, ChargeRequest, Charger,
    ProviderUnavailable, Written,
};
use wallet_ledger::TenantId;

/// Neither a table nor a provider.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unplugged;

fn unplugged() -> StoreError {
    StoreError::Rejected("the charging function's AttemptStore is not plugged in".into())
}

impl AttemptStore for Unplugged {
    async fn due_attempts(&self, _now: Millis, _limit: usize) -> Result<Vec<Attempt>, StoreError> {
        Err(unplugged())
    }

    async fn due_recurring(&self, _now: Millis, _limit: usize) -> Result<Vec<Autopay>, StoreError> {
        Err(unplugged())
    }

    async fn autopay(&self, _tenant: &TenantId) -> Result<Option<Autopay>, StoreError> {
        Err(unplugged())
    }

    async fn attempt(&self, _tenant: &TenantId, _id: &str) -> Result<Option<Attempt>, StoreError> {
        Err(unplugged())
    }

    async fn write(
        &self,
        _attempt: &Attempt,
        _autopay: Option<&Autopay>,
        _also: Vec<Effect>,
    ) -> Result<Written, StoreError> {
        Err(unplugged())
    }
}

impl Charger for Unplugged {
    async fn charge(&self, _request: &ChargeRequest) -> ChargeReply {
        ChargeReply {
            outcome: ChargeOutcome::Indeterminate,
            provider_ref: None,
            replayed: false,
            requests: 0,
        }
    }

    async fn find(
        &self,
        _tenant: &TenantId,
        _attempt: &str,
    ) -> Result<Option<ChargeReply>, ProviderUnavailable> {
        Err(ProviderUnavailable(
            "no payment provider is plugged in".into(),
        ))
    }
}
