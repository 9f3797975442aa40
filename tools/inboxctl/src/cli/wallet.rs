//! `inboxctl wallet …` on the command line: the prepaid wallet ledger's commands and their
//! arguments (amounts in the currency's minor unit); autopay's are in [`super::autopay`].

use super::{default_operator, AutopayCommand};
use clap::{Args, Subcommand};

/// `inboxctl wallet …`: the prepaid wallet ledger (amounts are in the currency's minor unit).
#[derive(Debug, Subcommand)]
pub enum WalletCommand {
    /// Create a tenant's wallet (never overwrites an existing one).
    Create(WalletCreateArgs),
    /// Change a wallet's floor or review threshold (its amounts are left alone; journaled).
    Set(WalletSetArgs),
    /// A wallet's balance, held and available amounts, limits, flags and this month's debits.
    Balance(WalletTenantArgs),
    /// A wallet's ledger entries, most recent last; with --rows also its email and payment rows.
    Ledger(WalletLedgerArgs),
    /// Check every wallet against its entries, stale holds and orphan entries; exit 1 if any
    /// problem is found.
    Reconcile(WalletReconcileArgs),
    /// Register every wallet in the wallet registry (one table scan) and mark it complete, so
    /// reconciliation finds wallets without scanning. Run once after upgrading from a version
    /// without the registry; idempotent.
    Reindex,
    /// Give every hold placed before holds expired (held, without an expiry) the expiry it
    /// would have had: when it was held plus WALLET_HOLD_EXPIRES_IN, so the expiry sweep
    /// releases it. Run once after upgrading from a version without hold expiry; idempotent.
    BackfillHoldExpiry(WalletBackfillArgs),
    /// Automatic top-ups and a recurring charge: set, show, pause, resume, rm.
    #[command(subcommand)]
    Autopay(AutopayCommand),
    /// Stripe payments that succeeded naming no tenant (no `metadata.tenant`) and matched no
    /// known payment, oldest first: amount, customer, email, age; marked when they waited longer
    /// than RECONCILE_UNMATCHED_AFTER_MINUTES (the UnmatchedPayments alarm). `dismiss` one that is
    /// not ours; `--dismissed` lists those.
    Unmatched(WalletUnmatchedArgs),
    /// Bind an unmatched payment to a tenant: its payment index names the tenant, then its
    /// messages are replayed through the pipeline (credited once; a refund already waiting is
    /// applied with it). Refused for a payment already bound, matched or known.
    Bind(WalletBindArgs),
}

#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct WalletUnmatchedArgs {
    /// List the dismissed payments instead (who dismissed each, when and why), oldest first.
    #[arg(long)]
    pub dismissed: bool,
    #[command(subcommand)]
    pub action: Option<UnmatchedAction>,
}

/// `inboxctl wallet unmatched …`.
#[derive(Debug, Clone, Subcommand)]
pub enum UnmatchedAction {
    /// Dismiss an open unmatched payment as not ours (another product's payment on a shared
    /// Stripe account, a test): it leaves the list and the UnmatchedPayments alarm's count, keeps
    /// its record (listed with --dismissed), and can still be bound later with `wallet bind`.
    Dismiss(WalletDismissArgs),
}

#[derive(Debug, Clone, Args)]
pub struct WalletDismissArgs {
    /// The payment (its payment intent `pi_…`, as `inboxctl wallet unmatched` lists it).
    pub payment: String,
    /// Why it is not ours (kept with the payment; 1 to 500 characters).
    #[arg(long)]
    pub reason: String,
    /// Who dismisses (kept on the payment) [default: $USER, else operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct WalletBindArgs {
    /// The payment (its payment intent `pi_…`, as `inboxctl wallet unmatched` lists it).
    pub payment: String,
    /// The tenant whose wallet it tops up (the wallet must exist).
    pub tenant: String,
    /// Who binds (kept on the payment, and in the replayed messages' history: "replayed by
    /// NAME") [default: $USER, else operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct WalletCreateArgs {
    /// The tenant, as the events name it (`metadata.tenant`, `data.tenant`): 1 to 128 characters
    /// of `A-Z a-z 0-9 . _ : -`, not `.` or `..`.
    pub tenant: String,
    /// ISO 4217 currency code (`usd`, `eur`, `jpy`, …); every amount is in its minor unit.
    #[arg(long)]
    pub currency: String,
    /// The price of one email, in minor units.
    #[arg(long, value_name = "MINOR", value_parser = clap::value_parser!(i64).range(0..))]
    pub price: i64,
    /// The floor and review threshold [defaults: $WALLET_DEFAULT_FLOOR, else 2000;
    /// $WALLET_DEFAULT_REVIEW_THRESHOLD, else 100000].
    #[command(flatten)]
    pub limits: WalletLimitArgs,
}

