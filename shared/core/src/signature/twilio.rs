//! Twilio: `X-Twilio-Signature: <base64>`, over a form-encoded (`application/x-www-form-urlencoded`)
//! POST.
//!
//! The signed content is the full URL the webhook was configured with (the source's `url`
//! setting, query string included, exactly as entered in Twilio's console), followed by every POST
//! parameter as `name` + `value` with no separators, names sorted, and each name's distinct values
//! sorted (byte order, as Twilio's libraries sort). The MAC is HMAC-SHA1 keyed with the account's
//! Auth Token, base64-encoded; or HMAC-SHA256 when the request's
//! `X-Twilio-Webhooks-Signature-Settings` names `algorithm=HMAC_SHA256` (webhooks signed with a
//! SharedKey, whose secret is then the configured one). As Twilio's libraries do, the URL is tried
//! with and without the scheme's default port. Twilio signs no timestamp: replays are caught by
//! deduplication. JSON bodies (signed through a `bodySHA256` query parameter) are not supported.
//!
//! Event id: the SHA-256 of the signed parameters (every `name` + `value` in signing order, the
//! signed string without the source's URL: `crate::identity::form`), so a resend with reordered
//! or repeated parameters, which carries the same signature, is a duplicate and not a new event
//! (the `I-Twilio-Idempotency-Token` header is not signed); no type (`MessageStatus` is a form
//! field). Sample: an SMS status callback.

use aws_lc_rs::hmac;
use base64::Engine as _;
use http::{HeaderMap, HeaderName};
use subtle::{Choice, ConstantTimeEq};

use super::headers::{push_header, single_header};
use super::public_url::{configured_url, port_variants};
#[cfg(any(test, feature = "samples"))]
use super::sample::random_alnum;
use super::{
    FromSpec, Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned,
    Verdict,
};
#[cfg(any(test, feature = "samples"))]
use super::{Sample, Sampler};
use crate::identity::form::signed_params;
use crate::identity::FieldRule;

const LABEL: &str = "X-Twilio-Signature";
const SETTINGS_LABEL: &str = "X-Twilio-Webhooks-Signature-Settings";
static SIGNATURE: HeaderName = HeaderName::from_static("x-twilio-signature");
static SETTINGS: HeaderName = HeaderName::from_static("x-twilio-webhooks-signature-settings");
static SIGNED_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("x-twilio-signature"),
    HeaderName::from_static("x-twilio-webhooks-signature-settings"),
];
/// The media type of Twilio's form-encoded samples.
#[cfg(any(test, feature = "samples"))]
const FORM: &str = "application/x-www-form-urlencoded";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Sha1,
    Sha256,
}

impl Algorithm {
    fn tag_len(self) -> usize {
        match self {
            Self::Sha1 => 20,
            Self::Sha256 => 32,
        }
    }
}

/// One secret, keyed for both algorithms.
#[derive(Clone)]
struct Keys {
    sha1: hmac::Key,
    sha256: hmac::Key,
}

/// The Twilio scheme of one source.
#[derive(Clone)]
pub(super) struct Twilio {
    keys: Vec<Keys>,
    url: String,
}

impl std::fmt::Debug for Twilio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Twilio")
            .field("keys", &format_args!("{} x <redacted>", self.keys.len()))
            .field("url", &self.url)
            .finish()
    }
}

/// The MAC of the signed string: the URL, then the signed parameters (`signed_params`).
fn mac(key: &Keys, algorithm: Algorithm, url: &str, params: &[u8]) -> Vec<u8> {
    let mut ctx = hmac::Context::with_key(match algorithm {
        Algorithm::Sha1 => &key.sha1,
        Algorithm::Sha256 => &key.sha256,
    });
    ctx.update(url.as_bytes());
    ctx.update(params);
    ctx.sign().as_ref().to_vec()
}

