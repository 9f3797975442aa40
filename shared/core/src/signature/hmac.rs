//! Pre-keyed HMAC-SHA256: one keyed instance per secret, built once ([`HmacKeys`]), and the
//! constant-time match of every secret's MAC against every candidate signature of a request.

use std::borrow::Cow;
use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use subtle::{Choice, ConstantTimeEq};

use super::tag::Tag;
use super::{SchemeError, Secret, SignatureError};

type HmacSha256 = Hmac<Sha256>;

/// One HMAC-SHA256 instance per secret, keyed at construction (the key schedule runs once; each
/// request clones the keyed state). The first secret signs; all verify. `Debug` shows the number
/// of secrets only.
#[derive(Clone)]
pub(super) struct HmacKeys {
    primary: HmacSha256,
    others: Vec<HmacSha256>,
}

impl HmacKeys {
    /// Keys each secret's bytes as they are. Errors if there is no secret or one is empty.
    pub(super) fn raw(secrets: &[Secret]) -> Result<Self, SchemeError> {
        Self::decoded(secrets, |bytes| Ok(Cow::Borrowed(bytes)))
    }

    /// Keys each secret after `decode` turned its bytes into key bytes (`Err(reason)`: the secret
    /// is invalid; the reason must not quote it). Errors if there is no secret, or one is empty
    /// before or after decoding.
    pub(super) fn decoded(
        secrets: &[Secret],
        decode: impl Fn(&[u8]) -> Result<Cow<'_, [u8]>, &'static str>,
    ) -> Result<Self, SchemeError> {
        let mut keys = Vec::with_capacity(secrets.len());
        for (index, secret) in secrets.iter().enumerate() {
            let invalid = |reason| SchemeError::Invalid { index, reason };
            if secret.expose().is_empty() {
                return Err(invalid("the secret is empty"));
            }
            let bytes = decode(secret.expose()).map_err(invalid)?;
            let key = HmacSha256::new_from_slice(&bytes)
                .map_err(|_| invalid("the secret is not a usable HMAC key"))?;
            keys.push(key);
        }
        let mut keys = keys.into_iter();
        let primary = keys.next().ok_or(SchemeError::Empty)?;
        Ok(Self {
            primary,
            others: keys.collect(),
        })
    }

    /// MAC of the concatenation of `parts`, fed incrementally, with the first secret.
    pub(super) fn sign(&self, parts: &[&[u8]]) -> Tag {
        mac(&self.primary, parts)
    }

    /// Whether any secret's MAC over `parts` equals any of `candidates`. Each secret's MAC is
    /// computed once (one pass over the body per secret); every (MAC, candidate) pair is compared
    /// in constant time, without early exit.
    pub(super) fn matches<I>(&self, parts: &[&[u8]], candidates: I) -> bool
    where
        I: Iterator<Item = Tag> + Clone,
    {
        let mut found = Choice::from(0);
        for key in std::iter::once(&self.primary).chain(&self.others) {
            let tag = mac(key, parts);
            for candidate in candidates.clone() {
                found |= tag.ct_eq(&candidate);
            }
        }
        bool::from(found)
    }

    /// `Ok(())` if [`HmacKeys::matches`], else [`SignatureError::Mismatch`].
    pub(super) fn check<I>(&self, parts: &[&[u8]], candidates: I) -> Result<(), SignatureError>
    where
        I: Iterator<Item = Tag> + Clone,
    {
        if self.matches(parts, candidates) {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }

    /// The MAC of `message` with the secret whose MAC over `parts` is `candidate` (the secret
    /// that signed a request, for answering its handshake with the same one); `None` if none is.
    /// Every secret is compared in constant time.
    pub(super) fn sign_with_matching(
        &self,
        parts: &[&[u8]],
        candidate: &Tag,
        message: &[u8],
    ) -> Option<Tag> {
        let mut found = None;
        for key in std::iter::once(&self.primary).chain(&self.others) {
            if bool::from(mac(key, parts).ct_eq(candidate)) && found.is_none() {
                found = Some(mac(key, &[message]));
            }
        }
        found
    }

    /// How many secrets verify.
    pub(super) fn count(&self) -> usize {
        1 + self.others.len()
    }
}

impl fmt::Debug for HmacKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} x <redacted>", self.count())
    }
}

fn mac(key: &HmacSha256, parts: &[&[u8]]) -> Tag {
    let mut mac = key.clone();
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}
