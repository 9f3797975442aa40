//! The autopay commands against an in-memory [`AutopayStore`]: which flags go together, the
//! records they make in the wallet's currency, a recurring charge's place in its calendar, the
//! journal, and the errors (exit 2 for a command line that cannot work, 1 for a missing wallet).

use super::plan::{Edit, RecurringPlan, SetPlan, TopUpPlan};
use super::*;
use crate::cli::{Cli, Command, WalletCommand};
use crate::error::Error;
use clap::Parser as _;
use jiff::civil::date;
use std::collections::BTreeMap;
use std::sync::Mutex;
use wallet_ledger::autopay::{AutopayStatus, Every, SavedMethod, TopUpRule};

/// 2027-01-15T00:00:00Z.
const NOW: Millis = Millis::new(1_799_971_200_000);
const MAX: i64 = 100_000_000;

#[derive(Default)]
struct Memory {
    currencies: BTreeMap<String, Currency>,
    records: Mutex<BTreeMap<String, Autopay>>,
    /// (tenant, actor, action, detail)
    journal: Mutex<Vec<(String, String, String, String)>>,
}

impl Memory {
    fn with_wallet(tenant: &str, currency: &str) -> Self {
        let mut m = Self::default();
        m.currencies
            .insert(tenant.to_owned(), Currency::parse(currency).unwrap());
        m
    }

    fn record(&self, tenant: &str) -> Option<Autopay> {
        self.records.lock().unwrap().get(tenant).cloned()
    }

    fn journal(&self) -> Vec<(String, String, String, String)> {
        self.journal.lock().unwrap().clone()
    }
}

impl AutopayStore for Memory {
    async fn currency(&self, tenant: &TenantId) -> Result<Option<Currency>> {
        Ok(self.currencies.get(tenant.as_str()).copied())
    }

    async fn autopay(&self, tenant: &TenantId) -> Result<Option<Autopay>> {
        Ok(self.record(tenant.as_str()))
    }

    async fn change(
        &self,
        tenant: &TenantId,
        actor: &str,
        action: &str,
        now: Millis,
        edit: impl FnOnce(&mut Autopay) -> std::result::Result<String, String> + Send,
    ) -> Result<Autopay> {
        let mut records = self.records.lock().unwrap();
        let mut a = records
            .get(tenant.as_str())
            .cloned()
            .unwrap_or_else(|| fresh(tenant, now));
        let detail = edit(&mut a).map_err(usage)?;
        a.updated_at = now;
        a.version = Some(a.version.map_or(0, |v| v + 1));
        records.insert(tenant.to_string(), a.clone());
        self.journal.lock().unwrap().push((
            tenant.to_string(),
            actor.to_owned(),
            action.to_owned(),
            detail,
        ));
        Ok(a)
    }
}

fn command(args: &[&str]) -> std::result::Result<AutopayCommand, clap::Error> {
    let cli = Cli::try_parse_from(
        ["inboxctl", "wallet", "autopay"]
            .into_iter()
            .chain(args.iter().copied()),
    )?;
    match cli.command {
        Command::Wallet(WalletCommand::Autopay(c)) => Ok(c),
        other => panic!("not an autopay command: {other:?}"),
    }
}

fn plan(args: &[&str]) -> Result<SetPlan> {
    let Ok(AutopayCommand::Set(set)) = command(&[&["set", "acme"][..], args].concat()) else {
        panic!("set parses: {args:?}");
    };
    SetPlan::parse(&set, MAX)
}

async fn run(store: &Memory, args: &[&str]) -> Result<()> {
    let c = command(args).map_err(|e| usage(e.to_string()))?;
    execute(store, c, MAX, NOW, true).await
}

fn is_usage(r: &Result<impl std::fmt::Debug>, says: &str) -> bool {
    matches!(r, Err(Error::Usage(m)) if m.contains(says))
}

#[test]
fn flags_that_cannot_go_together_are_refused_by_clap() {
    for bad in [
        &["set", "acme", "--target", "5000"][..],
        &["set", "acme", "--every", "month", "--amount", "1"],
        &[
            "set",
            "acme",
            "--every",
            "week",
            "--amount",
            "1",
            "--anchor",
            "2027-01-31",
        ],
        &["set", "acme", "--anchor", "2027-01-31"],
        &["set", "acme", "--threshold", "1", "--no-top-up"],
        &[
            "set",
            "acme",
            "--every",
            "month",
            "--amount",
            "1",
            "--anchor",
            "2027-01-31",
            "--no-recurring",
        ],
        &["set", "acme", "--cap", "1", "--no-cap"],
        &["set", "acme", "--customer", "c1"],
        &["set", "acme", "--payment-method", "p1"],
        &["set"],
        &["show"],
        &["pause"],
    ] {
        assert!(command(bad).is_err(), "{bad:?}");
    }
    assert!(command(&["set", "acme", "--threshold", "-500", "--target", "100"]).is_ok());
    assert!(command(&["pause", "acme", "--reason", "card expired"]).is_ok());
    assert!(command(&["rm", "acme"]).is_ok());
}

