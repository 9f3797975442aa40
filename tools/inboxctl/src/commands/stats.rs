//! `inboxctl stats`: counts by status, by source and by both; the oldest pending and retrying
//! messages (their age is how far behind processing is); the quarantine queue's depth.

pub(crate) mod outbox;

use crate::context::Context;
use crate::error::{Context as _, Result};
use crate::output::{print_json, say, table};
use crate::when;
use aws_sdk_sqs::types::QueueAttributeName;
use inbox_core::clock::{Clock as _, SystemClock};
use inbox_core::domain::Status;
use inbox_core::message::StoredMessage;
use inbox_core::store::{ListFilter, MessageStore as _};
use serde::Serialize;
use std::collections::BTreeMap;

pub(crate) const ALL_STATUSES: [Status; 6] = [
    Status::Pending,
    Status::Processing,
    Status::Retrying,
    Status::Processed,
    Status::Ignored,
    Status::Failed,
];

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Oldest {
    pub source: String,
    pub event_id: String,
    pub received_at: String,
    pub age_secs: i64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct QueueDepth {
    /// ApproximateNumberOfMessages: waiting to be looked at.
    pub visible: u64,
    /// ApproximateNumberOfMessagesNotVisible: received by someone right now.
    pub in_flight: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stats {
    pub total: usize,
    pub by_status: BTreeMap<String, usize>,
    pub by_source: BTreeMap<String, usize>,
    /// source → status → count (only non-zero counts).
    pub by_source_status: BTreeMap<String, BTreeMap<String, usize>>,
    pub oldest_pending: Option<Oldest>,
    pub oldest_retrying: Option<Oldest>,
    /// `None` when no quarantine queue is configured.
    pub quarantine: Option<QueueDepth>,
    /// The outbox, per destination.
    pub destinations: Vec<outbox::DestinationStats>,
}

/// Counts `messages` (pure, for tests).
pub(crate) fn tally(messages: &[StoredMessage], now_ms: i64) -> Stats {
    let mut by_status: BTreeMap<String, usize> = ALL_STATUSES
        .iter()
        .map(|s| (s.as_str().to_owned(), 0))
        .collect();
    let mut by_source: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_source_status: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for m in messages {
        *by_status.entry(m.status.as_str().to_owned()).or_default() += 1;
        *by_source.entry(m.source.to_string()).or_default() += 1;
        *by_source_status
            .entry(m.source.to_string())
            .or_default()
            .entry(m.status.as_str().to_owned())
            .or_default() += 1;
    }
    let oldest = |status: Status| {
        messages
            .iter()
            .filter(|m| m.status == status)
            .min_by_key(|m| m.received_at)
            .map(|m| Oldest {
                source: m.source.to_string(),
                event_id: m.event_id.to_string(),
                received_at: when::rfc3339(m.received_at),
                age_secs: (now_ms - m.received_at).div_euclid(1000),
            })
    };
    Stats {
        total: messages.len(),
        by_status,
        by_source,
        by_source_status,
        oldest_pending: oldest(Status::Pending),
        oldest_retrying: oldest(Status::Retrying),
        quarantine: None,
        destinations: Vec::new(),
    }
}

pub(crate) async fn queue_depth(ctx: &Context, url: &str) -> Result<QueueDepth> {
    let out = ctx
        .sqs()
        .await
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .context("reading the quarantine queue's attributes")?;
    let attrs = out.attributes.unwrap_or_default();
    let get = |name: &QueueAttributeName| {
        attrs
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default()
    };
    Ok(QueueDepth {
        visible: get(&QueueAttributeName::ApproximateNumberOfMessages),
        in_flight: get(&QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
    })
}

pub async fn run(ctx: &Context) -> Result<()> {
    let store = ctx.store().await?;
    let messages = store.list(&ListFilter::default(), usize::MAX).await?;
    let mut stats = tally(&messages, SystemClock.now_millis());
    if let Some(url) = ctx.quarantine_url() {
        stats.quarantine = Some(queue_depth(ctx, url).await?);
    }
    stats.destinations = outbox::destination_stats(&store).await?;
    if ctx.json() {
        return print_json(&stats);
    }
    print_human(&stats)
}

fn print_human(stats: &Stats) -> Result<()> {
    let mut header = vec!["source".to_owned()];
    header.extend(ALL_STATUSES.iter().map(|s| s.as_str().to_owned()));
    header.push("total".into());
    let mut t = table(header);
    for (source, total) in &stats.by_source {
        let counts = &stats.by_source_status[source];
        let mut row = vec![source.clone()];
        row.extend(
            ALL_STATUSES
                .iter()
                .map(|s| counts.get(s.as_str()).copied().unwrap_or(0).to_string()),
        );
        row.push(total.to_string());
        t.add_row(row);
    }
    let mut totals = vec!["all".to_owned()];
    totals.extend(
        ALL_STATUSES
            .iter()
            .map(|s| stats.by_status[s.as_str()].to_string()),
    );
    totals.push(stats.total.to_string());
    t.add_row(totals);
    say(t)?;
    let oldest = |label: &str, o: &Option<Oldest>| match o {
        Some(o) => say(format!(
            "oldest {label}: {}/{} received {} ({} ago)",
            o.source,
            o.event_id,
            o.received_at,
            when::age(o.age_secs.saturating_mul(1000))
        )),
        None => say(format!("oldest {label}: none")),
    };
    oldest("pending", &stats.oldest_pending)?;
    oldest("retrying", &stats.oldest_retrying)?;
    match &stats.quarantine {
        Some(q) => say(format!(
            "quarantine queue: {} message(s) waiting, {} in flight",
            q.visible, q.in_flight
        ))?,
        None => say("quarantine queue: not configured (--quarantine-queue-url)")?,
    }
    if stats.destinations.is_empty() {
        return say("outbox: no destinations");
    }
    let mut t = table([
        "destination",
        "state",
        "circuit",
        "deliveries",
        "delivered",
        "failed",
        "pending",
        "success rate",
        "oldest pending",
        "p50 / p99 processed→delivered",
    ]);
    for d in &stats.destinations {
        let count = |s: &str| d.by_status.get(s).copied().unwrap_or(0);
        let pending = count("pending") + count("retrying") + count("delivering");
        t.add_row(vec![
            d.id.clone(),
            d.state.clone(),
            d.circuit.as_str().to_owned(),
            d.deliveries.to_string(),
            count("delivered").to_string(),
            count("failed").to_string(),
            pending.to_string(),
            d.success_rate
                .map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", r * 100.0)),
            d.oldest_pending_age_secs
                .map_or_else(|| "-".to_owned(), |s| when::age(s.saturating_mul(1000))),
            match (d.latency_p50_ms, d.latency_p99_ms) {
                (Some(a), Some(b)) => format!("{a} ms / {b} ms"),
                _ => "-".to_owned(),
            },
        ]);
    }
    say(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inbox_core::domain::{EventId, SourceName};

    fn msg(source: &str, id: &str, status: Status, received_at: i64) -> StoredMessage {
        StoredMessage {
            source: SourceName::parse(source).expect("source"),
            event_id: EventId::parse(id).expect("id"),
            event_type: None,
            status,
            received_at,
            body: Vec::new(),
            body_sha256: String::new(),
            headers: Default::default(),
            attempts: 0,
            version: 0,
            lease_until: None,
            next_attempt_at: None,
            last_error: None,
            history: Vec::new(),
            history_total: 0,
            expires_at: None,
            provider_id: None,
            identity_error: None,
            batch: None,
            open_due: None,
            notice_pending: None,
        }
    }

    #[test]
    fn counts_and_oldest() {
        let ms = [
            msg("stripe", "a", Status::Pending, 5_000),
            msg("stripe", "b", Status::Pending, 3_000),
            msg("stripe", "c", Status::Failed, 1_000),
            msg("github", "d", Status::Retrying, 4_000),
            msg("github", "e", Status::Processed, 2_000),
        ];
        let s = tally(&ms, 10_000);
        assert_eq!(s.total, 5);
        assert_eq!(s.by_status["pending"], 2);
        assert_eq!(s.by_status["processing"], 0, "every status is listed");
        assert_eq!(s.by_status["failed"], 1);
        assert_eq!(s.by_source["stripe"], 3);
        assert_eq!(s.by_source["github"], 2);
        assert_eq!(s.by_source_status["github"]["retrying"], 1);
        assert_eq!(s.by_source_status["stripe"].get("processed"), None);
        let p = s.oldest_pending.expect("a pending message");
        assert_eq!((p.event_id.as_str(), p.age_secs), ("b", 7));
        assert_eq!(s.oldest_retrying.map(|o| o.event_id), Some("d".to_owned()));
        assert_eq!(tally(&[], 0).oldest_pending, None);
    }
}
