//! `inboxctl wallet autopay …` on the command line: a wallet's automatic top-ups and recurring
//! charge (amounts in the wallet currency's minor unit, like `wallet create`). What the words
//! mean and how they combine is checked by `commands::wallet::autopay::plan`, once, into the
//! ledger's autopay records.

use clap::{ArgGroup, Args, Subcommand, ValueEnum};

/// `inboxctl wallet autopay …`: every change journaled (who, what, when).
#[derive(Debug, Subcommand)]
pub enum AutopayCommand {
    /// Set a wallet's autopay rules, changing only what is given: a threshold top-up, a
    /// recurring charge, a monthly cap, the dunning ladder, the saved payment method.
    #[command(after_help = "Examples:\n  \
        inboxctl wallet autopay set acme --threshold 3000 --target 8000     # below 30.00: back to 80.00, in one charge\n  \
        inboxctl wallet autopay set acme --threshold 3000 --amount 5000     # below 30.00: charge 50.00\n  \
        inboxctl wallet autopay set acme --every month --amount 2000 --anchor 2027-01-31\n  \
        inboxctl wallet autopay set acme --cap 10000 --ladder 0,1,3,5,7\n  \
        inboxctl wallet autopay set acme --no-recurring")]
    Set(AutopaySetArgs),
    /// A wallet's autopay: status, rules, the next recurring charges, cap, ladder, saved method,
    /// open attempt.
    Show(AutopayTenantArgs),
    /// Stop making new charges (an attempt already open goes on).
    Pause(AutopayPauseArgs),
    /// Charge again (also after autopay suspended itself).
    Resume(AutopayChangeArgs),
    /// Remove every rule and the saved payment method (the journal stays).
    Rm(AutopayChangeArgs),
}

/// How often a recurring charge repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EveryArg {
    Month,
    Year,
}

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("top_up_change").args(["threshold", "no_top_up"])))]
#[command(group(ArgGroup::new("recurring_change").args(["every", "no_recurring"])))]
#[command(group(ArgGroup::new("cap_change").args(["cap", "no_cap"])))]
pub struct AutopaySetArgs {
    /// The tenant (its wallet must exist: amounts are in its currency).
    pub tenant: String,
    /// Top up when `available` (with the top-ups already in flight) falls to or below this, in
    /// minor units; with --target or --amount.
    #[arg(long, value_name = "MINOR", allow_negative_numbers = true)]
    pub threshold: Option<i64>,
    /// Top up to this level in one charge (charges `target - available`), in minor units.
    #[arg(long, value_name = "MINOR", requires = "threshold")]
    pub target: Option<i64>,
    /// A fixed amount, in minor units: with --threshold, each top-up's; with --every, each
    /// recurring charge's (give it with one of them).
    #[arg(long, value_name = "MINOR")]
    pub amount: Option<i64>,
    /// A recurring charge every month or year, on the anchor's day (clamped to the month's end:
    /// Jan 31 → Feb 28/29 → Mar 31), with --amount and --anchor.
    #[arg(long, value_enum, requires_all = ["anchor", "amount"])]
    pub every: Option<EveryArg>,
    /// The recurring charge's first date (YYYY-MM-DD, UTC): every later date is computed from
    /// it, never from when a charge succeeded.
    #[arg(long, value_name = "DATE", requires = "every")]
    pub anchor: Option<String>,
    /// At most this much autopay in a calendar month (UTC), in minor units; a charge above it is
    /// refused and reported (`wallet.autopay_limit_reached`).
    #[arg(long, value_name = "MINOR")]
    pub cap: Option<i64>,
    /// The dunning ladder: days after the first failed try when a soft decline is tried again
    /// (starting at 0, increasing).
    #[arg(long, value_name = "DAYS")]
    pub ladder: Option<String>,
    /// The payment provider's customer to charge (normally saved from the provider's setup
    /// events); with --payment-method.
    #[arg(long, value_name = "ID", requires = "payment_method")]
    pub customer: Option<String>,
    /// The customer's saved payment method; with --customer.
    #[arg(long, value_name = "ID", requires = "customer")]
    pub payment_method: Option<String>,
    /// Remove the threshold top-up.
    #[arg(long)]
    pub no_top_up: bool,
    /// Remove the recurring charge.
    #[arg(long)]
    pub no_recurring: bool,
    /// Remove the monthly cap.
    #[arg(long)]
    pub no_cap: bool,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct AutopayTenantArgs {
    /// The tenant.
    pub tenant: String,
}

#[derive(Debug, Clone, Args)]
pub struct AutopayPauseArgs {
    /// The tenant.
    pub tenant: String,
    /// Why (journaled).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}

#[derive(Debug, Clone, Args)]
pub struct AutopayChangeArgs {
    /// The tenant.
    pub tenant: String,
    /// Who makes the change (journaled) [default: $USER, else operator].
    #[arg(long, default_value_t = super::default_operator(), hide_default_value = true)]
    pub operator: String,
}
