//! Metrics: what the functions count, and the one place that writes them.
//!
//! A [`Metric`] is a named count in a namespace with properties (searchable in the log line, not
//! dimensions: a property per tenant keeps ONE series however many tenants there are). Producers
//! hand metrics to a [`MetricSink`]; handlers never emit themselves: their outcome carries the
//! metrics and the processor emits them once the outcome committed.
//!
//! [`EmfWriter`] is the deployed sink: CloudWatch embedded metric format, one document per line on
//! stdout (CloudWatch extracts metrics only from a log event that IS the EMF document, not from a
//! field of a structured log line). Dimensions every document carries (the deployment stage, so
//! that two stacks in one account keep apart) are set in ONE place: [`EmfWriter::stdout`].
//! [`RecordingSink`] keeps what it is given, for tests.

use crate::config::{catalog, Env};
use serde_json::{json, Map, Value};
use std::io::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};

/// The dimension every metric carries: the deployment stage.
pub const STAGE_DIMENSION: &str = "Stage";

/// The unit of a metric's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
}

impl Unit {
    /// The CloudWatch name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Count => "Count",
        }
    }
}

/// One metric value, with where it goes and what the log line says beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metric {
    /// The CloudWatch namespace, e.g. `WebhookIngestor/{application}`.
    pub namespace: String,
    pub name: String,
    pub value: i64,
    pub unit: Unit,
    /// Extra fields of the document (searchable in CloudWatch Logs, not dimensions).
    pub properties: Vec<(String, String)>,
    /// A sentence logged at warn level when the metric is emitted (why it was counted).
    pub note: Option<String>,
}

impl Metric {
    /// A count of `value` named `name` in `namespace`.
    pub fn count(namespace: &str, name: &str, value: i64) -> Self {
        Self {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            value,
            unit: Unit::Count,
            properties: Vec::new(),
            note: None,
        }
    }

    /// Adds a property (a field of the document, not a dimension).
    pub fn with_property(mut self, name: &str, value: impl Into<String>) -> Self {
        self.properties.push((name.to_owned(), value.into()));
        self
    }

    /// Adds the sentence logged (warn) when the metric is emitted.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// The properties as one log field: `Tenant=acme`.
    fn properties_text(&self) -> String {
        self.properties
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Where metrics go.
pub trait MetricSink: Send + Sync {
    /// Emits `metrics`, observed at `at_ms` (ms since the epoch), and logs their notes.
    fn emit(&self, at_ms: i64, metrics: &[Metric]);
}

impl<T: MetricSink + ?Sized> MetricSink for Arc<T> {
    fn emit(&self, at_ms: i64, metrics: &[Metric]) {
        (**self).emit(at_ms, metrics)
    }
}

/// Logs each metric's note (warn), with the metric's name and properties.
fn log_notes(metrics: &[Metric]) {
    for m in metrics {
        if let Some(note) = &m.note {
            tracing::warn!(metric = %m.name, properties = %m.properties_text(), "{note}");
        }
    }
}

/// The CloudWatch embedded-metric-format writer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmfWriter {
    /// `(name, value)` pairs every document carries as dimensions.
    dimensions: Vec<(String, String)>,
}

impl EmfWriter {
    /// The writer the deployed functions use: documents on stdout. Default dimensions for every
    /// metric of every function are added here: `Stage`, the deployment stage (`STAGE`, which
    /// `template.yaml` sets; `local` when unset), so that the stacks of two stages in one
    /// account never trip each other's alarms (the alarms filter on it).
    pub fn stdout() -> Self {
        Self::for_env(&Env::process())
    }

    /// [`EmfWriter::stdout`], reading `STAGE` from `env`.
    pub fn for_env(env: &Env) -> Self {
        let stage = env
            .optional(&catalog::STAGE)
            .or_else(|| catalog::STAGE.default_value().map(str::to_owned))
            .unwrap_or_default();
        Self::default().with_dimension(STAGE_DIMENSION, stage)
    }

    /// A writer with no default dimension (tests).
    pub fn without_dimensions() -> Self {
        Self::default()
    }

    /// Adds a dimension to every document.
    pub fn with_dimension(mut self, name: &str, value: impl Into<String>) -> Self {
        self.dimensions.push((name.to_owned(), value.into()));
        self
    }

    /// The documents for `metrics`, one per line: metrics that share a namespace and properties go
    /// into one document (in order of first appearance).
    pub fn documents(&self, at_ms: i64, metrics: &[Metric]) -> Vec<String> {
        let mut groups: Vec<Vec<&Metric>> = Vec::new();
        for m in metrics {
            match groups.iter_mut().find(|g| {
                g.first()
                    .is_some_and(|f| f.namespace == m.namespace && f.properties == m.properties)
            }) {
                Some(g) => g.push(m),
                None => groups.push(vec![m]),
            }
        }
        groups
            .iter()
            .filter_map(|g| self.document(at_ms, g))
            .collect()
    }

