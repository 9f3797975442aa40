//! Whom the functions trust over HTTPS to AWS: a trust store compiled in, limited to the roots
//! AWS endpoints chain to, unless `TRUST_SYSTEM_ROOTS` restores the system's.
//!
//! The AWS SDK's default HTTPS client reads and parses the platform's whole root store
//! (`/etc/ssl/certs`: a bundle and ~300 files) when a function starts, most of its cold start
//! beyond a hello-world's (docs/benchmarks.md). AWS service endpoints (DynamoDB, S3, SQS,
//! Secrets Manager, STS, SNS's certificate host) serve certificates issued by Amazon Trust
//! Services, which chain to Amazon Root CA 1–4, cross-signed by Starfield Services Root
//! Certificate Authority – G2 for old clients: those five roots (`tls/amazon-roots.pem`, as
//! Debian's `ca-certificates` ships them) are all the functions need.
//!
//! Why it is safe: the set of trusted roots only shrinks, so no connection the system store would
//! refuse is accepted; the failure mode is a refusal (a handshake error: a 503 at ingest, a retry
//! elsewhere), never a silent downgrade. What it would take to need the system roots: an endpoint
//! outside AWS's PKI, i.e. a TLS-intercepting proxy with its own CA, or AWS changing roots (it
//! announces such changes years ahead; these roots are valid until 2038–2040). Either is one
//! variable away: `TRUST_SYSTEM_ROOTS=true`. The emulator (`AWS_ENDPOINT_URL=http://…`) uses no
//! TLS at all. `inboxctl`, which runs on operators' machines (proxies included), keeps the
//! system's roots.

use crate::config::{catalog, ConfigError, Env};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode, TlsContext, TrustStore};

/// The roots AWS endpoints chain to (PEM).
pub const AMAZON_ROOTS_PEM: &[u8] = include_bytes!("tls/amazon-roots.pem");

/// Whether `TRUST_SYSTEM_ROOTS` asks for the system's roots.
pub fn system_roots(env: &Env) -> Result<bool, ConfigError> {
    env.parse(&catalog::TRUST_SYSTEM_ROOTS)
}

/// The HTTPS client for the AWS SDK: the compiled-in roots, or the system's.
pub fn aws_http_client(system: bool) -> aws_sdk_dynamodb::config::SharedHttpClient {
    let store = if system {
        TrustStore::default()
    } else {
        TrustStore::empty().with_pem_certificate(AMAZON_ROOTS_PEM)
    };
    let context = TlsContext::builder().with_trust_store(store).build();
    let builder = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc));
    match context {
        Ok(ctx) => builder.tls_context(ctx).build_https(),
        // Building a context of certificates only cannot fail today; if it ever did, the
        // default context (the system's roots) is the safe fallback.
        Err(_) => builder.build_https(),
    }
}

/// The SDK configuration of a function: the environment's settings (region, credentials,
/// `AWS_ENDPOINT_URL`) with the trust store above.
pub async fn sdk_config(env: &Env) -> Result<aws_config::SdkConfig, ConfigError> {
    let system = system_roots(env)?;
    Ok(aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(aws_http_client(system))
        .load()
        .await)
}

/// The same roots for rustls directly (the SNS certificate fetch).
pub fn root_store(system: bool) -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    if system {
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    } else {
        let certs = rustls::pki_types::pem::PemObject::pem_slice_iter(AMAZON_ROOTS_PEM)
            .filter_map(Result::ok)
            .collect::<Vec<rustls::pki_types::CertificateDer<'static>>>();
        roots.add_parsable_certificates(certs);
    }
    roots
}

/// The TLS client configuration for HTTPS to the public web (outbox destinations, a payment
/// provider's API): rustls on aws-lc-rs (the provider the AWS SDK already builds), trusting the
/// webpki roots (Mozilla's, compiled in: no file read at cold start).
pub fn web_client_config() -> Result<rustls::ClientConfig, rustls::Error> {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    Ok(
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_store_holds_the_five_roots_aws_endpoints_chain_to() {
        let roots = root_store(false);
        assert_eq!(roots.len(), 5);
        let text = String::from_utf8_lossy(AMAZON_ROOTS_PEM);
        for name in [
            "Amazon_Root_CA_1",
            "Amazon_Root_CA_2",
            "Amazon_Root_CA_3",
            "Amazon_Root_CA_4",
            "Starfield_Services_Root_Certificate_Authority_-_G2",
        ] {
            assert!(text.contains(name), "{name}");
        }
        // Building the client does no I/O and reads no system file.
        let _client = aws_http_client(false);
    }

    #[test]
    fn the_system_roots_come_back_with_one_variable() {
        let env = |v: &str| Env::from_pairs([("TRUST_SYSTEM_ROOTS", v)]);
        assert!(system_roots(&env("true")).unwrap());
        assert!(!system_roots(&env("false")).unwrap());
        let none: [(&str, &str); 0] = [];
        assert!(
            !system_roots(&Env::from_pairs(none)).unwrap(),
            "off by default"
        );
        assert!(system_roots(&env("maybe")).is_err());
    }
}
