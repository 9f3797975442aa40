//! Webhook signature schemes: the [`Scheme`] trait every scheme implements (what ingest needs), the
//! registration list (`SCHEMES`: [`build`], [`check_registered`], [`scheme_names`]) and the
//! types a scheme is built from and works on ([`Spec`], [`Request`], [`Verdict`], [`Unsigned`],
//! [`Signed`]). Beside it, behind the `samples` feature (`inboxctl send` turns it on, no Lambda
//! does): the `Sampler` each provider has (a sample event), `Sample` and `sampler`
//! (`sample.rs`).
//!
//! One file per provider holds everything about it (settings, key material, header parsing,
//! signed content, signing, default id/type rules, its sample event behind the `samples` feature,
//! tests): `stripe.rs`, `standard.rs` (Standard Webhooks, `v1` and `v1a`, configurable header
//! names: Resend/Svix), `github.rs`, `shopify.rs`, `slack.rs`, `generic.rs` (HMAC-SHA256 of the
//! body with a configured header, encoding and prefix), `sns.rs` (Amazon SNS, i.e. SES events;
//! with `sns/cert.rs` and `sns/message.rs`), `sendgrid.rs`, `mailgun.rs`, `postmark.rs`,
//! `paddle.rs`, `square.rs`, `twilio.rs`, `discord.rs` and `zoom.rs`.
//!
//! Providers that sign the same way share one scheme and differ only in a preset (headers,
//! encoding, id and type rules, handshake): GitHub and Shopify are presets of the generic body
//! HMAC (`generic.rs`); Slack and Zoom of the `v0` timestamped HMAC (`v0.rs`); Stripe and Paddle
//! of the item-header HMAC (`item_header.rs`: `t=…,v1=…`, a timestamp and signatures);
//! Discord and SendGrid of the timestamped asymmetric signature (`asymmetric.rs`, which also
//! holds the Ed25519 and ECDSA P-256 key material). The last three are one generic type,
//! `PresetScheme`: a preset with the source's keys and tolerance (`preset.rs`).
//!
//! What every scheme may use: pre-keyed HMACs and constant-time matching (`hmac.rs`), the
//! signature tag and its hex/base64 decoding (`tag.rs`), header extraction, timestamp parsing and
//! signed-header building (`headers.rs`), the timestamp tolerance (`tolerance.rs`), settings
//! deserialization and header-name interning (`settings.rs`), samples and their helpers
//! (`sample.rs`), a fresh UUID and an RFC 3339 time as signing and samples write them
//! (`stamp.rs`); the members of a JSON body that carries its signature in `fields.rs`; the
//! configured public URL (Square, Twilio) in `public_url.rs`; fetching published keys
//! ([`Fetcher`]) in `fetch.rs`; the request, verdict and signing types in `request.rs`; endpoint
//! handshakes ([`Handshake`], answered by ingest after verification: Slack, Zoom, Discord, SNS) in
//! `handshake.rs`; the errors in `error.rs`; [`Secret`] in `secret.rs`.
//!
//! # Adding a scheme
//!
//! A new file `foo.rs` with a type implementing [`Scheme`] and `FromSpec` (and its tests), a type
//! `Samples` implementing `Sampler` (with `#[cfg(any(test, feature = "samples"))]`, as its
//! imports), its `mod foo;`, its line in `SCHEMES` below (`("foo", construct::<foo::Foo>)`) and
//! in `SAMPLERS` in `sample.rs` (`("foo", fixed::<foo::Samples>)`; a test holds both lists
//! equal), and a row in the table of schemes in `docs/sources.md`. A provider that signs like an
//! existing scheme is a preset of it instead (see `github.rs`). Nothing else matches on schemes:
//! configuration and ingest only see `dyn Scheme`, `inboxctl` `dyn Sampler` too. (A scheme or
//! samples declared but not registered are dead code: the build fails on the warning.)
//!
//! # Rules common to the HMAC schemes
//!
//! - The MAC is HMAC-SHA256 over the exact raw body bytes (plus, depending on the scheme, a
//!   timestamp and an id). The body is fed to the MAC incrementally; it is never copied. Each
//!   secret's HMAC key schedule runs once, at construction.
//! - Each configured secret's MAC is computed once per request and compared, in constant time
//!   (`subtle`), against every candidate signature of the request. Any secret matching any
//!   candidate passes (secret rotation, several `v1` entries).
//! - Every required header must be present exactly once ([`SignatureError::Missing`],
//!   [`SignatureError::Duplicated`]), hold visible ASCII and be non-empty
//!   ([`SignatureError::Malformed`]).
//! - Every candidate signature of the scheme's version is decoded before any MAC is computed. A
//!   candidate that is empty, not hex/base64, or does not decode to exactly 32 bytes cannot
//!   match: where a header carries several candidates (Stripe, Standard Webhooks) it is skipped,
//!   as the providers' own libraries do, and the rest are compared; a header with no usable
//!   candidate (a single-signature header whose signature is unusable, or only unusable ones) is
//!   [`SignatureError::Malformed`]: it never passes.
//! - **Order of checks**, the same for every timestamped scheme (Stripe, Standard Webhooks,
//!   Slack), as in Stripe's own libraries: headers are parsed and validated first (Missing,
//!   Duplicated, Malformed, including an unparseable timestamp), then the signatures are compared
//!   ([`SignatureError::Mismatch`]), and only a request whose signature matched is checked against
//!   the tolerance ([`SignatureError::TimestampTooOld`], [`SignatureError::TimestampInFuture`]).
//!   A tolerance error therefore means "authentic but stale or early" (a replay, a clock skew or a
//!   very late retry), never a forgery.
//! - The tolerance is symmetric: `now - t > tolerance` is too old and `t - now > tolerance` is in
//!   the future (stricter than Stripe's libraries, which accept any future timestamp). A request
//!   exactly `tolerance` seconds away passes.
//! - Neither secrets nor signature values ever appear in `Debug`/`Display` output or errors.

