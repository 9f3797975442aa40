//! A scheme's settings: deserialized from the source's object ([`settings`]), and configured
//! header names interned for errors ([`intern`]).

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use serde::de::DeserializeOwned;

use super::{SchemeError, Spec};

/// A `&'static str` for a runtime header name, leaked at most once per distinct name (the set of
/// configured names is small and fixed), so that errors can name a configured header.
pub(super) fn intern(name: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = names.get(name) {
        return existing;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// The scheme's settings, deserialized from the source's object (unknown members ignored).
pub(super) fn settings<T: DeserializeOwned>(spec: &Spec<'_>) -> Result<T, SchemeError> {
    serde_json::from_value(serde_json::Value::Object(spec.settings.clone())).map_err(|e| {
        SchemeError::InvalidConfig {
            reason: e.to_string(),
        }
    })
}
