#!/usr/bin/env python3
"""Generate the sample API Gateway HTTP API (payload 2.0) events in events/.

    .venv/bin/python events/generate.py                      # rewrite every events/*.json
    .venv/bin/python events/generate.py --check              # exit 1 if a file differs from what would be written
    .venv/bin/python events/generate.py --fresh-stripe /tmp/stripe-now.json
                                                             # a Stripe event signed NOW (valid ~5 minutes)

Each file is exactly what API Gateway hands the ingest Lambda for route `POST /webhooks/{source}`
and works with `cargo lambda invoke ingest --data-file events/<file>` and
`sam local invoke IngestFunction -e events/<file>`. Signatures use the local secrets of
local/secrets.json (read from there, so the files follow the secrets):

- GitHub: HMAC-SHA256 (and the legacy SHA-1 header) over the raw body with Python's hmac,
  exactly as GitHub documents it; GitHub signs no timestamp, so these files verify forever.
- Stripe: the official `stripe` library (`stripe.WebhookSignature.generate_signature_header`)
  at a FIXED timestamp, so the committed file is stale (401 `timestamp_out_of_tolerance`); use
  `--fresh-stripe PATH` for one signed now.

The output is deterministic (fixed ids and timestamps): regenerating without changes to the
secrets gives byte-identical files. Only the standard library and `stripe` are used.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import secrets
import string
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import stripe

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

API_ID = "abc123"
DOMAIN = f"{API_ID}.execute-api.us-east-1.amazonaws.com"
ROUTE_KEY = "POST /webhooks/{source}"

# Fixed (in the past), so regeneration is reproducible. 2026-11-20T10:00:00Z.
FIXED_TIME = 1_795_168_800
# GitHub delivery ids (X-GitHub-Delivery: unsigned, so kept as metadata; the key is the body's hash).
GITHUB_PING_DELIVERY = "5d1f3a60-ce3b-11f0-8d6a-2a1b3c4d5e6f"
GITHUB_PING_B64_DELIVERY = "7a9c2e10-ce3b-11f0-9b1e-6f5e4d3c2b1a"
GITHUB_BAD_SIG_DELIVERY = "9e4b7c20-ce3b-11f0-8c2d-0a0b0c0d0e0f"
STRIPE_EVENT_ID = "evt_1QfixedLocalSample0001"
STRIPE_API_VERSION = "2024-06-20"

_ALNUM = string.ascii_letters + string.digits


def local_secret(source: str) -> str:
    """The first local secret of `source` (local/secrets.json)."""
    value = json.loads((ROOT / "local" / "secrets.json").read_text())[source]
    return value if isinstance(value, str) else value[0]


def api_gateway_event(
    source: str,
    body: bytes,
    headers: dict[str, str],
    *,
    base64_body: bool = False,
    request_id: str,
    epoch: int = FIXED_TIME,
    user_agent: str,
    source_ip: str,
) -> dict:
    """An HTTP API payload-2.0 event for POST /webhooks/{source}, as API Gateway builds it."""
    path = f"/webhooks/{source}"
    all_headers = {
        # What API Gateway adds or passes through; header names arrive in lower case.
        "content-length": str(len(body)),
        "host": DOMAIN,
        "user-agent": user_agent,
        "x-amzn-trace-id": f"Root=1-{epoch:08x}-{hashlib.sha256(request_id.encode()).hexdigest()[:24]}",
        "x-forwarded-for": source_ip,
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    all_headers.update({k.lower(): v for k, v in headers.items()})
    when = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return {
        "version": "2.0",
        "routeKey": ROUTE_KEY,
        "rawPath": path,
        "rawQueryString": "",
        "headers": dict(sorted(all_headers.items())),
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_ID,
            "domainName": DOMAIN,
            "domainPrefix": API_ID,
            "http": {
                "method": "POST",
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": user_agent,
            },
            "requestId": request_id,
            "routeKey": ROUTE_KEY,
            "stage": "$default",
            "time": when.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": epoch * 1000,
        },
        "pathParameters": {"source": source},
        "body": base64.b64encode(body).decode("ascii") if base64_body else body.decode("utf-8"),
        "isBase64Encoded": base64_body,
    }


# ------------------------------------------------------------------------------------- GitHub


def github_ping_body() -> bytes:
    """A ping payload as GitHub sends it when a webhook is created (compact JSON)."""
    payload = {
        "zen": "Keep it logically awesome.",
        "hook_id": 512345678,
        "hook": {
            "type": "Repository",
            "id": 512345678,
            "name": "web",
            "active": True,
            "events": ["push", "pull_request"],
            "config": {
                "content_type": "json",
                "insecure_ssl": "0",
                "url": f"https://{DOMAIN}/webhooks/github",
            },
            "updated_at": "2026-11-20T10:00:00Z",
            "created_at": "2026-11-20T10:00:00Z",
            "url": "https://api.github.com/repos/acme/shop/hooks/512345678",
            "test_url": "https://api.github.com/repos/acme/shop/hooks/512345678/test",
            "ping_url": "https://api.github.com/repos/acme/shop/hooks/512345678/pings",
            "deliveries_url": "https://api.github.com/repos/acme/shop/hooks/512345678/deliveries",
            "last_response": {"code": None, "status": "unused", "message": None},
        },
        "repository": {
            "id": 812345678,
            "node_id": "R_kgDOMBx2Lg",
            "name": "shop",
            "full_name": "acme/shop",
            "private": True,
            "owner": {"login": "acme", "id": 9912345, "type": "Organization"},
            "html_url": "https://github.com/acme/shop",
            "default_branch": "main",
        },
        "sender": {"login": "octocat", "id": 583231, "type": "User"},
    }
    return json.dumps(payload, separators=(",", ":")).encode("utf-8")


def github_headers(body: bytes, secret: str, delivery: str, event: str) -> dict[str, str]:
    key = secret.encode("utf-8")
    return {
        "accept": "*/*",
        "content-type": "application/json",
        "x-github-delivery": delivery,
        "x-github-event": event,
        "x-github-hook-id": "512345678",
        "x-github-hook-installation-target-id": "812345678",
        "x-github-hook-installation-target-type": "repository",
        "x-hub-signature": "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest(),
        "x-hub-signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
    }


def github_event(delivery: str, *, secret: str, base64_body: bool = False, request_id: str) -> dict:
    body = github_ping_body()
    return api_gateway_event(
        "github",
        body,
        github_headers(body, secret, delivery, "ping"),
        base64_body=base64_body,
        request_id=request_id,
        user_agent="GitHub-Hookshot/7f3c2a1",
        source_ip="140.82.115.12",
    )


# ------------------------------------------------------------------------------------- Stripe


def stripe_payload(event_id: str, created: int, session_suffix: str) -> str:
    """A checkout.session.completed test-mode event, pretty-printed as Stripe sends it."""
    event = {
        "id": event_id,
        "object": "event",
        "api_version": STRIPE_API_VERSION,
        "created": created,
        "data": {
            "object": {
                "id": "cs_test_a1" + session_suffix,
                "object": "checkout.session",
                "amount_subtotal": 4200,
                "amount_total": 4200,
                "client_reference_id": "order_1042",
                "created": created - 42,
                "currency": "usd",
                "customer": "cus_R5xLocalSample",
                "customer_details": {"email": "jenny.rosen@example.com", "name": "Jenny Rosen"},
                "expires_at": created - 42 + 24 * 3600,
                "livemode": False,
                "metadata": {"tenant": "acme"},
                "mode": "payment",
                "payment_intent": "pi_3QfixedLocalSample0001",
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
        "type": "checkout.session.completed",
    }
    return json.dumps(event, indent=2)


def stripe_event(event_id: str, timestamp: int, session_suffix: str, request_id: str) -> dict:
    payload = stripe_payload(event_id, timestamp - 1, session_suffix)
    signature = stripe.WebhookSignature.generate_signature_header(
        payload, local_secret("stripe"), timestamp=timestamp
    )
    return api_gateway_event(
        "stripe",
        payload.encode("utf-8"),
        {
            "accept": "*/*; q=0.5, application/xml",
            "cache-control": "no-cache",
            "content-type": "application/json; charset=utf-8",
            "stripe-signature": signature,
        },
        request_id=request_id,
        epoch=timestamp,
        user_agent="Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        source_ip="54.187.174.169",
    )


# ------------------------------------------------------------------------------------- files


def all_events() -> dict[str, dict]:
    github_secret = local_secret("github")
    unknown_body = b'{"id":"evt_unknown_1","type":"test.event"}'
    return {
        "github-ping.json": github_event(
            GITHUB_PING_DELIVERY, secret=github_secret, request_id="Ghp1aXmPLvHcESA="
        ),
        "github-ping-base64.json": github_event(
            GITHUB_PING_B64_DELIVERY,
            secret=github_secret,
            base64_body=True,
            request_id="Ghp2bXmPLvHcESA=",
        ),
        "bad-signature.json": github_event(
            GITHUB_BAD_SIG_DELIVERY, secret="not-the-local-github-secret", request_id="Bad1cXmPLvHcESA="
        ),
        "stripe-checkout-session-completed.json": stripe_event(
            STRIPE_EVENT_ID, FIXED_TIME, "Q7fixedLocalSample", request_id="Str1dXmPLvHcESA="
        ),
        "unknown-source.json": api_gateway_event(
            "nosuchsource",
            unknown_body,
            {
                "content-type": "application/json",
                "x-signature": "sha256=" + hmac.new(b"whatever", unknown_body, hashlib.sha256).hexdigest(),
            },
            request_id="Unk1eXmPLvHcESA=",
            user_agent="curl/8.5.0",
            source_ip="198.51.100.7",
        ),
    }


def render(event: dict) -> str:
    return json.dumps(event, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the sample events in events/.")
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if a file is outdated")
    parser.add_argument(
        "--fresh-stripe",
        metavar="PATH",
        help="write a Stripe event signed now (new event id) to PATH ('-' for stdout) and exit",
    )
    args = parser.parse_args(argv)

    if args.fresh_stripe:
        now = int(time.time())
        suffix = "".join(secrets.choice(_ALNUM) for _ in range(18))
        event_id = "evt_1" + "".join(secrets.choice(_ALNUM) for _ in range(23))
        text = render(stripe_event(event_id, now, suffix, request_id=f"Fresh{now}="))
        if args.fresh_stripe == "-":
            sys.stdout.write(text)
        else:
            Path(args.fresh_stripe).write_text(text)
            print(f"wrote {args.fresh_stripe}: {event_id}, signed at {now} (valid for 300 s)", file=sys.stderr)
        return 0

    outdated = []
    for name, event in all_events().items():
        path = HERE / name
        text = render(event)
        if args.check:
            if not path.exists() or path.read_text() != text:
                outdated.append(name)
        else:
            path.write_text(text)
            print(f"wrote events/{name}", file=sys.stderr)
    if outdated:
        print("outdated: " + ", ".join(outdated) + " (run .venv/bin/python events/generate.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
