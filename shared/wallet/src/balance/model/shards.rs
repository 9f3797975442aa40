//! A wallet split over shards, as the model sees it: each shard's figures ([`ShardFigures`]) and
//! the wallet's as their sums. How shards are stored is [`crate::balance::items::shards`]'s
//! business.

use super::Wallet;
use crate::money::{checked_add, Minor, Overflow};
use std::collections::BTreeMap;

impl Wallet {
    /// How many shard items its balance is split over (1: the wallet item alone).
    pub fn shard_count(&self) -> u32 {
        u32::try_from(self.shards.len()).unwrap_or(1).max(1)
    }

    /// Shard `shard`'s amounts as read (one shard: the wallet's own).
    pub fn part(&self, shard: u32) -> ShardFigures {
        if let Some(p) = self.shards.iter().find(|p| p.shard == shard) {
            return p.clone();
        }
        ShardFigures {
            shard: 0,
            balance: self.balance.into(),
            held: self.held.into(),
            floor: self.floor.into(),
            changes: self.changes,
            month_debits: self.month_debits.clone(),
            overdrawn: self.overdrawn,
            review: self.review,
            // The wallet model does not keep it: a view compares shard 0's on its item.
            refills: 0,
        }
    }

    /// The wallet item (shard 0, as read) with its other shards' amounts added: the figures
    /// become the sums, the flags any shard's.
    pub(crate) fn with_shards(mut self, others: Vec<ShardFigures>) -> Result<Self, Overflow> {
        let mut sum = self.part(0);
        let mut parts = vec![sum.clone()];
        for p in others {
            sum.absorb(&p)?;
            parts.push(p);
        }
        let c = self.currency;
        self.balance = sum.balance.of(c);
        self.held = sum.held.of(c);
        self.changes = sum.changes;
        self.month_debits = sum.month_debits;
        self.overdrawn = sum.overdrawn;
        self.review = sum.review;
        self.shards = parts;
        Ok(self)
    }
}

/// One shard's figures as read (shard 0's are the wallet item's own): the model's own record of
/// a shard, so that the wallet and the rules about shards (surplus, sums) know no item layout;
/// the items layer ([`crate::balance::items::shards`]) reads it from a shard item.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShardFigures {
    pub shard: u32,
    /// The shard's share of the wallet's balance and held amount (in the wallet's currency: a
    /// shard item does not repeat it).
    pub balance: Minor,
    pub held: Minor,
    /// Holds keep this shard's `balance − held` at or above it.
    pub floor: Minor,
    pub changes: i64,
    /// This shard's debits per month (`YYYY_MM`).
    pub month_debits: BTreeMap<String, Minor>,
    pub overdrawn: bool,
    pub review: bool,
    /// The refills this shard took part in (its item's [`crate::balance::items::shards::REFILLS_ATTR`]; shard 0's counts every
    /// refill of the wallet).
    pub refills: i64,
}

impl ShardFigures {
    /// What this shard has above its floor (negative: a deficit, after debits overdrew it).
    pub fn surplus(&self) -> Result<Minor, Overflow> {
        let what = "a shard's available amount";
        self.balance
            .checked_sub(self.held, what)?
            .checked_sub(self.floor, what)
    }

    /// Adds another shard's amounts into this sum.
    pub(crate) fn absorb(&mut self, other: &ShardFigures) -> Result<(), Overflow> {
        self.balance = self.balance.checked_add(other.balance, "the balance")?;
        self.held = self.held.checked_add(other.held, "the held amount")?;
        self.changes = checked_add(self.changes, other.changes, "the change count")?;
        for (month, d) in &other.month_debits {
            let sum = self.month_debits.entry(month.clone()).or_default();
            *sum = sum.checked_add(*d, "the month's debits")?;
        }
        self.overdrawn |= other.overdrawn;
        self.review |= other.review;
        Ok(())
    }
}
