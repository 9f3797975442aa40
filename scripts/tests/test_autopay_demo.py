"""scripts/autopay_demo.py against the Stripe stand-in (in this process), its webhooks received
and verified with Stripe's own library: `setup` leaves a customer with an attached card and a
signed `setup_intent.succeeded` naming the tenant; `charge` makes one off-session PaymentIntent
with the tenant in its metadata and an Idempotency-Key, whose `payment_intent.succeeded` (or
`.payment_failed` for a declining card) is posted; an ingest that keeps refusing is reported.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import autopay_demo  # noqa: E402
import stripe_standin as ss  # noqa: E402
from test_stripe_standin import SECRET, Receiver  # noqa: E402

KEY = "sk_test_local"


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture
def base(receiver, tmp_path, monkeypatch):
    srv, base = ss.start(webhook_url=receiver.url, webhook_secret=SECRET, api_key=KEY,
                         retry_schedule=[0.02, 0.05])
    monkeypatch.setattr(autopay_demo, "STATE", tmp_path / "autopay-demo.json")
    yield base
    ss.stop(srv)


def demo(base, *args):
    return autopay_demo.main(["--api-base", base, "--key", KEY, "--wait", "5", *args])


def test_setup_then_charge_posts_signed_events_naming_the_tenant(base, receiver):
    assert demo(base, "setup", "acme") == 0
    [setup] = receiver.events("setup_intent.succeeded")
    seti = setup.data.object
    assert seti.metadata["tenant"] == "acme" and seti.status == "succeeded"
    saved = autopay_demo.load_state()["acme"]
    assert (seti.customer, seti.payment_method) == (saved["customer"], saved["payment_method"])

    assert demo(base, "charge", "acme", "--amount", "2000", "--currency", "usd",
                "--idempotency-key", "demo-key-1") == 0
    [paid] = receiver.events("payment_intent.succeeded")
    pi = paid.data.object
    assert (pi.amount, pi.currency, pi.customer, pi.payment_method) == (
        2000, "usd", saved["customer"], saved["payment_method"])
    assert pi.metadata["tenant"] == "acme"
    assert paid.request["idempotency_key"] == "demo-key-1"
    # The same key again: Stripe's saved answer, no second charge, no second event.
    assert demo(base, "charge", "acme", "--amount", "2000", "--idempotency-key", "demo-key-1") == 0
    assert len(receiver.events("payment_intent.succeeded")) == 1


def test_a_declining_card_is_reported_with_its_failed_payment_event(base, receiver, capsys):
    assert demo(base, "setup", "bob", "--card", "pm_card_visa_chargeDeclinedInsufficientFunds") == 0
    assert demo(base, "charge", "bob", "--amount", "500") == 1
    assert "insufficient_funds" in capsys.readouterr().out
    [failed] = receiver.events("payment_intent.payment_failed")
    assert failed.data.object.metadata["tenant"] == "bob"


def test_an_ingest_that_keeps_refusing_is_reported(base, receiver, capsys):
    receiver.statuses.extend([500, 500, 500])
    assert demo(base, "setup", "acme") == 1
    assert "ingest answered 500" in capsys.readouterr().out


def test_charge_without_a_saved_card_says_what_to_run(base):
    with pytest.raises(SystemExit, match="autopay_demo.py setup carol"):
        demo(base, "charge", "carol", "--amount", "1")