#[test]
fn set_reads_each_rule_once_and_refuses_what_is_ambiguous() {
    assert_eq!(
        plan(&["--threshold", "1000", "--target", "5000"])
            .ok()
            .map(|p| p.top_up),
        Some(Edit::Set(TopUpPlan::ToTarget {
            threshold: 1000,
            target: 5000
        }))
    );
    assert_eq!(
        plan(&["--threshold", "1000", "--amount", "2500"])
            .ok()
            .map(|p| p.top_up),
        Some(Edit::Set(TopUpPlan::Fixed {
            threshold: 1000,
            amount: 2500
        }))
    );
    let both = plan(&[
        "--threshold",
        "1000",
        "--target",
        "5000",
        "--every",
        "year",
        "--amount",
        "12000",
        "--anchor",
        "2028-02-29",
    ])
    .ok()
    .unwrap();
    assert_eq!(
        both.recurring,
        Edit::Set(RecurringPlan {
            every: Every::Year,
            anchor: date(2028, 2, 29),
            amount: 12000
        })
    );
    assert!(matches!(both.top_up, Edit::Set(TopUpPlan::ToTarget { .. })));
    let cleared = plan(&["--no-top-up", "--no-recurring", "--no-cap"])
        .ok()
        .unwrap();
    assert_eq!(
        (cleared.top_up, cleared.recurring, cleared.cap),
        (Edit::Clear, Edit::Clear, Edit::Clear)
    );
    let rest = plan(&[
        "--cap",
        "10000",
        "--ladder",
        "0, 2, 4",
        "--customer",
        "cus_1",
        "--payment-method",
        "pm_1",
    ])
    .ok()
    .unwrap();
    assert_eq!((rest.top_up, rest.cap), (Edit::Keep, Edit::Set(10000)));
    assert_eq!(rest.ladder.map(|l| l.days().to_vec()), Some(vec![0, 2, 4]));
    assert_eq!(
        rest.method,
        Some(SavedMethod {
            customer: "cus_1".into(),
            payment_method: "pm_1".into()
        })
    );

    let refused = [
        (&["--threshold", "1000"][..], "--threshold needs --target"),
        (
            &["--threshold", "1000", "--target", "5000", "--amount", "1"],
            "both size the top-up",
        ),
        (
            &[
                "--threshold",
                "1000",
                "--amount",
                "1",
                "--every",
                "month",
                "--anchor",
                "2027-01-31",
            ],
            "ambiguous",
        ),
        (&["--amount", "1"], "--amount goes with"),
        (
            &[
                "--every",
                "month",
                "--amount",
                "1",
                "--anchor",
                "2027-02-30",
            ],
            "not a date",
        ),
        (
            &[
                "--every",
                "month",
                "--amount",
                "1",
                "--anchor",
                "31/01/2027",
            ],
            "not a date",
        ),
        (&["--ladder", "1,3"], "starting at 0"),
        (&["--ladder", "0,3,3"], "strictly increasing"),
        (&["--ladder", "0,x"], "dunning ladder"),
        (&["--cap", &(MAX + 1).to_string()], "WALLET_MAX_AMOUNT"),
        (
            &["--threshold", "1", "--target", &(MAX + 1).to_string()],
            "WALLET_MAX_AMOUNT",
        ),
        (
            &["--customer", "cus 1", "--payment-method", "pm_1"],
            "is not an id",
        ),
        (
            &["--customer", "", "--payment-method", "pm_1"],
            "is not an id",
        ),
        (&[], "nothing to set"),
    ];
    for (args, says) in refused {
        let r = plan(args);
        assert!(is_usage(&r, says), "{args:?}: {r:?}");
    }
}