/// The algorithm the settings header names (absent: HMAC-SHA1, the Auth Token signature).
fn algorithm(headers: &HeaderMap) -> Result<Algorithm, SignatureError> {
    if headers.get(&SETTINGS).is_none() {
        return Ok(Algorithm::Sha1);
    }
    let text = single_header(headers, &SETTINGS, SETTINGS_LABEL)?;
    let named = text.split(',').find_map(|part| {
        let (name, value) = part.split_once('=')?;
        (name.trim() == "algorithm").then(|| value.trim())
    });
    match named.map(str::to_ascii_uppercase).as_deref() {
        None | Some("HMAC_SHA1") => Ok(Algorithm::Sha1),
        Some("HMAC_SHA256") => Ok(Algorithm::Sha256),
        Some(_) => Err(SignatureError::Malformed {
            header: SETTINGS_LABEL,
            reason: "the algorithm is neither HMAC_SHA1 nor HMAC_SHA256",
        }),
    }
}

impl Twilio {
    fn check(&self, headers: &HeaderMap, body: &[u8], url: &str) -> Result<(), SignatureError> {
        let header = single_header(headers, &SIGNATURE, LABEL)?;
        let algorithm = algorithm(headers)?;
        let malformed = |reason| SignatureError::Malformed {
            header: LABEL,
            reason,
        };
        let mut tag = [0u8; 48];
        let len = base64::engine::general_purpose::STANDARD
            .decode_slice(header, &mut tag)
            .map_err(|_| {
                malformed("the signature is not valid base64 of the algorithm's length")
            })?;
        if len != algorithm.tag_len() {
            return Err(malformed(
                "the signature is not valid base64 of the algorithm's length",
            ));
        }
        let candidate = &tag[..len];
        let params = signed_params(body).ok_or(SignatureError::MalformedField {
            field: "(form parameters)",
            reason: "the body is not form-encoded UTF-8",
        })?;
        let mut found = Choice::from(0);
        for url in port_variants(url) {
            for key in &self.keys {
                found |= mac(key, algorithm, &url, &params).ct_eq(candidate);
            }
        }
        if bool::from(found) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

impl FromSpec for Twilio {
    /// Secrets are Auth Tokens (or SharedKey secrets), used as-is; setting `url` (required).
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError> {
        let url = configured_url(spec)?;
        let mut keys = Vec::with_capacity(spec.secrets.len());
        for (index, secret) in spec.secrets.iter().enumerate() {
            if secret.expose().is_empty() {
                return Err(SchemeError::Invalid {
                    index,
                    reason: "the secret is empty",
                });
            }
            keys.push(Keys {
                sha1: hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.expose()),
                sha256: hmac::Key::new(hmac::HMAC_SHA256, secret.expose()),
            });
        }
        if keys.is_empty() {
            return Err(SchemeError::Empty);
        }
        Ok(Self { keys, url })
    }
}

impl Scheme for Twilio {
    /// The configured `url`, unless the transport set the exact public URL on the request.
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        let url = request.url.unwrap_or(&self.url);
        self.check(request.headers, request.body, url).into()
    }

    /// HMAC-SHA1 with the first secret (the Auth Token signature).
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let url = message.url.unwrap_or(&self.url);
        let key = self.keys.first().ok_or(SignError::Unsupported {
            reason: "no secret",
        })?;
        let params = signed_params(message.body).ok_or(SignError::Unsupported {
            reason: "a Twilio body is form-encoded UTF-8",
        })?;
        let tag = mac(key, Algorithm::Sha1, url, &params);
        let mut out = Vec::with_capacity(1);
        push_header(
            &mut out,
            &SIGNATURE,
            &base64::engine::general_purpose::STANDARD.encode(tag),
        );
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &SIGNED_HEADERS
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::FormSha256
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        None
    }

    /// Signed: the configured URL and the POST parameters, sorted and de-duplicated: exactly
    /// what the form parameters' hash reads; not the body's bytes (a reordered body verifies
    /// too), so no other rule is.
    fn signs(&self, rule: &FieldRule) -> bool {
        matches!(rule, FieldRule::FormSha256)
    }
}

/// The samples of the scheme (its provider's events, for `inboxctl send`).
#[cfg(any(test, feature = "samples"))]
#[derive(Debug, Default)]
pub(super) struct Samples;

