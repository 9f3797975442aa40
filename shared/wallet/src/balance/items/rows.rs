//! The per-email and per-payment rows ([`EmailRow`], [`PaymentRow`]) as items and writes (the
//! layout table is in [`super`]), and the ledger entries an email's row keeps ([`RowEntry`]).

use super::*;
use crate::balance::model::RowEntry;
use crate::money::Minor;
use crate::tenant::TenantId;
use inbox_core::clock::Millis;
use inbox_core::store::schema::{OPEN_DUE, OPEN_SHARD};

/// The attribute of an email's row that keeps its ledger entries (a list of maps).
pub const ROW_ENTRIES: &str = "entries";
/// The open-index shards of held emails that have an expiry (`WALLET#HOLDS#0`..`15`), due at it.
pub const HOLD_SHARD_PREFIX: &str = "WALLET#HOLDS#";
/// How many shards they spread over.
pub const HOLD_SHARDS: u8 = 16;

/// Every hold shard of the open index.
pub fn hold_shards() -> impl Iterator<Item = String> {
    (0..HOLD_SHARDS).map(|i| format!("{HOLD_SHARD_PREFIX}{i}"))
}

/// The hold shard of an email's row (by its tenant and message id).
fn hold_shard(tenant: &TenantId, message_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = Sha256::digest(format!("{tenant}\0{message_id}").as_bytes());
    format!("{HOLD_SHARD_PREFIX}{}", h[0] % HOLD_SHARDS)
}

impl RowEntry {
    fn to_value(&self) -> AttributeValue {
        AttributeValue::M(std::collections::HashMap::from([
            ("id".to_string(), s(&self.id)),
            ("kind".to_string(), s(self.kind.as_str())),
            ("amount".to_string(), n(self.amount.get())),
            ("balance_delta".to_string(), n(self.balance_delta.get())),
            ("held_delta".to_string(), n(self.held_delta.get())),
            ("event_source".to_string(), s(&self.event_source)),
            ("event_id".to_string(), s(&self.event_id)),
            ("at".to_string(), n(self.at.get())),
        ]))
    }

    fn from_value(v: &AttributeValue) -> Result<Self, String> {
        let m = v.as_m().map_err(|_| "an entry is not a map".to_string())?;
        let need = |k: &str| required(m, k);
        let word = |k: &str| text(m, k).ok_or_else(|| format!("an entry's {k} is missing"));
        Ok(Self {
            id: word("id")?,
            kind: parse_state::<Option<rules::EntryKind>>(m, "kind")?
                .ok_or("an entry's kind is missing")?,
            amount: Minor::new(need("amount")?),
            balance_delta: Minor::new(need("balance_delta")?),
            held_delta: Minor::new(need("held_delta")?),
            event_source: word("event_source")?,
            event_id: word("event_id")?,
            at: Millis::new(need("at")?),
        })
    }
}

/// The entries an email's row keeps (none in a row written before entries were kept there).
pub(crate) fn row_entries(item: &Item) -> Result<Vec<RowEntry>, String> {
    match item.get(ROW_ENTRIES) {
        None => Ok(Vec::new()),
        Some(v) => v
            .as_l()
            .map_err(|_| format!("{ROW_ENTRIES} is not a list"))?
            .iter()
            .map(RowEntry::from_value)
            .collect(),
    }
}

