//! A scheme that several providers share, configured for one source ([`PresetScheme`]): the
//! provider's preset (a static of `v0.rs`, `item_header.rs` or `asymmetric.rs`), the source's
//! keys and its tolerance; built and shown in `Debug` (the provider's name, the number of keys,
//! never them) here once.

use std::fmt;

use super::tolerance::Tolerance;
use super::Spec;

/// The shared scheme `P` is a preset of, configured for one source.
pub(super) struct PresetScheme<P: 'static, K> {
    /// The provider's name, for `Debug`.
    name: &'static str,
    pub preset: &'static P,
    pub keys: K,
    pub tolerance: Tolerance,
}

impl<P, K> PresetScheme<P, K> {
    /// The source's scheme: the preset of provider `name` with the source's keys (already
    /// parsed) and tolerance.
    pub(super) fn new(name: &'static str, preset: &'static P, keys: K, spec: &Spec<'_>) -> Self {
        Self {
            name,
            preset,
            keys,
            tolerance: Tolerance::new(spec.tolerance),
        }
    }
}

impl<P, K: fmt::Debug> fmt::Debug for PresetScheme<P, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(self.name)
            .field("keys", &self.keys)
            .field("tolerance", &self.tolerance)
            .finish()
    }
}