#[cfg(any(test, feature = "samples"))]
impl Sampler for Samples {
    fn sample_id(&self) -> String {
        format!("SM{}", random_alnum(32).to_ascii_lowercase())
    }

    fn sample_type(&self) -> &'static str {
        "delivered"
    }

    /// A status callback: `MessageSid` is the id, `MessageStatus` the type.
    fn sample(&self, event_id: &str, event_type: &str, _now_secs: i64) -> Sample {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair(
                "AccountSid",
                &format!("AC{}", random_alnum(32).to_ascii_lowercase()),
            )
            .append_pair("ApiVersion", "2010-04-01")
            .append_pair("From", "+15017122661")
            .append_pair("MessageSid", event_id)
            .append_pair("MessageStatus", event_type)
            .append_pair("SmsStatus", event_type)
            .append_pair("To", "+15558675310")
            .finish();
        Sample {
            body: body.into_bytes(),
            content_type: FORM,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::identity::form::sorted_params;
    use serde_json::json;

    // Twilio's documented example (the webhooks security guide and its code samples).
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const TOKEN: &str = "12345";
    const BODY: &[u8] =
        b"CallSid=CA1234567890ABCDE&Caller=%2B14158675310&Digits=1234&From=%2B14158675310&To=%2B18005551212";
    const EXPECTED: &str = "GvWf1cFY/Q7PnoempGyD5oXAezc=";

    fn twilio(url: &str) -> std::sync::Arc<dyn Scheme> {
        try_scheme("twilio", json!({"url": url}), &[TOKEN], TOLERANCE).unwrap()
    }

    fn check(sig: &str, body: &[u8]) -> Outcome {
        twilio(URL).verify_at(&headers(&[(LABEL, sig)]), body, 0)
    }

    #[test]
    fn documented_vector() {
        assert_eq!(check(EXPECTED, BODY), Ok(()));
        assert_eq!(
            value_of(&twilio(URL).sign_at(BODY, 0, ""), "x-twilio-signature"),
            EXPECTED
        );
        // Parameter order on the wire does not matter; values do.
        let shuffled = b"To=%2B18005551212&Digits=1234&From=%2B14158675310&CallSid=CA1234567890ABCDE&Caller=%2B14158675310";
        assert_eq!(check(EXPECTED, shuffled), Ok(()));
        assert_eq!(
            check(
                EXPECTED,
                &BODY
                    .to_vec()
                    .into_iter()
                    .map(|b| if b == b'4' { b'5' } else { b })
                    .collect::<Vec<_>>()
            ),
            Err(SignatureError::Mismatch)
        );
        // The configured URL with the default port spelled out: the same signature passes.
        let with_port = twilio("https://mycompany.com:443/myapp.php?foo=1&bar=2");
        assert_eq!(
            with_port.verify_at(&headers(&[(LABEL, EXPECTED)]), BODY, 0),
            Ok(())
        );
        // Another URL: refused.
        let other = twilio("https://mycompany.com/myapp.php?foo=1&bar=3");
        assert_eq!(
            other.verify_at(&headers(&[(LABEL, EXPECTED)]), BODY, 0),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn bad_headers() {
        let bad = |reason| Err(malformed(LABEL, reason));
        let wrong_length = "the signature is not valid base64 of the algorithm's length";
        assert_eq!(check("", BODY), Err(malformed(LABEL, "the value is empty")));
        assert_eq!(check("not base64!", BODY), bad(wrong_length));
        assert_eq!(check(&EXPECTED[..20], BODY), bad(wrong_length));
        assert_eq!(
            check("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", BODY),
            bad(wrong_length),
            "32 bytes without the SHA-256 setting"
        );
        let v = twilio(URL);
        assert_eq!(
            v.verify_at(&headers(&[]), BODY, 0),
            Err(SignatureError::Missing { header: LABEL })
        );
        assert_eq!(
            v.verify_at(&headers(&[(LABEL, EXPECTED), (LABEL, EXPECTED)]), BODY, 0),
            Err(SignatureError::Duplicated { header: LABEL })
        );
        assert_eq!(
            v.verify_at(
                &headers(&[
                    (LABEL, EXPECTED),
                    (SETTINGS_LABEL, "key=k,algorithm=HMAC_MD5")
                ]),
                BODY,
                0
            ),
            Err(malformed(
                SETTINGS_LABEL,
                "the algorithm is neither HMAC_SHA1 nor HMAC_SHA256"
            ))
        );
    }

    #[test]
    fn sha256_shared_key_signatures() {
        use base64::engine::general_purpose::STANDARD;
        // Independent: HMAC-SHA256 over the documented concatenation.
        let content = "https://mycompany.com/myapp.php?foo=1&bar=2CallSidCA1234567890ABCDECaller+14158675310Digits1234From+14158675310To+18005551212";
        let sig = STANDARD.encode(reference_mac(TOKEN.as_bytes(), content.as_bytes()));
        let v = twilio(URL);
        let settings = "key=webhooks_sharedkey_1,algorithm=HMAC_SHA256";
        assert_eq!(
            v.verify_at(
                &headers(&[(LABEL, &sig), (SETTINGS_LABEL, settings)]),
                BODY,
                0
            ),
            Ok(())
        );
        assert_eq!(
            v.verify_at(&headers(&[(LABEL, &sig)]), BODY, 0),
            Err(malformed(
                LABEL,
                "the signature is not valid base64 of the algorithm's length"
            ))
        );
    }

    #[test]
    fn repeated_parameters_sign_each_distinct_value_once_in_order() {
        let params = sorted_params(b"b=2&a=z&a=y&a=z&c=&&d").unwrap();
        assert_eq!(
            params,
            [("a", "y"), ("a", "z"), ("b", "2"), ("c", ""), ("d", "")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert_eq!(
            sorted_params(b"Body=Z%C3%BCrich+%E2%9C%93").unwrap(),
            [("Body".to_owned(), "Zürich ✓".to_owned())]
        );
        // Not UTF-8 (raw or percent-encoded): refused, never decoded lossily.
        assert_eq!(sorted_params(b"a=%FF"), None);
        assert_eq!(sorted_params(b"a=\xff"), None);
        assert_eq!(
            twilio(URL).verify_at(&headers(&[(LABEL, EXPECTED)]), b"a=%C3", 0),
            Err(SignatureError::MalformedField {
                field: "(form parameters)",
                reason: "the body is not form-encoded UTF-8"
            })
        );
    }

    #[test]
    fn the_id_is_the_hash_of_the_signed_parameters_so_a_reordered_resend_is_a_duplicate() {
        let scheme = twilio(URL);
        let rule = scheme.default_event_id();
        assert_eq!(rule, FieldRule::FormSha256);
        assert!(
            scheme.signs(&rule),
            "the signature covers what the id reads"
        );
        assert!(!scheme.signs(&FieldRule::BodySha256));
        let id = |body: &[u8]| {
            let hash = crate::identity::BodyHash::new(body);
            let identity =
                crate::identity::identify_lazy(&rule, true, None, &HeaderMap::new(), &hash);
            assert_eq!(identity.unidentified, None);
            identity.event_id.as_str().to_owned()
        };
        // The documented request, then the same parameters reordered and one repeated: the same
        // signature verifies all three, and all three are one event.
        let resent = b"To=%2B18005551212&Digits=1234&CallSid=CA1234567890ABCDE&From=%2B14158675310&Caller=%2B14158675310&Digits=1234";
        assert_eq!(check(EXPECTED, resent), Ok(()));
        assert_eq!(id(resent), id(BODY));
        let signed =
            "CallSidCA1234567890ABCDECaller+14158675310Digits1234From+14158675310To+18005551212";
        assert_eq!(
            id(BODY),
            crate::domain::BodyDigest::of(signed.as_bytes()).to_hex()
        );
        // Another value is another event.
        assert_ne!(
            id(&BODY
                .to_vec()
                .into_iter()
                .map(|b| if b == b'4' { b'5' } else { b })
                .collect::<Vec<_>>()),
            id(BODY)
        );
    }
}
