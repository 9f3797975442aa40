//! The attempt item (`ATTEMPT#{id}`): one decision to charge, `Replace`d at its version, in the
//! attempt shards of the open index (`AUTOPAY#ATTEMPT#…`, due at `due`) until it is terminal.

use super::{attempt_sk, count, millis, need, shard_of, ATTEMPT_SHARD_PREFIX, KIND_ATTEMPT};
use crate::autopay::{Attempt, AttemptState, Reason, TryRecord};
use crate::balance::items::{number, tenant, text, version, wallet_pk};
use crate::money::Currency;
use inbox_core::clock::Millis;
use inbox_core::store::attr::{get_s, n, s};
use inbox_core::store::schema::{OPEN_DUE, OPEN_SHARD};
use inbox_core::store::{Effect, Item};
use serde_json::json;

impl Attempt {
    /// The item; in the attempt shards of the open index (due at `due`) while not terminal.
    pub fn to_item(&self) -> Item {
        let t = self.tenant.as_str();
        let tries: Vec<_> = self
            .tries
            .iter()
            .map(|r| {
                json!({"try": r.try_no, "at": r.at.get(), "outcome": r.outcome,
                            "next_due": r.next_due.map(Millis::get)})
            })
            .collect();
        let mut item = Item::from([
            ("pk".to_string(), s(wallet_pk(t))),
            ("sk".to_string(), s(attempt_sk(&self.id))),
            ("kind".to_string(), s(KIND_ATTEMPT)),
            ("tenant".to_string(), s(t)),
            ("id".to_string(), s(&self.id)),
            ("amount".to_string(), n(self.amount.minor())),
            ("currency".to_string(), s(self.amount.currency().as_str())),
            ("state".to_string(), s(self.state.name())),
            ("try_no".to_string(), n(i64::from(self.try_no))),
            ("rung".to_string(), n(self.rung as i64)),
            ("due".to_string(), n(self.due.get())),
            (
                "tries".to_string(),
                s(serde_json::Value::from(tries).to_string()),
            ),
            ("created_at".to_string(), n(self.created_at.get())),
        ]);
        match self.reason {
            Reason::Threshold => item.insert("reason".into(), s("threshold")),
            Reason::Recurring { period } => {
                item.insert("period".into(), n(i64::from(period)));
                item.insert("reason".into(), s("recurring"))
            }
        };
        if let AttemptState::Ended { reason } = &self.state {
            item.insert("ended_reason".into(), s(reason));
        }
        if let Some(t) = self.first_failure {
            item.insert("first_failure".into(), n(t.get()));
        }
        if let Some(k) = &self.idempotency_key {
            item.insert("idempotency_key".into(), s(k));
        }
        if let Some(r) = &self.provider_ref {
            item.insert("provider_ref".into(), s(r));
        }
        if let Some(t) = self.claimed_at {
            item.insert("claimed_at".into(), n(t.get()));
        }
        if !self.state.is_terminal() {
            let key = format!("{t}#{}", self.id);
            item.insert(OPEN_SHARD.into(), s(shard_of(ATTEMPT_SHARD_PREFIX, &key)));
            item.insert(OPEN_DUE.into(), n(self.due.get()));
        }
        item
    }

    /// Reads an attempt item; an error says what is wrong with it.
    pub fn from_item(item: &Item) -> Result<Self, String> {
        let code = need(get_s(item, "currency"), "currency")?;
        let currency = Currency::parse(code).map_err(|e| e.to_string())?;
        let state = match get_s(item, "state") {
            Some("due") => AttemptState::Due,
            Some("charging") => AttemptState::Charging,
            Some("pending") => AttemptState::Pending,
            Some("charged") => AttemptState::Charged,
            Some("credited") => AttemptState::Credited,
            Some("ended") => AttemptState::Ended {
                reason: text(item, "ended_reason").unwrap_or_default(),
            },
            Some(other) => return Err(format!("state {other:?} is not a known state")),
            None => return Err("state is missing".into()),
        };
        let reason = match get_s(item, "reason") {
            Some("threshold") => Reason::Threshold,
            Some("recurring") => Reason::Recurring {
                period: count(item, "period")?,
            },
            Some(other) => return Err(format!("reason {other:?} is not a known reason")),
            None => return Err("reason is missing".into()),
        };
        let tries_text = need(get_s(item, "tries"), "tries")?;
        let tries: Vec<serde_json::Value> =
            serde_json::from_str(tries_text).map_err(|e| format!("tries: {e}"))?;
        let tries = tries
            .iter()
            .map(|t| {
                let bad = || format!("tries: {t} is not a try");
                Ok(TryRecord {
                    try_no: t["try"]
                        .as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(bad)?,
                    at: Millis::new(t["at"].as_i64().ok_or_else(bad)?),
                    outcome: t["outcome"].as_str().ok_or_else(bad)?.to_owned(),
                    next_due: t["next_due"].as_i64().map(Millis::new),
                })
            })
            .collect::<Result<_, String>>()?;
        let rung = number(item, "rung")?.unwrap_or(0);
        Ok(Self {
            id: need(text(item, "id"), "id")?,
            tenant: tenant(item)?,
            reason,
            amount: currency.amount(need(number(item, "amount")?, "amount")?),
            state,
            try_no: count(item, "try_no")?,
            rung: usize::try_from(rung).map_err(|_| format!("rung {rung} is not a rung"))?,
            first_failure: millis(item, "first_failure")?,
            due: need(millis(item, "due")?, "due")?,
            idempotency_key: text(item, "idempotency_key"),
            claimed_at: millis(item, "claimed_at")?,
            provider_ref: text(item, "provider_ref"),
            tries,
            created_at: Millis::new(number(item, "created_at")?.unwrap_or(0)),
            version: version(item),
        })
    }

    /// Writes `self` at the version it was read (`None`: a new attempt, never over one).
    pub fn replace(&self) -> Effect {
        Effect::Replace {
            item: self.to_item(),
            expected_version: self.version,
        }
    }
}
