//! A run's budget spread fairly over the shards of the open index ([`FairShares`]), for the
//! reaper (`OPEN#…`) and the outbox's sweep (`OUTBOX#…`): each shard still in the run gets an
//! equal share, what a shard does not use goes to the others in the next round (a thousand due
//! items in one shard never starve the rest), and when the budget cannot give every shard one,
//! which shards go first rotates by minute.

use std::collections::HashSet;
use std::future::Future;
use std::hash::Hash;

/// The rounds of one run over `shards` shards (by index) with a budget of items; `K` tells the
/// items apart (the index is eventually consistent: an item handled in one round may still be
/// listed in the next).
#[derive(Debug)]
pub struct FairShares<K> {
    /// Shards that filled their last share (they may have more).
    live: Vec<usize>,
    /// Items taken per shard so far.
    taken: Vec<usize>,
    /// Whether a shard was asked at all.
    asked: Vec<bool>,
    seen: HashSet<K>,
    budget: usize,
    rotate: usize,
}

impl<K: Eq + Hash> FairShares<K> {
    /// A run at `now_ms` over `shards` shards, at most `budget` items in all.
    pub fn new(shards: usize, budget: usize, now_ms: i64) -> Self {
        Self {
            live: (0..shards).collect(),
            taken: vec![0; shards],
            asked: vec![false; shards],
            seen: HashSet::new(),
            budget,
            rotate: usize::try_from(now_ms.div_euclid(60_000)).unwrap_or(0) % shards.max(1),
        }
    }

    /// The next round: each live shard asked, through `fetch(shard, limit)` (its due items,
    /// oldest first, at most `limit`), for its share of what is left of the budget. Empty when the
    /// run is over (the budget spent, or every shard drained).
    pub async fn next_round<T, E, F, Fut>(
        &mut self,
        mut fetch: F,
        key: impl Fn(&T) -> K,
    ) -> Result<Vec<T>, E>
    where
        F: FnMut(usize, usize) -> Fut,
        Fut: Future<Output = Result<Vec<T>, E>>,
    {
        let mut batch: Vec<T> = Vec::new();
        if self.budget == 0 || self.live.is_empty() {
            return Ok(batch);
        }
        let share = (self.budget / self.live.len()).max(1);
        let mut still_live = Vec::new();
        let order: Vec<usize> = self
            .live
            .iter()
            .cycle()
            .skip(self.rotate % self.live.len())
            .take(self.live.len())
            .copied()
            .collect();
        for i in order {
            let want = share.min(self.budget - batch.len());
            if want == 0 {
                still_live.push(i);
                continue;
            }
            // Items already taken this run may still be listed: ask for enough to skip them.
            // (Boxed: a store's futures are deep, and a function's whole run holds this one.)
            self.asked[i] = true;
            let found = Box::pin(fetch(i, self.taken[i] + want)).await?;
            let fresh: Vec<T> = found
                .into_iter()
                .filter(|d| !self.seen.contains(&key(d)))
                .take(want)
                .collect();
            if fresh.len() == want {
                still_live.push(i);
            }
            self.taken[i] += fresh.len();
            self.seen.extend(fresh.iter().map(&key));
            batch.extend(fresh);
        }
        self.budget -= batch.len();
        self.live = if batch.is_empty() {
            Vec::new()
        } else {
            still_live
        };
        Ok(batch)
    }

    /// The shards no round asked (the budget was smaller than the shards).
    pub fn unasked(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.asked.len()).filter(|i| !self.asked[*i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Shards holding `sizes[i]` items each, `(shard, n)`; runs until done, counting per shard.
    async fn run(
        sizes: &[usize],
        budget: usize,
        now_ms: i64,
    ) -> (BTreeMap<usize, usize>, Vec<usize>) {
        let mut fair = FairShares::new(sizes.len(), budget, now_ms);
        let mut by = BTreeMap::new();
        loop {
            let round = fair
                .next_round(
                    |i, limit| async move {
                        Ok::<_, ()>((0..sizes[i].min(limit)).map(|n| (i, n)).collect::<Vec<_>>())
                    },
                    |t: &(usize, usize)| *t,
                )
                .await
                .unwrap();
            if round.is_empty() {
                break;
            }
            for (i, _) in round {
                *by.entry(i).or_default() += 1;
            }
        }
        (by, fair.unasked().collect())
    }

    #[tokio::test]
    async fn shares_are_equal_and_what_a_shard_leaves_goes_to_the_others() {
        let (by, unasked) = run(&[1000, 1, 0, 5], 100, 0).await;
        assert_eq!(by, BTreeMap::from([(0, 94), (1, 1), (3, 5)]));
        assert!(unasked.is_empty());
        let (by, _) = run(&[10, 10, 10, 10], 100, 0).await;
        assert_eq!(by.values().sum::<usize>(), 40, "everything, when it fits");
        let (by, _) = run(&[1000; 16], 160, 0).await;
        assert!(by.values().all(|n| *n == 10), "{by:?}");
    }

    #[tokio::test]
    async fn a_budget_smaller_than_the_shards_rotates_by_minute() {
        let (first, unasked) = run(&[5; 16], 4, 0).await;
        assert_eq!(first.keys().copied().collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(unasked, (4..16).collect::<Vec<_>>());
        let (next, _) = run(&[5; 16], 4, 60_000).await;
        assert_eq!(next.keys().copied().collect::<Vec<_>>(), [1, 2, 3, 4]);
        let (none, _) = run(&[5; 16], 0, 0).await;
        assert!(none.is_empty());
    }
}
