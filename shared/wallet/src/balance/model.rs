//! The ledger's records as values: a tenant's [`Wallet`], its ledger [`Entry`]s, the per-email
//! and per-payment rows the handler keeps, and the [`PaymentIndex`] that finds a payment's tenant.
//! How they are stored is [`crate::balance::items`]'s business.

use crate::balance::rules::{self, EmailState, Funds, PaymentState, WalletView};
use crate::money::{Currency, Minor, Money, Overflow};
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use std::collections::BTreeMap;

mod shards;
pub use shards::ShardFigures;

/// The calendar month (UTC) of a time in ms, as `YYYY_MM` (for the monthly debit counter).
pub fn month_of(ms: i64) -> String {
    // Days since 1970-01-01 → civil date (Howard Hinnant's algorithm).
    let z = ms.div_euclid(86_400_000) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}_{month:02}")
}

/// A tenant's wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wallet {
    pub tenant: TenantId,
    /// Every amount of the wallet is in this currency.
    pub currency: Currency,
    pub balance: Money,
    pub held: Money,
    /// `available` may not go below this without flagging the wallet `overdrawn`.
    pub floor: Money,
    /// The price of one email.
    pub message_price: Money,
    /// Monthly debits above this flag the tenant for review.
    pub review_threshold: Option<Money>,
    pub overdrawn: bool,
    pub review: bool,
    /// Whether the wallet was last seen unable to afford one more send at its price
    /// (`available − price < floor`): `wallet.low_balance` was published for the crossing into it,
    /// and a movement that brings it back clears it (see [`crate::balance::notices`]).
    pub low: bool,
    /// How many crossings into low were recorded (the id of each one's event; it only grows).
    pub low_crossings: i64,
    /// The last month (`YYYY_MM`) whose `wallet.review_threshold_reached` was published.
    pub review_reported: Option<String>,
    /// Debits per month (`YYYY_MM`), in the wallet's currency.
    pub month_debits: BTreeMap<String, Minor>,
    pub created_at: i64,
    /// How many movements (entries) have changed it: every movement adds one, in the same write
    /// as its amounts, so two reads with the same count saw no change in between (0 for wallets
    /// older than the counter: it only ever grows).
    pub changes: i64,
    /// Each shard's amounts when its balance is split over K > 1 shard items
    /// ([`crate::balance::items::shards`]; the figures above are then their sums); empty: one item.
    pub shards: Vec<ShardFigures>,
}

impl Wallet {
    /// A new, empty wallet in the currency of its `message_price` (the floor and the review
    /// threshold are amounts of the same currency).
    pub fn new(
        tenant: TenantId,
        message_price: Money,
        floor: Money,
        review_threshold: Option<Money>,
        now_ms: i64,
    ) -> Self {
        let currency = message_price.currency();
        debug_assert_eq!(floor.currency(), currency);
        let mut wallet = Self {
            tenant,
            currency,
            balance: currency.amount(0),
            held: currency.amount(0),
            floor,
            message_price,
            review_threshold,
            overdrawn: false,
            review: false,
            low: false,
            low_crossings: 0,
            review_reported: None,
            month_debits: BTreeMap::new(),
            created_at: now_ms,
            changes: 0,
            shards: Vec::new(),
        };
        // A new wallet that cannot afford a send yet is not a crossing: its first top-up to
        // above the line arms the notice.
        wallet.low =
            crate::balance::notices::is_low(wallet.balance, wallet.held, floor, message_price);
        wallet
    }

    /// `balance − held`.
    pub fn available(&self) -> Result<Money, Overflow> {
        self.balance.checked_sub(self.held, "the available amount")
    }

    /// Its floor and review threshold.
    pub fn limits(&self) -> Limits {
        Limits {
            floor: self.floor,
            review_threshold: self.review_threshold,
        }
    }

    /// The debits of a month (`YYYY_MM`, see [`month_of`]).
    pub fn debits_in(&self, month: &str) -> Money {
        self.currency.amount(
            self.month_debits
                .get(month)
                .copied()
                .unwrap_or_default()
                .get(),
        )
    }

    /// What the rules need to know of it, for an event received at `received_at` (ms).
    pub(crate) fn view(&self, received_at: i64) -> WalletView {
        WalletView {
            balance: self.balance,
            held: self.held,
            floor: self.floor,
            month_debits: self.debits_in(&month_of(received_at)),
            review_threshold: self.review_threshold,
        }
    }
}

/// A wallet's limits: what an operator may change on it after it was created
/// ([`crate::Ledger::set_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A hold may not take `available` below it; a webhook-driven debit that does is recorded and
    /// flags the wallet `overdrawn`.
    pub floor: Money,
    /// Monthly debits above it flag the wallet for review (`None`: never).
    pub review_threshold: Option<Money>,
}

/// One ledger entry: a single change of a wallet's balance or held amount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: String,
    pub tenant: TenantId,
    pub kind: rules::EntryKind,
    pub amount: Money,
    pub balance_delta: Money,
    pub held_delta: Money,
    /// The email's message id or the payment's id.
    pub subject: String,
    pub event_source: String,
    pub event_id: String,
    pub at: i64,
}

impl Entry {
    /// The entry of movement `m` of `tenant`'s wallet about `subject` (an email's message id or a
    /// payment's id), caused by `(event_source, event_id)` at `at`.
    pub(crate) fn of(
        id: String,
        tenant: &TenantId,
        m: &rules::Movement,
        subject: &str,
        (event_source, event_id): (&str, &str),
        at: i64,
    ) -> Self {
        Self {
            id,
            tenant: tenant.clone(),
            kind: m.kind,
            amount: m.amount,
            balance_delta: m.balance_delta,
            held_delta: m.held_delta,
            subject: subject.to_owned(),
            event_source: event_source.to_owned(),
            event_id: event_id.to_owned(),
            at,
        }
    }