mod asymmetric;
mod error;
mod fetch;
mod fields;
mod handshake;
mod headers;
mod hmac;
mod item_header;
mod preset;
mod public_url;
mod request;
#[cfg(any(test, feature = "samples"))]
mod sample;
mod secret;
mod settings;
mod stamp;
mod tag;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
mod tolerance;
mod v0;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;
use serde_json::{Map, Value};

use crate::identity::FieldRule;

pub use error::{SchemeError, SignError, SignatureError};
pub use fetch::{FetchError, FetchFuture, Fetcher, HttpsFetcher};
pub use handshake::{Handshake, HandshakeError, HandshakeReply, PendingHandshake};
pub use request::{PendingVerification, Request, Signed, Unsigned, Verdict};
#[cfg(any(test, feature = "samples"))]
pub use sample::{sampler, Sample, Sampler};
pub use secret::Secret;

/// A local SNS signing identity made for tests (a PEM private key and its certificate), for tests
/// outside this module.
#[cfg(test)]
pub(crate) fn sns_test_identity() -> String {
    sns::tests::identity_pem()
}

// The schemes: one module each, and one line each in `SCHEMES`.
mod discord;
mod generic;
mod github;
mod mailgun;
mod paddle;
mod postmark;
mod sendgrid;
mod shopify;
mod slack;
mod sns;
mod square;
mod standard;
mod stripe;
mod twilio;
mod zoom;

/// The registration list: the name a source's `"scheme"` gives, and how the scheme is built.
/// (Its samples are registered under the same name in `sample.rs`.)
const SCHEMES: &[Registration] = &[
    ("stripe", stripe::build),
    ("standard-webhooks", construct::<standard::StandardWebhooks>),
    ("github", github::build),
    ("shopify", shopify::build),
    ("slack", slack::build),
    ("hmac-sha256", construct::<generic::HmacSha256>),
    ("sns", construct::<sns::Sns>),
    ("sendgrid", sendgrid::build),
    ("mailgun", construct::<mailgun::Mailgun>),
    ("postmark", construct::<postmark::Postmark>),
    ("paddle", paddle::build),
    ("square", construct::<square::Square>),
    ("twilio", construct::<twilio::Twilio>),
    ("discord", discord::build),
    ("zoom", zoom::build),
];

/// A registered scheme: its name and its constructor.
type Registration = (&'static str, Constructor);

/// A registered scheme's constructor.
type Constructor = fn(&Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError>;

/// A scheme built from a source's spec alone. (A preset of a shared scheme is built by its
/// module's `build`, which gives the shared scheme its preset.)
trait FromSpec: Scheme + Sized + 'static {
    /// Builds the scheme from the source's settings, secrets and tolerance. Key material is the
    /// scheme's own business: decode the secrets, key the MACs or parse the public keys here,
    /// once. Errors never contain a secret.
    fn new(spec: &Spec<'_>) -> Result<Self, SchemeError>;
}

fn construct<S: FromSpec>(spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    Ok(Arc::new(S::new(spec)?))
}

/// The registered scheme names, in registration order.
pub fn scheme_names() -> impl Iterator<Item = &'static str> {
    SCHEMES.iter().map(|(name, _)| *name)
}

/// Builds the scheme registered as `name` ([`SchemeError::UnknownScheme`] if there is none).
pub fn build(name: &str, spec: &Spec<'_>) -> Result<Arc<dyn Scheme>, SchemeError> {
    (registered(name)?.1)(spec)
}

/// `Ok` if a scheme is registered as `name`, else [`SchemeError::UnknownScheme`] (which lists the
/// known names).
pub fn check_registered(name: &str) -> Result<(), SchemeError> {
    registered(name).map(|_| ())
}

fn registered(name: &str) -> Result<&'static Registration, SchemeError> {
    SCHEMES
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| unknown(name))
}

