"""scripts/stripe_standin.py driven by Stripe's own Python library (stripe-python's StripeClient
pointed at the stand-in with `base_addresses`), so what the library sees is what the Rust client
will see: replays, idempotency errors, 409s, 429s, declines, Should-Retry headers, connection
resets, and webhooks that `stripe.Webhook.construct_event` accepts.

One stand-in runs in this process for the module (reset before each test); webhooks go to a
local receiver. Nothing sleeps to synchronise: waits poll a condition until a deadline.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import stripe

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import stripe_standin as ss  # noqa: E402

SECRET = "whsec_standin_test_secret"
KEY = "sk_test_standin"


def wait_for(pred, timeout=3.0, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


# ------------------------------------------------------------------ the webhook receiver

class Receiver:
    """Collects webhook deliveries; answers with `statuses` in turn (then 200)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.got: list[dict] = []
        self.statuses: list[int] = []
        self.on_delivery = None
        receiver = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                extra = receiver.on_delivery(json.loads(body)) if receiver.on_delivery else None
                with receiver.lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.got.append({"body": body, "sig": self.headers.get("Stripe-Signature"),
                                         "status": status, "extra": extra})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/webhooks/stripe"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def clear(self):
        with self.lock:
            self.got.clear()
            self.statuses.clear()
            self.on_delivery = None

    def events(self, type_=None, ok_only=True):
        with self.lock:
            got = list(self.got)
        out = []
        for g in got:
            if ok_only and not 200 <= g["status"] < 300:
                continue
            evt = stripe.Webhook.construct_event(g["body"], g["sig"], SECRET)  # verifies the signature
            if type_ is None or evt.type == type_:
                out.append(evt)
        return out


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="module")
def server(receiver):
    srv, base = ss.start(webhook_url=receiver.url, webhook_secret=SECRET, retry_schedule=[0.02, 0.05, 0.1])
    srv.base = base
    yield srv
    ss.stop(srv)


@pytest.fixture(autouse=True)
def fresh(server, receiver, monkeypatch):
    server.standin.reset()
    with server.standin.lock:
        server.standin.retry_schedule = [0.02, 0.05, 0.1]
    receiver.clear()
    # the library waits >= 0.5 s between its own retries; the tests count retries, not time
    monkeypatch.setattr(stripe._http_client.HTTPClient, "INITIAL_DELAY", 0.01)


@pytest.fixture
def base(server):
    return server.base


def client(base, retries=0, key=KEY):
    return stripe.StripeClient(key, base_addresses={"api": base}, max_network_retries=retries)


def ctl(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + "/_standin" + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.load(r)


def fault(base, **spec):
    return ctl(base, "POST", "/faults", spec)


def charges(base):
    return ctl(base, "GET", "/charges")


def requests_for(base, key):
    return [r for r in ctl(base, "GET", "/requests")["data"] if r["idempotency_key"] == key]


DAY = 86400


def clock(base, **move):
    """The stand-in clock's time; moved first with advance=SECONDS or set=UNIX_SECONDS."""
    return ctl(base, "POST", "/clock", move)["now"] if move else ctl(base, "GET", "/clock")["now"]


def event_about(receiver, type_, obj_id):
    """The first delivered `type_` event about `obj_id`, waited for (a late delivery of an earlier
    test's event of the same type left out)."""
    return wait_for(lambda: [e for e in receiver.events(type_) if e.data.object.id == obj_id],
                    what=f"{type_} about {obj_id}")[0]


def customer_with_card(c, card="pm_card_visa"):
    cus = c.v1.customers.create(params={"email": "ops@acme.test", "metadata": {"tenant": "acme"}})
    pm = c.v1.payment_methods.attach(card, params={"customer": cus.id})
    return cus, pm


def charge_params(cus, pm, attempt="att_1", amount=2500):
    pm_id = pm if isinstance(pm, str) else pm.id
    return {"amount": amount, "currency": "usd", "customer": cus.id, "payment_method": pm_id,
            "confirm": True, "off_session": True, "metadata": {"tenant": "acme", "attempt": attempt}}


# ------------------------------------------------------------------ wire format

def test_requests_need_a_test_secret_key(base):
    req = urllib.request.Request(base + "/v1/customers", data=b"email=a%40b.c", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 401
    assert e.value.headers["Request-Id"].startswith("req_")
    assert json.load(e.value)["error"]["type"] == "invalid_request_error"
    with pytest.raises(stripe.AuthenticationError):
        client(base, key="sk_live_nope").v1.customers.create(params={})
    basic = urllib.request.Request(base + "/v1/customers", data=b"email=a%40b.c", method="POST",
                                   headers={"Authorization": "Basic " + base64.b64encode(f"{KEY}:".encode()).decode()})
    with urllib.request.urlopen(basic, timeout=5) as r:  # curl -u sk_test_...: works too
        assert json.load(r)["email"] == "a@b.c"


def test_bracket_notation_and_object_shapes(base):
    # expand[] and metadata[...] exactly as a hand-written form (the library uses expand[0])
    cus = client(base).v1.customers.create(params={"metadata": {"tenant": "acme"}})
    form = (f"amount=900&currency=eur&customer={cus.id}&payment_method=pm_card_visa&confirm=true"
            "&metadata[tenant]=acme&metadata[attempt]=a%201&expand[]=customer&expand[]=latest_charge")
    req = urllib.request.Request(base + "/v1/payment_intents", data=form.encode(), method="POST",
                                 headers={"Authorization": f"Bearer {KEY}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        pi = json.load(r)
        assert r.headers["Request-Id"].startswith("req_")
    assert re.fullmatch(r"pi_\w+", pi["id"]) and pi["object"] == "payment_intent"
    assert pi["livemode"] is False and isinstance(pi["created"], int)
    assert pi["metadata"] == {"tenant": "acme", "attempt": "a 1"}
    assert pi["customer"]["id"] == cus.id and pi["customer"]["object"] == "customer"
    assert pi["latest_charge"]["object"] == "charge" and pi["latest_charge"]["status"] == "succeeded"
    assert pi["status"] == "succeeded" and pi["amount_received"] == 900


def test_a_test_payment_method_attaches_as_a_new_one(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    assert pm.id.startswith("pm_") and pm.id != "pm_card_visa"
    assert pm.customer == cus.id and pm.card.last4 == "4242"
    assert [m.id for m in c.v1.customers.payment_methods.list(cus.id).data] == [pm.id]
    assert c.v1.customers.retrieve(cus.id).metadata["tenant"] == "acme"


# ------------------------------------------------------------------ idempotency

def test_same_key_and_parameters_replay_the_saved_answer(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    first = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "att_1-try_1"})
    again = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "att_1-try_1"})
    assert first.status == "succeeded" and again.id == first.id
    assert "Idempotent-Replayed" not in first.last_response.headers
    assert again.last_response.headers["Idempotent-Replayed"] == "true"
    assert again.last_response.headers["Original-Request"] == first.last_response.request_id
    assert charges(base)["succeeded"] == 1
    assert [r["replayed"] for r in requests_for(base, "att_1-try_1")] == [False, True]


def test_same_key_other_parameters_is_an_idempotency_error(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "k"})
    with pytest.raises(stripe.IdempotencyError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm, amount=2600), options={"idempotency_key": "k"})
    assert e.value.http_status == 400 and e.value.error.type == "idempotency_error"
    with pytest.raises(stripe.IdempotencyError):  # another endpoint, same key
        c.v1.customers.create(params={}, options={"idempotency_key": "k"})
    assert charges(base)["succeeded"] == 1


def key_info(base, key):
    return next(k for k in ctl(base, "GET", "/keys")["data"] if k["idempotency_key"] == key)


