//! The outbox part of `inboxctl stats`: per destination, deliveries by status, the success rate
//! of attempts, the oldest pending delivery's age, the circuit, and the processed → delivered
//! latency (p50/p99 of `delivered_at − created_at`: the time from the event's terminal transition
//! to its delivery's 2xx).

use crate::error::Result;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::outbox::breaker::{BreakerConfig, CircuitState};
use inbox_core::outbox::delivery::{DeliveryStatus, OutboundDelivery};
use inbox_core::outbox::destination::{Destination, DestinationId};
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::store::dynamo::DynamoTable;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DestinationStats {
    pub id: String,
    pub state: String,
    pub deliveries: usize,
    pub by_status: BTreeMap<String, usize>,
    /// Attempts journaled, and how many got a 2xx.
    pub attempts: usize,
    pub successful_attempts: usize,
    /// `successful_attempts / attempts` (none without attempts).
    pub success_rate: Option<f64>,
    /// Age of the oldest delivery not yet delivered nor failed, s.
    pub oldest_pending_age_secs: Option<i64>,
    pub circuit: CircuitState,
    pub latency_p50_ms: Option<i64>,
    pub latency_p99_ms: Option<i64>,
}

/// The `q`-quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[i64], q: f64) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted.get(rank - 1).copied()
}

/// Tallies `deliveries` per destination (pure); `circuit` gives each destination's circuit.
pub fn tally(
    destinations: &[Destination],
    deliveries: &[OutboundDelivery],
    circuit: impl Fn(&DestinationId) -> CircuitState,
    now: i64,
) -> Vec<DestinationStats> {
    let mut ids: Vec<DestinationId> = destinations.iter().map(|d| d.id.clone()).collect();
    for d in deliveries {
        if !ids.contains(&d.destination) {
            ids.push(d.destination.clone());
        }
    }
    ids.sort();
    ids.into_iter()
        .map(|id| {
            let mine: Vec<&OutboundDelivery> =
                deliveries.iter().filter(|d| d.destination == id).collect();
            let mut by_status = BTreeMap::new();
            for d in &mine {
                *by_status.entry(d.status.as_str().to_owned()).or_default() += 1;
            }
            let attempts: usize = mine.iter().map(|d| d.journal.len()).sum();
            let successful = mine
                .iter()
                .flat_map(|d| &d.journal)
                .filter(|a| a.status.is_some_and(|s| (200..300).contains(&s)))
                .count();
            let oldest = mine
                .iter()
                .filter(|d| !d.status.is_terminal())
                .map(|d| d.created_at)
                .min();
            let mut latencies: Vec<i64> = mine
                .iter()
                .filter(|d| d.status == DeliveryStatus::Delivered)
                .filter_map(|d| d.delivered_at.map(|t| t - d.created_at))
                .collect();
            latencies.sort_unstable();
            let state = destinations
                .iter()
                .find(|d| d.id == id)
                .map_or_else(|| "removed".to_owned(), |d| d.state.as_str().to_owned());
            DestinationStats {
                deliveries: mine.len(),
                by_status,
                attempts,
                successful_attempts: successful,
                success_rate: (attempts > 0).then(|| successful as f64 / attempts as f64),
                oldest_pending_age_secs: oldest.map(|t| (now - t).div_euclid(1000)),
                circuit: circuit(&id),
                latency_p50_ms: quantile(&latencies, 0.5),
                latency_p99_ms: quantile(&latencies, 0.99),
                state,
                id: id.to_string(),
            }
        })
        .collect()
}

/// Every destination's figures ([`tally`] over the whole outbox, each circuit as the breaker's
/// default settings name it): what `stats` prints and the console's Destinations page shows.
pub async fn destination_stats(store: &DynamoTable) -> Result<Vec<DestinationStats>> {
    let destinations = inbox_core::outbox::admin::list(store)
        .await
        .map_err(crate::error::failed)?;
    let deliveries = store.all_deliveries().await?;
    let now = SystemClock.now_millis();
    let mut circuits = BTreeMap::new();
    for d in &destinations {
        let c = store.worker_state(&d.id).await?.circuit;
        circuits.insert(d.id.clone(), c.state(&breaker(), now));
    }
    Ok(tally(
        &destinations,
        &deliveries,
        |id| circuits.get(id).copied().unwrap_or(CircuitState::Closed),
        now,
    ))
}

/// The breaker settings `stats` assumes when it names a circuit's state.
pub fn breaker() -> BreakerConfig {
    BreakerConfig::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7], 0.99), Some(7));
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), Some(50));
        assert_eq!(quantile(&v, 0.99), Some(99));
        assert_eq!(quantile(&v, 1.0), Some(100));
    }
}