/// [`SchemeError::UnknownScheme`] for `name`, listing the known names.
fn unknown(name: &str) -> SchemeError {
    SchemeError::UnknownScheme {
        name: name.chars().take(64).collect(),
        known: scheme_names().collect::<Vec<_>>().join(", "),
    }
}

/// A signature scheme, configured for one source: it verifies requests, signs messages (samples,
/// tests and outbound deliveries), and knows what a message needs kept and where its id and type
/// are. Built once per cold start; shared by every request (`Send + Sync`). What a sample of its
/// provider looks like is its `Sampler`'s business (the `samples` feature).
///
/// `Debug` must never show key material (print the number of secrets, not them).
pub trait Scheme: fmt::Debug + Send + Sync {
    /// Verifies a request. A scheme that decides without I/O (every HMAC scheme) answers
    /// [`Verdict::Ready`]; one that must fetch first (a certificate) answers
    /// [`Verdict::Pending`]. See the module docs for the order of checks.
    fn verify<'a>(&'a self, request: Request<'a>) -> Verdict<'a>;

    /// Signs `message` with the FIRST secret, the way the provider does: the headers to send and,
    /// for a scheme that signs inside the body, the body to send instead. For samples and tests;
    /// [`SignError`] when the configured material cannot sign (a public key).
    fn sign(&self, message: &Unsigned<'_>) -> Result<Signed, SignError>;

    /// The headers needed to re-verify a request later (the signature, its timestamp and id
    /// headers), kept with the message.
    fn signed_headers(&self) -> &[HeaderName];

    /// Where the provider puts the event id (a source's `event_id` overrides it).
    fn default_event_id(&self) -> FieldRule;

    /// Where the provider puts the event type; `None`: its events have no type (a source's
    /// `event_type` overrides it).
    fn default_event_type(&self) -> Option<FieldRule>;

    /// Whether the signature covers the value `rule` reads, i.e. a request with that value
    /// changed fails [`Scheme::verify`]: the body (its JSON pointers, its hash) for every scheme
    /// that signs the body, a header only where the scheme signs it (Standard Webhooks'
    /// `webhook-id`). An event id that is not signed is never the dedupe key: anyone holding one
    /// signed request could resend it with a fresh id (see [`crate::identity::identify`]).
    fn signs(&self, rule: &FieldRule) -> bool;

    /// The endpoint handshake this request is, if it is one (a URL verification, a ping, a
    /// subscription confirmation: see `handshake.rs`), with its answer. Ingest asks only about a
    /// request whose [`Scheme::verify`] passed, and answers a handshake instead of storing it.
    /// `None` (the default): an event.
    fn handshake<'a>(&'a self, request: Request<'a>) -> Option<Handshake<'a>> {
        let _ = request;
        None
    }

    /// Whether the provider posts several events in one body (a JSON array): ingest then stores
    /// each element as its own message, identified by the source's rules applied to it. Default
    /// `false`; a source's `batch` setting overrides it.
    fn batches(&self) -> bool {
        false
    }
}

/// What a scheme is built from (once per source, at cold start). More may be added without
/// changing [`Scheme`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Spec<'a> {
    /// The source's own settings: the members of its `WEBHOOK_SOURCES` object other than
    /// `scheme`, `tolerance_secs`, `event_id` and `event_type` (e.g. the generic scheme's
    /// `header`). Members a scheme does not know are ignored.
    pub settings: &'a Map<String, Value>,
    /// The source's secrets in order (the first signs). Each scheme decides what they are.
    pub secrets: &'a [Secret],
    /// The timestamp tolerance (for schemes whose signature covers a timestamp).
    pub tolerance: Duration,
    /// Whether `tolerance` is the default rather than the source's own `tolerance_secs`: a
    /// scheme whose provider retries with the signature it first sent (Mailgun) widens the
    /// default to cover the provider's retries ([`Spec::with_default_tolerance`]).
    pub tolerance_is_default: bool,
    /// What fetches the keys a provider publishes (the SNS signing certificates); `None`: the
    /// production [`HttpsFetcher`]. Tests inject their own ([`Spec::with_fetcher`]).
    pub fetcher: Option<&'a Arc<dyn Fetcher>>,
}

impl<'a> Spec<'a> {
    pub fn new(
        settings: &'a Map<String, Value>,
        secrets: &'a [Secret],
        tolerance: Duration,
    ) -> Self {
        Self {
            settings,
            secrets,
            tolerance,
            tolerance_is_default: false,
            fetcher: None,
        }
    }

    /// The same, saying the tolerance is the default (the source gave no `tolerance_secs`).
    pub fn with_default_tolerance(self) -> Self {
        Self {
            tolerance_is_default: true,
            ..self
        }
    }

    /// The same, with this fetcher for published keys.
    pub fn with_fetcher(self, fetcher: &'a Arc<dyn Fetcher>) -> Self {
        Self {
            fetcher: Some(fetcher),
            ..self
        }
    }
}