    fn document(&self, at_ms: i64, group: &[&Metric]) -> Option<String> {
        let first = group.first()?;
        let dimension_names: Vec<&str> = self.dimensions.iter().map(|(k, _)| k.as_str()).collect();
        let definitions: Vec<Value> = group
            .iter()
            .map(|m| json!({"Name": m.name, "Unit": m.unit.as_str()}))
            .collect();
        let mut doc = Map::new();
        doc.insert(
            "_aws".into(),
            json!({
                "Timestamp": at_ms,
                "CloudWatchMetrics": [{
                    "Namespace": first.namespace,
                    "Dimensions": [dimension_names],
                    "Metrics": definitions
                }]
            }),
        );
        for (k, v) in self.dimensions.iter().chain(&first.properties) {
            doc.insert(k.clone(), Value::String(v.clone()));
        }
        for m in group {
            doc.insert(m.name.clone(), Value::from(m.value));
        }
        Some(Value::Object(doc).to_string())
    }
}

impl MetricSink for EmfWriter {
    fn emit(&self, at_ms: i64, metrics: &[Metric]) {
        log_notes(metrics);
        let mut out = std::io::stdout().lock();
        for line in self.documents(at_ms, metrics) {
            if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
                tracing::error!(error = %e, "could not write a metrics line");
            }
        }
    }
}

/// Keeps every metric it is given (tests).
#[derive(Debug, Default)]
pub struct RecordingSink {
    emitted: Mutex<Vec<(i64, Metric)>>,
}

impl RecordingSink {
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything emitted so far, with its time, in order.
    pub fn emitted(&self) -> Vec<(i64, Metric)> {
        lock(&self.emitted).clone()
    }

    /// How many metrics named `name` were emitted.
    pub fn count(&self, name: &str) -> usize {
        lock(&self.emitted)
            .iter()
            .filter(|(_, m)| m.name == name)
            .count()
    }
}

impl MetricSink for RecordingSink {
    fn emit(&self, at_ms: i64, metrics: &[Metric]) {
        log_notes(metrics);
        lock(&self.emitted).extend(metrics.iter().map(|m| (at_ms, m.clone())));
    }
}

/// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn the_deployed_writer_carries_the_stage() {
        // What the functions use: every document says which stage it comes from.
        let doc = parse(&EmfWriter::stdout().documents(1, &[Metric::count("App/A", "X", 1)])[0]);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Stage"]])
        );
        assert!(
            doc["Stage"].as_str().is_some_and(|s| !s.is_empty()),
            "{doc}"
        );
        let prod = EmfWriter::for_env(&Env::from_pairs([("STAGE", "prod")]));
        let doc = parse(&prod.documents(1, &[Metric::count("App/A", "X", 1)])[0]);
        assert_eq!(doc["Stage"], "prod");
        let unset = EmfWriter::for_env(&Env::from_pairs::<&str, &str>([]));
        let doc = parse(&unset.documents(1, &[Metric::count("App/A", "X", 1)])[0]);
        assert_eq!(doc["Stage"], "local");
    }

    #[test]
    fn one_document_per_namespace_and_properties() {
        let w = EmfWriter::without_dimensions();
        let docs = w.documents(
            7,
            &[
                Metric::count("App/A", "Overdrawn", 1).with_property("Tenant", "acme"),
                Metric::count("App/B", "Stale", 2),
                Metric::count("App/B", "Orphans", 0),
            ],
        );
        assert_eq!(docs.len(), 2);
        let a = parse(&docs[0]);
        assert_eq!(
            a,
            json!({
                "_aws": {"Timestamp": 7, "CloudWatchMetrics": [{
                    "Namespace": "App/A", "Dimensions": [[]],
                    "Metrics": [{"Name": "Overdrawn", "Unit": "Count"}]}]},
                "Tenant": "acme",
                "Overdrawn": 1
            })
        );
        let b = parse(&docs[1]);
        assert_eq!(
            b["_aws"]["CloudWatchMetrics"][0]["Metrics"][1]["Name"],
            "Orphans"
        );
        assert_eq!(
            (b["Stale"].as_i64(), b["Orphans"].as_i64()),
            (Some(2), Some(0))
        );
        assert!(w.documents(7, &[]).is_empty());
    }

    #[test]
    fn default_dimensions_go_into_every_document() {
        let w = EmfWriter::without_dimensions().with_dimension("Stage", "dev");
        let doc = parse(&w.documents(1, &[Metric::count("App/A", "X", 1)])[0]);
        assert_eq!(
            doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Stage"]])
        );
        assert_eq!(doc["Stage"], "dev");
    }

    #[test]
    fn a_recording_sink_keeps_what_it_is_given() {
        let sink = Arc::new(RecordingSink::new());
        let as_dyn: Arc<dyn MetricSink> = sink.clone();
        as_dyn.emit(5, &[Metric::count("A", "X", 1).with_note("why")]);
        as_dyn.emit(6, &[Metric::count("A", "X", 1), Metric::count("A", "Y", 3)]);
        assert_eq!(
            (sink.count("X"), sink.count("Y"), sink.count("Z")),
            (2, 1, 0)
        );
        assert_eq!(sink.emitted()[0].0, 5);
        assert_eq!(sink.emitted()[0].1.note.as_deref(), Some("why"));
    }
}