def test_a_key_is_pruned_once_24_hours_old_and_its_reuse_charges_again(base):
    # https://docs.stripe.com/api/idempotent_requests: "keys can be removed from the system
    # automatically after they're at least 24 hours old, and a new request is generated if a key
    # is reused after the original is pruned"
    c = client(base)
    cus, pm = customer_with_card(c)
    t0 = clock(base)
    first = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "day-old"})
    assert t0 <= key_info(base, "day-old")["created"] <= clock(base)
    clock(base, set=key_info(base, "day-old")["created"] + DAY - 5)
    replay = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "day-old"})
    assert replay.id == first.id and replay.last_response.headers["Idempotent-Replayed"] == "true"
    assert key_info(base, "day-old")["expired"] is False
    clock(base, advance=5)
    assert key_info(base, "day-old")["expired"] is True  # shown until touched
    again = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "day-old"})
    assert again.id != first.id and again.status == "succeeded"
    assert "Idempotent-Replayed" not in again.last_response.headers
    assert charges(base)["succeeded"] == 2  # the customer charged twice: the key was the only guard
    info = key_info(base, "day-old")  # saved anew, its age from the new request
    assert info["created"] >= clock(base) - 2 and info["request_id"] == again.last_response.request_id
    assert c.v1.payment_intents.create(params=charge_params(cus, pm),
                                       options={"idempotency_key": "day-old"}).id == again.id


def test_the_key_ttl_is_configurable_and_a_pruned_key_takes_other_parameters(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    assert ctl(base, "POST", "/config", {"key_ttl_s": 60})["key_ttl_s"] == 60
    c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "short"})
    with pytest.raises(stripe.IdempotencyError):
        c.v1.payment_intents.create(params=charge_params(cus, pm, amount=900), options={"idempotency_key": "short"})
    clock(base, advance=60)
    other = c.v1.payment_intents.create(params=charge_params(cus, pm, amount=900), options={"idempotency_key": "short"})
    assert other.amount == 900 and charges(base)["succeeded"] == 2
    with pytest.raises(urllib.error.HTTPError) as e:
        ctl(base, "POST", "/config", {"key_ttl_s": -1})
    assert e.value.code == 400
    ctl(base, "POST", "/reset")
    assert ctl(base, "POST", "/config", {})["key_ttl_s"] == 86400


def test_two_tenants_reusing_one_key_get_an_idempotency_error_nothing_run_or_saved(base, receiver):
    # keys are scoped to the Stripe account (the API key), not to anything of ours: a key made up
    # per tenant that collides is one request to Stripe, and the second tenant's is refused
    c = client(base)
    cus, pm = customer_with_card(c)
    acme = {**charge_params(cus, pm, "topup-1"), "metadata": {"tenant": "acme", "attempt": "topup-1"}}
    globex = {**acme, "amount": 4000, "metadata": {"tenant": "globex", "attempt": "topup-1"}}
    first = c.v1.payment_intents.create(params=acme, options={"idempotency_key": "topup-1"})
    saved = key_info(base, "topup-1")
    with pytest.raises(stripe.IdempotencyError) as e:
        c.v1.payment_intents.create(params=globex, options={"idempotency_key": "topup-1"})
    assert e.value.http_status == 400 and e.value.error.type == "idempotency_error"
    assert e.value.error.message == (
        "Keys for idempotent requests can only be used with the same parameters they were first used with. "
        "Try using a key other than 'topup-1' if you meant to execute a different request.")
    assert "Idempotent-Replayed" not in e.value.headers
    assert key_info(base, "topup-1") == saved  # not saved: the first request's answer stays
    assert [p.id for p in c.v1.payment_intents.list().data] == [first.id]  # not executed
    assert charges(base)["succeeded"] == 1
    assert [ev["event"]["data"]["object"]["metadata"].get("tenant") for ev in ctl(base, "GET", "/events")["data"]
            if ev["event"]["type"].startswith("payment_intent.")] == ["acme", "acme"]
    # the same key under another Stripe account (another secret key) is another key
    other = client(base, key="sk_test_other_account").v1.payment_intents.create(
        params=acme, options={"idempotency_key": "topup-1"})
    assert other.id != first.id and "Idempotent-Replayed" not in other.last_response.headers


def test_a_key_still_in_flight_answers_409(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, kind="delay", delay_ms=300)
    result = {}
    t = threading.Thread(target=lambda: result.update(
        pi=c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "busy"})))
    t.start()
    wait_for(lambda: [k for k in ctl(base, "GET", "/keys")["data"]
                      if k["idempotency_key"] == "busy" and k["state"] == "running"], what="the key in flight")
    with pytest.raises(stripe.APIError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "busy"})
    assert e.value.http_status == 409 and e.value.error.code == "idempotency_key_in_use"
    t.join(5)
    assert result["pi"].status == "succeeded"
    again = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "busy"})
    assert again.id == result["pi"].id and again.last_response.headers["Idempotent-Replayed"] == "true"
    assert charges(base)["succeeded"] == 1


def test_a_burst_with_one_key_charges_once(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, kind="delay", delay_ms=150)
    outcomes = []

    def call():
        try:
            pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "burst"})
            outcomes.append((200, pi.id))
        except stripe.APIError as e:
            outcomes.append((e.http_status, None))
    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert {status for status, _ in outcomes} <= {200, 409} and len(outcomes) == 8
    assert len({pi for status, pi in outcomes if status == 200}) == 1
    assert charges(base)["succeeded"] == 1


def test_a_429_lock_timeout_is_not_saved(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, kind="lock_timeout")
    with pytest.raises(stripe.RateLimitError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "k429"})
    assert e.value.http_status == 429 and e.value.error.code == "lock_timeout"
    assert e.value.headers["Stripe-Should-Retry"] == "true"
    assert charges(base)["data"] == []
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "k429"})
    assert pi.status == "succeeded" and "Idempotent-Replayed" not in pi.last_response.headers
    assert charges(base)["succeeded"] == 1


def test_a_parameter_validation_400_is_not_saved(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    bad = {k: v for k, v in charge_params(cus, pm).items() if k != "amount"}
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.create(params=bad, options={"idempotency_key": "kv"})
    assert e.value.http_status == 400 and e.value.param == "amount" and e.value.code == "parameter_missing"
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.create(params={**charge_params(cus, pm), "colour": "red"},
                                    options={"idempotency_key": "kv"})
    assert e.value.code == "parameter_unknown"
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kv"})
    assert pi.status == "succeeded"


def test_a_400_from_execution_is_saved(base):
    c = client(base)
    params = {"amount": 2000, "currency": "usd", "customer": "cus_missing"}
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.create(params=params, options={"idempotency_key": "kx"})
    assert e.value.code == "resource_missing" and e.value.param == "customer"
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.create(params=params, options={"idempotency_key": "kx"})
    assert e.value.headers["Idempotent-Replayed"] == "true"


def test_idempotency_keys_are_at_most_255_characters(base):
    c = client(base)
    assert c.v1.customers.create(params={}, options={"idempotency_key": "k" * 255}).id.startswith("cus_")
    with pytest.raises(stripe.InvalidRequestError):
        c.v1.customers.create(params={}, options={"idempotency_key": "k" * 256})


def test_a_500_after_the_charge_is_saved_and_replayed(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, kind="error_after_charge")
    with pytest.raises(stripe.APIError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "k500"})
    assert e.value.http_status == 500
    with pytest.raises(stripe.APIError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "k500"})
    assert e.value.http_status == 500 and e.value.headers["Idempotent-Replayed"] == "true"
    made = charges(base)
    assert made["succeeded"] == 1 and made["data"][0]["idempotency_key"] == "k500"
    # the money moved, so its webhook comes: the one path that credits the wallet
    evt = wait_for(lambda: receiver.events("payment_intent.succeeded"), what="payment_intent.succeeded")[0]
    assert evt.data.object.id == made["data"][0]["payment_intent"]


def test_a_fault_after_the_charge_waits_for_a_request_that_executes(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "done"})
    fault(base, kind="error_after_charge")
    replay = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "done"})
    assert replay.last_response.headers["Idempotent-Replayed"] == "true"  # a replay executes nothing
    assert len(ctl(base, "GET", "/faults")["faults"]) == 1
    with pytest.raises(stripe.APIError):
        c.v1.payment_intents.create(params=charge_params(cus, pm, "att_2"), options={"idempotency_key": "new"})
    assert ctl(base, "GET", "/faults")["faults"] == [] and charges(base)["succeeded"] == 2


