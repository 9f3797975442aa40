//! SNS signing certificates: which `SigningCertURL`s may be fetched (HTTPS, the SNS host of the
//! pinned topic's region, and only SNS's certificate names: `/SimpleNotificationService-<hex>.pem`),
//! their parsing (X.509 PEM → the RSA public key, for SHA1withRSA and SHA256withRSA), the cache
//! (each URL fetched once per cold start, at most [`MAX_CACHED`] certificates kept; a failed fetch
//! is remembered for [`FAILURE_TTL_SECS`], so a flood of requests naming a missing or unreachable
//! certificate costs one fetch, not one each; SNS answering that it has no such certificate is a
//! refusal, 401, not an outage), and local signing identities (a private key and its certificate,
//! configured as a secret for `make dev` and tests, whose certificate is served from the cache and
//! never fetched).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use aws_lc_rs::rsa::KeyPair as RsaKeyPair;
use aws_lc_rs::signature::{
    ParsedPublicKey, RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY, RSA_PKCS1_2048_8192_SHA256,
};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use x509_cert::der::{DecodePem as _, Encode as _};
use x509_cert::Certificate;

use super::super::{FetchError, Fetcher, SignatureError};

/// The most certificates kept (SNS rotates its certificate rarely; real URLs are few).
pub(super) const MAX_CACHED: usize = 16;
/// How long a failed fetch is remembered (its answer given again without fetching), seconds.
pub(super) const FAILURE_TTL_SECS: i64 = 60;
/// The most failed URLs remembered.
const MAX_FAILED: usize = 64;
/// The name of SNS's signing certificates: `SimpleNotificationService-` + hex + `.pem`.
const CERT_PREFIX: &str = "SimpleNotificationService-";
/// The length of the hex part SNS's certificate names have (32 in every region today).
const CERT_HEX_LEN: std::ops::RangeInclusive<usize> = 16..=64;

/// The SNS host of a topic ARN's region (`arn:aws:sns:us-east-1:…` → `sns.us-east-1.amazonaws.com`,
/// `.amazonaws.com.cn` in the China partition).
pub(super) fn sns_host(partition: &str, region: &str) -> String {
    if partition == "aws-cn" {
        format!("sns.{region}.amazonaws.com.cn")
    } else {
        format!("sns.{region}.amazonaws.com")
    }
}

/// Whether `url` is `https://<host>/SimpleNotificationService-<hex>.pem` (16 to 64 hex digits),
/// the name SNS gives its certificates, nothing else: no other path, user info, port, query or
/// fragment.
pub(super) fn allowed_cert_url(url: &str, host: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let Some((authority, path)) = rest.split_once('/') else {
        return false;
    };
    let hex = path
        .strip_prefix(CERT_PREFIX)
        .and_then(|p| p.strip_suffix(".pem"));
    authority == host
        && hex.is_some_and(|h| {
            CERT_HEX_LEN.contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

/// A certificate's RSA public key, parsed for both signature versions.
pub(super) struct CertKey {
    sha1: ParsedPublicKey,
    sha256: ParsedPublicKey,
}

impl CertKey {
    /// The first certificate of a PEM document.
    pub(super) fn from_pem(pem: &[u8]) -> Result<Self, &'static str> {
        let block = pem_block(pem, "CERTIFICATE").ok_or("no PEM certificate")?;
        let cert = Certificate::from_pem(block).map_err(|_| "not an X.509 certificate")?;
        Self::from_certificate(&cert)
    }

    fn from_certificate(cert: &Certificate) -> Result<Self, &'static str> {
        let spki = cert
            .tbs_certificate()
            .subject_public_key_info()
            .to_der()
            .map_err(|_| "the certificate's public key cannot be read")?;
        let parse = |params| {
            ParsedPublicKey::new(params, &spki)
                .map_err(|_| "the certificate's key is not RSA (2048 bits or more)")
        };
        Ok(Self {
            sha1: parse(&RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY)?,
            sha256: parse(&RSA_PKCS1_2048_8192_SHA256)?,
        })
    }

    /// SignatureVersion 1: SHA1withRSA; 2: SHA256withRSA.
    pub(super) fn verifies(&self, version: u8, message: &[u8], signature: &[u8]) -> bool {
        let key = if version == 1 {
            &self.sha1
        } else {
            &self.sha256
        };
        key.verify_sig(message, signature).is_ok()
    }
}

/// The text of the first `-----BEGIN {label}-----` … `-----END {label}-----` block, markers
/// included.
fn pem_block<'a>(pem: &'a [u8], label: &str) -> Option<&'a str> {
    let text = std::str::from_utf8(pem).ok()?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin)?;
    let stop = text[start..].find(&end)? + start + end.len();
    Some(&text[start..stop])
}

/// A local signing identity: a private key and its certificate, trusted at `url`.
pub(super) struct Identity {
    pub(super) url: String,
    pub(super) key: RsaKeyPair,
    cert: Arc<CertKey>,
}

