//! The charging pass: one run of the charging function. Generic over the table
//! ([`AttemptStore`]), the payment provider ([`Charger`]) and the clock, so the composition root
//! picks them and tests run it on fakes with a manual clock.
//!
//! A run, bounded by [`PassConfig::batch`] and the invocation's deadline:
//!
//! 1. **recurring periods**: each wallet whose recurring charge is due gets the period's attempt
//!    (id derived from the period: a re-run makes the same one), its `next` advanced and its open
//!    attempt set, in one write; a wallet with another open attempt waits; the monthly cap refuses
//!    a period with `wallet.autopay_limit_reached` (an `Ended` attempt says so, never silent).
//! 2. **due attempts**: a `Due` attempt (or a `Charging` one past its lease: a crash after the
//!    call) is claimed, `Charging` with its try's idempotency key, BEFORE the call; the provider
//!    is called; the reply is recorded on the attempt as re-read after the call (the webhook may
//!    have credited it meanwhile: then it is left alone), following the ladder
//!    ([`decide::record`]). A write that answers `Conflict` is re-read and decided again.
//! 3. **charges that exist** ([`settle`]): a `Pending` one due for its look-up, and a `Charged`
//!    one past its credit deadline, are looked up at the provider and recorded or reported, never
//!    charged again; [`Settle`] credits a late one through the ledger (the composition root's
//!    choice). Whether a claimed try may be sent again at all is [`resend`]'s table.
//!
//! Effects (metrics) are only those of writes that committed: the run returns them in its
//! [`PassReport`] for the function to emit.

mod config;
pub mod decide;
mod layout;
pub mod recurring;
mod report;
mod resend;
mod settle;

pub use config::{
    PassConfig, AUTOPAY_BATCH, AUTOPAY_CREDIT_WITHIN_SECS, AUTOPAY_LADDER_DAYS, AUTOPAY_LEASE_SECS,
    CHARGE,
};
pub use decide::{Timings, Transition};
pub use layout::{charge_writes, suspended_flag, AUTOPAY_SUSPENDED_ATTR};
pub use recurring::RecurringStep;
pub use report::{PassReport, Uncredited};
pub use resend::{first_claim, resend, Resend, KEY_WINDOW};
pub use settle::{ReportOnly, Settle};

use super::attempt::{Attempt, AttemptState, AttemptStore, Autopay, Written};
use super::charge::{ChargeReply, ChargeRequest, Charger, Find};
use super::ladder::ChargeOutcome;
use inbox_core::clock::{Clock, Millis};
use inbox_core::store::StoreError;

/// How often one attempt is re-read after a conflicting write before the run leaves it to the
/// next.
const MAX_REREADS: usize = 3;

/// How far before a try's first claim its charges are looked for (clocks differ).
pub(super) const FIND_MARGIN_SECS: i64 = 300;

/// The charging pass.
#[derive(Debug)]
pub struct Pass<S, P, C, U = ReportOnly> {
    store: S,
    charger: P,
    clock: C,
    config: PassConfig,
    settle: U,
}

pub(super) enum Flow {
    Done,
    Reread,
}

impl<S: AttemptStore, P: Charger, C: Clock> Pass<S, P, C, ReportOnly> {
    pub fn new(store: S, charger: P, clock: C, config: PassConfig) -> Self {
        Self {
            store,
            charger,
            clock,
            config,
            settle: ReportOnly,
        }
    }
}