#[derive(Debug, Clone, Args)]
pub struct WalletSetArgs {
    /// The tenant.
    pub tenant: String,
    /// The limits to change (the others stay as they are).
    #[command(flatten)]
    pub limits: WalletLimitArgs,
    /// Split the wallet's balance over K shard items (a hot tenant: each spreads its movements
    /// over K partitions); only ever raised, a lower K is refused.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(wallet_ledger::balance::items::shards::MAX_SHARDS)))]
    pub shards: Option<u32>,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = default_operator(), hide_default_value = true)]
    pub operator: String,
}

/// A wallet's limits as `wallet create` and `wallet set` take them.
#[derive(Debug, Clone, Args)]
pub struct WalletLimitArgs {
    /// The prepaid floor, in minor units: a hold may not take `available` below it, a
    /// webhook-driven debit that does flags the wallet overdrawn; a negative floor grants credit
    /// [create's default: $WALLET_DEFAULT_FLOOR, else 2000].
    #[arg(long, value_name = "MINOR", allow_negative_numbers = true)]
    pub floor: Option<i64>,
    /// Monthly debits above this flag the tenant for review, in minor units
    /// [create's default: $WALLET_DEFAULT_REVIEW_THRESHOLD, else 100000].
    #[arg(long, value_name = "MINOR", value_parser = clap::value_parser!(i64).range(1..))]
    pub review_threshold: Option<i64>,
    /// No review threshold at all.
    #[arg(long, conflicts_with = "review_threshold")]
    pub no_review_threshold: bool,
}

impl WalletLimitArgs {
    /// What the flags change (`None`: a limit not given).
    pub fn change(&self) -> wallet_ledger::LimitsChange {
        wallet_ledger::LimitsChange {
            floor: self.floor,
            review_threshold: match (self.review_threshold, self.no_review_threshold) {
                (_, true) => Some(None),
                (Some(t), false) => Some(Some(t)),
                (None, false) => None,
            },
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct WalletTenantArgs {
    /// The tenant.
    pub tenant: String,
}

#[derive(Debug, Clone, Args)]
pub struct WalletLedgerArgs {
    /// The tenant.
    pub tenant: String,
    /// Show at most the N most recent entries (and, with --rows, the N most recently updated
    /// rows of each kind).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: u32,
    /// Also show the per-email and per-payment rows (state, amounts, the events that moved them).
    #[arg(long)]
    pub rows: bool,
}

#[derive(Debug, Clone, Args)]
pub struct WalletBackfillArgs {
    /// Count the holds without an expiry; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Clone, Args)]
pub struct WalletReconcileArgs {
    /// A hold older than this many hours with no terminal event counts as stale.
    #[arg(long, value_name = "N", default_value_t = 24)]
    pub stale_after_hours: u32,
    /// Also compare the ledger with Stripe's own payments (the configured Stripe key): paid in
    /// Stripe but not credited, credited but not in Stripe, amounts or refunds that differ.
    #[arg(long)]
    pub stripe: bool,
    /// With --stripe: the PaymentIntents created in the last N days (and the ledger's rows
    /// credited in them).
    #[arg(long, value_name = "N", default_value_t = 7, requires = "stripe")]
    pub days: u32,
}
