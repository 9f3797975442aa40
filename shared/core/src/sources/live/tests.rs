//! Reloading on the TTL and after a mismatch, with a fake secret store and explicit times.

use super::*;
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

const SOURCES: &str = r#"{"gh": {"scheme": "github"}}"#;
const T0: i64 = 1_700_000_000_000;
const TTL: Duration = Duration::from_secs(300);

/// A secret store whose value the test changes, counting reads; `None`: unreachable.
#[derive(Default)]
struct Store {
    value: Mutex<Option<String>>,
    reads: AtomicUsize,
}

impl Store {
    fn set(&self, value: Option<&str>) {
        *self.value.lock().unwrap() = value.map(str::to_owned);
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

impl SecretsFetch for Store {
    fn fetch(&self) -> BoxFuture<'_, Result<String, ConfigError>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let value = self.value.lock().unwrap().clone();
        Box::pin(async move {
            value.ok_or(ConfigError::SecretsManager {
                var: "WEBHOOK_SECRETS_ARN",
                reason: "unreachable".into(),
            })
        })
    }
}

fn live(store: &Arc<Store>, secrets: &str) -> LiveSources {
    store.set(Some(secrets));
    let fetch: Arc<dyn SecretsFetch> = store.clone();
    let reloader = Reloader::new(SOURCES, "WEBHOOK_SECRETS_ARN", fetch);
    let first = futures_util::FutureExt::now_or_never(reloader.load())
        .unwrap()
        .unwrap();
    LiveSources::reloading(first, reloader, TTL, T0)
}

/// Whether `sources` accept a GitHub body signed with `secret`.
fn accepts(sources: &Sources, secret: &str) -> bool {
    use crate::signature::{Request, Secret, Spec};
    let settings = serde_json::Map::new();
    let signer = crate::signature::build(
        "github",
        &Spec::new(&settings, &[Secret::from(secret)], TTL),
    )
    .unwrap();
    let body = b"{}";
    let signed = signer
        .sign(&crate::signature::Unsigned::new(body, 0, "d-1"))
        .unwrap()
        .header_map();
    let scheme = &sources.get("gh").unwrap().scheme;
    matches!(
        scheme.verify(Request::new(&signed, body, 0)).ready(),
        Some(Ok(()))
    )
}

fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    futures_util::FutureExt::now_or_never(f).expect("no I/O in these tests")
}

#[test]
fn a_removed_secret_is_refused_once_the_ttl_passed() {
    let store = Arc::new(Store::default());
    let live = live(&store, r#"{"gh": ["old", "new"]}"#);
    assert!(accepts(&run(live.for_request(T0)), "old"));
    // The compromised secret is removed from the store.
    store.set(Some(r#"{"gh": ["new"]}"#));
    let just_before = T0 + 300_000 - 1;
    assert!(
        accepts(&run(live.for_request(just_before)), "old"),
        "within the TTL"
    );
    assert_eq!(store.reads(), 1, "no read within the TTL");
    let after = run(live.for_request(T0 + 300_000));
    assert!(!accepts(&after, "old"), "refused after the TTL");
    assert!(accepts(&after, "new"));
    assert_eq!(store.reads(), 2);
    // The next TTL counts from the reload.
    run(live.for_request(T0 + 599_999));
    assert_eq!(store.reads(), 2);
}

#[test]
fn a_mismatch_reloads_at_most_once_a_minute() {
    let store = Arc::new(Store::default());
    let live = live(&store, r#"{"gh": ["old"]}"#);
    // The provider rotated to a secret stored a moment ago.
    store.set(Some(r#"{"gh": ["old", "rotated"]}"#));
    assert!(
        run(live.after_mismatch(T0 + 59_999)).is_none(),
        "the cold start's read is less than a minute old"
    );
    let fresh = run(live.after_mismatch(T0 + 60_000)).expect("reloaded");
    assert!(accepts(&fresh, "rotated"));
    assert!(accepts(&live.current(), "rotated"));
    // Forged requests cannot make it read again within the minute.
    for t in [T0 + 60_001, T0 + 90_000, T0 + 119_999] {
        assert!(run(live.after_mismatch(t)).is_none());
    }
    assert_eq!(store.reads(), 2);
    assert!(run(live.after_mismatch(T0 + 120_000)).is_some());
    assert_eq!(store.reads(), 3);
}

#[test]
fn a_failed_reload_keeps_the_sources_and_waits_a_minute() {
    let store = Arc::new(Store::default());
    let live = live(&store, r#"{"gh": ["old"]}"#);
    store.set(None);
    let t = T0 + 300_000;
    assert!(accepts(&run(live.for_request(t)), "old"), "kept");
    assert_eq!(store.reads(), 2);
    run(live.for_request(t + 59_999));
    assert_eq!(store.reads(), 2, "not tried on every request");
    assert!(run(live.after_mismatch(t + 59_999)).is_none());
    // Secrets that do not build sources (here: no secret for the source) are kept out too.
    store.set(Some(r#"{"other": ["x"]}"#));
    assert!(accepts(&run(live.for_request(t + 60_000)), "old"));
    assert_eq!(store.reads(), 3);
    store.set(Some(r#"{"gh": ["new"]}"#));
    assert!(accepts(&run(live.for_request(t + 120_000)), "new"));
}

#[test]
fn fixed_sources_never_reload() {
    let secrets = parse_secrets(r#"{"gh": ["old"]}"#, "WEBHOOK_SECRETS").unwrap();
    let live = LiveSources::fixed(Sources::from_json(SOURCES, &secrets).unwrap());
    assert!(accepts(&run(live.for_request(i64::MAX - 1)), "old"));
    assert!(run(live.after_mismatch(i64::MAX - 1)).is_none());
}

#[test]
fn debug_shows_no_secret() {
    let store = Arc::new(Store::default());
    let live = live(&store, r#"{"gh": ["very-secret-value"]}"#);
    let text = format!("{live:?}");
    assert!(!text.contains("very-secret-value"), "{text}");
}