def test_a_reset_after_the_charge_then_the_same_key_gets_the_saved_success(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, kind="reset_after_charge")
    with pytest.raises(stripe.APIConnectionError):
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kr"})
    assert charges(base)["succeeded"] == 1
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kr"})
    assert pi.status == "succeeded" and pi.last_response.headers["Idempotent-Replayed"] == "true"
    assert pi.id == charges(base)["data"][0]["payment_intent"]
    assert charges(base)["succeeded"] == 1
    assert [(r["reset"], r["replayed"]) for r in requests_for(base, "kr")] == [(True, False), (False, True)]


def test_the_librarys_own_retry_after_a_reset_reuses_its_key(base):
    c = client(base, retries=2)
    cus, pm = customer_with_card(c)
    fault(base, kind="reset_after_charge")
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm))  # the library makes up the key
    assert pi.status == "succeeded" and charges(base)["succeeded"] == 1
    key = charges(base)["data"][0]["idempotency_key"]
    assert [r["replayed"] for r in requests_for(base, key)] == [False, True]


# ------------------------------------------------------------------ Stripe-Should-Retry

def test_should_retry_false_stops_the_librarys_retries_and_true_forces_them(base):
    c = client(base, retries=3)
    fault(base, path="/v1/customers", status=503, should_retry=False)
    with pytest.raises(stripe.APIError) as e:
        c.v1.customers.create(params={}, options={"idempotency_key": "no-retry"})
    assert e.value.http_status == 503 and e.value.headers["Stripe-Should-Retry"] == "false"
    assert len(requests_for(base, "no-retry")) == 1
    fault(base, path="/v1/customers", status=400, should_retry=True, times=2)
    assert c.v1.customers.create(params={}, options={"idempotency_key": "retry"}).id.startswith("cus_")
    assert [r["status"] for r in requests_for(base, "retry")] == [400, 400, 200]


def test_a_lock_timeout_is_retried_by_the_library_with_one_charge(base):
    c = client(base, retries=2)
    cus, pm = customer_with_card(c)
    fault(base, kind="lock_timeout")
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "lt"})
    assert pi.status == "succeeded" and charges(base)["succeeded"] == 1
    assert [r["status"] for r in requests_for(base, "lt")] == [429, 200]


def test_a_rate_limit_answers_429_beyond_n_requests_a_second(base):
    c = client(base)
    ctl(base, "POST", "/config", {"rate_limit": 3})
    try:
        statuses, started = [], time.monotonic()
        for i in range(5):
            try:
                c.v1.customers.create(params={}, options={"idempotency_key": f"rl{i}"})
                statuses.append(200)
            except stripe.RateLimitError as e:
                statuses.append((e.http_status, e.error.code))
        if time.monotonic() - started > 0.9:
            pytest.skip("the machine too slow to fit 5 requests in the limiter's 1 s window")
        assert statuses == [200, 200, 200, (429, "rate_limit"), (429, "rate_limit")]
        assert ctl(base, "GET", "/keys")["data"].__len__() == statuses.count(200)  # 429s not saved
    finally:
        ctl(base, "POST", "/config", {"rate_limit": None})


# ------------------------------------------------------------------ declines

DECLINES = [
    ("pm_card_visa_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_chargeDeclined", "card_declined", "generic_decline"),
    ("pm_card_visa_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"),
    ("pm_card_visa_chargeDeclinedLostCard", "card_declined", "lost_card"),
    ("pm_card_visa_chargeDeclinedStolenCard", "card_declined", "stolen_card"),
    ("pm_card_chargeDeclinedFraudulent", "card_declined", "fraudulent"),
    ("pm_card_chargeDeclinedExpiredCard", "expired_card", "expired_card"),
    ("pm_card_chargeDeclinedIncorrectCvc", "incorrect_cvc", "incorrect_cvc"),
    ("pm_card_chargeDeclinedProcessingError", "processing_error", "processing_error"),
    ("pm_card_chargeCustomerFail", "card_declined", "generic_decline"),
]


@pytest.mark.parametrize("card,code,decline_code", DECLINES)
def test_each_test_card_declines_with_its_code(base, card, code, decline_code):
    c = client(base)
    cus, pm = customer_with_card(c, card)
    with pytest.raises(stripe.CardError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "d1"})
    err = e.value.error
    assert e.value.http_status == 402 and err.type == "card_error"
    assert (err.code, err.decline_code) == (code, decline_code)
    assert err.payment_intent.status == "requires_payment_method"
    assert err.payment_intent.last_payment_error.decline_code == decline_code
    assert err.payment_intent.metadata["attempt"] == "att_1"
    made = charges(base)
    assert (made["succeeded"], made["failed"]) == (0, 1) and made["data"][0]["failure_code"] == code
    with pytest.raises(stripe.CardError) as e:  # a decline is saved like any answer
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "d1"})
    assert e.value.headers["Idempotent-Replayed"] == "true" and charges(base)["failed"] == 1


