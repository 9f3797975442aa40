//! Helpers shared by the scheme tests.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use sha2::Sha256;

use super::{
    build as build_scheme, sampler, Request, Sampler, Scheme, SchemeError, Secret, SignatureError,
    Spec, Unsigned,
};

pub const TOLERANCE: Duration = Duration::from_secs(300);

/// The outcome of a verification, in test tables.
pub type Outcome = Result<(), SignatureError>;

/// Header (name, value) pairs, in test tables.
pub type Pairs<'a> = &'a [(&'a str, &'a str)];

/// A header map from (name, value) pairs; repeated names are appended (duplicates).
pub fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

/// A header map from `sign_at`'s output.
pub fn signed(pairs: Vec<(HeaderName, HeaderValue)>) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(name, value);
    }
    map
}

/// The value of `name` in `sign_at`'s output.
pub fn value_of(pairs: &[(HeaderName, HeaderValue)], name: &str) -> String {
    pairs
        .iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, v)| v.to_str().unwrap().to_owned())
        .unwrap()
}

/// Builds the registered scheme `name` with these settings (a JSON object), secrets and tolerance.
pub fn try_scheme(
    name: &str,
    settings: Value,
    secrets: &[&str],
    tolerance: Duration,
) -> Result<Arc<dyn Scheme>, SchemeError> {
    let Value::Object(settings) = settings else {
        panic!("settings must be a JSON object");
    };
    let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::from(*s)).collect();
    build_scheme(name, &Spec::new(&settings, &secrets, tolerance))
}

/// The registered scheme `name`, without settings, with these secrets and a 300 s tolerance.
pub fn verifier(name: &str, secrets: &[&str]) -> Arc<dyn Scheme> {
    try_scheme(name, serde_json::json!({}), secrets, TOLERANCE).unwrap()
}

/// The samples of the registered scheme `name` with these settings (a JSON object).
pub fn samples_of(name: &str, settings: Value) -> Arc<dyn Sampler> {
    let Value::Object(settings) = settings else {
        panic!("settings must be a JSON object");
    };
    sampler(name, &Spec::new(&settings, &[], TOLERANCE)).unwrap()
}

/// Verification and signing with positional arguments, for test tables.
pub trait TestExt {
    /// Verifies synchronously (every HMAC scheme decides without I/O).
    fn verify_at(&self, headers: &HeaderMap, body: &[u8], now: i64) -> Outcome;
    /// Signs; the headers only (for schemes that sign in headers).
    fn sign_at(&self, body: &[u8], timestamp: i64, msg_id: &str) -> Vec<(HeaderName, HeaderValue)>;
    /// Signs; the headers and the body to send (the given one, or the one the scheme signed
    /// instead).
    fn sign_full(&self, body: &[u8], timestamp: i64, msg_id: &str) -> (HeaderMap, Vec<u8>);
}

impl<T: Scheme + ?Sized> TestExt for T {
    fn verify_at(&self, headers: &HeaderMap, body: &[u8], now: i64) -> Outcome {
        self.verify(Request::new(headers, body, now))
            .ready()
            .expect("decided without I/O (every scheme but SNS before its certificate is cached)")
    }

    fn sign_at(&self, body: &[u8], timestamp: i64, msg_id: &str) -> Vec<(HeaderName, HeaderValue)> {
        let signed = self.sign(&Unsigned::new(body, timestamp, msg_id)).unwrap();
        assert!(signed.body.is_none(), "HMAC schemes sign in headers");
        signed.headers
    }

    fn sign_full(&self, body: &[u8], timestamp: i64, msg_id: &str) -> (HeaderMap, Vec<u8>) {
        let out = self.sign(&Unsigned::new(body, timestamp, msg_id)).unwrap();
        let map = out.header_map();
        (map, out.body.unwrap_or_else(|| body.to_vec()))
    }
}

/// Independent HMAC-SHA256 over the concatenation (a copy, unlike the code under test).
pub fn reference_mac(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

pub fn malformed(header: &'static str, reason: &'static str) -> SignatureError {
    SignatureError::Malformed { header, reason }
}

/// A non-UTF-8 body.
pub const BINARY_BODY: &[u8] = &[0xff, 0xfe, 0x00, b'{', 0x80, b'}', 0xc3];