    /// The entry as its email's row keeps it (without the tenant and subject the row says).
    pub(crate) fn in_row(&self) -> RowEntry {
        RowEntry {
            id: self.id.clone(),
            kind: self.kind,
            amount: self.amount.into(),
            balance_delta: self.balance_delta.into(),
            held_delta: self.held_delta.into(),
            event_source: self.event_source.clone(),
            event_id: self.event_id.clone(),
            at: Millis::new(self.at),
        }
    }

    /// The entry `e` of the email `subject` of `tenant`'s wallet in `currency`, as its row keeps it.
    pub fn of_row(e: &RowEntry, tenant: &TenantId, subject: &str, currency: Currency) -> Self {
        Self {
            id: e.id.clone(),
            tenant: tenant.clone(),
            kind: e.kind,
            amount: e.amount.of(currency),
            balance_delta: e.balance_delta.of(currency),
            held_delta: e.held_delta.of(currency),
            subject: subject.to_owned(),
            event_source: e.event_source.clone(),
            event_id: e.event_id.clone(),
            at: e.at.get(),
        }
    }

    /// Whether the entry concerns a payment (its subject is a payment id) rather than an email.
    pub fn is_payment(&self) -> bool {
        matches!(
            self.kind,
            rules::EntryKind::Topup | rules::EntryKind::TopupRefund
        )
    }
}

/// The per-email row. Amounts are in the wallet's minor unit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmailRow {
    pub message_id: String,
    pub state: EmailState,
    /// What the email holds or was debited (its wallet's currency: the row does not repeat it).
    pub amount: Minor,
    /// Webhook event ids that reached this email, in processing order.
    pub events: Vec<String>,
    pub held_at: Option<Millis>,
    pub updated_at: Option<Millis>,
    /// The hold the wallet API placed for it before the send ([`crate::email::holds`]); `None` for an
    /// email first held (or debited) by a webhook.
    pub hold_id: Option<String>,
    /// When its hold expires (ms): while `held`, the row is in the open index's hold shards
    /// (`WALLET#HOLDS#…`) due then, and the expiry sweep releases it ([`crate::email::holds`]).
    pub expires_at: Option<Millis>,
    /// The ledger entries of this email's movements, oldest first, kept in the row itself so that
    /// a movement writes one item for both (rows written before that layout have none: their
    /// entries are `ENTRY#` items; [`crate::Ledger::entries`] reads both).
    pub entries: Vec<RowEntry>,
    /// The wallet shard its hold is on (its capture or release moves that shard; 0 for a
    /// wallet of one shard).
    pub shard: u32,
    pub version: Option<u64>,
}

/// A ledger entry as its email's row keeps it: an [`Entry`] without the tenant and the subject
/// (the row's). Amounts are in the wallet's minor unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowEntry {
    pub id: String,
    pub kind: rules::EntryKind,
    /// The movement's amount, and what it changed of the balance and of the held amount, in the
    /// wallet's currency (the row does not repeat it: [`Entry::of_row`] gives it back).
    pub amount: Minor,
    pub balance_delta: Minor,
    pub held_delta: Minor,
    pub event_source: String,
    pub event_id: String,
    pub at: Millis,
}

/// The per-payment row. Amounts are in the wallet's minor unit.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PaymentRow {
    pub payment_key: String,
    pub funds: Funds,
    /// What a checkout awaiting funds expects.
    pub expected: Minor,
    /// Credited to the wallet.
    pub credited: Minor,
    /// The largest cumulative refunded amount Stripe reported.
    pub refund_total: Minor,
    /// Taken back from the wallet: never more than `credited`.
    pub refunded: Minor,
    pub events: Vec<String>,
    pub updated_at: Option<i64>,
    pub version: Option<u64>,
}

impl PaymentRow {
    /// Its money state, for [`rules::payment`].
    pub fn state(&self) -> PaymentState {
        PaymentState {
            funds: self.funds,
            expected: self.expected.get(),
            credited: self.credited.get(),
            refund_total: self.refund_total.get(),
            refunded: self.refunded.get(),
        }
    }

    /// The row with `state`.
    pub fn with_state(mut self, state: PaymentState) -> Self {
        self.funds = state.funds;
        self.expected = Minor::new(state.expected);
        self.credited = Minor::new(state.credited);
        self.refund_total = Minor::new(state.refund_total);
        self.refunded = Minor::new(state.refunded);
        self
    }
}

/// Where a payment belongs: the tenant its first event with a tenant named (then its row lives
/// in that tenant's wallet), or — while no such event came — the refunds reported for it, to be
/// settled when (if) it comes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PaymentIndex {
    pub payment_key: String,
    pub tenant: Option<TenantId>,
    /// The largest cumulative refunded amount reported before the payment was known (in the
    /// currency of the wallet it turns out to belong to).
    pub refund_total: Minor,
    /// The webhook events that recorded it.
    pub events: Vec<String>,
    /// A payment method the payment saved for later (`setup_future_usage`), reported before the
    /// payment's tenant was known: saved for autopay when an event names the tenant.
    pub method: Option<crate::parse::SavedMethod>,
    /// Whether the payment's unmatched item ([`crate::payments::unmatched`]) is open: the event that names
    /// the tenant (or the operator's bind) resolves it in its transaction.
    pub unmatched: bool,
    /// `None` for an index written before versions (it always names its tenant).
    pub version: Option<u64>,
}
