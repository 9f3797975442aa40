use super::*;

fn record(fp: &str, state: State, expires_at: i64) -> Record {
    Record {
        fingerprint: fp.into(),
        state,
        expires_at,
        version: Some(3),
    }
}

#[test]
fn what_a_keys_record_allows() {
    let fp = Fingerprint("a".into());
    let now = Millis::from_secs(1_000);
    let done = State::Done {
        status: 201,
        body: "{}".into(),
    };
    let leased = State::InFlight {
        lease_until: Millis::from_secs(1_010),
    };
    let lapsed = State::InFlight {
        lease_until: Millis::from_secs(1_000),
    };
    let claim_over = |v| Decision::Claim { over: v };
    let cases = [
        ("no record", None, claim_over(None)),
        (
            "finished, same request",
            Some(record("a", done.clone(), 2_000)),
            Decision::Replay {
                status: 201,
                body: "{}".into(),
            },
        ),
        (
            "finished, other request",
            Some(record("b", done.clone(), 2_000)),
            Decision::Reused,
        ),
        (
            "finished, past its time",
            Some(record("b", done.clone(), 1_000)),
            claim_over(Some(3)),
        ),
        (
            "in flight",
            Some(record("a", leased.clone(), 2_000)),
            Decision::InFlight,
        ),
        (
            "in flight, other request",
            Some(record("b", leased, 2_000)),
            Decision::Reused,
        ),
        (
            "in flight, lease lapsed",
            Some(record("a", lapsed.clone(), 2_000)),
            claim_over(Some(3)),
        ),
        (
            "in flight, lease lapsed, other request",
            Some(record("b", lapsed, 2_000)),
            Decision::Reused,
        ),
        (
            "abandoned (a 5xx)",
            Some(record("b", State::Abandoned, 2_000)),
            claim_over(Some(3)),
        ),
    ];
    for (name, r, expected) in cases {
        assert_eq!(decide(r.as_ref(), &fp, now), expected, "{name}");
    }
}

#[test]
fn a_fingerprint_covers_the_route_and_the_body() {
    let a = Fingerprint::of("POST /wallets/acme/holds", r#"{"message_id":"m1"}"#);
    assert_eq!(a.as_str().len(), 64);
    assert_eq!(
        a,
        Fingerprint::of("POST /wallets/acme/holds", r#"{"message_id":"m1"}"#)
    );
    assert_ne!(
        a,
        Fingerprint::of("POST /wallets/acme/holds", r#"{"message_id":"m2"}"#)
    );
    assert_ne!(
        a,
        Fingerprint::of("POST /wallets/other/holds", r#"{"message_id":"m1"}"#)
    );
}
