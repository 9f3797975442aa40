//! Confirming a subscription (the SNS handshake): a verified `SubscriptionConfirmation` — so of
//! the pinned topic, signed by SNS — is confirmed by visiting its `SubscribeURL` with one `GET`
//! (a `200` confirms), only when that URL is SNS's own confirmation URL for the topic:
//! `https://sns.<region of the topic>.amazonaws.com/?Action=ConfirmSubscription&TopicArn=<the
//! pinned topic>&Token=…`, nothing else (no other host, port, path, user info or fragment; each
//! parameter once). A confirmation naming another URL is not visited: it is not answered as a
//! handshake, and so is stored like any event, with a warning.
//!
//! The visit goes through the source's [`Fetcher`] (injectable: tests never reach the network),
//! bounded by [`CONFIRM_TIMEOUT`]; a visit that fails is a [`HandshakeError`] (503: nothing was
//! stored, SNS may retry, or an operator asks SNS to send the confirmation again).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::super::handshake::{object_containing, Handshake, HandshakeError, HandshakeReply};
use super::super::Fetcher;

/// The longest the visit of a `SubscribeURL` may take.
pub(super) const CONFIRM_TIMEOUT: Duration = Duration::from_secs(3);

const WHAT: &str = "SNS subscription";

/// The handshake of a `SubscriptionConfirmation` body of `topic` (already verified), if it is one
/// whose `SubscribeURL` may be visited.
pub(super) fn handshake<'a>(
    fetcher: &'a Arc<dyn Fetcher>,
    host: &str,
    topic: &'a str,
    body: &[u8],
) -> Option<Handshake<'a>> {
    let fields = object_containing(body, b"SubscriptionConfirmation")?;
    if fields.get("Type")?.as_str()? != "SubscriptionConfirmation" {
        return None;
    }
    let url = fields.get("SubscribeURL")?.as_str()?.to_owned();
    if !confirmation_url(&url, host, topic) {
        tracing::warn!(
            topic,
            "SNS SubscriptionConfirmation whose SubscribeURL is not SNS's confirmation URL for \
             the topic: not visited, stored as an event"
        );
        return None;
    }
    Some(Handshake::Pending(Box::pin(async move {
        let reason = match tokio::time::timeout(CONFIRM_TIMEOUT, fetcher.fetch(&url)).await {
            Ok(Ok(_)) => {
                let answer = json!({"status": "confirmed", "topic_arn": topic});
                return Ok(
                    HandshakeReply::json("sns SubscriptionConfirmation", &answer)
                        .with_note(format!("subscription to {topic} confirmed")),
                );
            }
            Ok(Err(e)) => e.reason,
            Err(_) => "the confirmation URL did not answer in time",
        };
        tracing::warn!(topic, reason, "SNS subscription not confirmed");
        Err(HandshakeError::Unconfirmed { what: WHAT, reason })
    })))
}

/// Whether `url` is SNS's confirmation URL of `topic` at `host` (see the module docs).
pub(super) fn confirmation_url(url: &str, host: &str, topic: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let Some((authority, query)) = rest.split_once("/?") else {
        return false;
    };
    if authority != host || !url.bytes().all(|b| b.is_ascii_graphic()) || query.contains('#') {
        return false;
    }
    let mut params: HashMap<String, String> = HashMap::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if params
            .insert(name.into_owned(), value.into_owned())
            .is_some()
        {
            return false;
        }
    }
    let param = |name: &str| params.get(name).map(String::as_str);
    param("Action") == Some("ConfirmSubscription")
        && param("TopicArn") == Some(topic)
        && param("Token").is_some_and(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: &str = "sns.us-east-1.amazonaws.com";
    const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:ses-events";

    #[test]
    fn only_sns_confirmation_urls_of_the_topic() {
        let good = format!("https://{HOST}/?Action=ConfirmSubscription&TopicArn={TOPIC}&Token=2336412f37fb687f5d51e6e2425c464de12884b8");
        assert!(confirmation_url(&good, HOST, TOPIC));
        let encoded = good.replace(TOPIC, &TOPIC.replace(':', "%3A"));
        assert!(
            confirmation_url(&encoded, HOST, TOPIC),
            "percent-encoded ARN"
        );
        for bad in [
            good.replace("https://", "http://"),
            good.replace(HOST, "sns.us-west-2.amazonaws.com"),
            good.replace(HOST, "sns.us-east-1.amazonaws.com.evil.example"),
            good.replace(HOST, &format!("{HOST}:8443")),
            good.replace(HOST, &format!("user@{HOST}")),
            good.replace("/?", "/other?"),
            good.replace("ConfirmSubscription", "Unsubscribe"),
            good.replace("ses-events", "other-topic"),
            good.replace("Token=2336412f37fb687f5d51e6e2425c464de12884b8", "Token="),
            format!("{good}&Action=Unsubscribe"),
            format!("{good}#frag"),
            format!("{good}&x=a b"),
            "https://example.com/?Action=ConfirmSubscription".to_owned(),
            "not a url".to_owned(),
        ] {
            assert!(!confirmation_url(&bad, HOST, TOPIC), "{bad}");
        }
    }
}
