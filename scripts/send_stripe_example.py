#!/usr/bin/env python3
"""Send a realistic, correctly signed Stripe webhook to a running ingest endpoint.

    .venv/bin/python scripts/send_stripe_example.py http://127.0.0.1:9000/lambda-url/ingest/webhooks/stripe
    .venv/bin/python scripts/send_stripe_example.py URL --repeat 3          # same event 3x: 1 accepted, 2 duplicates
    .venv/bin/python scripts/send_stripe_example.py URL --event-id evt_123 --type charge.refunded
    .venv/bin/python scripts/send_stripe_example.py URL --secret whsec_wrong  # expect 401

The body is a `checkout.session.completed` test-mode event (random `evt_...`, `cs_test_...`,
`pi_...` ids, metadata {"tenant": "acme"}). The `Stripe-Signature` header is computed by the
official stripe library (`stripe.WebhookSignature.generate_signature_header`), so this also
checks our verifier against Stripe's own signing code.

--repeat N re-sends the byte-identical body N times, signing each attempt with the current
time, as Stripe does when it retries a delivery. The secret defaults to
$STRIPE_WEBHOOK_SECRET or `whsec_local_stripe_secret` (the one in local/secrets.json).

Exit status: 0 if every response was 2xx, 1 otherwise (including connection errors).
Only the standard library (urllib) and stripe are used.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import string
import sys
import time
import urllib.error
import urllib.request

import stripe

DEFAULT_SECRET = "whsec_local_stripe_secret"
FALLBACK_API_VERSION = "2024-06-20"
_ALNUM = string.ascii_letters + string.digits


def stripe_id(prefix: str, n: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(n))


def api_version() -> str:
    try:
        from stripe._api_version import _ApiVersion  # stripe >= 8

        return str(_ApiVersion.CURRENT)
    except Exception:  # pragma: no cover - other stripe versions
        return FALLBACK_API_VERSION


def build_event(event_id: str, event_type: str, amount: int, currency: str) -> dict:
    now = int(time.time())
    session_id = stripe_id("cs_test_a1", 56)
    return {
        "id": event_id,
        "object": "event",
        "api_version": api_version(),
        "created": now,
        "data": {
            "object": {
                "id": session_id,
                "object": "checkout.session",
                "amount_subtotal": amount,
                "amount_total": amount,
                "client_reference_id": "order_1042",
                "created": now - 42,
                "currency": currency,
                "customer": stripe_id("cus_", 14),
                "customer_details": {
                    "email": "jenny.rosen@example.com",
                    "name": "Jenny Rosen",
                },
                "expires_at": now - 42 + 24 * 3600,
                "livemode": False,
                "metadata": {"tenant": "acme"},
                "mode": "payment",
                "payment_intent": stripe_id("pi_"),
                "payment_method_types": ["card"],
                "payment_status": "paid",
                "status": "complete",
                "success_url": "https://example.com/success",
                "url": None,
            }
        },
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def post(url: str, body: bytes, signature: str, timeout: float) -> tuple[int, str]:
    req = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "Stripe-Signature": signature,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="POST a signed Stripe checkout.session.completed test event to URL.")
    parser.add_argument("url", help="ingest endpoint, e.g. http://127.0.0.1:9000/lambda-url/ingest/webhooks/stripe")
    parser.add_argument("--secret", default=os.environ.get("STRIPE_WEBHOOK_SECRET", DEFAULT_SECRET),
                        help="endpoint signing secret (default: $STRIPE_WEBHOOK_SECRET or %(default)s)")
    parser.add_argument("--event-id", default=None, help="event id (default: random evt_...)")
    parser.add_argument("--type", default="checkout.session.completed", help="event type (default: %(default)s)")
    parser.add_argument("--amount", type=int, default=4200, help="amount_total in minor units (default: %(default)s)")
    parser.add_argument("--currency", default="usd", help="currency (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1, help="send the same delivery N times (default: 1)")
    parser.add_argument("--timeout", type=float, default=30.0, help="HTTP timeout in seconds (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")

    event = build_event(args.event_id or stripe_id("evt_1"), args.type, args.amount, args.currency)
    payload = json.dumps(event, indent=2)  # Stripe sends pretty-printed JSON
    body = payload.encode("utf-8")
    print(f"event {event['id']} ({event['type']}), {len(body)} bytes -> {args.url}")

    ok = True
    for attempt in range(1, args.repeat + 1):
        signature = stripe.WebhookSignature.generate_signature_header(payload, args.secret)
        try:
            status, text = post(args.url, body, signature, args.timeout)
        except (urllib.error.URLError, OSError) as err:
            print(f"[{attempt}/{args.repeat}] request failed: {err}", file=sys.stderr)
            return 1
        ok = ok and 200 <= status < 300
        print(f"[{attempt}/{args.repeat}] HTTP {status} {text}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
