//! Key material of the asymmetric schemes — Ed25519 (Discord, Standard Webhooks `v1a`) and ECDSA
//! P-256 with SHA-256, ASN.1 DER signatures (SendGrid) — verified and signed with aws-lc-rs, the
//! crypto rustls already builds; and the scheme Discord and SendGrid share
//! ([`TimestampedAsymmetric`]): a signature header beside a timestamp header, the signature over
//! the timestamp header's text followed by the raw body, then the timestamp within the tolerance
//! on both sides. Each of the two is an [`AsymmetricPreset`]: its headers, algorithm, key and
//! signature encodings, id and type rules, batches and handshake.
//!
//! A source of such a scheme is configured with the provider's **public** key(s): they verify,
//! never sign. For local use and tests (`make dev`, `inboxctl send`), a configured key may instead
//! be a **private** key: its public half verifies, and the first configured key, when private,
//! signs. Each scheme decodes its own key format ([`KeyBytes`]); keys are parsed once, at
//! construction. `Debug` shows the number of keys only.

use std::fmt;
use std::sync::Arc;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, ParsedPublicKey, ECDSA_P256_SHA256_ASN1,
    ECDSA_P256_SHA256_ASN1_SIGNING, ED25519,
};

use http::{HeaderMap, HeaderName};

use super::headers::{covers, parse_timestamp, push_header, single_header};
use super::preset::PresetScheme;
use super::{
    Handshake, Request, Scheme, SchemeError, Secret, SignError, SignatureError, Signed, Spec,
    Unsigned, Verdict,
};
use crate::identity::FieldRule;

/// Ed25519 signature length in bytes.
pub(super) const ED25519_SIG_LEN: usize = 64;
/// Ed25519 public key (and seed) length in bytes.
pub(super) const ED25519_KEY_LEN: usize = 32;

/// The signature algorithm of a set of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Algorithm {
    Ed25519,
    /// ECDSA on P-256 with SHA-256, signatures ASN.1 DER-encoded.
    EcdsaP256Sha256,
}

/// One configured key as a scheme decoded it.
pub(super) enum KeyBytes {
    /// Ed25519: the 32 raw bytes; ECDSA: X.509 `SubjectPublicKeyInfo` DER (or an uncompressed
    /// point).
    Public(Vec<u8>),
    /// Ed25519: the 32-byte seed, or seed ‖ public key (64 bytes, libsodium's layout, checked);
    /// ECDSA: PKCS#8 DER.
    Private(Vec<u8>),
}

enum Signer {
    Ed25519(Ed25519KeyPair),
    Ecdsa(EcdsaKeyPair),
}

/// The parsed keys of one source: every key verifies; the first, when private, signs.
pub(super) struct AsymmetricKeys {
    algorithm: Algorithm,
    verifiers: Vec<ParsedPublicKey>,
    signer: Option<Signer>,
}

