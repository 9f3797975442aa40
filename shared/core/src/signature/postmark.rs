//! Postmark: no signature. The webhook URL registered with Postmark carries HTTP basic auth
//! credentials (`https://user:password@hooks.example.com/webhooks/postmark`), which Postmark
//! sends as `Authorization: Basic <base64(user:password)>`; optionally, the request must come from
//! one of the addresses Postmark publishes (`allowed_ips`, addresses or CIDR ranges, checked
//! against the client address API Gateway reports).
//!
//! Each secret is one accepted `user:password`. The credentials are compared in constant time
//! (SHA-256 digests of both sides, so neither the length nor a prefix leaks), any secret matching
//! passes. Then, when `allowed_ips` is set, a request whose client address is unknown or not in
//! the list is refused (`source_not_allowed`). No timestamp: replays are caught by deduplication.
//! The `Authorization` header is never kept with a message (it is a credential), so a stored
//! Postmark message cannot be re-verified later.
//!
//! Event id: the body's SHA-256 (Postmark's events carry no delivery id); type: the body's
//! `/RecordType` (`Delivery`, `Bounce`, `SpamComplaint`, …). Sample: a `Delivery` event.

use std::net::IpAddr;

use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use serde::Deserialize;
#[cfg(any(test, feature = "samples"))]
use serde_json::json;
use sha2::{Digest as _, Sha256};
use subtle::{Choice, ConstantTimeEq};

use super::headers::{push_header, single_header};
use super::settings::settings;
#[cfg(any(test, feature = "samples"))]
use super::stamp::{random_uuid, rfc3339};
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::FieldRule;

const LABEL: &str = "Authorization";
static AUTHORIZATION: HeaderName = http::header::AUTHORIZATION;

/// An address range: the network's address and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IpRange {
    network: IpAddr,
    prefix: u8,
}

impl IpRange {
    /// `a.b.c.d`, `a.b.c.d/n`, an IPv6 address, or an IPv6 address `/n`.
    fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let network: IpAddr = addr.trim().parse().ok()?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(Self { network, prefix })
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct Settings {
    #[serde(default)]
    allowed_ips: Option<Vec<String>>,
}

/// The Postmark scheme of one source. `Debug` shows the number of credentials only.
#[derive(Clone)]
pub(super) struct Postmark {
    /// SHA-256 of each accepted `user:password`; the first one's text signs (samples).
    digests: Vec<[u8; 32]>,
    first: String,
    allowed: Option<Vec<IpRange>>,
}

impl std::fmt::Debug for Postmark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postmark")
            .field(
                "credentials",
                &format_args!("{} x <redacted>", self.digests.len()),
            )
            .field("allowed_ips", &self.allowed)
            .finish()
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Postmark {
    fn check(&self, headers: &HeaderMap, source_ip: Option<IpAddr>) -> Result<(), SignatureError> {
        let header = single_header(headers, &AUTHORIZATION, LABEL)?;
        let malformed = |reason| SignatureError::Malformed {
            header: LABEL,
            reason,
        };
        let (scheme, encoded) = header
            .split_once(' ')
            .ok_or(malformed("expected `Basic <credentials>`"))?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return Err(malformed("expected `Basic <credentials>`"));
        }
        let credentials = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| malformed("the credentials are not valid base64"))?;
        if !credentials.contains(&b':') {
            return Err(malformed(
                "the credentials are not of the form user:password",
            ));
        }
        let given = digest(&credentials);
        let mut found = Choice::from(0);
        for accepted in &self.digests {
            found |= accepted.ct_eq(&given);
        }
        if !bool::from(found) {
            return Err(SignatureError::Mismatch);
        }
        match (&self.allowed, source_ip) {
            (None, _) => Ok(()),
            (Some(ranges), Some(ip)) if ranges.iter().any(|r| r.contains(ip)) => Ok(()),
            (Some(_), _) => Err(SignatureError::SourceNotAllowed),
        }
    }
}