#[test]
fn rules_are_built_in_the_wallets_currency_by_the_ledgers_constructors() {
    let jpy = Currency::parse("jpy").unwrap();
    let p = plan(&["--threshold", "1000", "--target", "5000", "--cap", "20000"])
        .ok()
        .unwrap();
    let Ok(Change::Set {
        top_up: Edit::Set(rule),
        cap: Edit::Set(cap),
        ..
    }) = p.build(jpy, NOW)
    else {
        panic!("built");
    };
    assert_eq!(
        rule,
        TopUpRule::to_target(jpy.amount(1000), jpy.amount(5000)).unwrap()
    );
    assert_eq!(cap.cap(), jpy.amount(20000));
    let usd = Currency::parse("usd").unwrap();
    for (args, says) in [
        (
            &["--threshold", "5000", "--target", "5000"][..],
            "above the threshold",
        ),
        (&["--threshold", "100", "--amount", "0"], "must be positive"),
        (&["--cap", "0"], "must be positive"),
        (
            &[
                "--every",
                "month",
                "--amount",
                "0",
                "--anchor",
                "2027-01-31",
            ],
            "must be positive",
        ),
    ] {
        let r = plan(args).and_then(|p| p.build(usd, NOW));
        assert!(is_usage(&r, says), "{args:?}: {r:?}");
    }
}

#[test]
fn a_recurring_charge_starts_at_the_first_date_not_past_and_keeps_its_place_when_set_again() {
    let usd = Currency::parse("usd").unwrap();
    let set = |args: &[&str]| plan(args).and_then(|p| p.build(usd, NOW)).ok().unwrap();
    let monthly = |anchor: &str, amount: &str| {
        set(&["--every", "month", "--amount", amount, "--anchor", anchor])
    };
    let mut a = fresh(&TenantId::parse("acme").unwrap(), NOW);
    // Anchored on 2026-10-31, set on 2027-01-15: the next charge is 2027-01-31 (index 3), no
    // past period charged.
    monthly("2026-10-31", "2000").apply(&mut a);
    let r = a.recurring.clone().unwrap();
    assert_eq!(
        (r.next, r.schedule.nth(r.next)),
        (3, Some(date(2027, 1, 31)))
    );
    assert_eq!(r.schedule.nth(4), Some(date(2027, 2, 28)));
    // The pass charged two periods since: the same calendar with another amount keeps its place.
    a.recurring.as_mut().unwrap().next = 5;
    let said = monthly("2026-10-31", "2500").apply(&mut a);
    assert_eq!(
        a.recurring.as_ref().map(|r| (r.next, r.amount)),
        Some((5, usd.amount(2500)))
    );
    assert_eq!(said, "25.00 USD every month from 2026-10-31");
    // Another anchor is another calendar: placed from now again.
    monthly("2027-03-31", "2500").apply(&mut a);
    assert_eq!(a.recurring.as_ref().map(|r| r.next), Some(0));
}

/// Settings as the ledger starts them: no rules, active, the default ladder.
fn fresh(tenant: &TenantId, now: Millis) -> Autopay {
    Autopay::new(tenant.clone(), now)
}

