//! Stripe's request encoding: form bodies in bracket notation (`metadata[tenant]=acme`), the
//! PaymentIntent a [`ChargeRequest`] becomes, and the search that finds an attempt's intents.
//! Pure.

use crate::transport::Request;
use wallet_ledger::autopay::ChargeRequest;
use wallet_ledger::tenant::TenantId;

/// The path of PaymentIntents.
pub const PAYMENT_INTENTS: &str = "/v1/payment_intents";

/// `pairs` as an `application/x-www-form-urlencoded` body (or query).
pub fn encode<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

/// The off-session PaymentIntent, confirmed at once, that charges `request` (the idempotency key
/// is the request's: stored on the attempt before the call).
pub fn payment_intent(request: &ChargeRequest) -> Request {
    let amount = request.amount.minor().to_string();
    let try_no = request.try_no.to_string();
    let body = encode([
        ("amount", amount.as_str()),
        ("currency", request.amount.currency().as_str()),
        ("customer", request.customer.as_str()),
        ("payment_method", request.payment_method.as_str()),
        ("confirm", "true"),
        ("off_session", "true"),
        ("metadata[tenant]", request.tenant.as_str()),
        ("metadata[attempt]", request.attempt.as_str()),
        ("metadata[try]", try_no.as_str()),
    ]);
    Request::post(PAYMENT_INTENTS, &request.idempotency_key, body)
}

/// A value quoted for Stripe's search query language (`'…'`, `\` and `'` escaped).
fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The search for the PaymentIntents of `attempt` of `tenant` (by their metadata).
pub fn search_attempt(tenant: &TenantId, attempt: &str) -> Request {
    let query = format!(
        "metadata['attempt']:{} AND metadata['tenant']:{}",
        quoted(attempt),
        quoted(tenant.as_str())
    );
    let q = encode([("query", query.as_str()), ("limit", "10")]);
    Request::get(&format!("{PAYMENT_INTENTS}/search?{q}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wallet_ledger::money::Currency;

    #[test]
    fn a_charge_is_an_off_session_confirmed_intent_with_our_metadata() {
        let request = ChargeRequest {
            tenant: TenantId::parse("acme & co").unwrap(),
            attempt: "a1".into(),
            try_no: 2,
            amount: Currency::parse("USD").unwrap().amount(2500),
            customer: "cus_1".into(),
            payment_method: "pm_card_visa".into(),
            idempotency_key: "autopay-a1-try-2".into(),
        };
        let r = payment_intent(&request);
        assert_eq!(r.path, "/v1/payment_intents");
        assert_eq!(r.idempotency_key.as_deref(), Some("autopay-a1-try-2"));
        assert_eq!(
            r.body,
            "amount=2500&currency=usd&customer=cus_1&payment_method=pm_card_visa&confirm=true\
             &off_session=true&metadata%5Btenant%5D=acme+%26+co&metadata%5Battempt%5D=a1&metadata%5Btry%5D=2"
        );
    }

    #[test]
    fn the_search_quotes_its_values() {
        let r = search_attempt(&TenantId::parse("o'brien").unwrap(), "a1");
        assert_eq!(r.method, http::Method::GET);
        assert!(r.idempotency_key.is_none());
        let query: Vec<(String, String)> =
            form_urlencoded::parse(r.path.split_once('?').unwrap().1.as_bytes())
                .into_owned()
                .collect();
        assert_eq!(
            query[0].1,
            r"metadata['attempt']:'a1' AND metadata['tenant']:'o\'brien'"
        );
    }
}
