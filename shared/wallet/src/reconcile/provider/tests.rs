use super::pass::{compare, compare_after, Book, Credited, Options, Provider, ProviderError};
use super::*;
use crate::ledger::LedgerError;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};

const NOW: i64 = 1_800_000_000;
const GRACE: i64 = 3600;
const OLD: i64 = NOW - 2 * 86_400;

fn tenant() -> TenantId {
    TenantId::parse("acme").unwrap()
}

fn intent(id: &str, status: Status, received: i64, created: i64) -> Reported {
    Reported {
        id: id.into(),
        tenant: Some(tenant()),
        attempt: None,
        status,
        received,
        currency: "usd".into(),
        created,
        refunded: 0,
    }
}

fn row(key: &str, credited: i64, updated_s: i64) -> Booked {
    Booked {
        payment_key: key.into(),
        tenant: tenant(),
        currency: "usd".into(),
        credited,
        refund_total: 0,
        updated_at: Some(updated_s * 1000),
    }
}

#[test]
fn each_pair_is_decided_as_the_table_says() {
    use Status::*;
    let paid = intent("pi_1", Succeeded, 2500, OLD);
    let young = intent("pi_1", Succeeded, 2500, NOW - 60);
    let processing = intent("pi_1", Processing, 0, OLD);
    let unpaid = intent("pi_1", Unpaid, 0, OLD);
    let canceled = intent("pi_1", Canceled, 0, OLD);
    let refunded = Reported {
        refunded: 700,
        ..paid.clone()
    };
    let credited = row("pi_1", 2500, OLD);
    let just_credited = row("pi_1", 2500, NOW - 60);
    let nothing_credited = row("pi_1", 0, OLD);
    let other_amount = row("pi_1", 2400, OLD);
    let other_currency = Booked {
        currency: "eur".into(),
        ..credited.clone()
    };
    let refund_recorded = Booked {
        refund_total: 700,
        ..credited.clone()
    };
    let wait = |why| Verdict::Wait(why);
    let differs = Verdict::Differs;
    // (Stripe, ledger, verdict)
    let table: Vec<(Option<&Reported>, Option<&Booked>, Verdict)> = vec![
        (None, None, Verdict::Same),
        (None, Some(&nothing_credited), Verdict::Same),
        (None, Some(&just_credited), wait("credited moments ago")),
        (None, Some(&credited), differs(Kind::CreditedNotInStripe)),
        (
            Some(&processing),
            None,
            wait("processing: a bank debit takes days to settle"),
        ),
        (
            Some(&processing),
            Some(&nothing_credited),
            wait("processing: a bank debit takes days to settle"),
        ),
        (
            Some(&processing),
            Some(&credited),
            differs(Kind::CreditedNotInStripe),
        ),
        (
            Some(&unpaid),
            Some(&credited),
            differs(Kind::CreditedNotInStripe),
        ),
        (
            Some(&canceled),
            Some(&credited),
            differs(Kind::CreditedNotInStripe),
        ),
        (Some(&unpaid), None, Verdict::Same),
        (Some(&canceled), Some(&nothing_credited), Verdict::Same),
        (Some(&young), None, wait("its webhook may be on its way")),
        (Some(&paid), None, differs(Kind::PaidNotCredited)),
        (
            Some(&paid),
            Some(&nothing_credited),
            differs(Kind::PaidNotCredited),
        ),
        (
            Some(&paid),
            Some(&other_amount),
            differs(Kind::AmountsDiffer),
        ),
        (
            Some(&paid),
            Some(&other_currency),
            differs(Kind::AmountsDiffer),
        ),
        (
            Some(&refunded),
            Some(&credited),
            differs(Kind::RefundsDiffer),
        ),
        (
            Some(&paid),
            Some(&refund_recorded),
            differs(Kind::RefundsDiffer),
        ),
        (Some(&refunded), Some(&refund_recorded), Verdict::Same),
        (Some(&paid), Some(&credited), Verdict::Same),
        (Some(&young), Some(&credited), Verdict::Same),
    ];
    for (i, (r, b, want)) in table.into_iter().enumerate() {
        assert_eq!(decide(r, b, NOW, GRACE), want, "row {i}: {r:?} / {b:?}");
    }
}

#[test]
fn stripe_statuses_are_read_as_documented() {
    for (s, want) in [
        ("succeeded", Some(Status::Succeeded)),
        ("processing", Some(Status::Processing)),
        ("requires_payment_method", Some(Status::Unpaid)),
        ("requires_capture", Some(Status::Unpaid)),
        ("canceled", Some(Status::Canceled)),
        ("paid", None),
    ] {
        assert_eq!(Status::parse(s), want, "{s}");
    }
}

/// Stripe as a map of intents; every call counted.
#[derive(Default)]
struct FakeStripe {
    intents: Vec<Reported>,
    calls: AtomicU32,
    down: bool,
}