#[tokio::test]
async fn set_show_pause_resume_rm_through_the_store_each_journaled() {
    let store = Memory::with_wallet("acme", "usd");
    run(
        &store,
        &[
            "set",
            "acme",
            "--threshold",
            "1000",
            "--target",
            "5000",
            "--operator",
            "ana",
        ],
    )
    .await
    .unwrap();
    run(
        &store,
        &[
            "set",
            "acme",
            "--every",
            "month",
            "--amount",
            "2000",
            "--anchor",
            "2027-01-31",
            "--cap",
            "10000",
            "--operator",
            "ana",
        ],
    )
    .await
    .unwrap();
    let a = store.record("acme").unwrap();
    let usd = Currency::parse("usd").unwrap();
    assert_eq!(
        a.top_up,
        Some(TopUpRule::to_target(usd.amount(1000), usd.amount(5000)).unwrap())
    );
    assert_eq!(
        a.recurring.as_ref().map(|r| r.amount),
        Some(usd.amount(2000))
    );
    assert_eq!(a.cap.map(|c| c.cap()), Some(usd.amount(10000)));
    assert_eq!(a.version, Some(1));
    run(&store, &["show", "acme"]).await.unwrap();
    execute(&store, command(&["show", "acme"]).unwrap(), MAX, NOW, false)
        .await
        .unwrap();
    let view = serde_json::to_value(AutopayView::new(&a, NOW)).unwrap();
    assert_eq!(
        view["recurring"]["upcoming"],
        serde_json::json!(["2027-01-31", "2027-02-28", "2027-03-31"])
    );
    assert_eq!(view["top_up"]["target"], 5000);
    assert_eq!(
        (view["status"].as_str(), view["currency"].as_str()),
        (Some("active"), Some("usd"))
    );

    run(
        &store,
        &[
            "pause",
            "acme",
            "--reason",
            "customer asked",
            "--operator",
            "bo",
        ],
    )
    .await
    .unwrap();
    assert_eq!(store.record("acme").unwrap().status, AutopayStatus::Paused);
    store
        .records
        .lock()
        .unwrap()
        .get_mut("acme")
        .unwrap()
        .status = AutopayStatus::Suspended {
        reason: "the dunning ladder ended (expired_card)".into(),
    };
    run(&store, &["resume", "acme", "--operator", "bo"])
        .await
        .unwrap();
    assert_eq!(store.record("acme").unwrap().status, AutopayStatus::Active);
    run(&store, &["rm", "acme", "--operator", "cy"])
        .await
        .unwrap();
    let gone = store.record("acme").unwrap();
    assert_eq!(
        (gone.top_up, gone.recurring, gone.cap, gone.method),
        (None, None, None, None)
    );

    let journal: Vec<(String, String, String)> = store
        .journal()
        .into_iter()
        .map(|(_, who, what, detail)| (who, what, detail))
        .collect();
    assert_eq!(
        journal,
        vec![
            (
                "ana".into(),
                "set".into(),
                "top up to 50.00 USD at or below 10.00 USD".into()
            ),
            (
                "ana".into(),
                "set".into(),
                "20.00 USD every month from 2027-01-31; at most 100.00 USD a month".into()
            ),
            ("bo".into(), "pause".into(), "paused: customer asked".into()),
            (
                "bo".into(),
                "resume".into(),
                "resumed (was suspended: the dunning ladder ended (expired_card))".into()
            ),
            (
                "cy".into(),
                "rm".into(),
                "removed the rules and the saved payment method".into()
            ),
        ]
    );
}

#[tokio::test]
async fn a_missing_wallet_or_autopay_is_a_failure_and_a_bad_line_is_refused_before_the_store() {
    let store = Memory::with_wallet("acme", "usd");
    let r = run(&store, &["set", "nobody", "--cap", "100"]).await;
    assert!(
        matches!(&r, Err(Error::Failed(e)) if e.to_string().contains("no wallet")),
        "{r:?}"
    );
    for args in [
        &["show", "acme"][..],
        &["pause", "acme"],
        &["resume", "acme"],
        &["rm", "acme"],
    ] {
        let r = run(&store, args).await;
        assert!(
            matches!(&r, Err(Error::Failed(e)) if e.to_string().contains("has no autopay")),
            "{args:?}: {r:?}"
        );
    }
    assert!(is_usage(
        &run(&store, &["set", " acme", "--cap", "100"]).await,
        ""
    ));
    assert!(is_usage(
        &run(
            &store,
            &["set", "acme", "--threshold", "9", "--target", "9"]
        )
        .await,
        "above the threshold"
    ));
    assert!(store.journal().is_empty(), "nothing written");
}

#[tokio::test]
async fn a_tenant_stored_before_the_grammar_can_be_shown_and_stopped_but_not_set() {
    let legacy = "Acme Corp";
    let store = Memory::with_wallet(legacy, "usd");
    store.records.lock().unwrap().insert(
        legacy.to_owned(),
        fresh(&TenantId::stored(legacy).unwrap(), NOW),
    );
    let set = run(
        &store,
        &[
            "set",
            legacy,
            "--threshold",
            "1000",
            "--target",
            "5000",
            "--operator",
            "ana",
        ],
    )
    .await;
    assert!(is_usage(&set, "contains ' '"), "{set:?}");
    let resume = run(&store, &["resume", legacy, "--operator", "bo"]).await;
    assert!(is_usage(&resume, "contains ' '"), "{resume:?}");
    assert!(store.journal().is_empty(), "nothing written when refused");
    run(&store, &["show", legacy]).await.unwrap();
    run(
        &store,
        &["pause", legacy, "--reason", "legacy id", "--operator", "bo"],
    )
    .await
    .unwrap();
    assert_eq!(store.record(legacy).unwrap().status, AutopayStatus::Paused);
    run(&store, &["rm", legacy, "--operator", "cy"])
        .await
        .unwrap();
    assert_eq!(
        store
            .journal()
            .iter()
            .map(|j| (j.0.as_str(), j.2.as_str()))
            .collect::<Vec<_>>(),
        vec![(legacy, "pause"), (legacy, "rm")]
    );
}
