//! Stripe's request encoding: form bodies in bracket notation (`metadata[tenant]=acme`), the
//! PaymentIntent a [`ChargeRequest`] becomes, the search that finds an attempt's intents, and
//! the Checkout Session a wallet's hosted top-up ([`CheckoutRequest`]) becomes. Pure.

use crate::transport::Request;
use wallet_ledger::autopay::ChargeRequest;
use wallet_ledger::payments::checkout::CheckoutRequest;
use wallet_ledger::tenant::TenantId;

/// The path of PaymentIntents.
pub const PAYMENT_INTENTS: &str = "/v1/payment_intents";

/// The path of Checkout Sessions.
pub const CHECKOUT_SESSIONS: &str = "/v1/checkout/sessions";

/// The line item's product name, as the payer reads it on Stripe's page.
pub const TOP_UP_PRODUCT: &str = "Wallet top-up";

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

/// The retrieval of one PaymentIntent (strongly consistent: what it is now).
pub fn retrieve_intent(id: &str) -> Request {
    let id: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
    Request::get(&format!("{PAYMENT_INTENTS}/{id}"))
}

/// A page of `customer`'s PaymentIntents created at or after `since_secs`, newest first, after
/// `starting_after` when given. Stripe's lists are strongly consistent (its search is not: "don't
/// use search for read-after-write flows"), so an empty list is proof of no intent.
pub fn list_intents(customer: &str, since_secs: i64, starting_after: Option<&str>) -> Request {
    let since = since_secs.to_string();
    let mut pairs = vec![
        ("customer", customer),
        ("created[gte]", since.as_str()),
        ("limit", "100"),
    ];
    if let Some(after) = starting_after {
        pairs.push(("starting_after", after));
    }
    Request::get(&format!("{PAYMENT_INTENTS}?{}", encode(pairs)))
}

/// The hosted Checkout Session (payment mode) of a top-up: one line item of the amount, priced
/// inline, and the tenant where every event of the payment carries it: the session's
/// `metadata[tenant]` (its `checkout.session.*` events) AND `payment_intent_data[metadata][tenant]`
/// (the PaymentIntent's `payment_intent.*` events, which may come first), with
/// `client_reference_id` naming it too. Saving the method for autopay sets
/// `payment_intent_data[setup_future_usage]=off_session` and, without a customer of the wallet,
/// `customer_creation=always`: Checkout attaches a saved method only to a Customer, and in
/// payment mode it creates one only when asked (Stripe refuses `customer` and
/// `customer_creation` together). The idempotency key is the request's.
pub fn checkout_session(request: &CheckoutRequest) -> Request {
    let amount = request.amount.minor().to_string();
    let currency = request.amount.currency();
    let tenant = request.tenant.as_str();
    let mut pairs = vec![
        ("mode", "payment"),
        ("line_items[0][price_data][currency]", currency.as_str()),
        ("line_items[0][price_data][unit_amount]", amount.as_str()),
        (
            "line_items[0][price_data][product_data][name]",
            TOP_UP_PRODUCT,
        ),
        ("line_items[0][quantity]", "1"),
        ("success_url", request.success_url.as_str()),
        ("cancel_url", request.cancel_url.as_str()),
        ("client_reference_id", tenant),
        ("metadata[tenant]", tenant),
        ("payment_intent_data[metadata][tenant]", tenant),
    ];
    match &request.customer {
        Some(customer) => pairs.push(("customer", customer.as_str())),
        None if request.save_payment_method => pairs.push(("customer_creation", "always")),
        None => {}
    }
    if request.save_payment_method {
        pairs.push(("payment_intent_data[setup_future_usage]", "off_session"));
    }
    Request::post(CHECKOUT_SESSIONS, &request.idempotency_key, encode(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wallet_ledger::money::Currency;

    // Characters only a tenant stored before the grammar (issue 32) can have (its autopay still
    // charges): encoded all the same.
    fn top_up(save: bool, customer: Option<&str>) -> CheckoutRequest {
        CheckoutRequest {
            tenant: TenantId::stored("acme & co").unwrap(),
            amount: Currency::parse("EUR").unwrap().amount(5000),
            success_url: "https://app.example/paid?s={CHECKOUT_SESSION_ID}".into(),
            cancel_url: "https://app.example/cancel".into(),
            save_payment_method: save,
            customer: customer.map(str::to_owned),
            idempotency_key: "wallet-api-acme-k1".into(),
        }
    }

    #[test]
    fn a_top_up_is_a_payment_mode_session_naming_its_tenant_on_both_objects() {
        let common = [
            ("mode", "payment"),
            ("line_items[0][price_data][currency]", "eur"),
            ("line_items[0][price_data][unit_amount]", "5000"),
            (
                "line_items[0][price_data][product_data][name]",
                "Wallet top-up",
            ),
            ("line_items[0][quantity]", "1"),
            (
                "success_url",
                "https://app.example/paid?s={CHECKOUT_SESSION_ID}",
            ),
            ("cancel_url", "https://app.example/cancel"),
            ("client_reference_id", "acme & co"),
            ("metadata[tenant]", "acme & co"),
            ("payment_intent_data[metadata][tenant]", "acme & co"),
        ];
        let sfu = ("payment_intent_data[setup_future_usage]", "off_session");
        type Pairs<'a> = Vec<(&'a str, &'a str)>;
        let table: [(bool, Option<&str>, Pairs); 4] = [
            (false, None, vec![]),
            (false, Some("cus_1"), vec![("customer", "cus_1")]),
            (true, None, vec![("customer_creation", "always"), sfu]),
            (true, Some("cus_1"), vec![("customer", "cus_1"), sfu]),
        ];
        for (save, customer, extra) in table {
            let r = checkout_session(&top_up(save, customer));
            assert_eq!(r.method, http::Method::POST);
            assert_eq!(r.path, "/v1/checkout/sessions");
            assert_eq!(r.idempotency_key.as_deref(), Some("wallet-api-acme-k1"));
            let sent: Vec<(String, String)> = form_urlencoded::parse(r.body.as_bytes())
                .into_owned()
                .collect();
            let want: Vec<(String, String)> = common
                .iter()
                .chain(extra.iter())
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            assert_eq!(sent, want, "save {save}, customer {customer:?}");
        }
        // The brackets are percent-encoded on the wire, as Stripe's libraries send them.
        let body = checkout_session(&top_up(false, None)).body;
        assert!(body.contains("metadata%5Btenant%5D=acme+%26+co"), "{body}");
    }

    #[test]
    fn a_charge_is_an_off_session_confirmed_intent_with_our_metadata() {
        let request = ChargeRequest {
            tenant: TenantId::stored("acme & co").unwrap(),
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
        let r = search_attempt(&TenantId::stored("o'brien").unwrap(), "a1");
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
