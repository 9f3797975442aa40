//! What the client counts, by stage of a call: requests sent, retries, 429s (rate limited or
//! locked), declines by code, calls that ended indeterminate, and Checkout Sessions not created
//! (`CheckoutFailed`, by reason: refused or unavailable). Counted as values
//! ([`Tally::metrics`]) for the caller to emit after it committed what the call decided; the
//! client emits nothing itself. Names are the provider-neutral ones of autopay (the `Provider`
//! property says which), so an alarm on the 429 rate reads `ProviderRateLimited`.

use inbox_core::metrics::Metric;
use wallet_ledger::autopay::ChargeOutcome;
use wallet_ledger::payments::checkout::CheckoutError;

/// The CloudWatch namespace of autopay's provider metrics.
pub const METRICS_NAMESPACE: &str = "WebhookIngestor/Autopay";

/// The counts of one call (a charge or a find).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: u32,
    pub retries: u32,
    /// Answers with status 429 (`rate_limit`, `lock_timeout`).
    pub rate_limited: u32,
    /// The decline's code, when the call ended in one.
    pub decline: Option<(String, &'static str)>,
    pub indeterminate: bool,
    /// Why a Checkout Session was not created (`refused`, `unavailable`), when it was not.
    pub checkout_failed: Option<&'static str>,
}

impl Tally {
    /// Notes the outcome a charge ended with.
    pub fn outcome(&mut self, outcome: &ChargeOutcome) {
        match outcome {
            ChargeOutcome::DeclinedSoft { code } => self.decline = Some((code.clone(), "soft")),
            ChargeOutcome::DeclinedHard { code } => self.decline = Some((code.clone(), "hard")),
            ChargeOutcome::NeedsCustomer { code } => {
                self.decline = Some((code.clone(), "needs_customer"))
            }
            ChargeOutcome::Indeterminate => self.indeterminate = true,
            // Counted by the pass once recorded (`AutopayCharged`, `AutopayPending`).
            ChargeOutcome::Succeeded | ChargeOutcome::Pending => {}
        }
    }

    /// Notes how a Checkout Session's creation ended.
    pub fn checkout<T>(&mut self, created: &Result<T, CheckoutError>) {
        self.checkout_failed = match created {
            Ok(_) => None,
            Err(CheckoutError::Refused(_)) => Some("refused"),
            Err(CheckoutError::Unavailable(_)) => Some("unavailable"),
        };
    }

    /// The metrics of this call (zero counts left out).
    pub fn metrics(&self) -> Vec<Metric> {
        let count = |name: &str, value: u32| {
            Metric::count(METRICS_NAMESPACE, name, i64::from(value))
                .with_property("Provider", "stripe")
        };
        let mut out = Vec::new();
        for (name, value) in [
            ("ProviderRequests", self.requests),
            ("ProviderRetries", self.retries),
            ("ProviderRateLimited", self.rate_limited),
        ] {
            if value > 0 {
                out.push(count(name, value));
            }
        }
        if let Some((code, kind)) = &self.decline {
            out.push(
                count("ChargeDeclined", 1)
                    .with_property("Code", code.as_str())
                    .with_property("Decline", *kind),
            );
        }
        if self.indeterminate {
            out.push(count("ChargeIndeterminate", 1).with_note(
                "a charge's outcome is not known after the client's retries: the same \
                 idempotency key is sent again on the next try",
            ));
        }
        if let Some(reason) = self.checkout_failed {
            out.push(count("CheckoutFailed", 1).with_property("Reason", reason));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_stage_and_declines_by_code() {
        let mut t = Tally {
            requests: 3,
            retries: 2,
            rate_limited: 2,
            ..Tally::default()
        };
        t.outcome(&ChargeOutcome::DeclinedSoft {
            code: "insufficient_funds".into(),
        });
        let m = t.metrics();
        let names: Vec<_> = m.iter().map(|m| (m.name.as_str(), m.value)).collect();
        assert_eq!(
            names,
            [
                ("ProviderRequests", 3),
                ("ProviderRetries", 2),
                ("ProviderRateLimited", 2),
                ("ChargeDeclined", 1)
            ]
        );
        assert!(m[3]
            .properties
            .contains(&("Code".into(), "insufficient_funds".into())));
        assert!(Tally::default().metrics().is_empty());
    }

    #[test]
    fn a_session_not_created_counts_by_reason() {
        let table = [
            (Ok(()), None),
            (Err(CheckoutError::Refused("no".into())), Some("refused")),
            (
                Err(CheckoutError::Unavailable("down".into())),
                Some("unavailable"),
            ),
        ];
        for (created, want) in table {
            let mut t = Tally::default();
            t.checkout(&created);
            let failed: Vec<_> = t
                .metrics()
                .into_iter()
                .filter(|m| m.name == "CheckoutFailed")
                .map(|m| m.properties)
                .collect();
            match want {
                None => assert!(failed.is_empty(), "{created:?}"),
                Some(r) => assert_eq!(
                    failed,
                    [vec![
                        ("Provider".to_owned(), "stripe".to_owned()),
                        ("Reason".to_owned(), r.to_owned())
                    ]]
                ),
            }
        }
    }
}
