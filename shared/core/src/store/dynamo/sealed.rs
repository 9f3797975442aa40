//! Destinations' signing secrets encrypted at rest ([`SecretsKey`]): with a key named
//! ([`DynamoTable::with_secrets_key`]), every destination item written carries each secret as
//! `kms:` + the base64 of its KMS ciphertext (encryption context `destination` = the id), and
//! every destination item read has its secrets decrypted again, so the table, its backups, scans
//! and its stream never hold one in plaintext. An item written before (`whsec_…` in plaintext)
//! still reads, and is sealed at its next change. Without a key, sealed secrets are read as they
//! are: the process function (fan-out reads patterns, never secrets) needs none.
//!
//! Decryption is memoised per ciphertext (a cold start decrypts each secret once, not on every
//! refresh of the destination cache).

use super::DynamoTable;
use crate::config::{catalog, Env};
use crate::outbox::schema::KIND_DESTINATION;
use crate::store::schema::KIND;
use crate::store::{Item, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine as _;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The prefix of a sealed secret in a destination item.
pub const SEALED_PREFIX: &str = "kms:";
/// The encryption context's key (its value: the destination's id).
pub const CONTEXT_KEY: &str = "destination";

/// The list attribute of a destination's secrets, and the secret's text in each entry.
const SECRETS: &str = "secrets";
const SECRET: &str = "secret";
const ID: &str = "id";

/// A sealing or opening failed.
#[derive(Debug, thiserror::Error)]
#[error("the destination secrets key: {0}")]
struct KeyError(String);

fn key_error(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(Box::new(KeyError(e.to_string())))
}

fn corrupt(what: &str) -> StoreError {
    super::corrupt(format!("destination item: {what}"))
}

/// The KMS key destinations' secrets are encrypted with.
#[derive(Debug, Clone)]
pub struct SecretsKey {
    client: aws_sdk_kms::Client,
    key_id: String,
    opened: Arc<Mutex<HashMap<String, String>>>,
}

impl SecretsKey {
    pub fn new(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self {
            client,
            key_id: key_id.into(),
            opened: Arc::default(),
        }
    }

    /// The key `DESTINATION_SECRETS_KEY` names, if set.
    pub fn from_env(env: &Env, aws: &aws_config::SdkConfig) -> Option<Self> {
        env.optional(&catalog::DESTINATION_SECRETS_KEY)
            .filter(|k| !k.is_empty())
            .map(|key| Self::new(aws_sdk_kms::Client::new(aws), key))
    }

    async fn seal(&self, destination: &str, secret: &str) -> Result<String, StoreError> {
        let out = self
            .client
            .encrypt()
            .key_id(&self.key_id)
            .plaintext(aws_sdk_kms::primitives::Blob::new(secret.as_bytes()))
            .encryption_context(CONTEXT_KEY, destination)
            .send()
            .await
            .map_err(|e| key_error(crate::error::one_line(&e)))?;
        let blob = out
            .ciphertext_blob
            .ok_or_else(|| key_error("Encrypt answered no ciphertext"))?;
        Ok(format!(
            "{SEALED_PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(blob.as_ref())
        ))
    }

    async fn open(&self, destination: &str, sealed: &str) -> Result<String, StoreError> {
        if let Some(plain) = self.opened.lock().ok().and_then(|m| m.get(sealed).cloned()) {
            return Ok(plain);
        }
        let b64 = sealed.strip_prefix(SEALED_PREFIX).unwrap_or(sealed);
        let blob = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| corrupt("a sealed secret is not base64"))?;
        let out = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(blob))
            .encryption_context(CONTEXT_KEY, destination)
            .send()
            .await
            .map_err(|e| key_error(crate::error::one_line(&e)))?;
        let plain = out
            .plaintext
            .map(|b| String::from_utf8(b.into_inner()))
            .transpose()
            .map_err(|_| corrupt("a sealed secret is not text"))?
            .ok_or_else(|| key_error("Decrypt answered no plaintext"))?;
        if let Ok(mut m) = self.opened.lock() {
            m.insert(sealed.to_owned(), plain.clone());
        }
        Ok(plain)
    }
}

fn is_destination(item: &Item) -> bool {
    matches!(item.get(KIND), Some(AttributeValue::S(k)) if k == KIND_DESTINATION)
}

/// The destination's id and each secret's text (mutable), of a destination item.
fn secrets_of(item: &mut Item) -> Option<(String, Vec<&mut String>)> {
    let id = match item.get(ID) {
        Some(AttributeValue::S(id)) => id.clone(),
        _ => return None,
    };
    let Some(AttributeValue::L(entries)) = item.get_mut(SECRETS) else {
        return None;
    };
    let texts = entries
        .iter_mut()
        .filter_map(|e| match e {
            AttributeValue::M(m) => match m.get_mut(SECRET) {
                Some(AttributeValue::S(text)) => Some(text),
                _ => None,
            },
            _ => None,
        })
        .collect();
    Some((id, texts))
}

impl DynamoTable {
    /// Destinations' secrets are encrypted with `key` when written and decrypted when read;
    /// `None` keeps them as they are (plaintext written, sealed ones read sealed).
    pub fn with_secrets_key(mut self, key: Option<SecretsKey>) -> Self {
        self.secrets_key = key;
        self
    }

    /// Seals the secrets of `item` if it is a destination and a key is set.
    pub(super) async fn seal_destination(&self, item: &mut Item) -> Result<(), StoreError> {
        self.convert_destination(item, Direction::Seal).await
    }

    /// Opens the sealed secrets of `item` if it is a destination and a key is set.
    pub(super) async fn open_destination(&self, item: &mut Item) -> Result<(), StoreError> {
        self.convert_destination(item, Direction::Open).await
    }

    async fn convert_destination(&self, item: &mut Item, way: Direction) -> Result<(), StoreError> {
        let Some(key) = &self.secrets_key else {
            return Ok(());
        };
        if !is_destination(item) {
            return Ok(());
        }
        let Some((id, texts)) = secrets_of(item) else {
            return Ok(());
        };
        for text in texts {
            match (way, text.starts_with(SEALED_PREFIX)) {
                (Direction::Seal, false) => *text = key.seal(&id, text).await?,
                (Direction::Open, true) => *text = key.open(&id, text).await?,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Which way a destination item's secrets are converted.
#[derive(Debug, Clone, Copy)]
enum Direction {
    Seal,
    Open,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(secrets: &[&str]) -> Item {
        let entries = secrets
            .iter()
            .map(|s| {
                AttributeValue::M(HashMap::from([
                    (SECRET.to_owned(), AttributeValue::S((*s).to_owned())),
                    ("created_at".to_owned(), AttributeValue::N("1".into())),
                ]))
            })
            .collect();
        HashMap::from([
            (KIND.to_owned(), AttributeValue::S(KIND_DESTINATION.into())),
            (ID.to_owned(), AttributeValue::S("dest_1".into())),
            (SECRETS.to_owned(), AttributeValue::L(entries)),
        ])
    }

    #[test]
    fn the_secrets_of_a_destination_item_are_found_and_nothing_else() {
        let mut item = destination(&["whsec_a", "kms:b"]);
        let (id, texts) = secrets_of(&mut item).unwrap();
        assert_eq!(id, "dest_1");
        assert_eq!(
            texts.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            ["whsec_a", "kms:b"]
        );
        assert!(is_destination(&item));
        let mut other = destination(&["whsec_a"]);
        other.insert(KIND.into(), AttributeValue::S("delivery".into()));
        assert!(!is_destination(&other));
        other.remove(SECRETS);
        assert!(secrets_of(&mut other).is_none());
    }
}