impl Identity {
    /// A PEM document holding `PRIVATE KEY` (PKCS#8 RSA) and `CERTIFICATE` blocks; the
    /// certificate's key must be the private key's.
    pub(super) fn parse(pem: &[u8], host: &str) -> Result<Self, &'static str> {
        let key_block = pem_block(pem, "PRIVATE KEY").ok_or(
            "a secret of this scheme is a local signing identity: a PEM private key and its certificate",
        )?;
        let der = base64::engine::general_purpose::STANDARD
            .decode(
                key_block
                    .lines()
                    .filter(|l| !l.starts_with("-----"))
                    .collect::<String>(),
            )
            .map_err(|_| "the private key is not valid PEM")?;
        let key = RsaKeyPair::from_pkcs8(&der)
            .map_err(|_| "the private key is not an RSA key (PKCS#8)")?;
        let cert_block = pem_block(pem, "CERTIFICATE").ok_or("no PEM certificate")?;
        let cert = Certificate::from_pem(cert_block).map_err(|_| "not an X.509 certificate")?;
        let cert_public = cert
            .tbs_certificate()
            .subject_public_key_info()
            .subject_public_key
            .raw_bytes();
        if cert_public != aws_lc_rs::signature::KeyPair::public_key(&key).as_ref() {
            return Err("the certificate is not the private key's");
        }
        let fingerprint = Sha256::digest(cert.to_der().map_err(|_| "not an X.509 certificate")?);
        Ok(Self {
            // Named as SNS names its certificates (the certificate's fingerprint as the hex).
            url: format!(
                "https://{host}/{CERT_PREFIX}{}.pem",
                hex::encode(&fingerprint[..16])
            ),
            cert: Arc::new(CertKey::from_certificate(&cert)?),
            key,
        })
    }
}

/// A fetch that failed, remembered until `until` (Unix seconds).
#[derive(Clone, Copy)]
struct Failure {
    until: i64,
    /// SNS answered that it has no such certificate.
    absent: bool,
}

impl Failure {
    /// What a request naming the URL is answered while the failure is remembered: SNS has no
    /// such certificate, so the signature cannot be SNS's (401); or the key could not be obtained
    /// (503, SNS retries).
    fn error(self) -> SignatureError {
        if self.absent {
            SignatureError::MalformedField {
                field: "SigningCertURL",
                reason: "SNS has no certificate at this URL",
            }
        } else {
            SignatureError::KeyUnavailable {
                reason: "the SNS signing certificate could not be fetched",
            }
        }
    }
}

/// The certificates of one source: local identities' (fixed), fetched ones (cached), and the
/// URLs whose fetch failed recently.
pub(super) struct Certificates {
    fetcher: Arc<dyn Fetcher>,
    local: HashMap<String, Arc<CertKey>>,
    fetched: Mutex<HashMap<String, Arc<CertKey>>>,
    failed: Mutex<HashMap<String, Failure>>,
}

impl Certificates {
    pub(super) fn new(fetcher: Arc<dyn Fetcher>, identities: &[Identity]) -> Self {
        Self {
            fetcher,
            local: identities
                .iter()
                .map(|i| (i.url.clone(), Arc::clone(&i.cert)))
                .collect(),
            fetched: Mutex::default(),
            failed: Mutex::default(),
        }
    }

    /// The key of an (allowed) URL, or the answer of its recent failed fetch, if known without
    /// I/O at `now` (Unix seconds).
    pub(super) fn cached(
        &self,
        url: &str,
        now: i64,
    ) -> Option<Result<Arc<CertKey>, SignatureError>> {
        if let Some(key) = self.local.get(url) {
            return Some(Ok(Arc::clone(key)));
        }
        if let Some(key) = self
            .fetched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
        {
            return Some(Ok(Arc::clone(key)));
        }
        let failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        let failure = failed.get(url).filter(|f| now < f.until)?;
        Some(Err(failure.error()))
    }

    /// Fetches, parses and caches the certificate at an (allowed) URL at `now` (Unix seconds); a
    /// failure is remembered for [`FAILURE_TTL_SECS`].
    pub(super) async fn fetch(&self, url: &str, now: i64) -> Result<Arc<CertKey>, SignatureError> {
        let fetched = self.fetcher.fetch(url).await;
        let pem = fetched.map_err(|e: FetchError| {
            tracing::warn!(reason = e.reason, "SNS signing certificate not fetched");
            self.remember_failure(url, now, e.is_absent())
        })?;
        let key = CertKey::from_pem(&pem).map_err(|reason| {
            tracing::warn!(reason, "SNS signing certificate not usable");
            self.remember_failure(url, now, false);
            SignatureError::KeyUnavailable {
                reason: "the SNS signing certificate could not be read",
            }
        })?;
        let key = Arc::new(key);
        let mut cache = self.fetched.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(url.to_owned(), Arc::clone(&key));
        Ok(key)
    }

    /// Remembers that fetching `url` failed at `now`; the answer to give meanwhile.
    fn remember_failure(&self, url: &str, now: i64, absent: bool) -> SignatureError {
        let failure = Failure {
            until: now.saturating_add(FAILURE_TTL_SECS),
            absent,
        };
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if failed.len() >= MAX_FAILED {
            failed.retain(|_, f| now < f.until);
            if failed.len() >= MAX_FAILED {
                failed.clear();
            }
        }
        failed.insert(url.to_owned(), failure);
        failure.error()
    }
}

impl fmt::Debug for Certificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fetched = self
            .fetched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Certificates")
            .field("fetcher", &self.fetcher)
            .field("local", &self.local.len())
            .field("fetched", &fetched)
            .finish()
    }
}
