//! The scheme of a signature header made of `key=value` items, one timestamp and one or more
//! signatures: `Stripe-Signature: t=<unix>,v1=<hex>…` and
//! `Paddle-Signature: ts=<unix>;h1=<hex>…`.
//!
//! The MAC is HMAC-SHA256, keyed with the secret as-is, over `"{timestamp}{joiner}{raw body}"`,
//! the timestamp in canonical decimal (as the providers' libraries sign the parsed integer).
//! Items are separated by the provider's separator; whitespace around items, keys and values is
//! tolerated, empty items are skipped. Exactly one timestamp is required and at least one usable
//! signature (several during a secret rotation); other keys are ignored. Any signature matching
//! any secret passes, then the timestamp must be within the tolerance on both sides.
//!
//! One scheme ([`ItemHeaderHmac`]) serves both providers; each is an [`ItemHeaderPreset`]: its
//! header, keys, separator, joiner and reasons, how it takes odd items ([`OddItems`]), and where
//! its event id and type are. Signed: the body (the timestamp is inside the signature header).

use std::sync::Arc;

use http::{HeaderMap, HeaderName};

use super::headers::{covers, parse_timestamp, push_header, single_header};
use super::hmac::HmacKeys;
use super::preset::PresetScheme;
use super::tag::{decode_hex_tag, Tag};
use super::{
    Request, Scheme, SchemeError, SignError, SignatureError, Signed, Spec, Unsigned, Verdict,
};
use crate::identity::FieldRule;

/// How a provider's libraries take items that cannot be what their key says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OddItems {
    /// As Stripe's: a signature that cannot be one (not 64 hex digits) is a candidate that cannot
    /// match, skipped (the header is malformed only when no signature is usable; the first
    /// unusable one's reason is given), and an item without `=` is ignored unless it is named
    /// like the timestamp or a signature.
    Skipped,
    /// As Paddle's: every signature must be 64 hex digits and every item `key=value`.
    Refused,
}

/// Why a header is malformed, in the provider's words (they name its keys).
pub(super) struct Reasons {
    pub duplicate_timestamp: &'static str,
    pub no_timestamp: &'static str,
    pub no_signature: &'static str,
}

/// A provider whose signature header is made of items.
pub(super) struct ItemHeaderPreset {
    /// The provider's name, for `Debug`.
    pub name: &'static str,
    /// The signature header, and its name as the provider documents it (for errors).
    pub header: HeaderName,
    pub label: &'static str,
    /// The one header kept to re-verify a message (the signature header).
    pub signed_headers: [HeaderName; 1],
    /// What separates the items (`,` or `;`).
    pub separator: char,
    pub timestamp_key: &'static str,
    pub signature_key: &'static str,
    /// What the MAC puts between the timestamp and the body (`.` or `:`).
    pub joiner: &'static str,
    pub odd_items: OddItems,
    pub reasons: Reasons,
    /// The JSON pointers of the event id and type.
    pub event_id: &'static str,
    pub event_type: &'static str,
}

/// The scheme of one source whose provider signs in an item header: its preset, keyed secrets
/// and tolerance.
pub(super) type ItemHeaderHmac = PresetScheme<ItemHeaderPreset, HmacKeys>;

/// Builds the scheme of a provider that signs this way (secrets used as-is; no settings).
pub(super) fn preset(
    preset: &'static ItemHeaderPreset,
    spec: &Spec<'_>,
) -> Result<Arc<dyn Scheme>, SchemeError> {
    let keys = HmacKeys::raw(spec.secrets)?;
    Ok(Arc::new(ItemHeaderHmac::new(
        preset.name,
        preset,
        keys,
        spec,
    )))
}

/// A non-empty item without `=`, trimmed.
type BareItem<'h> = &'h str;

impl ItemHeaderPreset {
    /// The `key=value` items of the header, trimmed; `Err(item)` for a non-empty item without `=`.
    fn items<'h>(
        &self,
        header: &'h str,
    ) -> impl Iterator<Item = Result<(&'h str, &'h str), BareItem<'h>>> + Clone {
        header
            .split(self.separator)
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| {
                item.split_once('=')
                    .map(|(k, v)| (k.trim(), v.trim()))
                    .ok_or(item)
            })
    }

    /// The usable signatures, decoded (only call after [`ItemHeaderPreset::validate`]
    /// succeeded); unusable ones are skipped.
    fn tags<'h>(&self, header: &'h str) -> impl Iterator<Item = Tag> + Clone + 'h {
        let key = self.signature_key;
        self.items(header)
            .flatten()
            .filter(move |(k, _)| *k == key)
            .filter_map(|(_, v)| decode_hex_tag(v).ok())
    }

    /// Checks the whole header; returns the timestamp and its canonical decimal text.
    fn validate<'h>(&self, header: &'h str) -> Result<(i64, &'h str), &'static str> {
        let refused = self.odd_items == OddItems::Refused;
        let mut timestamp = None;
        let mut usable = 0usize;
        let mut first_unusable = None;
        for item in self.items(header) {
            let (key, value) = match item {
                Ok(pair) => pair,
                Err(key) if refused || key == self.timestamp_key || key == self.signature_key => {
                    return Err("an item is not of the form key=value")
                }
                Err(_) => continue,
            };
            if key == self.timestamp_key {
                if timestamp.is_some() {
                    return Err(self.reasons.duplicate_timestamp);
                }
                timestamp = Some(parse_timestamp(value)?);
            } else if key == self.signature_key {
                match decode_hex_tag(value) {
                    Ok(_) => usable += 1,
                    Err(reason) if refused => return Err(reason),
                    Err(reason) => {
                        first_unusable.get_or_insert(reason);
                    }
                }
            }
        }
        let timestamp = timestamp.ok_or(self.reasons.no_timestamp)?;
        if usable == 0 {
            return Err(first_unusable.unwrap_or(self.reasons.no_signature));
        }
        Ok(timestamp)
    }
}

