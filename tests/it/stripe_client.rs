//! The Stripe client against the local Stripe stand-in (`scripts/stripe_standin.py`): each of
//! Stripe's decline test cards mapped to its outcome, one request each. Stripe's faults (a crash
//! after the call, 429 storms, `Stripe-Should-Retry`, a 500 or a reset after the charge) are in
//! `faults::stripe`.

use integration_tests::stripe::{charger, request, Standin};
use wallet_ledger::autopay::{ChargeOutcome, Charger};

#[tokio::test]
async fn each_decline_test_card_maps_to_its_outcome() {
    let s = Standin::start();
    let soft = |c: &str| ChargeOutcome::DeclinedSoft { code: c.into() };
    let hard = |c: &str| ChargeOutcome::DeclinedHard { code: c.into() };
    let table = [
        ("pm_card_visa", ChargeOutcome::Succeeded),
        ("pm_card_visa_chargeDeclined", soft("generic_decline")),
        (
            "pm_card_visa_chargeDeclinedInsufficientFunds",
            soft("insufficient_funds"),
        ),
        (
            "pm_card_chargeDeclinedProcessingError",
            soft("processing_error"),
        ),
        ("pm_card_visa_chargeDeclinedLostCard", hard("lost_card")),
        ("pm_card_visa_chargeDeclinedStolenCard", hard("stolen_card")),
        ("pm_card_visa_chargeDeclinedFraudulent", hard("fraudulent")),
        ("pm_card_chargeDeclinedExpiredCard", hard("expired_card")),
        ("pm_card_chargeDeclinedIncorrectCvc", hard("incorrect_cvc")),
        (
            "pm_card_authenticationRequired",
            ChargeOutcome::NeedsCustomer {
                code: "authentication_required".into(),
            },
        ),
    ];
    let c = charger(&s);
    for (i, (card, want)) in table.into_iter().enumerate() {
        let (cus, pm) = s.customer(card);
        let reply = c.charge(&request(&cus, &pm, &format!("card-{i}"))).await;
        assert_eq!(reply.outcome, want, "{card}");
        assert_eq!(reply.requests, 1, "{card}: a decline is not retried");
    }
    let declined = c
        .take_metrics()
        .into_iter()
        .filter(|m| m.name == "ChargeDeclined")
        .count();
    assert_eq!(declined, 9);
}
