//! Tenants at the webhook door (issue 32): a provider's event naming a tenant outside the grammar
//! is refused permanently with the reason (quarantined, as an event naming an unknown tenant is),
//! writes nothing and takes nothing down; a wallet stored before the grammar is still read.

use super::stripe::session;
use super::*;
use inbox_core::domain::Status;

#[tokio::test]
async fn a_stripe_event_naming_a_tenant_outside_the_grammar_moves_nothing() {
    let w = World::new().wallet("acme", 0, None);
    for (n, bad) in ["../acme", "acme corp", "acme/x", "ácme"]
        .into_iter()
        .enumerate()
    {
        let id = format!("evt_bad{n}");
        let pi = format!("pi_bad{n}");
        assert_eq!(
            w.stripe(
                &id,
                "checkout.session.completed",
                session(&format!("cs_bad{n}"), &pi, 1000, "paid", Some(bad)),
            )
            .await,
            Outcome::Failed {
                attempts: 1,
                permanent: true
            },
            "{bad:?}"
        );
        assert_eq!(w.last_note(&id).0, Status::Failed, "{bad:?}");
        let key = MessageKey::new(
            SourceName::parse("stripe").unwrap(),
            EventId::parse(&id).unwrap(),
        );
        let reason = w
            .store
            .message(&key)
            .unwrap()
            .last_error
            .unwrap_or_default();
        assert!(
            reason.contains("data.object.metadata.tenant")
                && reason.contains("A-Z a-z 0-9 . _ : -"),
            "{bad:?}: {reason}"
        );
        let ledger = Ledger::new(&*w.store);
        assert_eq!(ledger.payment_index(&pi).await.unwrap(), None, "{bad:?}");
    }
    assert!(
        w.store.effects().is_empty(),
        "nothing written: {:?}",
        w.store.effects()
    );
    assert_eq!(w.balance("acme").balance.minor(), 0);
    // The process goes on: the next event naming a tenant that fits is credited.
    assert_eq!(
        w.stripe(
            "evt_ok",
            "checkout.session.completed",
            session("cs_ok", "pi_ok", 1000, "paid", Some("acme")),
        )
        .await,
        Outcome::Processed
    );
    assert_eq!(w.balance("acme").balance.minor(), 1000);
}

#[tokio::test]
async fn an_email_event_naming_a_tenant_outside_the_grammar_moves_nothing() {
    let w = World::new().wallet("acme", -1000, None);
    for (n, bad) in ["acme/../x", "acme acme", "..", &"a".repeat(129)]
        .into_iter()
        .enumerate()
    {
        assert_eq!(
            w.email(
                &format!("e_bad{n}"),
                "message.sent",
                &format!("m{n}"),
                json!({"tenant": bad})
            )
            .await,
            Outcome::Failed {
                attempts: 1,
                permanent: true
            },
            "{bad:?}"
        );
    }
    assert!(w.store.effects().is_empty(), "{:?}", w.store.effects());
    assert_eq!(w.balance("acme").held.minor(), 0);
    assert_eq!(
        w.email("e_ok", "message.sent", "m_ok", json!({})).await,
        Outcome::Processed
    );
}

#[tokio::test]
async fn a_wallet_stored_before_the_grammar_is_still_read_and_listed() {
    let w = World::new().wallet("acme", 0, None);
    let legacy = TenantId::stored("Acme Corp #2").unwrap();
    w.store.put_item(
        Wallet::new(
            legacy.clone(),
            usd().amount(PRICE),
            usd().amount(0),
            None,
            T0,
        )
        .to_item(),
    );
    let ledger = Ledger::new(&*w.store);
    let wallet = ledger.wallet(&legacy).await.unwrap().unwrap();
    assert_eq!(wallet.tenant, legacy);
    let tenants = ledger.tenants().await.unwrap().tenants;
    assert_eq!(tenants, vec![legacy.clone(), tid("acme")]);
    assert!(!tenants[0].fits_grammar() && tenants[1].fits_grammar());
    // Its events are refused at the door like any other tenant outside the grammar.
    assert!(matches!(
        w.email(
            "e1",
            "message.sent",
            "m1",
            json!({"tenant": "Acme Corp #2"})
        )
        .await,
        Outcome::Failed {
            permanent: true,
            ..
        }
    ));
}
