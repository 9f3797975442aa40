//! `inboxctl show`: one message in full: its state, history, repeated deliveries, kept headers
//! (names only unless `--headers`: signature values are secrets-adjacent) and payload (size and
//! SHA-256 unless `--body`).

use super::parse_key;
use crate::cli::ShowArgs;
use crate::context::Context;
use crate::error::{failed, Result};
use crate::output::{fields, or_dash, print_json, say, table};
use crate::when;
use base64::Engine as _;
use inbox_core::domain::BodyDigest;
use inbox_core::domain::MessageKey;
use inbox_core::message::StoredMessage;
use inbox_core::store::dynamo::DynamoTable;
use inbox_core::store::{MessageStore as _, RepeatRecord};
use serde::Serialize;
use serde_json::{json, Map, Value};

pub async fn run(ctx: &Context, args: ShowArgs) -> Result<()> {
    let key = parse_key(&args.source, &args.event_id)?;
    let store = ctx.store().await?;
    let Some(m) = store.get(&key).await? else {
        return Err(failed(format!(
            "no message {}/{} in table {}",
            key.source,
            key.event_id,
            store.table()
        )));
    };
    let repeats = Repeats::of(&store, &key).await?;
    if ctx.json() {
        print_json(&to_json(&m, &repeats, &args))
    } else {
        print_human(&m, &repeats, &args)
    }
}

/// The repeated deliveries of a message: how many were counted, and the first ones' journal.
pub(crate) struct Repeats {
    pub count: u64,
    /// Oldest first.
    pub journal: Vec<RepeatRecord>,
}

impl Repeats {
    /// The repeats of `key` as the store journaled and counted them.
    pub(crate) async fn of(store: &DynamoTable, key: &MessageKey) -> Result<Self> {
        let mut journal = store.deliveries(key).await?;
        journal.sort_by_key(|d| d.received_at);
        Ok(Self {
            count: store.repeat_count(key).await?,
            journal,
        })
    }

    /// The count (records written before counting existed have no counter).
    pub(crate) fn total(&self) -> u64 {
        self.count.max(self.journal.len() as u64)
    }
}

/// The payload as JSON (`json`), UTF-8 text (`text`) or base64 (`base64`).
pub(crate) fn body_value(body: &[u8]) -> (Value, &'static str) {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return (v, "json");
    }
    match std::str::from_utf8(body) {
        Ok(text) => (Value::String(text.to_owned()), "text"),
        Err(_) => (
            Value::String(base64::engine::general_purpose::STANDARD.encode(body)),
            "base64",
        ),
    }
}

/// Whether the stored digest, if the item keeps one (bodies in S3, items written before bodies
/// were compressed), matches the body read back.
pub(crate) fn digest_ok(m: &StoredMessage) -> bool {
    m.body_sha256.is_empty() || sha256_of(m) == m.body_sha256
}

/// The SHA-256 of the body read back (compressed items do not store one).
pub(crate) fn sha256_of(m: &StoredMessage) -> String {
    BodyDigest::of(&m.body).to_hex()
}

#[derive(Serialize)]
struct HistoryJson<'a> {
    at: String,
    at_ms: i64,
    status: inbox_core::domain::Status,
    note: &'a str,
    attempt: Option<u32>,
    error: Option<&'a str>,
    duration_ms: Option<u64>,
}

fn to_json(m: &StoredMessage, repeats: &Repeats, args: &ShowArgs) -> Value {
    let mut names: Vec<&String> = m.headers.keys().collect();
    names.sort();
    let headers = if args.headers {
        let map: Map<String, Value> = names
            .iter()
            .map(|k| ((*k).clone(), json!(m.headers[*k])))
            .collect();
        Value::Object(map)
    } else {
        json!(names)
    };
    let history: Vec<HistoryJson<'_>> = m
        .history
        .iter()
        .map(|h| HistoryJson {
            at: when::rfc3339(h.at),
            at_ms: h.at,
            status: h.status,
            note: &h.note,
            attempt: h.attempt,
            error: h.error.as_deref(),
            duration_ms: h.duration_ms,
        })
        .collect();
    let deliveries: Vec<Value> = repeats
        .journal
        .iter()
        .map(|d| {
            json!({
                "received_at": when::rfc3339(d.received_at),
                "received_at_ms": d.received_at,
                "body_sha256": d.body_sha256,
                "body_differs": d.body_differs,
            })
        })
        .collect();
    let mut out = json!({
        "source": m.source,
        "event_id": m.event_id,
        "event_type": m.event_type,
        "provider_id": m.provider_id,
        "identity_error": m.identity_error,
        "batch": m.batch.as_ref().map(|b| json!({
            "sha256": b.sha256, "index": b.index, "count": b.count,
        })),
        "status": m.status,
        "received_at": when::rfc3339(m.received_at),
        "received_at_ms": m.received_at,
        "attempts": m.attempts,
        "version": m.version,
        "lease_until": m.lease_until.map(when::rfc3339),
        "next_attempt_at": m.next_attempt_at.map(when::rfc3339),
        "last_error": m.last_error,
        "expires_at": m.expires_at.map(|s| when::rfc3339(s.saturating_mul(1000))),
        "body_bytes": m.body.len(),
        "body_sha256": sha256_of(m),
        "body_sha256_matches": digest_ok(m),
        "history": history,
        "history_total": m.history_count(),
        "notice_pending": m.notice_pending.is_some(),
        "deliveries": deliveries,
        "repeated_deliveries": repeats.total(),
        "headers": headers,
    });
    if args.body {
        let (body, encoding) = body_value(&m.body);
        out["body"] = body;
        out["body_encoding"] = json!(encoding);
    }
    out
}

