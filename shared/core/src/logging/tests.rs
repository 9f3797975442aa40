use super::filter;
use tracing::Level;

fn enabled(lambda: Option<&str>, rust_log: Option<&str>, target: &str, level: Level) -> bool {
    filter(lambda, rust_log).0.would_enable(target, &level)
}

#[test]
fn nothing_set_logs_info_and_above() {
    assert!(enabled(None, None, "inbox_core::ingest", Level::INFO));
    assert!(!enabled(None, None, "inbox_core::ingest", Level::DEBUG));
}

#[test]
fn the_lambda_level_applies_when_rust_log_is_unset() {
    assert!(enabled(Some("DEBUG"), None, "ingest", Level::DEBUG));
    assert!(!enabled(Some("WARN"), None, "ingest", Level::INFO));
    // An unparsable level falls back to INFO, as lambda_runtime's does.
    assert!(enabled(Some("loud"), None, "ingest", Level::INFO));
    assert!(!enabled(Some("loud"), None, "ingest", Level::DEBUG));
}

#[test]
fn rust_log_directives_win_over_the_lambda_level_as_with_env_filter() {
    // EnvFilter adds its default directive (the lambda level) only when RUST_LOG has none.
    assert!(!enabled(
        Some("DEBUG"),
        Some("info"),
        "ingest",
        Level::DEBUG
    ));
    assert!(enabled(Some("ERROR"), Some("info"), "ingest", Level::INFO));
}

#[test]
fn target_directives_apply_by_prefix_and_the_bare_level_to_the_rest() {
    let rust_log = Some("warn,inbox_core=debug,aws_smithy_runtime=off");
    assert!(enabled(
        None,
        rust_log,
        "inbox_core::store::dynamo",
        Level::DEBUG
    ));
    assert!(!enabled(
        None,
        rust_log,
        "inbox_core::store::dynamo",
        Level::TRACE
    ));
    assert!(!enabled(
        None,
        rust_log,
        "aws_smithy_runtime::client",
        Level::ERROR
    ));
    assert!(enabled(None, rust_log, "hyper", Level::WARN));
    assert!(!enabled(None, rust_log, "hyper", Level::INFO));
}

#[test]
fn only_target_directives_leave_other_targets_off_as_with_env_filter() {
    let rust_log = Some("inbox_core=info");
    assert!(enabled(None, rust_log, "inbox_core::ingest", Level::INFO));
    assert!(!enabled(None, rust_log, "ingest", Level::ERROR));
}

#[test]
fn invalid_directives_are_ignored_and_reported_and_the_valid_ones_kept() {
    let (targets, ignored) = filter(None, Some("inbox_core=loud,debug"));
    assert!(targets.would_enable("ingest", &Level::DEBUG));
    assert_eq!(ignored.len(), 1);
    assert_eq!(ignored[0].0, "inbox_core=loud");
    // Nothing valid at all: the level comes from the variables (an unparsable RUST_LOG: INFO).
    let (targets, ignored) = filter(Some("WARN"), Some("x=loud,y=noisy"));
    assert!(targets.would_enable("ingest", &Level::WARN));
    assert!(!targets.would_enable("ingest", &Level::INFO));
    assert_eq!(ignored.len(), 2);
}

#[tokio::test]
async fn the_json_lines_of_a_future_are_captured_at_info() {
    let (n, lines) = super::json_lines_of(async {
        let _span = tracing::info_span!("record", event_id = "evt_1").entered();
        tracing::info!(source = "stripe", "webhook stored");
        tracing::debug!("not at info");
        7
    })
    .await;
    assert_eq!(n, 7);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["fields"]["message"], "webhook stored");
    assert_eq!(line["fields"]["source"], "stripe");
    assert_eq!(line["span"]["event_id"], "evt_1", "the span, once");
    assert!(line.get("spans").is_none(), "{line}");
}
