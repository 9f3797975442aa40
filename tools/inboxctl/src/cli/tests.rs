//! Tests of the command-line definition: modes that exclude each other, defaults, value ranges.

use super::*;
use clap::CommandFactory as _;

#[test]
fn definition_is_consistent() {
    Cli::command().debug_assert();
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("inboxctl").chain(args.iter().copied()))
}

#[test]
fn replay_needs_exactly_one_mode() {
    assert!(parse(&["replay"]).is_err());
    assert!(
        parse(&["replay", "stripe"]).is_err(),
        "a source needs an id"
    );
    assert!(parse(&["replay", "stripe", "evt_1"]).is_ok());
    assert!(parse(&["replay", "--status", "failed"]).is_ok());
    assert!(parse(&["replay", "--from-quarantine"]).is_ok());
    assert!(parse(&["replay", "stripe", "evt_1", "--status", "failed"]).is_err());
    assert!(parse(&["replay", "--status", "failed", "--from-quarantine"]).is_err());
    assert!(
        parse(&["replay", "--status", "processed"]).is_err(),
        "bulk replays select failed or ignored only"
    );
    assert!(parse(&["replay", "stripe", "evt_1", "--yes"]).is_err());
    assert!(parse(&["replay", "--status", "failed", "--force"]).is_err());
    assert!(parse(&["replay", "--status", "failed", "--max", "3"]).is_err());
    assert!(parse(&["replay", "--from-quarantine", "--yes"]).is_err());
    assert!(parse(&["replay", "--from-quarantine", "--source", "stripe"]).is_err());
    assert!(parse(&["replay", "stripe", "evt_1", "--since", "2h"]).is_err());
    assert!(parse(&["replay", "stripe", "evt_1", "--wait-secs", "1"]).is_err());
    assert!(parse(&["replay", "--status", "failed", "--drop-unreadable"]).is_err());
    assert!(parse(&[
        "replay",
        "--from-quarantine",
        "--drop-unreadable",
        "--max",
        "2"
    ])
    .is_ok());
}

#[test]
fn purge_defaults_spare_failed_messages() {
    let Ok(Cli {
        command: Command::Purge(p),
        ..
    }) = parse(&["purge", "--older-than-days", "30"])
    else {
        panic!("purge parses");
    };
    assert_eq!(
        p.status,
        vec![TerminalStatus::Processed, TerminalStatus::Ignored]
    );
    let Ok(Cli {
        command: Command::Purge(p),
        ..
    }) = parse(&[
        "purge",
        "--older-than-days",
        "3",
        "--status",
        "failed,ignored",
    ])
    else {
        panic!("purge parses");
    };
    assert_eq!(
        p.status,
        vec![TerminalStatus::Failed, TerminalStatus::Ignored]
    );
    assert!(parse(&["purge", "--older-than-days", "3", "--status", "pending"]).is_err());
    assert!(parse(&["purge"]).is_err());
}

#[test]
fn wallet_arguments() {
    let Ok(Cli {
        command: Command::Wallet(WalletCommand::Create(c)),
        ..
    }) = parse(&[
        "wallet",
        "create",
        "acme",
        "--currency",
        "usd",
        "--price",
        "25",
        "--floor",
        "-500",
    ])
    else {
        panic!("wallet create parses");
    };
    assert_eq!(
        (c.price, c.limits.change()),
        (
            25,
            wallet_ledger::LimitsChange {
                floor: Some(-500),
                review_threshold: None
            }
        )
    );
    let Ok(Cli {
        command: Command::Wallet(WalletCommand::Create(c)),
        ..
    }) = parse(&[
        "wallet",
        "create",
        "acme",
        "--currency",
        "usd",
        "--price",
        "25",
    ])
    else {
        panic!("wallet create parses without limits");
    };
    assert_eq!(
        (c.limits.floor, c.limits.review_threshold),
        (None, None),
        "the defaults apply"
    );
    let Ok(Cli {
        command: Command::Wallet(WalletCommand::Set(s)),
        ..
    }) = parse(&[
        "wallet",
        "set",
        "acme",
        "--floor",
        "-100",
        "--no-review-threshold",
    ])
    else {
        panic!("wallet set parses");
    };
    assert_eq!(
        (
            s.tenant.as_str(),
            s.limits.floor,
            s.limits.review_threshold,
            s.limits.no_review_threshold
        ),
        ("acme", Some(-100), None, true)
    );
    assert!(parse(&[
        "wallet",
        "set",
        "acme",
        "--review-threshold",
        "5",
        "--no-review-threshold"
    ])
    .is_err());
    assert!(parse(&["wallet", "set", "acme", "--review-threshold", "0"]).is_err());
    assert!(parse(&["wallet", "create", "acme", "--currency", "usd"]).is_err());
    assert!(parse(&[
        "wallet",
        "create",
        "acme",
        "--currency",
        "usd",
        "--price",
        "-1"
    ])
    .is_err());
    assert!(parse(&[
        "wallet",
        "create",
        "acme",
        "--currency",
        "usd",
        "--price",
        "1",
        "--review-threshold",
        "0"
    ])
    .is_err());
    assert!(parse(&["wallet", "ledger", "acme", "--limit", "0"]).is_err());
    assert!(parse(&["wallet", "ledger", "acme", "--rows", "--json"]).is_ok());
    let Ok(Cli {
        command: Command::Wallet(WalletCommand::Reconcile(r)),
        ..
    }) = parse(&["wallet", "reconcile"])
    else {
        panic!("wallet reconcile parses");
    };
    assert_eq!(r.stale_after_hours, 24);
    assert!(parse(&["wallet", "balance"]).is_err());
}

#[test]
fn globals_go_anywhere() {
    let cli = parse(&["list", "--table", "t", "--json"]).expect("parses");
    assert_eq!(cli.global.table.as_deref(), Some("t"));
    assert!(cli.global.json);
    assert!(parse(&["list", "--since", "yesterday-ish"]).is_err());
    assert!(parse(&["list", "--limit", "0"]).is_err());
}

#[test]
fn events_reindex_takes_a_dry_run_and_a_resume_token() {
    assert!(parse(&["events"]).is_err(), "a subcommand is needed");
    assert!(parse(&["events", "reindex"]).is_ok());
    let cli = parse(&["events", "reindex", "--dry-run", "--from", "4d.4d"]).unwrap();
    let Command::Events(EventsCommand::Reindex(args)) = cli.command else {
        panic!("not events reindex: {:?}", cli.command);
    };
    assert!(args.dry_run);
    assert_eq!(args.from.as_deref(), Some("4d.4d"));
}
