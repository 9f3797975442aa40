use super::*;
use crate::outbox::destination::did;

fn dest() -> Destination {
    Destination::new(
        &did("crm"),
        "https://crm.example.com/hooks",
        vec![Pattern::parse("stripe:*").unwrap()],
        None,
        1_000,
    )
}

#[test]
fn a_new_destination_is_valid_active_and_has_a_generated_secret() {
    let d = dest();
    assert_eq!(d.validate(false), Ok(()));
    assert_eq!(d.state, DestinationState::Active);
    assert_eq!(d.schedule, RetrySchedule::default());
    let secret = d.secrets[0].secret.expose();
    assert!(
        SecretText::parse(secret).is_ok(),
        "a generated secret is a valid one"
    );
    assert_ne!(secret, dest().secrets[0].secret.expose(), "fresh each time");
    assert!(
        !format!("{d:?}").contains(secret),
        "Debug never shows a secret"
    );
    assert!(d.wants("stripe", Some("charge.refunded")) && !d.wants("mailer", Some("x")));
}

#[test]
fn validation_names_the_problem() {
    let bad = |f: fn(&mut Destination)| {
        let mut d = dest();
        f(&mut d);
        d.validate(false).unwrap_err().to_string()
    };
    assert!(DestinationId::parse("Bad Id")
        .unwrap_err()
        .to_string()
        .contains("destination id"));
    assert!(
        serde_json::from_str::<DestinationId>("\"Bad Id\"").is_err(),
        "read once, checked once: an invalid stored id does not read"
    );
    assert_eq!(
        serde_json::to_string(&did("crm-2")).unwrap(),
        "\"crm-2\"",
        "the plain string on the wire"
    );
    assert!(bad(|d| d.url = "http://crm.example.com".into()).contains("https"));
    assert!(bad(|d| d.url = "ftp://x".into()).contains("https"));
    assert!(bad(|d| d.url = "https://user:pw@x.example/".into()).contains("user information"));
    assert!(bad(|d| d.url = "https://x.example/#frag".into()).contains("fragment"));
    assert!(bad(|d| d.patterns.clear()).contains("pattern"));
    assert!(bad(|d| d.secrets.clear()).contains("secret"));
    assert!(bad(|d| d.rate_per_sec = 0.0).contains("rate"));
    assert!(bad(|d| d.rate_per_sec = f64::NAN).contains("rate"));
    assert!(bad(|d| d.burst = 0).contains("burst"));
    assert!(bad(|d| d.timeout_ms = 31_000).contains("timeout"));
    let mut local = dest();
    local.url = "http://127.0.0.1:8080/hook".into();
    assert!(local.validate(true).is_ok(), "http allowed locally");
    for ok in ["a", "crm-prod_2", "0x"] {
        assert!(check_id(ok).is_ok(), "{ok}");
    }
    for no in ["", "-a", "A", "a b", &"a".repeat(MAX_ID_LEN + 1)] {
        assert!(check_id(no).is_err(), "{no}");
    }
}

#[test]
fn secrets_parse_and_rotation_keeps_the_old_ones_for_a_while() {
    assert!(SecretText::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
    for bad in [
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "whsec_",
        "whsec_!!",
        "whsec_c2hvcnQ=",
    ] {
        assert!(SecretText::parse(bad).is_err(), "{bad}");
    }
    let mut d = dest();
    let first = d.secrets[0].secret.clone();
    let second = SecretText::generate();
    d.rotate(second.clone(), Duration::from_secs(60), 10_000);
    assert_eq!(
        d.active_secrets(10_000).cloned().collect::<Vec<_>>(),
        vec![second.clone(), first.clone()]
    );
    assert_eq!(
        d.active_secrets(70_000).cloned().collect::<Vec<_>>(),
        vec![second.clone()]
    );
    let third = SecretText::generate();
    d.rotate(third.clone(), Duration::from_secs(600), 80_000);
    assert_eq!(
        d.secrets.len(),
        2,
        "the expired one is dropped at the next change"
    );
    assert_eq!(
        d.active_secrets(80_000).cloned().collect::<Vec<_>>(),
        vec![third, second]
    );
}

#[test]
fn items_round_trip() {
    let mut d = dest();
    d.state = DestinationState::Disabled;
    d.reason = Some("410 Gone".into());
    let item = d.to_item().unwrap();
    assert_eq!(
        crate::store::attr::get_s(&item, "pk"),
        Some(DESTINATIONS_PK)
    );
    assert_eq!(crate::store::attr::get_s(&item, "sk"), Some("DEST#crm"));
    assert_eq!(
        crate::store::attr::get_s(&item, "kind"),
        Some(KIND_DESTINATION)
    );
    assert_eq!(Destination::from_item(item).unwrap(), d);
    let j = JournalEntry::new(5, "ana", "paused", "maintenance")
        .to_item(&did("crm"))
        .unwrap();
    assert_eq!(crate::store::attr::get_s(&j, "pk"), Some("DEST#crm"));
    assert!(crate::store::attr::get_s(&j, "sk")
        .unwrap()
        .starts_with("LOG#0000000000005#"));
    assert!(Destination::from_item(Item::new()).is_err());
}
