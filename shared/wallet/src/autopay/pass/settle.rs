//! What becomes of a charge that exists: a `Pending` one (the provider settles it later) due for
//! its look-up, and a `Charged` one whose credit is late. Both are looked up at the provider
//! ([`Charger::lookup`] by the charge's id, else [`Charger::find`]) and never charged again.

use super::{decide, Flow, Pass, PassReport, Uncredited, FIND_MARGIN_SECS};
use crate::autopay::attempt::{Attempt, AttemptState, AttemptStore, Written};
use crate::autopay::charge::{ChargeReply, ChargeRequest, Charger, Find};
use crate::autopay::ladder::ChargeOutcome;
use inbox_core::clock::Clock;
use inbox_core::store::StoreError;
use std::future::Future;

/// Credits a charge whose webhook never came, through the ledger's rules (the same path as its
/// `payment_intent.succeeded`: the payment index, the credit and the attempt closed in one
/// transaction, exactly once however the webhook races it). The ledger implements it; the
/// composition root hands it to the pass.
pub trait Settle: Send + Sync {
    /// Whether it credited `charge` now (`false`: already credited, or not creditable).
    fn settle(&self, charge: &Uncredited) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// Reports late credits and credits nothing (the default until the ledger's [`Settle`] is
/// plugged in).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportOnly;

impl Settle for ReportOnly {
    async fn settle(&self, _charge: &Uncredited) -> Result<bool, StoreError> {
        Ok(false)
    }
}

impl<S: AttemptStore, P: Charger, C: Clock, U: Settle> Pass<S, P, C, U> {
    /// A `Pending` charge due for a look-up (its webhook has not settled it): what the provider
    /// says of it now is recorded (settled: credited or declined; still pending: looked up
    /// again later). It is never sent again.
    pub(super) async fn settlement(
        &self,
        attempt: &Attempt,
        report: &mut PassReport,
    ) -> Result<Flow, StoreError> {
        let found = match &attempt.provider_ref {
            Some(r) => self.charger.lookup(r).await.map(Some),
            None => {
                let autopay = self.store.autopay(&attempt.tenant).await?;
                let customer = autopay
                    .and_then(|a| a.method)
                    .map(|m| m.customer)
                    .unwrap_or_default();
                let since = super::first_claim(attempt).unwrap_or(attempt.created_at);
                let find = Find {
                    tenant: attempt.tenant.clone(),
                    attempt: attempt.id.clone(),
                    try_no: Some(attempt.try_no),
                    customer,
                    since_secs: since.get().div_euclid(1000) - FIND_MARGIN_SECS,
                };
                self.charger.find(&find).await
            }
        };
        let reply = match found {
            Ok(Some(reply)) => reply,
            // A pending charge the provider's records do not show is still not proof of no
            // charge worth a resend: it stays pending and is looked up again.
            Ok(None) => ChargeReply {
                outcome: ChargeOutcome::Pending,
                provider_ref: attempt.provider_ref.clone(),
                replayed: false,
                requests: 1,
            },
            Err(e) => {
                report.error(&format!("looking up attempt {}", attempt.id), e);
                return Ok(Flow::Done);
            }
        };
        let request = ChargeRequest {
            tenant: attempt.tenant.clone(),
            attempt: attempt.id.clone(),
            try_no: attempt.try_no,
            amount: attempt.amount,
            customer: String::new(),
            payment_method: String::new(),
            idempotency_key: attempt.idempotency_key.clone().unwrap_or_default(),
        };
        report.requests += u64::from(reply.requests);
        self.record(&request, &AttemptState::Pending, &reply, report)
            .await?;
        Ok(Flow::Done)
    }

    /// A `Charged` attempt past its credit deadline: what the provider says, journaled and
    /// reported; credited by [`Settle`] when the provider confirms it.
    pub(super) async fn late_credit(
        &self,
        attempt: &Attempt,
        report: &mut PassReport,
    ) -> Result<Flow, StoreError> {
        let found = match &attempt.provider_ref {
            Some(r) => self.charger.lookup(r).await.map(Some),
            None => {
                let customer = self
                    .store
                    .autopay(&attempt.tenant)
                    .await?
                    .and_then(|a| a.method)
                    .map(|m| m.customer)
                    .unwrap_or_default();
                let find = Find {
                    tenant: attempt.tenant.clone(),
                    attempt: attempt.id.clone(),
                    try_no: None,
                    customer,
                    since_secs: attempt.created_at.get().div_euclid(1000) - FIND_MARGIN_SECS,
                };
                self.charger.find(&find).await
            }
        };
        let found = match found {
            Ok(found) => found,
            Err(e) => {
                report.error(&format!("looking up attempt {}", attempt.id), e);
                return Ok(Flow::Done);
            }
        };
        let t = decide::uncredited(
            attempt,
            found.as_ref(),
            self.clock.now(),
            self.config.credit_within,
        );
        let provider_ref = t.attempt.provider_ref.clone();
        if self.commit(t, report).await? == Written::Conflict {
            return Ok(Flow::Reread);
        }
        let succeeded = found.is_some_and(|f| f.outcome == ChargeOutcome::Succeeded);
        let charge = Uncredited::new(
            &attempt.tenant,
            &attempt.id,
            attempt.amount,
            provider_ref,
            succeeded,
        );
        if succeeded && self.settle.settle(&charge).await? {
            report.settled += 1;
        }
        report.uncredited.push(charge);
        Ok(Flow::Done)
    }
}