def test_a_decline_posts_payment_failed(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c, "pm_card_visa_chargeDeclinedInsufficientFunds")
    with pytest.raises(stripe.CardError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kd"})
    evt = event_about(receiver, "payment_intent.payment_failed", e.value.error.payment_intent.id)
    assert evt.data.object.last_payment_error.decline_code == "insufficient_funds"
    assert evt.request.idempotency_key == "kd"


def test_authentication_required_off_session(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c, "pm_card_authenticationRequired")
    with pytest.raises(stripe.CardError) as e:
        c.v1.payment_intents.create(params=charge_params(cus, pm))
    err = e.value.error
    assert e.value.http_status == 402
    assert (err.code, err.decline_code) == ("authentication_required", "authentication_required")
    # as Stripe documents for off-session charges: the intent goes back to requires_payment_method
    assert err.payment_intent.status == "requires_payment_method"
    wait_for(lambda: receiver.events("payment_intent.payment_failed"), what="payment_failed")


def test_authentication_required_on_session_leaves_the_intent_in_requires_action(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c, "pm_card_authenticationRequired")
    params = {k: v for k, v in charge_params(cus, pm).items() if k != "off_session"}
    pi = c.v1.payment_intents.create(params=params)
    assert pi.status == "requires_action" and pi.next_action.type == "use_stripe_sdk"
    assert charges(base)["data"] == []
    evt = wait_for(lambda: receiver.events("payment_intent.requires_action"), what="requires_action")[0]
    assert evt.data.object.id == pi.id


# ------------------------------------------------------------------ webhooks

def test_webhooks_are_stripe_events_signed_with_the_secret(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kw"})
    evt = wait_for(lambda: receiver.events("payment_intent.succeeded"), what="payment_intent.succeeded")[0]
    assert evt.id.startswith("evt_") and evt.object == "event" and evt.livemode is False
    assert evt.api_version == ss.DEFAULT_API_VERSION and isinstance(evt.created, int)
    assert evt.data.object.id == pi.id and evt.data.object.metadata["attempt"] == "att_1"
    assert evt.request.id == pi.last_response.request_id and evt.request.idempotency_key == "kw"
    with pytest.raises(stripe.SignatureVerificationError):
        g = receiver.got[0]
        stripe.Webhook.construct_event(g["body"], g["sig"], "whsec_other")
    # only the enabled types are posted; the others are kept
    types = {e["event"]["type"] for e in ctl(base, "GET", "/events")["data"]}
    assert {"payment_intent.created", "charge.succeeded", "payment_method.attached"} <= types
    assert {e.type for e in receiver.events()} == {"payment_intent.succeeded"}
    # and a replay raises no event again
    c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kw"})
    assert len(ctl(base, "GET", "/events?type=payment_intent.succeeded")["data"]) == 1


def test_a_failed_delivery_is_retried_on_the_schedule(base, receiver):
    receiver.statuses = [500, 503]
    c = client(base)
    cus, pm = customer_with_card(c)
    c.v1.payment_intents.create(params=charge_params(cus, pm))
    wait_for(lambda: receiver.events("payment_intent.succeeded"), what="the third attempt")
    assert [g["status"] for g in receiver.got] == [500, 503, 200]
    # The receiver has the request before the stand-in has recorded its answer: poll for it.
    def delivered():
        [state] = ctl(base, "GET", "/events?type=payment_intent.succeeded")["data"]
        return state if state["status"] == "delivered" else None
    state = wait_for(delivered, what="the delivery recorded")
    assert [d["status"] for d in state["deliveries"]] == [500, 503, 200]


def test_a_webhook_before_the_answer_after_it_or_held(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    # the receiver notes whether the API request had been answered when the event came
    receiver.on_delivery = lambda evt: [r["status"] for r in ctl(base, "GET", "/requests")["data"]
                                        if r["request_id"] == evt["request"]["id"]][0]
    fault(base, kind="webhook", webhook="before")
    before = c.v1.payment_intents.create(params=charge_params(cus, pm, "a-before"))
    assert [g["extra"] for g in receiver.got] == [None]  # there already, the answer not yet sent
    after = c.v1.payment_intents.create(params=charge_params(cus, pm, "a-after"))
    wait_for(lambda: len(receiver.got) == 2, what="the second delivery")
    assert receiver.got[1]["extra"] == 200
    fault(base, kind="webhook", webhook="never")
    held = c.v1.payment_intents.create(params=charge_params(cus, pm, "a-held"))
    [state] = [e for e in ctl(base, "GET", "/events?type=payment_intent.succeeded")["data"]
               if e["event"]["data"]["object"]["id"] == held.id]
    assert state["status"] == "held" and len(receiver.got) == 2
    ctl(base, "POST", f"/events/{state['event']['id']}/resend")
    wait_for(lambda: len(receiver.got) == 3, what="the held event, resent")
    assert [e.data.object.id for e in receiver.events()] == [before.id, after.id, held.id]


def test_a_completed_setup_posts_setup_intent_succeeded(base, receiver):
    c = client(base)
    out = ctl(base, "POST", "/setup_intents", {"payment_method": "pm_card_visa", "metadata": {"tenant": "acme"}})
    evt = wait_for(lambda: receiver.events("setup_intent.succeeded"), what="setup_intent.succeeded")[0]
    seti = evt.data.object
    assert seti.id.startswith("seti_") and seti.status == "succeeded" and seti.usage == "off_session"
    assert seti.metadata["tenant"] == "acme" and seti.customer == out["customer"]["id"]
    assert c.v1.payment_methods.retrieve(seti.payment_method).customer == seti.customer
    pi = c.v1.payment_intents.create(params=charge_params(c.v1.customers.retrieve(seti.customer),
                                                          seti.payment_method))
    assert pi.status == "succeeded"


def test_a_completed_checkout_session_with_setup_future_usage(base, receiver):
    c = client(base)
    ctl(base, "POST", "/checkout_sessions", {"amount": 5000, "currency": "usd", "metadata": {"tenant": "acme"},
                                             "setup_future_usage": "off_session"})
    evt = wait_for(lambda: receiver.events("checkout.session.completed"), what="checkout.session.completed")[0]
    cs = evt.data.object
    assert cs.id.startswith("cs_test_") and cs.metadata["tenant"] == "acme" and cs.payment_status == "paid"
    pi = c.v1.payment_intents.retrieve(cs.payment_intent, params={"expand": ["payment_method"]})
    assert pi.status == "succeeded" and pi.customer == cs.customer
    assert pi.payment_method.customer == cs.customer  # saved for later, off-session charges
    assert charges(base)["succeeded"] == 1
    assert c.v1.checkout.sessions.retrieve(cs.id).payment_intent == pi.id


def session_params(amount=2500, **extra):
    """A top-up's session as the wallet's Stripe module creates it."""
    return {"mode": "payment", "line_items": [{"price_data": {"currency": "usd", "unit_amount": amount,
                                                              "product_data": {"name": "Wallet top-up"}},
                                               "quantity": 1}],
            "success_url": "https://app.example/ok?s={CHECKOUT_SESSION_ID}", "cancel_url": "https://app.example/no",
            "client_reference_id": "acme", "metadata": {"tenant": "acme"},
            "payment_intent_data": {"metadata": {"tenant": "acme"}}, **extra}


def pay(base, cs_id, **spec):
    """Pays the session; its webhooks held unless `webhook` says otherwise (none left in flight)."""
    return ctl(base, "POST", f"/checkout_sessions/{cs_id}/pay", {"webhook": "never", **spec})


def delivered(receiver, *ids):
    """The events delivered about these objects, in the order they came (an earlier test's late
    deliveries left out)."""
    return [e for e in receiver.events() if e.data.object.id in ids]


def test_a_checkout_session_is_created_open_with_a_url(base):
    c = client(base)
    cs = c.v1.checkout.sessions.create(params=session_params(customer_creation="always"))
    assert re.fullmatch(r"cs_test_\w+", cs.id) and cs.object == "checkout.session"
    assert (cs.status, cs.payment_status, cs.mode) == ("open", "unpaid", "payment")
    assert (cs.amount_total, cs.currency, cs.customer, cs.payment_intent) == (2500, "usd", None, None)
    assert cs.metadata["tenant"] == "acme" and cs.client_reference_id == "acme"
    assert cs.customer_creation == "always" and "payment_intent_data" not in cs
    assert cs.url == f"{base}/_standin/checkout_sessions/{cs.id}"
    with urllib.request.urlopen(cs.url, timeout=5) as r:  # the payer's page says how to pay
        page = json.load(r)
    assert page["object"]["id"] == cs.id and page["pay"].startswith(f"POST {cs.url}/pay")
    assert c.v1.checkout.sessions.retrieve(cs.id).status == "open"


def _items(**price_data):
    return [{"price_data": {"currency": "usd", "unit_amount": 2500, "product_data": {"name": "x"},
                            **price_data}, "quantity": 1}]


@pytest.mark.parametrize("params,code,param", [
    ({"mode": None}, "parameter_missing", "mode"),
    ({"mode": "subscription"}, None, "mode"),
    ({"line_items": None}, "parameter_missing", "line_items"),
    ({"line_items": [{"price_data": {"currency": "usd", "unit_amount": 100, "product_data": {"name": "x"}}}]},
     "parameter_missing", "line_items[0][quantity]"),
    ({"line_items": _items(unit_amount=None)}, "parameter_missing", "line_items[0][price_data][unit_amount]"),
    ({"line_items": _items(product_data={})}, "parameter_missing", "line_items[0][price_data][product_data][name]"),
    ({"line_items": _items(currency="usdx")}, "parameter_invalid_string", "line_items[0][price_data][currency]"),
    ({"line_items": _items(unit_amount=49)}, "amount_too_small", "line_items"),
    ({"line_items": _items(unit_amount=100_000_000)}, "amount_too_large", "line_items"),
    ({"line_items": [{"price": "price_123", "quantity": 1}]}, "resource_missing", "line_items[0][price]"),
    ({"success_url": "not a url"}, "url_invalid", "success_url"),
    ({"customer": "cus_x", "customer_creation": "always"}, None, "customer_creation"),
    ({"payment_intent_data": {"setup_future_usage": "sometimes"}}, None,
     "payment_intent_data[setup_future_usage]"),
    ({"payment_intent_data": {"capture": "x"}}, "parameter_unknown", "payment_intent_data[capture]"),
    ({"payment_intent_data": {"metadata": {"t" * 41: "x"}}}, None, "payment_intent_data[metadata][" + "t" * 41 + "]"),
    ({"shipping": "x"}, "parameter_unknown", "shipping"),
])
def test_a_session_is_validated_as_stripe_does_and_a_refusal_is_not_saved(base, params, code, param):
    c = client(base)
    bad = {k: v for k, v in {**session_params(), **params}.items() if v is not None}
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.checkout.sessions.create(params=bad, options={"idempotency_key": "cs-k"})
    assert e.value.http_status == 400 and e.value.error.param == param
    assert e.value.code == code
    if code != "resource_missing":  # parameter validation: nothing saved, the key is free again
        ok = c.v1.checkout.sessions.create(params=session_params(), options={"idempotency_key": "cs-k"})
        assert ok.status == "open"


def test_the_same_key_creates_one_session(base):
    c = client(base)
    first = c.v1.checkout.sessions.create(params=session_params(), options={"idempotency_key": "top-up-1"})
    again = c.v1.checkout.sessions.create(params=session_params(), options={"idempotency_key": "top-up-1"})
    assert again.id == first.id and again.last_response.headers["Idempotent-Replayed"] == "true"
    with pytest.raises(stripe.IdempotencyError):
        c.v1.checkout.sessions.create(params=session_params(amount=2600), options={"idempotency_key": "top-up-1"})
    # a customer that does not exist: the endpoint ran, so the 400 is saved for the key
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.checkout.sessions.create(params=session_params(customer="cus_nope"), options={"idempotency_key": "k2"})
    assert e.value.code == "resource_missing"
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.checkout.sessions.create(params=session_params(customer="cus_nope"), options={"idempotency_key": "k2"})
    assert e.value.headers["Idempotent-Replayed"] == "true"
    sessions = [r for r in ctl(base, "GET", "/requests")["data"] if r["path"] == "/v1/checkout/sessions"]
    assert [r["replayed"] for r in sessions] == [False, True, False, False, True]


def test_paying_a_session_saves_the_method_and_tells_the_tenant_on_both_events(base, receiver):
    c = client(base)
    cs = c.v1.checkout.sessions.create(params=session_params(
        customer_creation="always", payment_intent_data={"metadata": {"tenant": "acme"},
                                                         "setup_future_usage": "off_session"}))
    out = pay(base, cs.id, email="ops@acme.test", webhook="before")
    # delivered one after the other before the answer: the intent's event first by default
    got = delivered(receiver, cs.id, out["payment_intent"]["id"])
    assert [e.type for e in got] == ["payment_intent.succeeded", "checkout.session.completed"]
    pi, done = got[0].data.object, got[1].data.object
    assert pi.metadata["tenant"] == "acme" and done.metadata["tenant"] == "acme"
    assert (done.id, done.status, done.payment_status) == (cs.id, "complete", "paid")
    assert done.payment_intent == pi.id and done.customer == pi.customer and pi.customer.startswith("cus_")
    assert done.amount_total == pi.amount_received == 2500 and done.client_reference_id == "acme"
    assert done.customer_details.email == "ops@acme.test"
    assert pi.setup_future_usage == "off_session"
    assert c.v1.payment_methods.retrieve(pi.payment_method).customer == pi.customer  # autopay can use it
    assert out["object"]["status"] == "complete" and out["payment_intent"]["id"] == pi.id
    assert charges(base)["succeeded"] == 1
    again = c.v1.payment_intents.create(params=charge_params(c.v1.customers.retrieve(pi.customer),
                                                             pi.payment_method))
    assert again.status == "succeeded"  # off-session, on the saved method
    with pytest.raises(urllib.error.HTTPError) as e:  # paid once
        pay(base, cs.id)
    assert e.value.code == 400


def test_the_session_event_can_come_first(base, receiver):
    cs = client(base).v1.checkout.sessions.create(params=session_params())
    out = pay(base, cs.id, order="session_first", webhook="before")
    got = delivered(receiver, cs.id, out["payment_intent"]["id"])
    assert [e.type for e in got] == ["checkout.session.completed", "payment_intent.succeeded"]


def test_a_guest_payment_saves_no_method_without_a_customer(base):
    c = client(base)
    cs = c.v1.checkout.sessions.create(params=session_params(
        payment_intent_data={"metadata": {"tenant": "acme"}, "setup_future_usage": "off_session"}))
    out = pay(base, cs.id)
    assert out["object"]["customer"] is None and out["payment_intent"]["customer"] is None
    assert c.v1.payment_methods.retrieve(out["payment_intent"]["payment_method"]).customer is None


def test_a_session_of_a_known_customer_pays_with_it(base):
    c = client(base)
    cus = c.v1.customers.create(params={"email": "ops@acme.test"})
    cs = c.v1.checkout.sessions.create(params=session_params(customer=cus.id))
    assert cs.customer == cus.id
    out = pay(base, cs.id)
    assert out["payment_intent"]["customer"] == cus.id and out["object"]["customer"] == cus.id


def test_a_declining_card_leaves_the_session_open_for_another_try(base, receiver):
    c = client(base)
    cs = c.v1.checkout.sessions.create(params=session_params())
    with pytest.raises(urllib.error.HTTPError) as e:
        pay(base, cs.id, payment_method="pm_card_visa_chargeDeclined", webhook="before")
    error = json.load(e.value)["error"]
    assert e.value.code == 402 and error["decline_code"] == "generic_decline"
    assert c.v1.checkout.sessions.retrieve(cs.id).status == "open"
    pi_id = error["payment_intent"]["id"]
    assert [e.type for e in delivered(receiver, cs.id, pi_id)] == ["payment_intent.payment_failed"]
    out = pay(base, cs.id, payment_method="pm_card_visa", webhook="before")
    assert out["object"]["status"] == "complete"
    assert out["payment_intent"]["id"] == pi_id  # the same intent, confirmed again
    assert [e.type for e in delivered(receiver, cs.id, pi_id)] == [
        "payment_intent.payment_failed", "payment_intent.succeeded", "checkout.session.completed"]
    assert (charges(base)["succeeded"], charges(base)["failed"]) == (1, 1)


def test_a_detached_method_posts_detached_and_cannot_be_charged(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    c.v1.payment_methods.detach(pm.id)
    evt = wait_for(lambda: receiver.events("payment_method.detached"), what="payment_method.detached")[0]
    assert evt.data.object.id == pm.id and evt.data.object.customer is None
    with pytest.raises(stripe.InvalidRequestError):
        c.v1.payment_intents.create(params=charge_params(cus, pm))
    assert charges(base)["data"] == []


# ------------------------------------------------------------------ the clock

def test_the_clock_starts_at_real_time_and_moves_every_time_the_stand_in_gives(base, receiver):
    c = client(base)
    real = int(time.time())
    assert abs(clock(base) - real) <= 2
    later = clock(base, advance=10 * DAY)
    assert abs(later - (real + 10 * DAY)) <= 2
    cus, pm = customer_with_card(c)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm))
    for obj in (cus, pm, pi, c.v1.charges.retrieve(pi.latest_charge)):
        assert later <= obj.created <= clock(base), obj.object
    # the event's `created` is the stand-in's; its signature's t= the real time, which the receiver
    # checks against its own clock (construct_event: 300 s tolerance): the delivery verifies
    evt = wait_for(lambda: receiver.events("payment_intent.succeeded"), what="payment_intent.succeeded")[0]
    assert evt.created >= later and evt.data.object.id == pi.id
    assert clock(base, set=1_700_000_000) in (1_700_000_000, 1_700_000_001)
    assert c.v1.customers.create(params={}).created - 1_700_000_000 in (0, 1, 2)
    ctl(base, "POST", "/reset")
    assert abs(clock(base) - int(time.time())) <= 2


def test_the_clock_refuses_what_it_cannot_read(base):
    for bad in ({"advance": "1d"}, {"sett": 5}):
        with pytest.raises(urllib.error.HTTPError) as e:
            ctl(base, "POST", "/clock", bad)
        assert e.value.code == 400


# ------------------------------------------------------------------ delayed-notification methods

def sepa_customer(base, c, pm="pm_sepa_debit"):
    out = ctl(base, "POST", "/setup_intents", {"payment_method": pm, "metadata": {"tenant": "acme"}})
    return c.v1.customers.retrieve(out["customer"]["id"]), out["payment_method"]["id"]


def events_about(base, obj_id):
    return [e["event"]["type"] for e in ctl(base, "GET", "/events")["data"]
            if e["event"]["data"]["object"]["id"] == obj_id]


def test_a_sepa_debit_method_attaches_like_a_card(base):
    c = client(base)
    cus, pm_id = sepa_customer(base, c)
    pm = c.v1.payment_methods.retrieve(pm_id)
    assert pm.type == "sepa_debit" and pm.customer == cus.id and "card" not in pm
    assert (pm.sepa_debit.last4, pm.sepa_debit.country, pm.sepa_debit.bank_code) == ("3201", "AT", "19043")
    # Stripe's own test PaymentMethods for SEPA (docs: sepa-debit/accept-a-payment) work too
    for name, last4, country in (("pm_success_de", "3000", "DE"), ("pm_failed_fr", "2607", "FR"),
                                 ("pm_insufficientFunds_at", "2227", "AT")):
        made = c.v1.payment_methods.attach(name, params={"customer": cus.id})
        assert made.id != name and (made.type, made.sepa_debit.last4, made.sepa_debit.country) == (
            "sepa_debit", last4, country)
    by_iban = c.v1.payment_methods.create(params={"type": "sepa_debit",
                                                  "sepa_debit": {"iban": "AT61 1904 3002 3457 3201"}})
    assert by_iban.sepa_debit.last4 == "3201"


def test_an_off_session_sepa_debit_is_processing_until_it_settles_by_the_clock(base, receiver):
    c = client(base)
    cus, pm = sepa_customer(base, c)
    params = {**charge_params(cus, pm), "currency": "eur"}
    pi = c.v1.payment_intents.create(params=params, options={"idempotency_key": "sepa-1"})
    assert pi.status == "processing" and pi.last_payment_error is None and pi.amount_received == 0
    assert pi.payment_method_types == ["sepa_debit"]
    ch = c.v1.charges.retrieve(pi.latest_charge)
    assert ch.status == "pending" and ch.payment_method_details.type == "sepa_debit"
    assert (charges(base)["pending"], charges(base)["succeeded"]) == (1, 0)
    evt = event_about(receiver, "payment_intent.processing", pi.id)
    assert evt.data.object.metadata["tenant"] == "acme"
    # under way: neither confirmed again nor canceled
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.cancel(pi.id)
    assert e.value.code == "payment_intent_unexpected_state" and "status of processing" in e.value.user_message
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.confirm(pi.id, params={"payment_method": pm})
    assert e.value.code == "payment_intent_unexpected_state"
    clock(base, advance=DAY - 60)
    # the key's saved answer is the first one: a replay says processing, whatever happened since
    replay = c.v1.payment_intents.create(params=params, options={"idempotency_key": "sepa-1"})
    assert replay.status == "processing" and replay.last_response.headers["Idempotent-Replayed"] == "true"
    clock(base, advance=3 * DAY)
    assert c.v1.payment_intents.retrieve(pi.id).status == "processing"
    clock(base, advance=60)  # moving the clock is enough: it settles what is due
    assert (charges(base)["pending"], charges(base)["succeeded"]) == (0, 1)
    settled = c.v1.payment_intents.retrieve(pi.id)
    assert settled.status == "succeeded" and settled.amount_received == 2500
    assert c.v1.charges.retrieve(pi.latest_charge).status == "succeeded"
    evt = event_about(receiver, "payment_intent.succeeded", pi.id)
    assert evt.data.object.metadata.to_dict() == {"tenant": "acme", "attempt": "att_1"}
    assert evt.request.id is None  # raised by the settlement, not by a request
    assert events_about(base, pi.id) == ["payment_intent.created", "payment_intent.processing",
                                         "payment_intent.succeeded"]
    assert events_about(base, pi.latest_charge) == ["charge.pending", "charge.succeeded"]


def test_a_failing_sepa_debit_settles_failed(base, receiver):
    c = client(base)
    cus, pm = sepa_customer(base, c, "pm_sepa_debit_fails")
    pi = c.v1.payment_intents.create(params={**charge_params(cus, pm), "currency": "eur"})
    assert pi.status == "processing" and pi.last_payment_error is None
    clock(base, advance=4 * DAY)
    failed = c.v1.payment_intents.retrieve(pi.id)
    assert failed.status == "requires_payment_method"
    err = failed.last_payment_error
    assert (err.type, err.code, err.decline_code) == ("card_error", "payment_method_provider_decline",
                                                      "insufficient_funds")
    ch = c.v1.charges.retrieve(pi.latest_charge)
    assert ch.status == "failed" and ch.failure_code == "insufficient_funds"
    assert (charges(base)["pending"], charges(base)["failed"], charges(base)["succeeded"]) == (0, 1, 0)
    evt = event_about(receiver, "payment_intent.payment_failed", pi.id)
    assert evt.data.object.metadata["tenant"] == "acme"
    assert events_about(base, pi.latest_charge) == ["charge.pending", "charge.failed"]


def test_settlement_is_checked_on_every_request_and_can_be_forced(base):
    c = client(base)
    cus, pm = sepa_customer(base, c)
    assert ctl(base, "POST", "/config", {"settle_after_s": 3600})["settle_after_s"] == 3600
    pis = [c.v1.payment_intents.create(params={**charge_params(cus, pm, f"a{i}"), "currency": "eur"})
           for i in range(3)]
    forced = ctl(base, "POST", f"/payment_intents/{pis[0].id}/settle", {"outcome": "failed"})
    assert forced["object"]["status"] == "requires_payment_method" and forced["charge"]["status"] == "failed"
    with pytest.raises(urllib.error.HTTPError) as e:  # settled already
        ctl(base, "POST", f"/payment_intents/{pis[0].id}/settle", {})
    assert e.value.code == 400
    by_method = ctl(base, "POST", f"/payment_intents/{pis[1].id}/settle", {})
    assert by_method["object"]["status"] == "succeeded"
    ctl(base, "POST", "/config", {"settle_after_s": 0})  # now due: the next API request settles it
    assert c.v1.payment_intents.retrieve(pis[2].id).status == "succeeded"
    ctl(base, "POST", "/reset")
    assert ctl(base, "POST", "/config", {})["settle_after_s"] == 4 * DAY


def test_a_canceled_intent_posts_payment_intent_canceled(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    pi = c.v1.payment_intents.create(params={"amount": 2500, "currency": "usd", "customer": cus.id,
                                             "payment_method": pm.id})
    done = c.v1.payment_intents.cancel(pi.id, params={"cancellation_reason": "duplicate"})
    assert done.status == "canceled" and done.cancellation_reason == "duplicate" and done.canceled_at
    evt = event_about(receiver, "payment_intent.canceled", pi.id)
    assert evt.data.object.cancellation_reason == "duplicate"


# ------------------------------------------------------------------ every PaymentIntent status on demand

# stripe-python's PaymentIntent.status Literal: every status a client may be handed
PI_STATUSES = ["canceled", "processing", "requires_action", "requires_capture", "requires_confirmation",
               "requires_payment_method", "succeeded"]
FORCED = {  # status -> (charges by status, the events the intent raised after payment_intent.created)
    "succeeded": ({"succeeded": 1}, ["payment_intent.succeeded"]),
    "processing": ({"pending": 1}, ["payment_intent.processing"]),
    "requires_capture": ({"succeeded": 1, "uncaptured": 1}, ["payment_intent.amount_capturable_updated"]),
    "requires_confirmation": ({}, []),
    "requires_action": ({}, ["payment_intent.requires_action"]),
    "requires_payment_method": ({"failed": 1}, ["payment_intent.payment_failed"]),
    "canceled": ({}, ["payment_intent.canceled"]),
}


def test_the_forced_statuses_are_stripes():
    import typing
    hint = stripe.PaymentIntent.__annotations__["status"]  # Union[Literal[...], str]
    literal = next(a for a in typing.get_args(hint) if typing.get_origin(a) is typing.Literal)
    assert sorted(typing.get_args(literal)) == PI_STATUSES
    assert sorted(FORCED) == PI_STATUSES == sorted(ss.PI_STATUSES)


@pytest.mark.parametrize("status", PI_STATUSES)
def test_a_fault_makes_the_next_intent_end_in_any_status_answered_200_and_saved(base, status):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, intent_status=status)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": f"st-{status}"})
    assert pi.status == status and pi.last_response.code == 200
    made = charges(base)
    assert {k: made[k] for k in ("succeeded", "pending", "failed", "uncaptured") if made[k]} == FORCED[status][0]
    assert events_about(base, pi.id) == ["payment_intent.created"] + FORCED[status][1]
    assert ctl(base, "GET", "/faults")["faults"] == []
    replay = c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": f"st-{status}"})
    assert replay.id == pi.id and replay.status == status
    assert replay.last_response.headers["Idempotent-Replayed"] == "true"
    if status == "requires_capture":
        assert (pi.amount_capturable, pi.amount_received, pi.capture_method) == (2500, 0, "manual")
        ch = c.v1.charges.retrieve(pi.latest_charge)
        assert ch.status == "succeeded" and ch.captured is False and ch.amount_captured == 0
        assert ch.payment_method_details.card.capture_before == ch.created + 7 * DAY
    elif status == "requires_action":
        assert pi.next_action.type == "use_stripe_sdk" and pi.amount_received == 0
    elif status == "requires_payment_method":
        assert pi.last_payment_error.code == "card_declined" and pi.last_payment_error.type == "card_error"
    elif status == "canceled":
        assert pi.cancellation_reason == "automatic" and pi.canceled_at >= pi.created
    elif status == "requires_confirmation":
        assert pi.payment_method == pm.id and pi.latest_charge is None
    elif status == "succeeded":
        assert pi.amount_received == 2500


def test_a_forced_processing_intent_settles_by_the_clock(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, intent_status="processing")
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm))
    assert pi.status == "processing" and charges(base)["pending"] == 1
    clock(base, advance=4 * DAY)
    assert c.v1.payment_intents.retrieve(pi.id).status == "succeeded" and charges(base)["succeeded"] == 1


