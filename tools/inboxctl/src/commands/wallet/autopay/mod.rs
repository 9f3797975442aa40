//! `inboxctl wallet autopay set|show|pause|resume|rm TENANT`: a wallet's automatic top-ups and
//! recurring charge. The flags become a [`plan::Change`] of the ledger's `Autopay` record
//! ([`plan`]: checked before anything is read); the record is read and changed through
//! [`AutopayStore`], the one place the ledger's storage plugs in ([`store`]), and every change is
//! journaled there with the operator and what it did. `show` presents the record ([`view`]).

mod plan;
pub(crate) mod view;

#[cfg(test)]
mod tests;

use crate::cli::AutopayCommand;
use crate::context::Context;
use crate::error::{failed, usage, Result};
use crate::output::{print_json, say};
use inbox_core::clock::{Clock as _, Millis, SystemClock};
use plan::{Change, SetPlan};
use std::future::Future;
use view::AutopayView;
use wallet_ledger::autopay::Autopay;
use wallet_ledger::{Currency, TenantId};

/// What the autopay commands need of the table: the wallet's currency, its autopay record, and a
/// change of that record written with its journal entry.
pub(crate) trait AutopayStore {
    /// The wallet's currency; `None` when the tenant has no wallet.
    fn currency(&self, tenant: &TenantId) -> impl Future<Output = Result<Option<Currency>>>;

    /// The wallet's autopay record, if anything set it.
    fn autopay(&self, tenant: &TenantId) -> impl Future<Output = Result<Option<Autopay>>>;

    /// Applies `edit` to the stored record (a new one when none is stored; an `Err` refuses the
    /// change) and writes it with a journal entry (`actor`, `action`, what `edit` said) in one
    /// write conditioned on the version read; the record as written. A concurrent change is an
    /// error (nothing written), not retried. (The ledger's journaled `set_autopay` has this shape.)
    fn change(
        &self,
        tenant: &TenantId,
        actor: &str,
        action: &str,
        now: Millis,
        edit: impl FnOnce(&mut Autopay) -> std::result::Result<String, String> + Send,
    ) -> impl Future<Output = Result<Autopay>>;
}

/// The store of this build: the ledger's autopay storage (its `Ledger::autopay` read and its
/// journaled `set_autopay`).
mod store {
    use super::AutopayStore;
    use crate::error::{failed, usage, Result};
    use inbox_core::clock::Millis;
    use inbox_core::store::{ItemStore, ItemWriter};
    use wallet_ledger::autopay::Autopay;
    use wallet_ledger::ledger::AutopayError;
    use wallet_ledger::{Currency, Ledger, LedgerError, TenantId};

    fn read_failed(tenant: &TenantId, e: LedgerError) -> crate::error::Error {
        match e {
            e @ LedgerError::Unreadable(_) => failed(e),
            LedgerError::Store(e) => crate::error::Error::Failed(
                anyhow::Error::new(e).context(format!("the autopay of tenant {tenant}")),
            ),
        }
    }

    impl<S: ItemStore + ItemWriter> AutopayStore for Ledger<'_, S> {
        async fn currency(&self, tenant: &TenantId) -> Result<Option<Currency>> {
            self.wallet(tenant)
                .await
                .map(|w| w.map(|w| w.currency))
                .map_err(|e| read_failed(tenant, e))
        }

        async fn autopay(&self, tenant: &TenantId) -> Result<Option<Autopay>> {
            Ledger::autopay(self, tenant)
                .await
                .map_err(|e| read_failed(tenant, e))
        }

        async fn change(
            &self,
            tenant: &TenantId,
            actor: &str,
            action: &str,
            now: Millis,
            edit: impl FnOnce(&mut Autopay) -> std::result::Result<String, String> + Send,
        ) -> Result<Autopay> {
            match self.set_autopay(tenant, actor, action, now, edit).await {
                Ok(a) => Ok(a),
                Err(AutopayError::Invalid(why)) => Err(usage(why)),
                Err(AutopayError::Ledger(e)) => Err(read_failed(tenant, e)),
                Err(e) => Err(failed(e)),
            }
        }
    }
}

pub async fn run(ctx: &Context, command: AutopayCommand) -> Result<()> {
    // Settings (WALLET_MAX_AMOUNT) are read before the store, so a bad command line never waits
    // for it.
    let max = wallet_ledger::config::max_amount(ctx.env()).map_err(|e| usage(e.to_string()))?;
    let store = ctx.store().await?;
    execute(
        &wallet_ledger::Ledger::new(&store),
        command,
        max,
        Millis::new(SystemClock.now_millis()),
        ctx.json(),
    )
    .await
}

/// Runs `command` against `store` at `now`; `max` is `WALLET_MAX_AMOUNT`.
pub(crate) async fn execute(
    store: &impl AutopayStore,
    command: AutopayCommand,
    max: i64,
    now: Millis,
    json: bool,
) -> Result<()> {
    let (tenant, actor, change) = match command {
        AutopayCommand::Show(args) => {
            let tenant = super::stored_tenant_arg(&args.tenant)?;
            return show(store, &tenant, now, json).await;
        }
        AutopayCommand::Set(args) => {
            let plan = SetPlan::parse(&args, max)?;
            let tenant = super::tenant_arg(&args.tenant)?;
            let currency = wallet_currency(store, &tenant).await?;
            (tenant, args.operator, plan.build(currency, now)?)
        }
        AutopayCommand::Pause(args) => (
            super::stored_tenant_arg(&args.tenant)?,
            args.operator,
            Change::Pause {
                reason: args.reason,
            },
        ),
        AutopayCommand::Resume(args) => (
            super::tenant_arg(&args.tenant)?,
            args.operator,
            Change::Resume,
        ),
        AutopayCommand::Rm(args) => (
            super::stored_tenant_arg(&args.tenant)?,
            args.operator,
            Change::Remove,
        ),
    };
    if !matches!(change, Change::Set { .. }) {
        wallet_currency(store, &tenant).await?;
        if store.autopay(&tenant).await?.is_none() {
            return Err(failed(format!(
                "tenant {tenant:?} has no autopay to {} (set it with: inboxctl wallet autopay set {tenant} …)",
                change.action()
            )));
        }
    }
    let written = store
        .change(&tenant, &actor, change.action(), now, |a| {
            Ok(change.apply(a))
        })
        .await?;
    let view = AutopayView::new(&written, now);
    if json {
        return print_json(&serde_json::json!({ "changed": change.action(), "autopay": view }));
    }
    say(format!("autopay of {tenant}: {}", change.action()))?;
    view.print()
}

/// The wallet's currency, or an error saying how to create the wallet.
async fn wallet_currency(store: &impl AutopayStore, tenant: &TenantId) -> Result<Currency> {
    store.currency(tenant).await?.ok_or_else(|| {
        failed(format!(
            "no wallet for tenant {tenant:?} (create one with: inboxctl wallet create {tenant} --currency … --price …)"
        ))
    })
}

async fn show(store: &impl AutopayStore, tenant: &TenantId, now: Millis, json: bool) -> Result<()> {
    wallet_currency(store, tenant).await?;
    let Some(autopay) = store.autopay(tenant).await? else {
        return Err(failed(format!(
            "tenant {tenant:?} has no autopay (set it with: inboxctl wallet autopay set {tenant} …)"
        )));
    };
    let view = AutopayView::new(&autopay, now);
    if json {
        print_json(&view)
    } else {
        view.print()
    }
}