impl AsymmetricKeys {
    /// Parses every secret with `decode` (`Err(reason)`: unusable; the reason must not quote it).
    /// Errors if there is no secret, or one is empty or not a valid key of `algorithm`.
    pub(super) fn new(
        algorithm: Algorithm,
        secrets: &[Secret],
        decode: impl Fn(&[u8]) -> Result<KeyBytes, &'static str>,
    ) -> Result<Self, SchemeError> {
        let mut verifiers = Vec::with_capacity(secrets.len());
        let mut signer = None;
        for (index, secret) in secrets.iter().enumerate() {
            let invalid = |reason| SchemeError::Invalid { index, reason };
            if secret.expose().is_empty() {
                return Err(invalid("the key is empty"));
            }
            let (public, private) = match decode(secret.expose()).map_err(invalid)? {
                KeyBytes::Public(bytes) => (bytes, None),
                KeyBytes::Private(bytes) => {
                    let pair = private_key(algorithm, &bytes).map_err(invalid)?;
                    let public = match &pair {
                        Signer::Ed25519(k) => k.public_key().as_ref().to_vec(),
                        Signer::Ecdsa(k) => k.public_key().as_ref().to_vec(),
                    };
                    (public, Some(pair))
                }
            };
            let verification = match algorithm {
                Algorithm::Ed25519 => {
                    if public.len() != ED25519_KEY_LEN {
                        return Err(invalid("an Ed25519 public key is 32 bytes"));
                    }
                    ParsedPublicKey::new(&ED25519, &public)
                }
                Algorithm::EcdsaP256Sha256 => {
                    ParsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &public)
                }
            };
            verifiers.push(verification.map_err(|_| invalid("not a valid public key"))?);
            if index == 0 {
                signer = private;
            }
        }
        if verifiers.is_empty() {
            return Err(SchemeError::Empty);
        }
        Ok(Self {
            algorithm,
            verifiers,
            signer,
        })
    }

    /// Whether any key verifies `signature` over `message`.
    pub(super) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        // Not constant-time, and need not be: a signature check reveals nothing about a secret.
        self.verifiers
            .iter()
            .any(|key| key.verify_sig(message, signature).is_ok())
    }

    /// Signs `message` with the first key, if it is a private key.
    pub(super) fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        const PUBLIC_ONLY: SignError = SignError::Unsupported {
            reason: "the first configured key is a public key, which only verifies",
        };
        match self.signer.as_ref().ok_or(PUBLIC_ONLY)? {
            Signer::Ed25519(pair) => Ok(pair.sign(message).as_ref().to_vec()),
            Signer::Ecdsa(pair) => pair
                .sign(&SystemRandom::new(), message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| SignError::Unsupported {
                    reason: "the ECDSA signature could not be computed",
                }),
        }
    }

    /// How many keys verify.
    pub(super) fn count(&self) -> usize {
        self.verifiers.len()
    }
}

fn private_key(algorithm: Algorithm, bytes: &[u8]) -> Result<Signer, &'static str> {
    match algorithm {
        Algorithm::Ed25519 => {
            let pair = match bytes.len() {
                ED25519_KEY_LEN => Ed25519KeyPair::from_seed_unchecked(bytes),
                64 => {
                    let (seed, public) = bytes.split_at(ED25519_KEY_LEN);
                    Ed25519KeyPair::from_seed_and_public_key(seed, public)
                }
                _ => return Err(
                    "an Ed25519 private key is a 32-byte seed or 64 bytes (seed and public key)",
                ),
            };
            pair.map(Signer::Ed25519)
                .map_err(|_| "not a valid Ed25519 private key")
        }
        Algorithm::EcdsaP256Sha256 => {
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, bytes)
                .map(Signer::Ecdsa)
                .map_err(|_| "not a valid P-256 private key (PKCS#8 DER)")
        }
    }
}

impl fmt::Debug for AsymmetricKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} {} x <redacted>{}",
            self.algorithm,
            self.count(),
            if self.signer.is_some() {
                " (signs)"
            } else {
                ""
            }
        )
    }
}

/// The longest signature a preset decodes (a DER ECDSA P-256 signature is at most 72 bytes;
/// decoding needs room for base64's last group).
pub(super) const MAX_SIGNATURE_LEN: usize = 75;

/// A signature decoded from its header: at most [`MAX_SIGNATURE_LEN`] bytes, without allocating.
pub(super) struct SignatureBytes {
    pub buf: [u8; MAX_SIGNATURE_LEN],
    pub len: usize,
}

impl SignatureBytes {
    fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

/// A provider that signs its timestamp and body with an asymmetric key.
pub(super) struct AsymmetricPreset {
    /// The provider's name, for `Debug`.
    pub name: &'static str,
    pub algorithm: Algorithm,
    /// The two headers, and their names as the provider documents them (for errors).
    pub signature: HeaderName,
    pub signature_label: &'static str,
    pub timestamp: HeaderName,
    pub timestamp_label: &'static str,
    /// The headers kept to re-verify a message: both, in the provider's order.
    pub signed_headers: [HeaderName; 2],
    /// A configured key's text to its bytes (`Err(reason)`: unusable; never quoting it).
    pub decode_key: fn(&[u8]) -> Result<KeyBytes, &'static str>,
    /// The signature header's text to the signature (`Err(reason)`: malformed).
    pub decode_signature: fn(&str) -> Result<SignatureBytes, &'static str>,
    /// A signature to the signature header's text.
    pub encode_signature: fn(&[u8]) -> String,
    pub event_id: fn() -> FieldRule,
    /// The JSON pointer of the event type; `None`: no type.
    pub event_type: Option<&'static str>,
    /// [`Scheme::batches`].
    pub batches: bool,
    /// The provider's endpoint handshake ([`Scheme::handshake`]), if it has one.
    pub handshake: Option<for<'a> fn(Request<'a>) -> Option<Handshake<'a>>>,
}

