//! `inboxctl wallet backfill-hold-expiry`: an expiry for every hold placed before holds expired
//! ([`wallet_ledger::email::holds::backfill`]), counted from when each was held with the stage's
//! `WALLET_HOLD_EXPIRES_IN`; `--dry-run` only counts them.

use crate::cli::WalletBackfillArgs;
use crate::context::Context;
use crate::error::{failed, usage, Context as _, Result};
use crate::output::{print_json, say, spinner};
use inbox_core::clock::{Clock as _, SystemClock};
use wallet_ledger::config::hold_expires_in;
use wallet_ledger::email::holds::backfill::backfill_expiry;

pub(super) async fn backfill(ctx: &Context, args: WalletBackfillArgs) -> Result<()> {
    let expires_in = hold_expires_in(ctx.env()).map_err(|e| usage(e.to_string()))?;
    let store = ctx.store().await?;
    let bar = spinner(ctx.json(), "reading every wallet's holds");
    let result = backfill_expiry(&store, expires_in, SystemClock.now_millis(), args.dry_run).await;
    bar.finish_and_clear();
    let done = result.context(format!(
        "giving the holds in table {} an expiry",
        store.table()
    ))?;
    if ctx.json() {
        let mut out = serde_json::to_value(&done)?;
        if let Some(o) = out.as_object_mut() {
            o.insert("dry_run".into(), args.dry_run.into());
            o.insert("expires_in_secs".into(), expires_in.as_secs().into());
        }
        print_json(&out)?;
    } else {
        let verb = if args.dry_run {
            "would be given"
        } else {
            "given"
        };
        say(format!(
            "{} wallet(s) read: {} hold(s) without an expiry, {} {verb} one (held at + {} s), {} of them already past it (the next sweep releases them); {} changed meanwhile (run again)",
            done.wallets,
            done.found,
            if args.dry_run { done.found } else { done.given },
            expires_in.as_secs(),
            done.already_due,
            done.busy
        ))?;
        for u in &done.unreadable {
            say(format!("unreadable: {u}"))?;
        }
    }
    if done.unreadable.is_empty() {
        Ok(())
    } else {
        Err(failed(format!(
            "{} wallet(s) whose rows could not be read were skipped",
            done.unreadable.len()
        )))
    }
}