impl<S: AttemptStore, P: Charger, C: Clock, U: Settle> Pass<S, P, C, U> {
    /// The same pass, crediting late charges with `settle`.
    pub fn settling_with<V: Settle>(self, settle: V) -> Pass<S, P, C, V> {
        Pass {
            store: self.store,
            charger: self.charger,
            clock: self.clock,
            config: self.config,
            settle,
        }
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn charger(&self) -> &P {
        &self.charger
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn config(&self) -> &PassConfig {
        &self.config
    }

    /// One run; `deadline` is the invocation's (no try starts that would not end before it).
    pub async fn run(&self, deadline: Option<Millis>) -> PassReport {
        let mut report = PassReport::default();
        let now = self.clock.now();
        match self.store.due_recurring(now, self.config.batch).await {
            Ok(wallets) => {
                self.unreadable(&wallets.unreadable, &mut report);
                for autopay in wallets.items {
                    self.recurring(autopay, &mut report).await;
                }
            }
            Err(e) => report.error("reading the due recurring charges", e),
        }
        let now = self.clock.now();
        match self.store.due_attempts(now, self.config.batch).await {
            Ok(attempts) => {
                self.unreadable(&attempts.unreadable, &mut report);
                report.due = attempts.items.len();
                for attempt in attempts.items {
                    if self.out_of_time(deadline) {
                        report.deferred += 1;
                        continue;
                    }
                    // A wallet stored before the tenant grammar: its payment's webhook would be
                    // refused (and its credit with it), so it is never charged; it is reported
                    // until the wallet is renamed or its autopay paused.
                    if !attempt.tenant.fits_grammar() {
                        let why = format!(
                            "attempt {} of tenant {:?}: a tenant id from before the tenant grammar; \
                             not charged (its credit could not land): pause its autopay",
                            attempt.id, attempt.tenant
                        );
                        self.unreadable(&[why], &mut report);
                        continue;
                    }
                    self.attempt(attempt, &mut report).await;
                }
            }
            Err(e) => report.error("reading the due attempts", e),
        }
        report
    }

    /// Items of a due list that could not be read: named in the report (the function logs
    /// them), counted, skipped.
    fn unreadable(&self, items: &[String], report: &mut PassReport) {
        for why in items {
            report.unreadable += 1;
            if report.unreadable_samples.len() < 10 {
                report.unreadable_samples.push(why.clone());
            }
            report.metrics.push(
                inbox_core::metrics::Metric::count(
                    crate::METRICS_NAMESPACE,
                    "AutopayUnreadable",
                    1,
                )
                .with_note("an autopay item could not be read: skipped, the rest charged"),
            );
        }
    }

    fn out_of_time(&self, deadline: Option<Millis>) -> bool {
        deadline.is_some_and(|d| self.clock.now().plus(self.config.call_budget) > d)
    }

    async fn recurring(&self, mut autopay: Autopay, report: &mut PassReport) {
        for _ in 0..MAX_REREADS {
            let now = self.clock.now();
            let t = match recurring::recurring(&autopay, now) {
                RecurringStep::NotDue => return,
                RecurringStep::Waits { .. } => {
                    report.recurring_waiting += 1;
                    return;
                }
                RecurringStep::Make(t) => *t,
            };
            let made = matches!(t.attempt.state, AttemptState::Due);
            let limited = !t.events.is_empty();
            match self.commit(t, report).await {
                Ok(Written::Done) => {
                    if made {
                        report.recurring_made += 1;
                    } else {
                        report.recurring_skipped += 1;
                        report.limit_reached += usize::from(limited);
                    }
                    return;
                }
                Ok(Written::Conflict) => {
                    report.conflicts += 1;
                    match self.store.autopay(&autopay.tenant).await {
                        Ok(Some(fresh)) => autopay = fresh,
                        Ok(None) => return,
                        Err(e) => return report.error("re-reading an autopay", e),
                    }
                }
                Err(e) => return report.error("making a recurring attempt", e),
            }
        }
    }

    async fn attempt(&self, mut attempt: Attempt, report: &mut PassReport) {
        for _ in 0..MAX_REREADS {
            match self.step(&attempt, report).await {
                Ok(Flow::Done) => return,
                Ok(Flow::Reread) => {
                    report.conflicts += 1;
                    match self.store.attempt(&attempt.tenant, &attempt.id).await {
                        Ok(Some(fresh)) => attempt = fresh,
                        Ok(None) => return,
                        Err(e) => return report.error("re-reading an attempt", e),
                    }
                }
                Err(e) => return report.error(&format!("attempt {}", attempt.id), e),
            }
        }
    }

    async fn step(&self, attempt: &Attempt, report: &mut PassReport) -> Result<Flow, StoreError> {
        let now = self.clock.now();
        if attempt.state.is_terminal() || attempt.due > now {
            return Ok(Flow::Done);
        }
        match attempt.state {
            AttemptState::Charged => self.late_credit(attempt, report).await,
            AttemptState::Pending => self.settlement(attempt, report).await,
            _ => self.charge(attempt, report).await,
        }
    }

    /// Claims the try, calls the provider, records the reply.
    async fn charge(&self, attempt: &Attempt, report: &mut PassReport) -> Result<Flow, StoreError> {
        let now = self.clock.now();
        let autopay = self.store.autopay(&attempt.tenant).await?;
        // A try already sent (`Charging`) is repeated whatever changed since: it may have charged.
        let refused = match attempt.state {
            AttemptState::Due => decide::refusal(autopay.as_ref()),
            _ => None,
        };
        let method = autopay.as_ref().and_then(|a| a.method.clone());
        let refused = refused.or_else(|| {
            method
                .is_none()
                .then(|| ("no_payment_method: none saved".to_owned(), true))
        });
        if let Some((reason, suspend)) = refused {
            let t = decide::ended(attempt, autopay.as_ref(), &reason, now, suspend);
            return Ok(match self.commit(t, report).await? {
                Written::Done => Flow::Done,
                Written::Conflict => Flow::Reread,
            });
        }
        let Some(method) = method else {
            return Ok(Flow::Done);
        };
        let claimed = decide::claim(attempt, now, self.config.lease);
        if self.store.write(&claimed, None, Vec::new()).await? == Written::Conflict {
            return Ok(Flow::Reread);
        }
        let request = ChargeRequest {
            tenant: attempt.tenant.clone(),
            attempt: attempt.id.clone(),
            try_no: claimed.try_no,
            amount: attempt.amount,
            customer: method.customer,
            payment_method: method.payment_method,
            idempotency_key: claimed.idempotency_key.clone().unwrap_or_default(),
        };
        let reply = match resend(&claimed, now) {
            Resend::Send => self.charger.charge(&request).await,
            // The charge exists: what it is now is the answer; it is never sent again.
            Resend::LookUp(provider_ref) => match self.charger.lookup(&provider_ref).await {
                Ok(found) => found,
                Err(e) => {
                    report.error(&format!("looking up {provider_ref} of {}", attempt.id), e);
                    return Ok(Flow::Done);
                }
            },
            // The provider may have pruned the key: its records decide; a charge of this try
            // found (the attempt's own included) is the answer, and only proof of none sends.
            Resend::FindFirst { since } => {
                let find = Find {
                    tenant: attempt.tenant.clone(),
                    attempt: attempt.id.clone(),
                    try_no: Some(claimed.try_no),
                    customer: request.customer.clone(),
                    since_secs: since.get().div_euclid(1000) - FIND_MARGIN_SECS,
                };
                match self.charger.find(&find).await {
                    Ok(Some(found)) => found,
                    Ok(None) => {
                        report.resent_after_proof += 1;
                        self.charger.charge(&request).await
                    }
                    Err(e) => {
                        report.error(&format!("looking up attempt {}", attempt.id), e);
                        return Ok(Flow::Done);
                    }
                }
            }
        };
        report.tries += 1;
        report.requests += u64::from(reply.requests);
        self.record(&request, &AttemptState::Charging, &reply, report)
            .await?;
        Ok(Flow::Done)
    }

    /// Records `reply` on the attempt as it is now: only while it is still the same try in the
    /// state it was read in (`expected`, with the request's key); anything else (credited or
    /// declined by its webhook meanwhile, recorded by another run) is left alone.
    pub(super) async fn record(
        &self,
        request: &ChargeRequest,
        expected: &AttemptState,
        reply: &ChargeReply,
        report: &mut PassReport,
    ) -> Result<(), StoreError> {
        for _ in 0..MAX_REREADS {
            let current = self
                .store
                .attempt(&request.tenant, &request.attempt)
                .await?;
            let Some(current) = current.filter(|a| {
                a.state == *expected
                    && a.try_no == request.try_no
                    && a.idempotency_key.as_deref() == Some(request.idempotency_key.as_str())
            }) else {
                report.left_alone += 1;
                return Ok(());
            };
            let autopay = self.store.autopay(&request.tenant).await?;
            let t = decide::record(
                &current,
                autopay.as_ref(),
                reply,
                &self.config.timings(),
                self.clock.now(),
            );
            let ended = matches!(t.attempt.state, AttemptState::Ended { .. });
            if self.commit(t, report).await? == Written::Done {
                match reply.outcome {
                    ChargeOutcome::Succeeded => report.succeeded += 1,
                    ChargeOutcome::Pending => report.pending += 1,
                    ChargeOutcome::Indeterminate => report.indeterminate += 1,
                    _ => report.declined += 1,
                }
                report.ended += usize::from(ended);
                return Ok(());
            }
            report.conflicts += 1;
        }
        Ok(())
    }

    /// Writes `t` in one transaction; its metrics join the report once it committed.
    pub(super) async fn commit(
        &self,
        t: Transition,
        report: &mut PassReport,
    ) -> Result<Written, StoreError> {
        let mut also = Vec::with_capacity(t.events.len() + 1);
        for event in &t.events {
            let effect = event
                .publish(self.clock.now())
                .map_err(|e| StoreError::Invalid(Box::new(e)))?;
            also.push(effect);
        }
        if t.flag_wallet {
            also.push(suspended_flag(&t.attempt));
        }
        let written = self
            .store
            .write(&t.attempt, t.autopay.as_ref(), also)
            .await?;
        if written == Written::Done {
            report.suspended += usize::from(t.flag_wallet);
            report.metrics.extend(t.metrics);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests;