impl FromSpec for Postmark {
    /// Secrets are `user:password` pairs; setting `allowed_ips` (optional).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let Settings { allowed_ips } = settings(spec)?;
        let allowed = allowed_ips
            .map(|list| {
                list.iter()
                    .map(|text| {
                        IpRange::parse(text).ok_or_else(|| SchemeError::InvalidConfig {
                            reason: format!(
                                "`allowed_ips`: {:?} is not an IP address or CIDR range",
                                text.chars().take(64).collect::<String>()
                            ),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let mut digests = Vec::with_capacity(spec.secrets.len());
        let mut first = None;
        for (index, secret) in spec.secrets.iter().enumerate() {
            let invalid = |reason| SchemeError::Invalid { index, reason };
            let text = std::str::from_utf8(secret.expose())
                .map_err(|_| invalid("the credentials are not text"))?;
            if text.is_empty() {
                return Err(invalid("the secret is empty"));
            }
            let (user, password) = text
                .split_once(':')
                .ok_or(invalid("the credentials are not of the form user:password"))?;
            if user.is_empty() {
                return Err(invalid("the user name is empty"));
            }
            // `user:` would let anyone who knows (or guesses) the user name in.
            if password.is_empty() {
                return Err(invalid("the password is empty"));
            }
            digests.push(digest(text.as_bytes()));
            first.get_or_insert_with(|| text.to_owned());
        }
        Ok(Self {
            first: first.ok_or(SchemeError::Empty)?,
            digests,
            allowed,
        })
    }
}

impl Scheme for Postmark {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.source_ip).into()
    }

    /// The `Authorization` header with the first credentials.
    fn sign(&self, _message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let mut out = Vec::with_capacity(1);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&self.first);
        push_header(&mut out, &AUTHORIZATION, &format!("Basic {encoded}"));
        Ok(Signed::headers(out))
    }

    /// None: the only header is a credential, never stored.
    fn signed_headers(&self) -> &[HeaderName] {
        &[]
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::BodySha256
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer("/RecordType"))
    }

    /// No signature: nothing in the request is bound to anything else (the credentials, once
    /// captured, accompany any body), so no id is trusted as the dedupe key.
    fn signs(&self, _rule: &FieldRule) -> bool {
        false
    }
}

/// The samples of the scheme (its provider's events, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        random_uuid()
    }

    fn sample_type(&self) -> &'static str {
        "Delivery"
    }

    fn sample(&self, event_id: &str, event_type: &str, now_secs: i64) -> Sample {
        Sample::json(&json!({
            "RecordType": event_type,
            "ServerID": 23,
            "MessageStream": "outbound",
            "MessageID": event_id,
            "Recipient": "customer@example.com",
            "Tag": "receipt",
            "DeliveredAt": rfc3339(now_secs),
            "Details": "Test delivery webhook details",
            "Metadata": {"tenant": "acme"}
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;

    const CREDS: &str = "postmark:s3cret-pass";

    fn basic(creds: &str) -> String {
        format!("Basic {}", STANDARD.encode(creds))
    }

    fn check(v: &std::sync::Arc<dyn Scheme>, auth: Option<&str>, ip: Option<IpAddr>) -> Outcome {
        let map = match auth {
            Some(a) => headers(&[("Authorization", a)]),
            None => headers(&[]),
        };
        let request = Request::new(&map, b"{}", 0);
        let request = match ip {
            Some(ip) => request.with_source_ip(ip),
            None => request,
        };
        v.verify(request).ready().unwrap()
    }

    #[test]
    fn credentials() {
        let v = verifier("postmark", &["old:pass", CREDS]);
        let bad = |reason| Err(malformed(LABEL, reason));
        let cases: Vec<(Option<String>, Outcome)> = vec![
            (Some(basic(CREDS)), Ok(())),
            (Some(basic("old:pass")), Ok(())),
            (Some(format!("basic {}", STANDARD.encode(CREDS))), Ok(())),
            (
                Some(basic("postmark:s3cret-pasS")),
                Err(SignatureError::Mismatch),
            ),
            (
                Some(basic("postmark:s3cret-pass ")),
                Err(SignatureError::Mismatch),
            ),
            (Some(basic("postmark:")), Err(SignatureError::Mismatch)),
            (None, Err(SignatureError::Missing { header: LABEL })),
            (
                Some(format!("Bearer {}", STANDARD.encode(CREDS))),
                bad("expected `Basic <credentials>`"),
            ),
            (Some("Basic".into()), bad("expected `Basic <credentials>`")),
            (
                Some("Basic !!!".into()),
                bad("the credentials are not valid base64"),
            ),
            (
                Some(basic("no-colon")),
                bad("the credentials are not of the form user:password"),
            ),
        ];
        for (auth, expected) in cases {
            assert_eq!(check(&v, auth.as_deref(), None), expected, "{auth:?}");
        }
        let twice = headers(&[
            ("Authorization", &basic(CREDS)),
            ("authorization", &basic(CREDS)),
        ]);
        assert_eq!(
            v.verify_at(&twice, b"{}", 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        // Signing sends the first credentials; nothing is kept with the message.
        let out = v.sign_at(b"{}", 0, "");
        assert_eq!(value_of(&out, "authorization"), basic("old:pass"));
        assert!(v.signed_headers().is_empty());
        let debug = format!("{v:?}");
        assert!(
            !debug.contains("pass") && debug.contains("2 x <redacted>"),
            "{debug}"
        );
    }

    #[test]
    fn allow_list() {
        let v = try_scheme(
            "postmark",
            json!({"allowed_ips": ["3.134.147.250", "50.31.156.0/24", "2001:db8::/32"]}),
            &[CREDS],
            TOLERANCE,
        )
        .unwrap();
        let auth = basic(CREDS);
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        for (addr, expected) in [
            (ip("3.134.147.250"), Ok(())),
            (ip("50.31.156.6"), Ok(())),
            (ip("::ffff:50.31.156.77"), Ok(())),
            (ip("2001:db8:1::5"), Ok(())),
            (ip("3.134.147.251"), Err(SignatureError::SourceNotAllowed)),
            (ip("50.31.157.6"), Err(SignatureError::SourceNotAllowed)),
            (ip("2001:db9::1"), Err(SignatureError::SourceNotAllowed)),
            (None, Err(SignatureError::SourceNotAllowed)),
        ] {
            assert_eq!(check(&v, Some(&auth), addr), expected, "{addr:?}");
        }
        // Wrong credentials are reported as such, whatever the address.
        assert_eq!(
            check(&v, Some(&basic("postmark:nope")), ip("3.134.147.250")),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn configuration_errors() {
        for bad in [
            json!({"allowed_ips": ["300.1.1.1"]}),
            json!({"allowed_ips": ["1.2.3.4/33"]}),
            json!({"allowed_ips": "1.2.3.4"}),
        ] {
            assert!(
                matches!(
                    try_scheme("postmark", bad.clone(), &[CREDS], TOLERANCE),
                    Err(SchemeError::InvalidConfig { .. })
                ),
                "{bad}"
            );
        }
        // An empty password (`user:`) is no secret (found by the fuzz targets' empty-secret table).
        for (secret, index) in [("nocolon", 0), (":pass", 0), ("user:", 0), ("postmark:", 0)] {
            assert!(matches!(
                try_scheme("postmark", json!({}), &[secret], TOLERANCE),
                Err(SchemeError::Invalid { index: i, .. }) if i == index
            ));
        }
        assert_eq!(IpRange::parse("10.0.0.0/8").map(|r| r.prefix), Some(8));
        assert!(IpRange::parse("10.0.0.0/8")
            .unwrap()
            .contains("10.255.0.1".parse().unwrap()));
        assert!(IpRange::parse("0.0.0.0/0")
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
    }
}