/// The scheme of one source whose provider signs with an [`AsymmetricPreset`]: its preset, its
/// parsed keys and its tolerance.
pub(super) type TimestampedAsymmetric = PresetScheme<AsymmetricPreset, AsymmetricKeys>;

/// Builds the scheme of a provider that signs this way (secrets: its public keys, or for local
/// use a private key; no settings).
pub(super) fn preset(
    preset: &'static AsymmetricPreset,
    spec: &Spec<'_>,
) -> Result<Arc<dyn Scheme>, SchemeError> {
    let keys = AsymmetricKeys::new(preset.algorithm, spec.secrets, preset.decode_key)?;
    Ok(Arc::new(TimestampedAsymmetric::new(
        preset.name,
        preset,
        keys,
        spec,
    )))
}

impl TimestampedAsymmetric {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let preset = self.preset;
        let signature = single_header(headers, &preset.signature, preset.signature_label)?;
        let timestamp = single_header(headers, &preset.timestamp, preset.timestamp_label)?;
        let (ts, _) = parse_timestamp(timestamp).map_err(|reason| SignatureError::Malformed {
            header: preset.timestamp_label,
            reason,
        })?;
        let sig =
            (preset.decode_signature)(signature).map_err(|reason| SignatureError::Malformed {
                header: preset.signature_label,
                reason,
            })?;
        let message = [timestamp.as_bytes(), body].concat();
        if !self.keys.verifies(&message, sig.bytes()) {
            return Err(SignatureError::Mismatch);
        }
        self.tolerance.check(ts, now_unix)
    }
}