def test_an_uncaptured_authorization_is_canceled_after_7_days(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, intent_status="requires_capture")
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm))
    clock(base, advance=7 * DAY - 60)
    assert c.v1.payment_intents.retrieve(pi.id).status == "requires_capture"
    clock(base, advance=60)
    done = c.v1.payment_intents.retrieve(pi.id)
    assert (done.status, done.cancellation_reason, done.amount_capturable) == ("canceled", "automatic", 0)
    assert done.canceled_at >= pi.created + 7 * DAY
    ch = c.v1.charges.retrieve(pi.latest_charge)
    assert ch.captured is False and ch.refunded is True and charges(base)["uncaptured"] == 0
    assert event_about(receiver, "payment_intent.canceled", pi.id).data.object.cancellation_reason == "automatic"
    assert events_about(base, pi.latest_charge) == ["charge.succeeded", "charge.expired"]


def test_a_forced_cancel_takes_a_reason_and_an_unknown_status_is_refused(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    fault(base, intent_status="canceled", cancellation_reason="fraudulent")
    assert c.v1.payment_intents.create(params=charge_params(cus, pm)).cancellation_reason == "fraudulent"
    with pytest.raises(urllib.error.HTTPError) as e:
        fault(base, intent_status="pending")
    assert e.value.code == 400


# ------------------------------------------------------------------ lists, search, control API

def test_list_by_customer_and_creation_and_search_by_metadata(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    other, opm = customer_with_card(c)
    made = [c.v1.payment_intents.create(params=charge_params(cus, pm, f"att_{i}")) for i in range(3)]
    c.v1.payment_intents.create(params=charge_params(other, opm, "att_x"))
    page = c.v1.payment_intents.list(params={"customer": cus.id, "limit": 2})
    assert [p.id for p in page.data] == [made[2].id, made[1].id] and page.has_more
    rest = c.v1.payment_intents.list(params={"customer": cus.id, "limit": 2, "starting_after": made[1].id})
    assert [p.id for p in rest.data] == [made[0].id] and not rest.has_more
    recent = c.v1.payment_intents.list(params={"created": {"gte": made[0].created}, "limit": 100})
    assert len(recent.data) == 4
    assert c.v1.payment_intents.list(params={"created": {"gt": made[2].created + 1}}).data == []
    found = c.v1.payment_intents.search(params={"query": "metadata['attempt']:'att_1'"})
    assert [p.id for p in found.data] == [made[1].id]
    both = c.v1.payment_intents.search(params={"query": "metadata['tenant']:'acme' AND status:'succeeded'"})
    assert len(both.data) == 4


def test_the_list_sees_an_intent_the_moment_it_exists_search_only_after_its_lag(base):
    # https://docs.stripe.com/search, "Data freshness": "Don't use search for read-after-write
    # flows ... Under normal operating conditions, data is searchable in under 1 minute ... use the
    # various list APIs ... These APIs aren't subject to the availability delay"
    c = client(base)
    cus, pm = customer_with_card(c)
    assert ctl(base, "POST", "/config", {"search_lag_s": 60})["search_lag_s"] == 60
    since = clock(base, set=1_800_000_000)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm, "fresh"))
    assert since <= pi.created <= since + 2
    listed = c.v1.payment_intents.list(params={"customer": cus.id, "created": {"gte": since}, "limit": 100})
    assert [p.id for p in listed.data] == [pi.id] and not listed.has_more
    query = {"query": "metadata['attempt']:'fresh'"}
    assert c.v1.payment_intents.search(params=query).data == []  # not indexed yet
    clock(base, advance=59)
    assert c.v1.payment_intents.search(params=query).data == []
    clock(base, advance=1)
    assert [p.id for p in c.v1.payment_intents.search(params=query).data] == [pi.id]
    # the created bounds follow the clock: before `since`, nothing; events filter the same way
    assert c.v1.payment_intents.list(params={"created": {"lt": since}}).data == []
    assert {e.type for e in c.v1.events.list(params={"created": {"gte": since}, "limit": 100}).data} >= {
        "payment_intent.created", "payment_intent.succeeded"}
    assert c.v1.events.list(params={"created": {"lt": since}, "type": "payment_intent.created"}).data == []
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.payment_intents.list(params={"limit": 101})
    assert e.value.param == "limit"
    ctl(base, "POST", "/reset")
    assert ctl(base, "POST", "/config", {})["search_lag_s"] == 0