fn print_human(m: &StoredMessage, repeats: &Repeats, args: &ShowArgs) -> Result<()> {
    let now = inbox_core::clock::Clock::now_millis(&inbox_core::clock::SystemClock);
    let relative = |ms: i64| {
        let d = ms - now;
        if d >= 0 {
            format!("{} (in {})", when::human(ms), when::age(d))
        } else {
            format!("{} ({} ago)", when::human(ms), when::age(-d))
        }
    };
    say(format!("Message {}/{}", m.source, m.event_id))?;
    say(fields([
        ("status", m.status.to_string()),
        ("type", or_dash(m.event_type.as_ref())),
        ("provider id", or_dash(m.provider_id.as_ref())),
        ("unidentified", or_dash(m.identity_error.as_ref())),
        (
            "batch",
            m.batch.as_ref().map_or_else(
                || "-".to_owned(),
                |b| format!("event {} of {} (batch {})", b.index + 1, b.count, b.sha256),
            ),
        ),
        (
            "received (UTC)",
            format!(
                "{} ({} ago)",
                when::human(m.received_at),
                when::age(now - m.received_at)
            ),
        ),
        ("attempts", m.attempts.to_string()),
        ("version", m.version.to_string()),
        ("lease until", or_dash(m.lease_until.map(relative))),
        ("next attempt", or_dash(m.next_attempt_at.map(relative))),
        ("last error", or_dash(m.last_error.as_ref())),
        (
            "expires (TTL)",
            or_dash(m.expires_at.map(|s| relative(s.saturating_mul(1000)))),
        ),
    ]))?;

    let total = m.history_count();
    if total > m.history.len() as u64 {
        say(format!(
            "\nHistory (the last {} of {total} entries; older ones are counted, not kept)",
            m.history.len()
        ))?;
    } else {
        say(format!("\nHistory ({})", m.history.len()))?;
    }
    let mut t = table([
        "time (UTC)",
        "status",
        "note",
        "attempt",
        "error",
        "duration",
    ]);
    for h in &m.history {
        t.add_row(vec![
            when::human(h.at),
            h.status.to_string(),
            h.note.clone(),
            or_dash(h.attempt),
            or_dash(h.error.as_ref()),
            or_dash(h.duration_ms.map(|d| format!("{d} ms"))),
        ]);
    }
    say(t)?;

    let deliveries = &repeats.journal;
    let total = repeats.total();
    if total > deliveries.len() as u64 {
        say(format!(
            "\nRepeated deliveries ({total}; the first {} journaled, the rest counted)",
            deliveries.len()
        ))?;
    } else {
        say(format!("\nRepeated deliveries ({total})"))?;
    }
    if !deliveries.is_empty() {
        let mut t = table(["received (UTC)", "body sha256", "body differs"]);
        for d in deliveries {
            t.add_row(vec![
                when::human(d.received_at),
                d.body_sha256.clone(),
                if d.body_differs { "YES" } else { "no" }.to_owned(),
            ]);
        }
        say(t)?;
    }

    let mut names: Vec<&String> = m.headers.keys().collect();
    names.sort();
    say(format!("\nKept headers ({})", names.len()))?;
    for name in names {
        if args.headers {
            say(format!("  {name}: {}", m.headers[name]))?;
        } else {
            say(format!("  {name}"))?;
        }
    }
    if !args.headers && !m.headers.is_empty() {
        say("  (values hidden; --headers prints them)")?;
    }

    say("\nPayload")?;
    say(format!(
        "  {} bytes, sha256 {}{}",
        m.body.len(),
        sha256_of(m),
        if digest_ok(m) {
            ""
        } else {
            " (DOES NOT MATCH the stored body)"
        }
    ))?;
    if args.body {
        let (body, encoding) = body_value(&m.body);
        match (encoding, body) {
            ("json", v) => say(serde_json::to_string_pretty(&v)?)?,
            ("text", Value::String(s)) => say(s)?,
            (_, Value::String(s)) => say(format!("(binary, base64)\n{s}"))?,
            (_, v) => say(v)?,
        }
    } else {
        say("  (--body prints it)")?;
    }
    Ok(())
}
