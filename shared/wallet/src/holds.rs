//! Holds placed before a send (the wallet API's `POST /wallets/{tenant}/holds`): one conditional
//! write on the wallet (`available − amount ≥ floor`, exact under any concurrency) with the
//! email's row in state `held`, its ledger entry and whatever the caller commits with it (the
//! API's idempotency record), in one transaction; and their release (a send never made). The
//! delivery webhooks later settle a hold by its `message_id` through the existing email rules
//! (`delivered` debits it, a hard bounce releases it, a second `sent` holds nothing).
//!
//! INTERFACE STUB: the types and signatures below are shared by the wallet API and the ledger;
//! the bodies are written by the holds work.

use crate::ledger::LedgerError;
use crate::money::Money;
use crate::rules::EmailState;
use crate::tenant::TenantId;
use inbox_core::store::Effect;

/// A hold asked for by the sending platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldRequest {
    pub tenant: TenantId,
    /// The send's message id (what the email provider will report in its webhooks).
    pub message_id: String,
    /// In the wallet's minor unit; `None`: the wallet's price per email.
    pub amount: Option<i64>,
    /// The id the new hold gets (chosen by the caller, so it can be recorded before the commit).
    pub hold_id: String,
}

/// A hold that was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub hold_id: String,
    pub message_id: String,
    pub amount: Money,
    /// The wallet's available amount after this hold, as of its own commit's read.
    pub available: Money,
}

/// What asking for a hold came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldOutcome {
    Held(Held),
    /// `available − amount` would fall below the floor: nothing was written.
    InsufficientFunds {
        available: Money,
        floor: Money,
        amount: Money,
    },
    /// No wallet for the tenant.
    NoWallet,
    /// The message already has a row (held, settled or released): nothing was written.
    AlreadyExists {
        hold_id: Option<String>,
        state: EmailState,
    },
    /// The wallet kept changing under the conditional write past the bounded retries.
    Busy,
}

/// A hold released by the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub hold_id: String,
    pub message_id: String,
    pub amount: Money,
    pub available: Money,
}

/// What releasing a hold came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    Released(Released),
    /// No such hold in this tenant's wallet.
    NotFound,
    /// The hold was settled (debited, released, refunded) already: nothing was written.
    Settled {
        state: EmailState,
    },
    NoWallet,
    Busy,
}

/// Places and releases holds on the table `S` (reads and commits: `ItemStore + ItemWriter`).
pub struct Holds<'s, S> {
    pub(crate) store: &'s S,
}

impl<'s, S> Holds<'s, S>
where
    S: inbox_core::store::ItemStore + inbox_core::store::ItemWriter,
{
    pub fn new(store: &'s S) -> Self {
        Self { store }
    }

    /// Places the hold; `with` gives the effects committed in the same transaction as the hold
    /// (called with the hold as it will be committed, once per try).
    pub async fn place(
        &self,
        request: &HoldRequest,
        with: impl Fn(&Held) -> Vec<Effect> + Send + Sync,
    ) -> Result<HoldOutcome, LedgerError> {
        let _ = (self.store, request, with);
        Err(LedgerError::Unreadable(
            "holds are not implemented yet".into(),
        ))
    }

    /// Releases a hold placed by [`Holds::place`]; `with` as there.
    pub async fn release(
        &self,
        tenant: &TenantId,
        hold_id: &str,
        with: impl Fn(&Released) -> Vec<Effect> + Send + Sync,
    ) -> Result<ReleaseOutcome, LedgerError> {
        let _ = (self.store, tenant, hold_id, with);
        Err(LedgerError::Unreadable(
            "holds are not implemented yet".into(),
        ))
    }
}
