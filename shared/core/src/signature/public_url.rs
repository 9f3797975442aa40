//! The `url` setting of the schemes that sign the URL they post to (Square, Twilio): the public
//! URL exactly as registered with the provider. It is configured, never taken from the request:
//! behind API Gateway, a custom domain or a proxy, the URL the function sees differs from the one
//! the provider signed, and the request's `Host` is the sender's to choose.

use serde::Deserialize;

use super::settings::settings;
use super::{SchemeError, Spec};

#[derive(Deserialize)]
struct UrlSettings {
    url: Option<String>,
}

/// The configured public URL (`http`/`https`, with a host, no fragment, no spaces); what is
/// wrong with it names the setting, never a secret.
pub(super) fn configured_url(spec: &Spec<'_>) -> Result<String, SchemeError> {
    let invalid = |reason: &str| SchemeError::InvalidConfig {
        reason: format!("`url` {reason}"),
    };
    let UrlSettings { url } = settings(spec)?;
    let url = url.ok_or_else(|| {
        invalid("is required: the public URL registered with the provider, which it signs")
    })?;
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| invalid("must start with https:// (or http://)"))?;
    let host = rest.split(['/', '?']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') {
        return Err(invalid("must name a host (and no credentials)"));
    }
    if url.contains('#') || !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid("must be visible ASCII without a fragment"));
    }
    Ok(url)
}

/// The URL with and without the scheme's default port (`:443` / `:80`), as Twilio's libraries
/// try both: its signing was not always consistent about the port.
pub(super) fn port_variants(url: &str) -> [String; 2] {
    let (scheme, rest, port) = match url.split_once("://") {
        Some(("https", rest)) => ("https", rest, ":443"),
        Some((scheme, rest)) => (scheme, rest, ":80"),
        None => return [url.to_owned(), url.to_owned()],
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let bare = authority.strip_suffix(port).unwrap_or(authority);
    let has_port = bare
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
        && !bare.ends_with(']');
    if has_port {
        // A non-default port: only the URL as configured.
        return [url.to_owned(), url.to_owned()];
    }
    [
        format!("{scheme}://{bare}{path}"),
        format!("{scheme}://{bare}{port}{path}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::Secret;
    use serde_json::{json, Value};
    use std::time::Duration;

    fn url_of(settings: Value) -> Result<String, SchemeError> {
        let Value::Object(map) = settings else {
            unreachable!()
        };
        let secrets = [Secret::from("s")];
        configured_url(&Spec::new(&map, &secrets, Duration::from_secs(1)))
    }

    #[test]
    fn the_url_setting() {
        assert_eq!(
            url_of(json!({"url": "https://hooks.example.com/webhooks/square?x=1"})).unwrap(),
            "https://hooks.example.com/webhooks/square?x=1"
        );
        for bad in [
            json!({}),
            json!({"url": "hooks.example.com/x"}),
            json!({"url": "https:///x"}),
            json!({"url": "https://user:pw@host/x"}),
            json!({"url": "https://host/x#frag"}),
            json!({"url": "https://host/a b"}),
            json!({"url": 5}),
        ] {
            let e = url_of(bad.clone()).unwrap_err();
            assert!(matches!(e, SchemeError::InvalidConfig { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn default_ports() {
        assert_eq!(
            port_variants("https://a.example.com/x?y=1"),
            [
                "https://a.example.com/x?y=1",
                "https://a.example.com:443/x?y=1"
            ]
        );
        assert_eq!(
            port_variants("https://a.example.com:443/x"),
            ["https://a.example.com/x", "https://a.example.com:443/x"]
        );
        assert_eq!(
            port_variants("http://127.0.0.1:9000/x"),
            ["http://127.0.0.1:9000/x", "http://127.0.0.1:9000/x"]
        );
        assert_eq!(port_variants("http://h?q"), ["http://h?q", "http://h:80?q"]);
    }
}