def test_a_page_of_the_list_goes_on_where_the_last_ended(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    made = [c.v1.payment_intents.create(params=charge_params(cus, pm, f"p{i}")) for i in range(5)]
    first = c.v1.payment_intents.list(params={"customer": cus.id, "limit": 2})
    rest = c.v1.payment_intents.list(params={"customer": cus.id, "limit": 100, "starting_after": first.data[-1].id})
    assert [p.id for p in first.data + rest.data] == [p.id for p in reversed(made)]
    assert first.has_more and not rest.has_more


def test_reset_forgets_everything(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    c.v1.payment_intents.create(params=charge_params(cus, pm), options={"idempotency_key": "kz"})
    scus, spm = sepa_customer(base, c)
    processing = c.v1.payment_intents.create(params={**charge_params(scus, spm), "currency": "eur"})
    assert processing.status == "processing"
    fault(base, kind="lock_timeout")
    ctl(base, "POST", "/config", {"key_ttl_s": 5, "settle_after_s": 7, "search_lag_s": 9})
    clock(base, advance=30 * DAY)
    ctl(base, "POST", "/reset")
    assert charges(base)["data"] == [] and ctl(base, "GET", "/requests")["data"] == []
    assert ctl(base, "GET", "/faults")["faults"] == []
    assert abs(clock(base) - time.time()) <= 2
    assert {k: v for k, v in ctl(base, "POST", "/config", {}).items() if k.endswith("_s")} == {
        "key_ttl_s": 86400, "settle_after_s": 4 * DAY, "search_lag_s": 0}
    assert ctl(base, "GET", "/events")["data"] == []  # the forgotten intent never settles
    with pytest.raises(stripe.InvalidRequestError):
        c.v1.customers.retrieve(cus.id)


def test_the_command_prints_one_ready_line_and_stops_on_sigterm(receiver):
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "stripe_standin.py"), "--port", "0", "--quiet",
                             "--webhook-url", receiver.url, "--webhook-secret", SECRET],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        m = re.match(r"stripe-standin ready on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        assert ctl(m.group(1), "GET", "/health") == {"ok": True}
        assert client(m.group(1)).v1.customers.create(params={}).id.startswith("cus_")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ List all events, dropped webhooks

def payments(c, cus, pm, n):
    return [c.v1.payment_intents.create(params=charge_params(cus, pm, f"ev{i}")) for i in range(n)]


def test_events_are_listed_newest_first_in_pages_by_type_or_types(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    made = payments(c, cus, pm, 3)
    wanted = ["payment_intent.succeeded", "charge.succeeded"]
    first = c.v1.events.list(params={"types": wanted, "limit": 4})
    assert first.has_more and len(first.data) == 4
    rest = c.v1.events.list(params={"types": wanted, "limit": 100, "starting_after": first.data[-1].id})
    assert not rest.has_more
    listed = first.data + rest.data
    assert [e.type for e in listed] == ["payment_intent.succeeded", "charge.succeeded"] * 3
    assert [e.data.object.id for e in listed if e.type == "payment_intent.succeeded"] == [
        p.id for p in reversed(made)]
    assert [e.created for e in listed] == sorted((e.created for e in listed), reverse=True)
    # ending_before: the page just newer than the cursor, still newest first
    newer = c.v1.events.list(params={"types": wanted, "limit": 2, "ending_before": rest.data[0].id})
    assert [e.id for e in newer.data] == [e.id for e in first.data[2:4]] and newer.has_more
    # `type`, with `*` for a group of events
    one = c.v1.events.list(params={"type": "payment_intent.succeeded", "limit": 100})
    assert [e.id for e in one.data] == [e.id for e in listed if e.type == "payment_intent.succeeded"]
    group = {e.type for e in c.v1.events.list(params={"type": "payment_intent.*", "limit": 100}).data}
    assert group == {"payment_intent.created", "payment_intent.succeeded"}
    assert c.v1.events.list(params={"type": "payment_intent", "limit": 100}).data == []


@pytest.mark.parametrize("params, param", [
    ({"type": "charge.succeeded", "types": ["charge.succeeded"]}, "types"),
    ({"types": [f"t{i}.x" for i in range(21)]}, "types"),
    ({"delivery_success": "maybe"}, "delivery_success"),
    ({"limit": 101}, "limit"),
    ({"created": {"after": 1}}, "created[after]"),
    ({"status": "failed"}, "status"),
])
def test_events_list_refuses_what_stripe_refuses(base, params, param):
    with pytest.raises(stripe.InvalidRequestError) as e:
        client(base).v1.events.list(params=params)
    assert e.value.http_status == 400 and e.value.param == param


def test_dropped_webhooks_are_what_delivery_success_false_lists_until_delivered(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    [before] = payments(c, cus, pm, 1)
    event_about(receiver, "payment_intent.succeeded", before.id)
    wait_for(lambda: ctl(base, "GET", "/events?type=payment_intent.succeeded")["data"][0]["status"] == "delivered",
             what="the delivery recorded")
    # the endpoint "down" for an hour of the stand-in clock: events made, none delivered
    state = ctl(base, "POST", "/webhooks", {"drop_for_s": 3600})
    assert state["dropping"] and state["drop_until"] >= clock(base) + 3599
    lost = payments(c, cus, pm, 2)
    undelivered = {"types": ["payment_intent.succeeded"], "delivery_success": False, "limit": 100}
    assert [e.data.object.id for e in c.v1.events.list(params=undelivered).data] == [p.id for p in reversed(lost)]
    delivered = c.v1.events.list(params={**undelivered, "delivery_success": True}).data
    assert [e.data.object.id for e in delivered] == [before.id]
    dropped = ctl(base, "GET", "/webhooks")["dropped"]
    assert len(dropped) == 2 and {e["status"] for e in ctl(base, "GET", "/events")["data"]
                                  if e["event"]["id"] in dropped} == {"dropped"}
    # an hour later the endpoint is back: new events are delivered, the dropped ones are not
    clock(base, advance=3600)
    assert not ctl(base, "GET", "/webhooks")["dropping"]
    [after] = payments(c, cus, pm, 1)
    event_about(receiver, "payment_intent.succeeded", after.id)
    assert {e.data.object.id for e in receiver.events("payment_intent.succeeded")} == {before.id, after.id}
    # until delivered late anyway: then nothing is undelivered
    assert ctl(base, "POST", "/webhooks/redeliver")["redelivered"] == dropped
    for p in lost:
        event_about(receiver, "payment_intent.succeeded", p.id)
    wait_for(lambda: c.v1.events.list(params=undelivered).data == [], what="every delivery recorded")
    # told to drop until told otherwise, and told otherwise
    assert ctl(base, "POST", "/webhooks", {"drop": True})["dropping"]
    clock(base, advance=30 * DAY - 1)
    assert ctl(base, "GET", "/webhooks")["dropping"]
    assert not ctl(base, "POST", "/webhooks", {"drop": False})["dropping"]
    with pytest.raises(urllib.error.HTTPError) as e:
        ctl(base, "POST", "/webhooks", {"drop": "yes"})
    assert e.value.code == 400


def test_events_older_than_30_days_are_neither_listed_nor_retrieved(base):
    c = client(base)
    cus, pm = customer_with_card(c)
    [old] = payments(c, cus, pm, 1)
    [evt] = c.v1.events.list(params={"type": "payment_intent.succeeded"}).data
    clock(base, advance=30 * DAY - 5)
    assert c.v1.events.retrieve(evt.id).id == evt.id
    assert [e.id for e in c.v1.events.list(params={"type": "payment_intent.succeeded"}).data] == [evt.id]
    clock(base, advance=10)
    assert c.v1.events.list(params={"type": "payment_intent.succeeded"}).data == []
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.events.retrieve(evt.id)
    assert e.value.code == "resource_missing" and old.id


# ------------------------------------------------------------------ refunds

def test_refunds_add_up_to_the_charge_in_parts_each_raising_its_events(base, receiver):
    c = client(base)
    cus, pm = customer_with_card(c)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm, amount=2500))
    first = c.v1.refunds.create(params={"payment_intent": pi.id, "amount": 1000,
                                        "reason": "requested_by_customer", "metadata": {"ticket": "7"}})
    assert (first.object, first.status, first.amount, first.currency) == ("refund", "succeeded", 1000, "usd")
    assert (first.payment_intent, first.charge, first.metadata["ticket"]) == (pi.id, pi.latest_charge, "7")
    assert c.v1.refunds.retrieve(first.id).amount == 1000
    ch = c.v1.charges.retrieve(pi.latest_charge)
    assert (ch.amount_refunded, ch.refunded) == (1000, False)
    evt = event_about(receiver, "charge.refunded", ch.id)
    assert (evt.data.object.amount_refunded, evt.data.object.refunded) == (1000, False)
    assert event_about(receiver, "refund.created", first.id).data.object.amount == 1000
    # more than is left: refused, nothing changed
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.refunds.create(params={"charge": ch.id, "amount": 1501})
    assert e.value.param == "amount"
    assert c.v1.charges.retrieve(ch.id).amount_refunded == 1000
    # the rest, by the charge and no amount
    rest = c.v1.refunds.create(params={"charge": ch.id})
    assert rest.amount == 1500
    ch = c.v1.charges.retrieve(ch.id)
    assert (ch.amount_refunded, ch.refunded) == (2500, True)
    wait_for(lambda: [e for e in receiver.events("charge.refunded")
                      if e.data.object.id == ch.id and e.data.object.refunded], what="the full refund's event")
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.refunds.create(params={"payment_intent": pi.id, "amount": 1})
    assert e.value.code == "charge_already_refunded"
    # the intent itself is not changed by its refunds
    assert c.v1.payment_intents.retrieve(pi.id).amount_received == 2500


@pytest.mark.parametrize("params,param", [
    ({}, None),
    ({"payment_intent": "pi_nope"}, "payment_intent"),
    ({"charge": "ch_nope"}, "charge"),
    ({"payment_intent": "PI", "amount": "0"}, "amount"),
    ({"payment_intent": "PI", "reason": "changed_mind"}, "reason"),
    ({"payment_intent": "PI", "currency": "usd"}, "currency"),
])
def test_a_refund_is_validated_as_stripe_does(base, params, param):
    c = client(base)
    cus, pm = customer_with_card(c)
    pi = c.v1.payment_intents.create(params=charge_params(cus, pm))
    params = {k: (pi.id if v == "PI" else v) for k, v in params.items()}
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.refunds.create(params=params)
    assert e.value.param == param
    assert c.v1.charges.retrieve(pi.latest_charge).amount_refunded == 0


def test_an_intent_without_a_succeeded_charge_has_nothing_to_refund(base):
    c = client(base)
    cus, pm = customer_with_card(c, "pm_card_visa_chargeDeclined")
    with pytest.raises(stripe.CardError) as declined:
        c.v1.payment_intents.create(params=charge_params(cus, pm))
    with pytest.raises(stripe.InvalidRequestError) as e:
        c.v1.refunds.create(params={"payment_intent": declined.value.error.payment_intent.id})
    assert e.value.param == "payment_intent"