impl Scheme for TimestampedAsymmetric {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    /// With the first key, when it is a private key.
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let preset = self.preset;
        let ts = message.timestamp.to_string();
        let sig = self.keys.sign(&[ts.as_bytes(), message.body].concat())?;
        let mut out = Vec::with_capacity(2);
        push_header(
            &mut out,
            &preset.signature,
            &(preset.encode_signature)(&sig),
        );
        push_header(&mut out, &preset.timestamp, &ts);
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &self.preset.signed_headers
    }

    fn default_event_id(&self) -> FieldRule {
        (self.preset.event_id)()
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        self.preset.event_type.map(FieldRule::json_pointer)
    }

    fn batches(&self) -> bool {
        self.preset.batches
    }

    /// Signed: the timestamp header and the body.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[&self.preset.timestamp])
    }

    fn handshake<'a>(&'a self, request: Request<'a>) -> Option<Handshake<'a>> {
        self.preset
            .handshake
            .and_then(|handshake| handshake(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(keys: &[&[u8]]) -> Vec<Secret> {
        keys.iter()
            .map(|k| Secret::from_bytes(k.to_vec()))
            .collect()
    }

    fn raw(bytes: &[u8]) -> Result<KeyBytes, &'static str> {
        match bytes.first() {
            Some(b'P') => Ok(KeyBytes::Public(bytes[1..].to_vec())),
            Some(b'S') => Ok(KeyBytes::Private(bytes[1..].to_vec())),
            _ => Err("no marker"),
        }
    }

    fn marked(marker: u8, bytes: &[u8]) -> Vec<u8> {
        let mut v = vec![marker];
        v.extend_from_slice(bytes);
        v
    }

    // RFC 8032, section 7.1, TEST 2 (one-byte message 0x72).
    const SEED: &str = "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";
    const PUBLIC: &str = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
    const SIGNATURE: &str = "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da\
                             085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

    #[test]
    fn ed25519_rfc8032_vector() {
        let (seed, public, sig) = (
            hex::decode(SEED).unwrap(),
            hex::decode(PUBLIC).unwrap(),
            hex::decode(SIGNATURE).unwrap(),
        );
        let verify_only =
            AsymmetricKeys::new(Algorithm::Ed25519, &secrets(&[&marked(b'P', &public)]), raw)
                .unwrap();
        assert!(verify_only.verifies(&[0x72], &sig));
        assert!(!verify_only.verifies(&[0x73], &sig));
        assert!(verify_only.sign(b"x").is_err());
        let signing =
            AsymmetricKeys::new(Algorithm::Ed25519, &secrets(&[&marked(b'S', &seed)]), raw)
                .unwrap();
        assert_eq!(signing.sign(&[0x72]).unwrap(), sig);
        // seed ‖ public (libsodium's secret key) is checked for consistency.
        let full = [seed.clone(), public.clone()].concat();
        assert!(
            AsymmetricKeys::new(Algorithm::Ed25519, &secrets(&[&marked(b'S', &full)]), raw).is_ok()
        );
        let mut wrong = full.clone();
        wrong[40] ^= 1;
        assert!(matches!(
            AsymmetricKeys::new(Algorithm::Ed25519, &secrets(&[&marked(b'S', &wrong)]), raw),
            Err(SchemeError::Invalid { index: 0, .. })
        ));
        assert_eq!(
            format!("{signing:?}"),
            "Ed25519 1 x <redacted> (signs)",
            "no key material"
        );
    }

    #[test]
    fn any_key_verifies_and_errors_name_the_index() {
        let a = Ed25519KeyPair::generate().unwrap();
        let b = Ed25519KeyPair::generate().unwrap();
        let keys = AsymmetricKeys::new(
            Algorithm::Ed25519,
            &secrets(&[
                &marked(b'P', a.public_key().as_ref()),
                &marked(b'P', b.public_key().as_ref()),
            ]),
            raw,
        )
        .unwrap();
        assert!(keys.verifies(b"m", b.sign(b"m").as_ref()));
        assert!(keys.verifies(b"m", a.sign(b"m").as_ref()));
        assert!(!keys.verifies(b"n", a.sign(b"m").as_ref()));
        assert!(!keys.verifies(b"m", &[0u8; 64]));
        assert!(!keys.verifies(b"m", b"short"));
        assert_eq!(keys.count(), 2);
        for (bad, index) in [
            (vec![marked(b'P', &[1; 32]), b"Pshort".to_vec()], 1),
            (vec![b"junk".to_vec()], 0),
            (vec![marked(b'P', &[1; 32]), Vec::new()], 1),
        ] {
            let refs: Vec<&[u8]> = bad.iter().map(Vec::as_slice).collect();
            assert!(matches!(
                AsymmetricKeys::new(Algorithm::Ed25519, &secrets(&refs), raw),
                Err(SchemeError::Invalid { index: i, .. }) if i == index
            ));
        }
        assert!(matches!(
            AsymmetricKeys::new(Algorithm::Ed25519, &[], raw),
            Err(SchemeError::Empty)
        ));
    }

    #[test]
    fn ecdsa_p256_signs_and_verifies_der_signatures() {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
                .unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref()).unwrap();
        let keys = AsymmetricKeys::new(
            Algorithm::EcdsaP256Sha256,
            &secrets(&[&marked(b'S', pkcs8.as_ref())]),
            raw,
        )
        .unwrap();
        let sig = keys.sign(b"1588788367{}").unwrap();
        assert_eq!(sig.first(), Some(&0x30), "ASN.1 DER SEQUENCE");
        assert!(keys.verifies(b"1588788367{}", &sig));
        assert!(!keys.verifies(b"1588788368{}", &sig));
        // The public half alone (uncompressed point) verifies too.
        let public = AsymmetricKeys::new(
            Algorithm::EcdsaP256Sha256,
            &secrets(&[&marked(b'P', pair.public_key().as_ref())]),
            raw,
        )
        .unwrap();
        assert!(public.verifies(b"1588788367{}", &sig));
        assert!(AsymmetricKeys::new(
            Algorithm::EcdsaP256Sha256,
            &secrets(&[&marked(b'S', b"not pkcs8")]),
            raw
        )
        .is_err());
    }
}
