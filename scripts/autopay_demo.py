#!/usr/bin/env python3
"""Autopay by hand against the Stripe stand-in that `make dev` starts (standard library only).

    .venv/bin/python scripts/autopay_demo.py setup acme [--card pm_card_visa]
    .venv/bin/python scripts/autopay_demo.py charge acme --amount 2000 --currency usd
    .venv/bin/python scripts/autopay_demo.py events [--type payment_intent.succeeded]

- `setup TENANT`: what a customer's card setup leaves at Stripe, through the stand-in's API:
  a customer (`metadata[tenant]`), a test payment method attached to it (`--card`, Stripe's test
  ids: `pm_card_visa` succeeds, `pm_card_visa_chargeDeclinedInsufficientFunds` declines soft,
  `pm_card_chargeDeclinedExpiredCard` hard, `pm_card_authenticationRequired` needs the customer),
  then a succeeded SetupIntent naming the tenant in its `metadata`, whose signed
  `setup_intent.succeeded` the stand-in posts to ingest's `stripe` URL (how the wallet learns the
  customer and the payment method). The customer and method are remembered in
  `.local/autopay-demo.json` for `charge`.
- `charge TENANT`: an off-session PaymentIntent as the charging function makes it (`confirm`,
  `off_session`, the saved customer and method, `metadata[tenant]`, an `Idempotency-Key`); its
  `payment_intent.succeeded` (or `.payment_failed`) goes to ingest. A declined card answers 402
  and is printed, not raised.
- `events`: the stand-in's events and how each webhook delivery went (the ingest's HTTP status).

After `setup` and `charge` it waits (up to `--wait` seconds) until the stand-in has posted the
webhook and prints ingest's answer, so a 2xx here means ingest accepted the signed event:
`inboxctl list --source stripe` shows it, `inboxctl show stripe EVENT_ID` its fate.

Settings: `STRIPE_API_BASE` (default http://127.0.0.1:12111) and `STRIPE_SECRET_KEY` (default
sk_test_local), as `make dev` exports them (also in `.local/dev-env-<port>.sh`).
"""

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local" / "autopay-demo.json"


class Api:
    def __init__(self, base: str, key: str):
        self.base = base.rstrip("/")
        self.key = key

    def _send(self, method: str, path: str, data: bytes | None, headers: dict) -> tuple[int, dict]:
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def stripe(self, method: str, path: str, form: dict | None = None, idempotency_key: str | None = None):
        """A Stripe API call: form-encoded, bearer key; (status, JSON)."""
        headers = {"Authorization": f"Bearer {self.key}"}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        return self._send(method, path, data, headers)

    def control(self, method: str, path: str, body: dict | None = None):
        """The stand-in's own control API (`/_standin/...`, JSON)."""
        data = None if body is None else json.dumps(body).encode()
        return self._send(method, "/_standin" + path, data, {"Content-Type": "application/json"})


def ok(status: int, body: dict, what: str) -> dict:
    if 200 <= status < 300:
        return body
    err = body.get("error") or {}
    sys.exit(f"{what}: HTTP {status} {err.get('type', '')} {err.get('code', '')} {err.get('message', body)}")


def load_state() -> dict:
    try:
        return json.loads(STATE.read_text())
    except (OSError, ValueError):
        return {}


def save_state(state: dict) -> None:
    STATE.parent.mkdir(parents=True, exist_ok=True)
    STATE.write_text(json.dumps(state, indent=2) + "\n")


def wait_for_delivery(api: Api, event_type: str, object_id: str, wait: float) -> int:
    """Waits until the stand-in posted the event about `object_id`; prints ingest's answers."""
    deadline = time.monotonic() + wait
    while True:
        _, body = api.control("GET", "/events?type=" + urllib.parse.quote(event_type))
        for entry in body.get("data", []):
            evt = entry.get("event", {})
            if evt.get("data", {}).get("object", {}).get("id") != object_id:
                continue
            if entry.get("status") in ("delivered", "failed"):
                deliveries = entry.get("deliveries") or []
                for d in deliveries:
                    print(f"  webhook {event_type} {evt['id']} attempt {d.get('attempt')}: "
                          f"ingest answered {d.get('status', d.get('error'))}")
                return 0 if entry["status"] == "delivered" else 1
        if time.monotonic() >= deadline:
            print(f"  no answer from ingest to {event_type} about {object_id} within {wait:g}s "
                  f"(is make dev's function host up? `autopay_demo.py events` shows the attempts)")
            return 1
        time.sleep(0.2)