impl EmailRow {
    /// Reads an email row; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        Ok(Self {
            message_id: text(item, "message_id").unwrap_or_default(),
            state: parse_state(item, "state")?,
            amount: Minor::new(number(item, "amount")?.unwrap_or(0)),
            events: get_strings(item, "events"),
            held_at: number(item, "held_at")?.map(Millis::new),
            updated_at: number(item, "updated_at")?.map(Millis::new),
            hold_id: text(item, "hold_id"),
            expires_at: number(item, "expires_at")?.map(Millis::new),
            entries: row_entries(item)?,
            shard: number(item, "shard")?
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            version: version(item),
        })
    }

    fn to_item(&self, tenant: &TenantId) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            ("sk".to_string(), s(email_sk(&self.message_id))),
            ("kind".to_string(), s(KIND_EMAIL)),
            ("tenant".to_string(), s(tenant)),
            ("message_id".to_string(), s(&self.message_id)),
            ("state".to_string(), s(state_name(&self.state))),
            ("amount".to_string(), n(self.amount.get())),
            ("events".to_string(), attr::strings(&self.events)),
        ]);
        if let Some(t) = self.updated_at {
            item.insert("updated_at".into(), n(t.get()));
        }
        if let Some(t) = self.held_at {
            item.insert("held_at".into(), n(t.get()));
        }
        if let Some(h) = &self.hold_id {
            item.insert("hold_id".into(), s(h));
        }
        if !self.entries.is_empty() {
            let entries = self.entries.iter().map(RowEntry::to_value).collect();
            item.insert(ROW_ENTRIES.into(), AttributeValue::L(entries));
        }
        if self.shard != 0 {
            item.insert("shard".into(), n(i64::from(self.shard)));
        }
        if let Some(t) = self.expires_at.map(Millis::get) {
            item.insert("expires_at".into(), n(t));
            // Due in the open index while held: settled, it leaves it.
            if self.state == rules::EmailState::Held {
                let shard = hold_shard(tenant, &self.message_id);
                item.insert(OPEN_SHARD.into(), s(shard));
                item.insert(OPEN_DUE.into(), n(t));
            }
        }
        item
    }

    /// Writes `self` over the row as read at `read_version` (`None`: there was none).
    pub(crate) fn replace(&self, tenant: &TenantId, read_version: Option<u64>) -> Effect {
        Effect::Replace {
            item: self.to_item(tenant),
            expected_version: read_version,
        }
    }
}

impl PaymentRow {
    /// Reads a payment row; an error says what is wrong with it. Rows written before delayed
    /// payments and capped refunds have no `funds` or `refund_total`: paid if credited, refunded
    /// as far as taken back.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let credited = Minor::new(number(item, "credited")?.unwrap_or(0));
        let refunded = Minor::new(number(item, "refunded")?.unwrap_or(0));
        let funds = match item.get("funds") {
            Some(_) => parse_state(item, "funds")?,
            None if credited > Minor::ZERO => Funds::Paid,
            None => Funds::Unknown,
        };
        Ok(Self {
            payment_key: text(item, "payment_key").unwrap_or_default(),
            funds,
            expected: Minor::new(number(item, "expected")?.unwrap_or(0)),
            credited,
            refund_total: number(item, "refund_total")?.map_or(refunded, Minor::new),
            refunded,
            events: get_strings(item, "events"),
            updated_at: number(item, "updated_at")?,
            version: version(item),
        })
    }

    fn to_item(&self, tenant: &TenantId) -> Item {
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(tenant))),
            ("sk".to_string(), s(payment_sk(&self.payment_key))),
            ("kind".to_string(), s(KIND_PAYMENT)),
            ("tenant".to_string(), s(tenant)),
            ("payment_key".to_string(), s(&self.payment_key)),
            ("funds".to_string(), s(state_name(&self.funds))),
            ("expected".to_string(), n(self.expected.get())),
            ("credited".to_string(), n(self.credited.get())),
            ("refund_total".to_string(), n(self.refund_total.get())),
            ("refunded".to_string(), n(self.refunded.get())),
            ("events".to_string(), attr::strings(&self.events)),
        ]);
        if let Some(t) = self.updated_at {
            item.insert("updated_at".into(), n(t));
        }
        item
    }

    /// Writes `self` over the row as read at `read_version` (`None`: there was none).
    pub(crate) fn replace(&self, tenant: &TenantId, read_version: Option<u64>) -> Effect {
        Effect::Replace {
            item: self.to_item(tenant),
            expected_version: read_version,
        }
    }
}