impl Provider for FakeStripe {
    async fn list(&self, created_gte: i64) -> Result<Vec<Reported>, ProviderError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if self.down {
            return Err(ProviderError("HTTP 500".into()));
        }
        Ok(self
            .intents
            .iter()
            .filter(|r| r.created >= created_gte)
            .cloned()
            .collect())
    }
    async fn retrieve(&self, id: &str) -> Result<Option<Reported>, ProviderError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok(self.intents.iter().find(|r| r.id == id).cloned())
    }
    fn requests(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
struct FakeBook(HashMap<String, Booked>);

impl Book for FakeBook {
    async fn booked(&self, key: &str) -> Result<Option<Booked>, LedgerError> {
        Ok(self.0.get(key).cloned())
    }
    async fn credited_since(&self, since_ms: i64) -> Result<Credited, LedgerError> {
        let mut rows: Vec<Booked> = self
            .0
            .values()
            .filter(|b| b.credited != 0 && b.updated_at.is_none_or(|t| t >= since_ms))
            .cloned()
            .collect();
        rows.sort_by(|a, b| a.payment_key.cmp(&b.payment_key));
        Ok(Credited {
            rows,
            registry_complete: true,
        })
    }
}

fn book(rows: &[Booked]) -> FakeBook {
    FakeBook(
        rows.iter()
            .map(|b| (b.payment_key.clone(), b.clone()))
            .collect(),
    )
}

#[tokio::test]
async fn a_clean_window_reports_nothing_and_counts_zero_per_kind() {
    let stripe = FakeStripe {
        intents: vec![
            intent("pi_a", Status::Succeeded, 2500, OLD),
            intent("pi_b", Status::Processing, 0, OLD),
            Reported {
                tenant: None,
                ..intent("pi_other", Status::Succeeded, 99, OLD)
            },
        ],
        ..FakeStripe::default()
    };
    let report = compare(
        &stripe,
        &book(&[row("pi_a", 2500, OLD)]),
        NOW,
        Options::default(),
    )
    .await
    .unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!((report.listed, report.product, report.retrieved), (3, 2, 0));
    assert_eq!(
        report.waiting.values().sum::<usize>(),
        1,
        "the processing one"
    );
    assert_eq!(report.requests, 1);
    let metrics = report.metrics();
    assert_eq!(metrics.len(), 4);
    assert!(metrics.iter().all(|m| m.value == 0), "{metrics:?}");
}

#[tokio::test]
async fn each_difference_is_reported_with_its_kind() {
    let stripe = FakeStripe {
        intents: vec![
            intent("pi_dropped", Status::Succeeded, 2500, OLD),
            intent("pi_short", Status::Succeeded, 2500, OLD),
            // Created before the window, credited in it: found by its row, retrieved.
            intent("pi_early", Status::Succeeded, 900, NOW - 30 * 86_400),
        ],
        ..FakeStripe::default()
    };
    let ledger = book(&[
        row("pi_short", 2000, OLD),
        row("pi_early", 900, OLD),
        row("pi_forged", 5000, OLD),
        row("cs_no_intent", 100, OLD),
    ]);
    let report = compare(&stripe, &ledger, NOW, Options::default())
        .await
        .unwrap();
    let kinds: Vec<(Kind, &str)> = report
        .differences
        .iter()
        .map(|d| (d.kind, d.payment.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Kind::PaidNotCredited, "pi_dropped"),
            (Kind::AmountsDiffer, "pi_short"),
            (Kind::CreditedNotInStripe, "pi_forged"),
        ]
    );
    assert_eq!(report.retrieved, 2, "pi_early and pi_forged");
    assert_eq!(report.unchecked, ["cs_no_intent"]);
    assert_eq!(report.requests, 3, "one page, two retrievals");
    let by_name: HashMap<String, i64> = report
        .metrics()
        .into_iter()
        .map(|m| (m.name, m.value))
        .collect();
    assert_eq!(by_name["StripePaidNotCredited"], 1);
    assert_eq!(by_name["StripeCreditedNotInStripe"], 1);
    assert_eq!(by_name["StripeAmountsDiffer"], 1);
    assert_eq!(by_name["StripeRefundsDiffer"], 0);
}

#[tokio::test]
async fn stripe_down_is_an_error_not_a_clean_report() {
    let stripe = FakeStripe {
        down: true,
        ..FakeStripe::default()
    };
    let err = compare(&stripe, &book(&[]), NOW, Options::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 500"), "{err}");
}

#[tokio::test]
async fn a_payment_whose_event_was_just_caught_up_waits_one_pass_then_is_reported() {
    let stripe = FakeStripe {
        intents: vec![
            intent("pi_caught", Status::Succeeded, 2500, OLD),
            intent("pi_lost", Status::Succeeded, 700, OLD),
        ],
        ..FakeStripe::default()
    };
    let in_flight: HashSet<String> = ["pi_caught".to_owned()].into();
    let report = compare_after(&stripe, &book(&[]), NOW, Options::default(), &in_flight)
        .await
        .unwrap();
    let kinds: Vec<(Kind, &str)> = report
        .differences
        .iter()
        .map(|d| (d.kind, d.payment.as_str()))
        .collect();
    assert_eq!(kinds, [(Kind::PaidNotCredited, "pi_lost")]);
    assert_eq!(
        report.waiting.get("its event was caught up moments ago"),
        Some(&1)
    );
    // The next pass (nothing caught up by it): still not credited, so reported.
    let later = compare(&stripe, &book(&[]), NOW + 3600, Options::default())
        .await
        .unwrap();
    assert_eq!(later.differences.len(), 2, "{later:?}");
}
