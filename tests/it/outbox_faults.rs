//! The outbox under adverse conditions, against the emulator and local receivers: ten concurrent
//! workers against a destination limited to 5 requests/second, the SSRF guard, and a poison
//! destination that must not delay the others (the circuit breaker stops it).

use deliver_function::http::{GuardedConnector, HttpTransport, Resolve};
use deliver_function::ssrf::AddressPolicy;
use inbox_core::clock::SystemClock;
use inbox_core::outbox::attempt::AttemptResult;
use inbox_core::outbox::breaker::{BreakerConfig, CircuitState};
use inbox_core::outbox::delivery::DeliveryStatus;
use inbox_core::outbox::store::OutboxStore as _;
use inbox_core::outbox::transport::{Outgoing, Transport};
use inbox_core::outbox::worker::{DeliverConfig, DeliveryOutcome};
use integration_tests::outbox::{dest_id, reference, OutboxRig};
use integration_tests::receiver::{Answer, Receiver};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test]
async fn ten_workers_hold_a_destination_to_five_requests_per_second() {
    let rig = OutboxRig::new().await;
    let receiver = Receiver::always(200);
    rig.destination("limited", &receiver.url, &["*"], |d| {
        d.rate_per_sec = 5.0;
        d.burst = 1;
    })
    .await;
    let ids = rig.pending_deliveries("limited", "evt_rate", 60).await;
    // Ten workers (ten Lambda instances: each its own process state), six deliveries each, all at
    // once; each waits for its tokens (up to 30 s) instead of deferring.
    let config = DeliverConfig {
        max_wait: Duration::from_secs(30),
        ..DeliverConfig::default()
    };
    let mut workers = Vec::new();
    for w in 0..10 {
        let worker = rig.deliverer(SystemClock, config).await;
        let mine: Vec<String> = ids.iter().skip(w).step_by(10).cloned().collect();
        workers.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for id in mine {
                outcomes.push(worker.deliver(&reference("limited", &id)).await.unwrap());
            }
            outcomes
        }));
    }
    let started = Instant::now();
    for w in workers {
        assert!(w
            .await
            .unwrap()
            .iter()
            .all(|o| *o == DeliveryOutcome::Delivered));
    }
    let hits = receiver.hits();
    assert_eq!(hits.len(), 60, "every delivery arrived");
    // The receiver's measure: the most requests in any 10 s window, and in any 1 s window.
    let most_within = |window: Duration| {
        (0..hits.len())
            .map(|i| {
                hits[i..]
                    .iter()
                    .take_while(|h| h.at.duration_since(hits[i].at) < window)
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    let per_10s = most_within(Duration::from_secs(10));
    let per_1s = most_within(Duration::from_secs(1));
    let span = hits[hits.len() - 1]
        .at
        .duration_since(hits[0].at)
        .as_secs_f64();
    let rate = (hits.len() - 1) as f64 / span;
    eprintln!("60 deliveries by 10 workers at 5/s: {per_10s} in the busiest 10 s ({:.2}/s), {per_1s} in the busiest second, {rate:.2}/s overall, {:.1} s in all", per_10s as f64 / 10.0, started.elapsed().as_secs_f64());
    assert!(per_10s <= 55, "at most 5.5 requests/s over 10 s: {per_10s}");
    // Tokens are granted at most 5 a second plus the burst of 1; the receiver sees them after the
    // claim write that follows each grant, whose latency varies by up to ~0.4 s against DynamoDB
    // Local on a busy 2-core machine (measured: 8 in the busiest second, 45-47 in the busiest
    // 10 s): two more in a second is that jitter, not the bucket.
    assert!(per_1s <= 8, "{per_1s} in one second");
    assert!(rate >= 4.0, "the bucket is kept busy: {rate:.2}/s");
}

/// A resolver mapping test names to fixed addresses, counting its calls (no DNS, no traffic).
fn fake_resolver(calls: Arc<AtomicUsize>) -> Resolve {
    Arc::new(move |host: String, port: u16| {
        calls.fetch_add(1, Ordering::SeqCst);
        let ip = match host.as_str() {
            "metadata.test" => "169.254.169.254",
            "internal.test" => "10.0.0.7",
            "rebind.test" => "127.0.0.1",
            "mixed.test" => "192.168.1.1",
            _ => "203.0.113.9",
        };
        let mut addrs = vec![SocketAddr::new(ip.parse().unwrap(), port)];
        if host == "mixed.test" {
            addrs.insert(0, SocketAddr::new("8.8.8.8".parse().unwrap(), port));
        }
        Box::pin(async move { Ok(addrs) })
    })
}

#[tokio::test]
async fn ssrf_targets_are_refused_at_connect_time_on_the_resolved_address() {
    let calls = Arc::new(AtomicUsize::new(0));
    let strict = GuardedConnector::new(
        AddressPolicy {
            allow_loopback: false,
        },
        fake_resolver(calls.clone()),
        Duration::from_secs(1),
    );
    let refused = |url: &'static str| {
        let strict = strict.clone();
        async move {
            let uri: http::Uri = url.parse().unwrap();
            strict.addresses(&uri).await.expect_err(url).to_string()
        }
    };
    for (url, why) in [
        (
            "https://metadata.test/latest",
            "169.254.169.254 is the cloud metadata address",
        ),
        ("https://internal.test/", "10.0.0.7 is private"),
        ("https://rebind.test/", "127.0.0.1 is loopback"),
        ("https://mixed.test/", "192.168.1.1 is private"),
        (
            "https://169.254.169.254/latest/meta-data",
            "169.254.169.254 is the cloud metadata address",
        ),
        ("https://[::ffff:10.0.0.1]/", "10.0.0.1 is private"),
        ("https://[fd00:ec2::254]/", "the cloud metadata address"),
        ("http://example.test/", "plain http:// is refused"),
        ("ftp://example.test/", "only https://"),
    ] {
        let e = refused(url).await;
        assert!(e.contains(why), "{url}: {e}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        4,
        "names are resolved, IP literals are not"
    );
    // Through the whole client: a refusal is an attempt result, and no request reaches a local
    // receiver that a public-looking name resolves to.
    let receiver = Receiver::always(200);
    let client = HttpTransport::with_resolver(
        AddressPolicy {
            allow_loopback: false,
        },
        fake_resolver(calls.clone()),
    )
    .unwrap();
    let send = |url: String| {
        let client = client.clone();
        async move {
            client
                .post(Outgoing {
                    url: &url,
                    headers: &[],
                    body: &inbox_core::outbox::transport::Bytes::from_static(b"{}"),
                    timeout: Duration::from_secs(2),
                })
                .await
        }
    };
    for url in [
        format!("https://rebind.test:{}/hooks", receiver.port),
        format!("https://127.0.0.1:{}/hooks", receiver.port),
        format!("https://localhost:{}/hooks", receiver.port),
        receiver.url.clone(),
        "https://metadata.test/latest/meta-data".to_owned(),
    ] {
        assert!(
            matches!(send(url.clone()).await, AttemptResult::Refused(_)),
            "{url}"
        );
    }
    assert_eq!(receiver.count(), 0, "nothing was sent");
    // The local setting allows loopback (http:// too), and nothing else.
    let local = HttpTransport::with_resolver(
        AddressPolicy {
            allow_loopback: true,
        },
        fake_resolver(calls.clone()),
    )
    .unwrap();
    let ok = local
        .post(Outgoing {
            url: &receiver.url,
            headers: &[],
            body: &inbox_core::outbox::transport::Bytes::from_static(b"{}"),
            timeout: Duration::from_secs(2),
        })
        .await;
    assert!(
        matches!(ok, AttemptResult::Answered { status: 200, .. }),
        "{ok:?}"
    );
    let meta = local
        .post(Outgoing {
            url: "https://metadata.test/",
            headers: &[],
            body: &inbox_core::outbox::transport::Bytes::from_static(b"{}"),
            timeout: Duration::from_secs(2),
        })
        .await;
    assert!(matches!(meta, AttemptResult::Refused(_)), "{meta:?}");
    // A delivery to a refused target fails at once, without an attempt reaching anything.
    let rig = OutboxRig::new().await;
    rig.destination(
        "sneaky",
        &format!("https://rebind.test:{}/hooks", receiver.port),
        &["*"],
        |_| {},
    )
    .await;
    rig.pending_deliveries("sneaky", "evt_ssrf", 1).await;
    let worker = rig
        .deliverer_with(client, SystemClock, DeliverConfig::default())
        .await;
    assert_eq!(
        worker
            .deliver(&reference("sneaky", "evt_ssrf_000"))
            .await
            .unwrap(),
        DeliveryOutcome::Failed { attempts: 1 }
    );
    let d = rig.delivery("sneaky", "evt_ssrf_000").await.unwrap();
    assert!(d.last_error.unwrap().contains("127.0.0.1 is loopback"));
    assert_eq!(receiver.count(), 1, "only the allowed local request above");
}

#[tokio::test]
async fn a_poison_destination_does_not_delay_the_others_and_its_circuit_opens() {
    let rig = OutboxRig::new().await;
    let healthy = Receiver::always(200);
    let poison = Receiver::start(|_, _| Answer::status(500).after(Duration::from_secs(3)));
    rig.destination("healthy", &healthy.url, &["*"], |_| {})
        .await;
    rig.destination("poison", &poison.url, &["*"], |d| d.timeout_ms = 800)
        .await;
    rig.pending_deliveries("healthy", "evt_h", 10).await;
    rig.pending_deliveries("poison", "evt_p", 10).await;
    let config = DeliverConfig {
        breaker: BreakerConfig {
            min_requests: 3,
            failure_rate: 50,
            ..BreakerConfig::default()
        },
        concurrency: 20,
        max_wait: Duration::from_secs(5),
        ..DeliverConfig::default()
    };
    let worker = rig.deliverer(SystemClock, config).await;
    let started = Instant::now();
    let outcomes = worker.deliver_due(100).await.unwrap();
    let took = started.elapsed();
    let delivered = outcomes
        .iter()
        .filter(|o| **o == DeliveryOutcome::Delivered)
        .count();
    assert_eq!(delivered, 10, "{outcomes:?}");
    assert_eq!(healthy.count(), 10);
    for i in 0..10 {
        let d = rig
            .delivery("healthy", &format!("evt_h_{i:03}"))
            .await
            .unwrap();
        assert_eq!(d.status, DeliveryStatus::Delivered);
    }
    // Ten poison requests ran at once, each cut at 0.8 s: the pass took about one timeout, not ten.
    assert!(took < Duration::from_secs(6), "{took:?}");
    let state = rig.store().worker_state(&dest_id("poison")).await.unwrap();
    assert!(state.circuit.failures >= 3, "{state:?}");
    let now = inbox_core::clock::Clock::now_millis(&SystemClock);
    assert_eq!(
        state.circuit.state(&config.breaker, now),
        CircuitState::Open
    );
    // With the circuit open, the poison destination's deliveries are parked without a request.
    let before = poison.count();
    let again = rig.pending_deliveries("poison", "evt_q", 3).await;
    for id in &again {
        let o = worker.deliver(&reference("poison", id)).await.unwrap();
        assert_eq!(
            o,
            DeliveryOutcome::Parked {
                why: "circuit open"
            }
        );
    }
    assert_eq!(poison.count(), before, "nothing sent while open");
    let d = rig.delivery("poison", &again[0]).await.unwrap();
    assert_eq!(
        (d.status, d.attempts),
        (DeliveryStatus::Pending, 0),
        "parked without an attempt"
    );
}

#[tokio::test]
async fn failing_longer_than_the_setting_disables_the_destination_with_a_metric() {
    use inbox_core::clock::{Clock as _, ManualClock};
    use inbox_core::metrics::RecordingSink;
    let rig = OutboxRig::new().await;
    let down = Receiver::always(500);
    rig.destination("down", &down.url, &["*"], |_| {}).await;
    let ids = rig.pending_deliveries("down", "evt_down", 2).await;
    let clock = Arc::new(ManualClock::at_millis(SystemClock.now_millis()));
    let sink = Arc::new(RecordingSink::new());
    let config = DeliverConfig {
        breaker: BreakerConfig {
            window: Duration::from_secs(60),
            min_requests: 1,
            failure_rate: 50,
            half_open_probes: 1,
            cooldown: Duration::ZERO,
            max_cooldown: Duration::ZERO,
            disable_after: Duration::from_secs(60),
        },
        max_wait: Duration::ZERO,
        ..DeliverConfig::default()
    };
    let worker = rig
        .deliverer(clock.clone(), config)
        .await
        .with_metrics(sink.clone());
    let first = worker.deliver(&reference("down", &ids[0])).await.unwrap();
    assert!(
        matches!(first, DeliveryOutcome::Retrying { attempt: 1, .. }),
        "{first:?}"
    );
    assert!(
        rig.store()
            .worker_state(&dest_id("down"))
            .await
            .unwrap()
            .circuit
            .opened_at
            .is_some(),
        "one failure opens it here"
    );
    // 61 s later (cool-down 0): the next delivery probes, fails, and the destination has been
    // failing without a success for longer than a minute: disabled.
    clock.advance_millis(61_000);
    let probe = worker.deliver(&reference("down", &ids[1])).await.unwrap();
    assert!(
        matches!(probe, DeliveryOutcome::Retrying { attempt: 1, .. }),
        "{probe:?}"
    );
    let d = inbox_core::outbox::admin::get(&rig.store(), &dest_id("down"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        d.state,
        inbox_core::outbox::destination::DestinationState::Disabled
    );
    assert!(
        d.reason
            .as_deref()
            .unwrap_or_default()
            .contains("circuit breaker"),
        "{:?}",
        d.reason
    );
    assert_eq!(sink.count("DestinationDisabled"), 1);
    // Its deliveries now fail without a request.
    let sent = down.count();
    let after = worker.deliver(&reference("down", &ids[0])).await.unwrap();
    assert!(
        matches!(after, DeliveryOutcome::Failed { attempts: 1 }),
        "{after:?}"
    );
    assert_eq!(down.count(), sent);
    assert_eq!(sink.count("DeliveriesFailed"), 1);
}

/// The circuit's writes on DynamoDB (`store/dynamo/circuit.rs`): twenty workers counting at once
/// lose no count (the first rolls the window's slot over, the others add to it), a failed probe
/// re-opens the circuit in the write that counts it, and closing forgets the probes and the
/// window.
#[tokio::test]
async fn circuit_counts_of_concurrent_workers_are_all_kept_and_a_failed_probe_re_opens() {
    use inbox_core::clock::{Clock as _, Millis};
    use inbox_core::outbox::breaker::window::bucket_of;
    use inbox_core::outbox::breaker::{Change, Move, Recent, Window};
    let rig = OutboxRig::new().await;
    let store = rig.store();
    let id = dest_id("counted");
    let now = SystemClock.now_millis();
    let window = BreakerConfig::default().window;
    let bucket = bucket_of(window, now);
    let count = |up| Change::Count {
        up,
        probe: false,
        bucket,
        roll: true,
        reopen: None,
    };
    let writes = (0..20).map(|i| store.change_circuit(&id, count(i % 4 == 0), Millis::new(now)));
    for counted in futures_util::future::join_all(writes).await {
        assert!(counted.unwrap().is_some());
    }
    let c = store.worker_state(&id).await.unwrap().circuit;
    assert_eq!(
        c.window.recent(window, now),
        Recent {
            requests: 20,
            failures: 15
        },
        "{c:?}"
    );

    assert!(store
        .move_circuit(&id, Move::Open, Millis::new(now))
        .await
        .unwrap());
    assert!(
        !store
            .move_circuit(&id, Move::Open, Millis::new(now))
            .await
            .unwrap(),
        "once"
    );
    let lease = Millis::new(now + 10_000);
    assert!(store
        .claim_probe(&id, Millis::new(now), lease, Millis::new(now))
        .await
        .unwrap());
    assert!(
        !store
            .claim_probe(&id, Millis::new(now), lease, Millis::new(now + 1))
            .await
            .unwrap(),
        "one probe at a time"
    );
    // The probe fails two buckets later: its slot rolled over, the circuit re-opened, in one write.
    let later = now + window.as_millis() as i64;
    let failed = Change::Count {
        up: false,
        probe: true,
        bucket: bucket_of(window, later),
        roll: true,
        reopen: Some(now),
    };
    let c = store
        .change_circuit(&id, failed, Millis::new(later))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.opened_at, c.probes, c.probe_until),
        (Some(later), 0, None),
        "{c:?}"
    );
    assert_eq!(
        c.window.recent(window, later),
        Recent {
            requests: 1,
            failures: 1
        }
    );
    assert!(store
        .move_circuit(&id, Move::Close { from: later }, Millis::new(later + 1))
        .await
        .unwrap());
    let c = store.worker_state(&id).await.unwrap().circuit;
    assert_eq!((c.opened_at, c.window), (None, Window::default()), "{c:?}");
}
