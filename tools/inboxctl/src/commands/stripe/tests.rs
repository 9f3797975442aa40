use super::*;
use crate::cli::{Cli, Command};
use clap::Parser as _;
use stripe_charges::catch_up::Decided;

const NOW_MS: i64 = 1_800_000_000_000;

fn args(line: &[&str]) -> CatchUpArgs {
    let mut argv = vec!["inboxctl", "stripe", "catch-up"];
    argv.extend_from_slice(line);
    match Cli::try_parse_from(argv).expect("parses").command {
        Command::Stripe(StripeCommand::CatchUp(a)) => a,
        other => panic!("not catch-up: {other:?}"),
    }
}

#[test]
fn the_window_and_the_types_are_what_stripe_takes() {
    let q = query_of(&args(&["--since", "72h"]), NOW_MS).unwrap();
    assert_eq!(q.created_gte, 1_800_000_000 - 72 * 3600);
    assert_eq!(q.delivery_success, None);
    let mut wallet: Vec<String> = wallet_ledger::STRIPE_TYPES
        .iter()
        .map(|t| t.to_string())
        .collect();
    wallet.sort();
    assert_eq!(
        q.types, wallet,
        "by default the types the wallet and autopay handle"
    );

    let q = query_of(
        &args(&[
            "--since",
            "2027-01-14T00:00:00Z",
            "--types",
            "charge.refunded,payment_intent.succeeded",
            "--types",
            "charge.refunded",
            "--undelivered-only",
        ]),
        NOW_MS,
    )
    .unwrap();
    assert_eq!(q.types, ["charge.refunded", "payment_intent.succeeded"]);
    assert_eq!(q.delivery_success, Some(false));
    assert_eq!(q.created_gte, 1_799_884_800);

    for bad in [
        vec!["--since", "31d"],
        vec!["--since", "1h", "--types", "payment intent"],
        vec!["--since", "1h", "--types", ""],
    ] {
        assert!(
            matches!(
                query_of(&args(&bad), NOW_MS),
                Err(crate::error::Error::Usage(_))
            ),
            "{bad:?}"
        );
    }
    let many: Vec<String> = (0..21).map(|i| format!("t.{i}")).collect();
    let joined = many.join(",");
    let err = query_of(&args(&["--since", "1h", "--types", &joined]), NOW_MS).unwrap_err();
    assert!(err.to_string().contains("at most 20"), "{err}");
    assert!(
        Cli::try_parse_from(["inboxctl", "stripe", "catch-up"]).is_err(),
        "--since is required"
    );
}

#[test]
fn the_report_says_what_was_missing_and_what_was_refused() {
    let request = CatchUpRequest {
        query: query_of(&args(&["--since", "72h"]), NOW_MS).unwrap(),
        source: "stripe".into(),
        key_livemode: Some(false),
        dry_run: true,
        origin: Origin {
            how: "catch-up",
            operator: "alice".into(),
            at_ms: NOW_MS,
        },
    };
    let decided = |id: &str, t: &str, created: i64, verdict: Verdict| Decided {
        id: id.into(),
        event_type: t.into(),
        created,
        verdict,
        intent: None,
    };
    let report = Report {
        events: vec![
            decided(
                "evt_1",
                "payment_intent.succeeded",
                1_799_990_000,
                Verdict::New,
            ),
            decided(
                "evt_2",
                "payment_intent.succeeded",
                1_799_991_000,
                Verdict::AlreadyHad,
            ),
            decided("evt_3", "charge.refunded", 1_799_992_000, Verdict::New),
            decided(
                "evt_4",
                "charge.refunded",
                1_799_993_000,
                Verdict::Refused("a live mode event".into()),
            ),
        ],
        requests: 1,
        retries: 0,
        rate_limited: 0,
        ..Report::default()
    };
    let json = serde_json::to_value(printed(&request, &report)).unwrap();
    assert_eq!(json["listed"], 4);
    assert_eq!(
        (json["new"].as_u64(), json["already_had"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["refused"][0]["id"], "evt_4");
    assert_eq!(json["refused"][0]["reason"], "a live mode event");
    assert_eq!(
        json["missing"]["by_type"],
        serde_json::json!({"charge.refunded": 1, "payment_intent.succeeded": 1})
    );
    assert_eq!(
        json["missing"]["ids"],
        serde_json::json!(["evt_1", "evt_3"])
    );
    assert_eq!(json["missing"]["oldest"], when::rfc3339(1_799_990_000_000));
    assert_eq!(json["missing"]["newest"], when::rfc3339(1_799_992_000_000));
    assert_eq!(json["stripe_requests"], 1);
}