impl ItemHeaderHmac {
    fn check(&self, headers: &HeaderMap, body: &[u8], now_unix: i64) -> Result<(), SignatureError> {
        let preset = self.preset;
        let header = single_header(headers, &preset.header, preset.label)?;
        let (timestamp, canonical) =
            preset
                .validate(header)
                .map_err(|reason| SignatureError::Malformed {
                    header: preset.label,
                    reason,
                })?;
        self.keys.check(
            &[canonical.as_bytes(), preset.joiner.as_bytes(), body],
            preset.tags(header),
        )?;
        self.tolerance.check(timestamp, now_unix)
    }
}

impl Scheme for ItemHeaderHmac {
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a> {
        self.check(request.headers, request.body, request.now_unix)
            .into()
    }

    /// One timestamp and one signature.
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError> {
        let preset = self.preset;
        let t = message.timestamp.to_string();
        let tag = self
            .keys
            .sign(&[t.as_bytes(), preset.joiner.as_bytes(), message.body]);
        let mut out = Vec::with_capacity(1);
        push_header(
            &mut out,
            &preset.header,
            &format!(
                "{}={t}{}{}={}",
                preset.timestamp_key,
                preset.separator,
                preset.signature_key,
                hex::encode(tag)
            ),
        );
        Ok(Signed::headers(out))
    }

    fn signed_headers(&self) -> &[HeaderName] {
        &self.preset.signed_headers
    }

    fn default_event_id(&self) -> FieldRule {
        FieldRule::json_pointer(self.preset.event_id)
    }

    fn default_event_type(&self) -> Option<FieldRule> {
        Some(FieldRule::json_pointer(self.preset.event_type))
    }

    /// The body only: the provider's id and type are in it.
    fn signs(&self, rule: &FieldRule) -> bool {
        covers(rule, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A preset as Stripe's (odd items skipped), and the same keys with odd items refused.
    static SKIPPING: ItemHeaderPreset = test_preset(OddItems::Skipped);
    static REFUSING: ItemHeaderPreset = test_preset(OddItems::Refused);

    const fn test_preset(odd_items: OddItems) -> ItemHeaderPreset {
        ItemHeaderPreset {
            name: "Test",
            header: HeaderName::from_static("x-sig"),
            label: "X-Sig",
            signed_headers: [HeaderName::from_static("x-sig")],
            separator: ',',
            timestamp_key: "t",
            signature_key: "v1",
            joiner: ".",
            odd_items,
            reasons: Reasons {
                duplicate_timestamp: "two t",
                no_timestamp: "no t",
                no_signature: "no v1",
            },
            event_id: "/id",
            event_type: "/type",
        }
    }

    #[test]
    fn odd_items_are_skipped_or_refused_as_the_preset_says() {
        let good = "ab".repeat(32);
        let not_hex: Result<(i64, &str), &str> = Err("the signature is not hexadecimal");
        let bare: Result<(i64, &str), &str> = Err("an item is not of the form key=value");
        let cases = [
            (format!("t=05,v1={good}"), Ok((5, "5")), Ok((5, "5"))),
            (format!("t=5,junk,v1={good}"), Ok((5, "5")), bare),
            (format!("t=5,v1=zz,v1={good}"), Ok((5, "5")), not_hex),
            ("t=5,v1=zz".to_owned(), not_hex, not_hex),
            (
                format!("t=5, , v0=x ,v1={good}"),
                Ok((5, "5")),
                Ok((5, "5")),
            ),
            (format!("t,v1={good}"), bare, bare),
            (format!("t=5,v1,v1={good}"), bare, bare),
            ("t=5".to_owned(), Err("no v1"), Err("no v1")),
            (format!("v1={good}"), Err("no t"), Err("no t")),
            (format!("t=5,t=5,v1={good}"), Err("two t"), Err("two t")),
        ];
        for (header, skipping, refusing) in cases {
            assert_eq!(SKIPPING.validate(&header), skipping, "{header}");
            assert_eq!(REFUSING.validate(&header), refusing, "{header}");
        }
    }

    #[test]
    fn only_usable_signatures_are_candidates() {
        let (a, b) = ("ab".repeat(32), "CD".repeat(32));
        let header = format!("t=1,v1={a},v1=zz,v0={b},v1={b}");
        let tags: Vec<Tag> = SKIPPING.tags(&header).collect();
        assert_eq!(tags, [[0xab; 32], [0xcd; 32]]);
    }
}