def setup(api: Api, args) -> int:
    customer = ok(*api.stripe("POST", "/v1/customers", {
        "email": args.email or f"{args.tenant}@example.com",
        "metadata[tenant]": args.tenant,
    }), "creating the customer")
    pm = ok(*api.stripe("POST", f"/v1/payment_methods/{args.card}/attach", {"customer": customer["id"]}),
            f"attaching {args.card}")
    seti = ok(*api.control("POST", "/setup_intents", {
        "customer": customer["id"],
        "payment_method": pm["id"],
        "metadata": {"tenant": args.tenant},
    }), "completing the setup")["object"]
    state = load_state()
    state[args.tenant] = {"customer": customer["id"], "payment_method": pm["id"], "card": args.card}
    save_state(state)
    print(f"tenant {args.tenant}: customer {customer['id']}, payment method {pm['id']} ({args.card}), "
          f"setup intent {seti['id']} succeeded")
    return wait_for_delivery(api, "setup_intent.succeeded", seti["id"], args.wait)


def charge(api: Api, args) -> int:
    saved = load_state().get(args.tenant, {})
    customer = args.customer or saved.get("customer")
    method = args.payment_method or saved.get("payment_method")
    if not customer or not method:
        sys.exit(f"no saved card for {args.tenant}: run `autopay_demo.py setup {args.tenant}` first, "
                 f"or give --customer and --payment-method")
    key = args.idempotency_key or f"demo-{args.tenant}-{uuid.uuid4().hex[:12]}"
    status, pi = api.stripe("POST", "/v1/payment_intents", {
        "amount": str(args.amount),
        "currency": args.currency,
        "customer": customer,
        "payment_method": method,
        "confirm": "true",
        "off_session": "true",
        "metadata[tenant]": args.tenant,
        "metadata[attempt]": args.attempt or key,
    }, idempotency_key=key)
    if status == 402:
        err = pi.get("error", {})
        pi = err.get("payment_intent") or {}
        print(f"declined: {err.get('code')} {err.get('decline_code') or ''} (HTTP 402, Idempotency-Key {key})")
        if not pi.get("id"):
            return 1
        return wait_for_delivery(api, "payment_intent.payment_failed", pi["id"], args.wait) or 1
    pi = ok(status, pi, "charging")
    print(f"payment intent {pi['id']}: {pi['status']}, {pi['amount']} {pi['currency']} "
          f"(Idempotency-Key {key})")
    return wait_for_delivery(api, "payment_intent.succeeded", pi["id"], args.wait)


def events(api: Api, args) -> int:
    path = "/events" + ("?type=" + urllib.parse.quote(args.type) if args.type else "")
    body = ok(*api.control("GET", path), "listing the events")
    for entry in body.get("data", []):
        evt = entry.get("event", {})
        answers = ", ".join(str(d.get("status", d.get("error"))) for d in entry.get("deliveries") or []) or "-"
        print(f"{evt.get('id')}  {evt.get('type', ''):<32} {evt.get('data', {}).get('object', {}).get('id', '')}  "
              f"{entry.get('status')}, ingest answered: {answers}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api-base", default=os.environ.get("STRIPE_API_BASE") or "http://127.0.0.1:12111")
    ap.add_argument("--key", default=os.environ.get("STRIPE_SECRET_KEY") or "sk_test_local")
    ap.add_argument("--wait", type=float, default=15, help="seconds to wait for ingest's answer")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="a customer, an attached test card, setup_intent.succeeded naming TENANT")
    s.add_argument("tenant")
    s.add_argument("--card", default="pm_card_visa", help="a Stripe test payment method id")
    s.add_argument("--email")
    c = sub.add_parser("charge", help="an off-session PaymentIntent with metadata[tenant]")
    c.add_argument("tenant")
    c.add_argument("--amount", type=int, required=True, help="minor units")
    c.add_argument("--currency", default="usd")
    c.add_argument("--customer", help="default: the one `setup` saved")
    c.add_argument("--payment-method", help="default: the one `setup` saved")
    c.add_argument("--attempt", help="metadata[attempt] (default: the idempotency key)")
    c.add_argument("--idempotency-key", help="default: a fresh one (repeat one to see a replay)")
    e = sub.add_parser("events", help="the stand-in's events and ingest's answers to them")
    e.add_argument("--type")
    args = ap.parse_args(argv)
    api = Api(args.api_base, args.key)
    try:
        return {"setup": setup, "charge": charge, "events": events}[args.command](api, args)
    except urllib.error.URLError as e:
        sys.exit(f"the Stripe stand-in at {args.api_base} does not answer ({e.reason}); is `make dev` running?")


if __name__ == "__main__":
    sys.exit(main())
