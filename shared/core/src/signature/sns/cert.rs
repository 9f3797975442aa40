//! SNS signing certificates: which `SigningCertURL`s may be fetched (HTTPS, the SNS host of the
//! pinned topic's region, a `.pem` path), their parsing (X.509 PEM → the RSA public key, for
//! SHA1withRSA and SHA256withRSA), the cache (each URL fetched once per cold start; failures are
//! not cached, at most [`MAX_CACHED`] certificates kept), and local signing identities (a private
//! key and its certificate, configured as a secret for `make dev` and tests, whose certificate is
//! served from the cache and never fetched).

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

/// The SNS host of a topic ARN's region (`arn:aws:sns:us-east-1:…` → `sns.us-east-1.amazonaws.com`,
/// `.amazonaws.com.cn` in the China partition).
pub(super) fn sns_host(partition: &str, region: &str) -> String {
    if partition == "aws-cn" {
        format!("sns.{region}.amazonaws.com.cn")
    } else {
        format!("sns.{region}.amazonaws.com")
    }
}

/// Whether `url` is `https://<host>/<path>.pem`, nothing else: no user info, port, query,
/// fragment, `..` or non-visible characters.
pub(super) fn allowed_cert_url(url: &str, host: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let Some((authority, path)) = rest.split_once('/') else {
        return false;
    };
    authority == host
        && path.ends_with(".pem")
        && path.len() > ".pem".len()
        && !path.contains("..")
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
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
            url: format!(
                "https://{host}/SimpleNotificationService-local-{}.pem",
                hex::encode(&fingerprint[..8])
            ),
            cert: Arc::new(CertKey::from_certificate(&cert)?),
            key,
        })
    }
}

/// The certificates of one source: local identities' (fixed) and fetched ones (cached).
pub(super) struct Certificates {
    fetcher: Arc<dyn Fetcher>,
    local: HashMap<String, Arc<CertKey>>,
    fetched: Mutex<HashMap<String, Arc<CertKey>>>,
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
        }
    }

    /// The key of an (allowed) URL if it is known without I/O.
    pub(super) fn cached(&self, url: &str) -> Option<Arc<CertKey>> {
        if let Some(key) = self.local.get(url) {
            return Some(Arc::clone(key));
        }
        self.fetched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
            .cloned()
    }

    /// Fetches, parses and caches the certificate at an (allowed) URL.
    pub(super) async fn fetch(&self, url: &str) -> Result<Arc<CertKey>, SignatureError> {
        let unavailable = |reason| SignatureError::KeyUnavailable { reason };
        let pem = self.fetcher.fetch(url).await.map_err(|e: FetchError| {
            tracing::warn!(reason = e.reason, "SNS signing certificate not fetched");
            unavailable("the SNS signing certificate could not be fetched")
        })?;
        let key = CertKey::from_pem(&pem).map_err(|reason| {
            tracing::warn!(reason, "SNS signing certificate not usable");
            unavailable("the SNS signing certificate could not be read")
        })?;
        let key = Arc::new(key);
        let mut cache = self.fetched.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(url.to_owned(), Arc::clone(&key));
        Ok(key)
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
