#!/usr/bin/env python3
"""A local stand-in for the parts of Stripe's API that autopay and the wallet's hosted top-ups
depend on.

    .venv/bin/python scripts/stripe_standin.py --port 12111 \\
        --webhook-url http://127.0.0.1:9000/lambda-url/ingest/webhooks/stripe \\
        --webhook-secret whsec_local_stripe_secret [--api-key sk_test_local]

Prints one line, `stripe-standin ready on http://127.0.0.1:PORT ...`, when it accepts requests
(`--port 0` picks a free port and prints it) and stops cleanly on SIGTERM or SIGINT. Only the
standard library. Point a client at it with `STRIPE_API_BASE=http://127.0.0.1:PORT`, or the
official library with `StripeClient(key, base_addresses={"api": url})`.

What it serves, with Stripe's wire format (`Authorization: Bearer sk_test_...` or Basic with the
key as user, else 401; form-encoded bodies in bracket notation, `metadata[tenant]=acme`,
`expand[]=x` or `expand[0]=x`; JSON objects with Stripe's id prefixes, `object`, `created`,
`livemode: false`, `metadata`; errors `{"error": {type, code, decline_code, message, param,
payment_intent, ...}}`; a `Request-Id` header on every answer):

- customers: create, retrieve, update, list their payment methods;
- payment methods: Stripe's test ids (`pm_card_visa`, `pm_card_mastercard`, `pm_card_amex`
  succeed; `pm_card_visa_chargeDeclined` generic_decline, `..._chargeDeclinedInsufficientFunds`
  insufficient_funds, `..._chargeDeclinedLostCard` lost_card, `..._chargeDeclinedStolenCard`
  stolen_card, `..._chargeDeclinedFraudulent` fraudulent, all `card_declined`;
  `pm_card_chargeDeclinedExpiredCard` expired_card, `pm_card_chargeDeclinedIncorrectCvc`
  incorrect_cvc, `pm_card_chargeDeclinedProcessingError` processing_error; the names with and
  without `visa_` both work; every test card attaches here and declines when charged, where
  Stripe documents `pm_card_chargeCustomerFail` as the one that attaches and then declines;
  `pm_card_authenticationRequired` needs 3DS on every charge), `tok_<same names>` in
  `card[token]`; SEPA Direct Debit, a delayed-notification method (below): Stripe's test
  PaymentMethods `pm_success_<cc>`, `pm_successDelayed_<cc>` (settle succeeded), `pm_failed_<cc>`,
  `pm_failedDelayed_<cc>`, `pm_insufficientFunds_<cc>` (settle failed) for cc = at, de, fr
  (https://docs.stripe.com/payments/sepa-debit/accept-a-payment, "Test your integration"; their
  IBANs in `sepa_debit[iban]` with `type=sepa_debit`), and the stand-in's own `pm_sepa_debit`
  (settles succeeded) and `pm_sepa_debit_fails` (settles failed), not Stripe's names; their
  PaymentMethods have `type: sepa_debit` and a `sepa_debit` (bank_code, branch_code, country,
  fingerprint, last4); create, retrieve, list, attach (a test id attaches a new `pm_...` copy, as
  on Stripe), detach (`payment_method.detached`; a detached method can't be used again);
- PaymentIntents: create with `amount`, `currency`, `customer`, `payment_method`,
  `confirm=true`, `off_session=true`, `metadata[...]`; confirm, cancel, retrieve, list
  (`customer`, `limit`, `created[gte|gt|lte|lt]`, `starting_after`, `ending_before`, newest
  first; `limit` 1..100, `has_more`), strongly consistent as Stripe's lists are (an intent is
  listed the moment it exists), and search (`query=metadata['attempt']:'x' AND
  status:'succeeded'`, fields `metadata[..]`, `status`, `customer`, `currency`, `amount`), which
  is not: https://docs.stripe.com/search, "Data freshness" ("Don't use search for read-after-write
  flows ... Under normal operating conditions, data is searchable in under 1 minute", the list
  APIs "aren't subject to the availability delay"); an intent younger than `search_lag_s` on the
  stand-in clock (/_standin/config; default 0, immediate) is not found yet (once indexed, search
  sees its current state: the lag of updates is not modelled). A declined confirm answers 402 `card_error` with
  the intent in `requires_payment_method` (its `last_payment_error` set) and a failed charge.
  `pm_card_authenticationRequired` off-session: 402 `authentication_required` (code and
  decline_code), the intent in `requires_payment_method`, `payment_intent.payment_failed`, as
  Stripe documents for off-session charges
  (https://docs.stripe.com/payments/checkout/save-and-reuse, "When a payment attempt fails, the
  request also fails with a 402 HTTP status code and the status of the PaymentIntent is
  requires_payment_method"); on-session: 200 with the intent in `requires_action`
  (`next_action.type = use_stripe_sdk`) and `payment_intent.requires_action` (or the 402 with
  `error_on_requires_action=true`). Cancel raises `payment_intent.canceled`; it refuses (400
  `payment_intent_unexpected_state`) an intent that is `succeeded`, `canceled` or `processing`.
  A SEPA debit confirmed (on- or off-session) answers 200 with the intent `processing` (no
  `last_payment_error`), a `pending` charge (`py_...`, `charge.pending`) and
  `payment_intent.processing`: a delayed-notification method
  (https://docs.stripe.com/payments/payment-methods#payment-notification: the intent stays
  `processing` until the bank says; https://docs.stripe.com/payments/sepa-debit: "it can take up
  to 14 business days to receive notification on the success or failure of a payment ... though
  the average is 7 to 8 business days"). It is neither
  confirmed nor canceled meanwhile. It settles when the stand-in clock reaches its charge's
  `created` + `settle_after_s` (default 345600, 4 days; /_standin/config, read when checked, so
  lowering it settles what it makes due), checked on every request and whenever the clock moves,
  or when forced (/_standin/payment_intents/ID/settle): succeeded (the intent `succeeded`, the
  charge `succeeded`, `charge.succeeded` and `payment_intent.succeeded`) or failed (the intent
  `requires_payment_method`, its `last_payment_error` {type card_error, code
  payment_method_provider_decline, decline_code insufficient_funds}, the charge `failed` with
  `failure_code: insufficient_funds`, `charge.failed` and `payment_intent.payment_failed`).
  Stripe documents the charge's failure code (for `pm_insufficientFunds_*`); the error's type and
  code are the stand-in's choice. Settlement events carry `request: {id: null, idempotency_key:
  null}` (no request raised them). The key's saved answer stays the 200 `processing` one (a
  replay says `processing` after settlement: retrieve the intent, or wait for its event);
- Checkout Sessions in payment mode: create (`mode`, `line_items[n]` priced inline with
  `price_data[currency|unit_amount|product_data[name]]` and a `quantity`, `success_url`,
  `cancel_url`, `client_reference_id`, `customer` or `customer_creation`, `customer_email`,
  `metadata[...]`, `payment_intent_data[metadata|setup_future_usage|description]`, `expires_at`),
  validated as Stripe does: `mode` required (setup and subscription are not created here), at
  least one line item, each with a currency, a `unit_amount` >= 0, a product name and a
  `quantity` >= 1, one currency, a total between the currency's minimum (`amount_too_small`) and
  99999999 (`amount_too_large`), URLs `http(s)://` (`url_invalid`), `customer` and
  `customer_creation` not both, a `customer` that exists (`resource_missing`, saved for the key);
  the answer is an `open` session, `payment_status: unpaid`, no PaymentIntent yet, and a `url`
  (the stand-in's own `/_standin/checkout_sessions/ID`, which says how to pay it). Paying it is
  the control API's (`/_standin/checkout_sessions/ID/pay`, below);
- refunds, `POST /v1/refunds` (https://docs.stripe.com/api/refunds/create: "When you create a
  new refund, you must specify a Charge or a PaymentIntent object on which to create it ... You
  can optionally refund only part of a charge. You can do so multiple times, until the entire
  charge has been refunded. Once entirely refunded, a charge can't be refunded again. This
  method will raise an error when called on an already-refunded charge, or when trying to refund
  more money than is left on a charge"): `charge` or `payment_intent` (its latest charge),
  `amount` (default: what is left), `reason` (duplicate, fraudulent, requested_by_customer),
  `metadata`; a charge not `succeeded` or not captured is refused, an already-refunded one with
  `charge_already_refunded`, an amount above what is left with a 400 on `amount`. The answer is
  the Refund object (`re_...`, `status: succeeded`, as a card refund in test mode), the charge's
  `amount_refunded` grown by it and `refunded` true once it reaches `amount`
  (https://docs.stripe.com/api/charges/object); events `charge.refunded` ("Occurs whenever a
  charge is refunded, including partial refunds", the charge) and `refund.created` (the refund),
  https://docs.stripe.com/api/events/types; retrieve with `GET /v1/refunds/ID`;
- retrieve of charges, SetupIntents, Checkout Sessions and events;
- List all events, `GET /v1/events`, as https://docs.stripe.com/api/events/list documents it:
  newest first, paged (`limit` 1..100, default 10; `starting_after`, `ending_before`;
  `has_more`), only events created in the last 30 days of the stand-in clock ("List events,
  going back up to 30 days"; an older one is a `resource_missing` to retrieve as well), filtered
  by `type` (a name, or a group with `*` as a wildcard: `payment_intent.*`) or `types[]` (up to
  20 names; "You may pass either `type` or `types`, but not both": both is a 400), `created`
  (`created=T` or `created[gt|gte|lt|lte]`) and `delivery_success` ("Filter events by whether
  all webhooks were successfully delivered. If false, events which are still pending or have
  failed all delivery attempts to a webhook endpoint will be returned": here `false` lists the
  events whose webhook is pending, retrying, held, dropped or failed; an event sent to no
  endpoint, its type not enabled or no webhook URL set, counts as delivered, the stand-in's
  reading). What https://docs.stripe.com/webhooks/process-undelivered-events lists with
  (`types[]`, `delivery_success=false`, paged) is what it gets.

Idempotency, as Stripe documents it for API v1 (https://docs.stripe.com/api/idempotent_requests
and https://docs.stripe.com/error-low-level#idempotency): an `Idempotency-Key` (POST only; up
to 255 characters, else 400) scoped to the API key. The first answer of a request whose endpoint
began executing is saved, whatever it was (200, a 402 decline, a 400 from execution such as a
missing customer, a 500), and replayed for the same key with `Idempotent-Replayed: true` and
`Original-Request: <first request id>`, nothing executed again and no event raised again. The
same key with another endpoint or other parameters: 400 `idempotency_error`. The same key while
its first request still runs: 409 `idempotency_key_in_use`. Not saved (a retry runs anew):
parameter validation failures (missing, unknown or malformed parameters), 401s, 409s, 429s and
the injected faults of phase `before`. Keys are pruned as Stripe documents ("keys can be removed
from the system automatically after they're at least 24 hours old, and a new request is generated
if a key is reused after the original is pruned"): a saved key whose first request is at least
`key_ttl_s` old on the stand-in clock (default 86400; /_standin/config) is forgotten when next
used, and that request runs anew (a new PaymentIntent and a new charge if it charges) and is saved
anew. (Stripe says "can be removed": after 24 h a key may or may not be there; the stand-in always
prunes, the case a client has to survive.) A key still running is never pruned. The scope is the
API key, i.e. the Stripe account: nothing of the caller's (a tenant in `metadata`) separates two
requests with the same key; they are the same request or an `idempotency_error`.

Injectable faults and the control API, under `/_standin/` (JSON in and out, no auth):

    POST   /_standin/faults      queue one fault (an object) or several ({"faults": [...]})
    GET    /_standin/faults      the faults not yet used
    DELETE /_standin/faults      drop them
    GET    /_standin/requests    every /v1 request: method, path, query, idempotency_key, status,
                                 replayed, request_id, fault, reset (?path=PREFIX filters)
    GET    /_standin/keys        idempotency keys: endpoint, state (running or done), saved status,
                                 request_id, created (stand-in clock), expired (pruned when next used)
    GET    /_standin/charges     charges actually made ({"data", "succeeded", "pending", "failed",
                                 "uncaptured"}: a pending one, a bank debit not yet settled, moves
                                 when it settles; "uncaptured" counts the `succeeded` ones that are
                                 authorizations still held, never captured)
    GET    /_standin/events      every event, with its delivery attempts and status (pending,
                                 retrying, delivered, failed, held, dropped, not_enabled,
                                 no_webhook_url) (?type=T filters)
    POST   /_standin/events/ID/resend   deliver an event again (a duplicate, or a held or dropped one)
    POST   /_standin/webhooks    {"drop": true|false} or {"drop_for_s": N}: drop webhooks until
                                 told otherwise, or for N seconds of the stand-in clock from now
                                 (the endpoint down, Stripe given up): an event raised meanwhile
                                 is created and listed as usual but never delivered (status
                                 `dropped`, so `delivery_success=false` lists it) -> {"dropping",
                                 "drop_until", "dropped": [ids]}; GET says the same
    POST   /_standin/webhooks/redeliver   deliver every dropped event now, late, in the order
                                 raised (retried on the schedule if refused) -> {"redelivered"}
    POST   /_standin/reset       forget everything (objects, keys, faults, logs, pending webhooks,
                                 processing and authorized intents, dropping), the clock back on real time,
                                 key_ttl_s, settle_after_s and search_lag_s back to their defaults
                                 (the webhook settings and rate limit are kept)
    POST   /_standin/config      {"webhook_url", "webhook_secret", "retry_schedule": [s, ...],
                                 "enabled_events": [...], "rate_limit": N | null, "key_ttl_s": N,
                                 "settle_after_s": N, "search_lag_s": N}
                                 (durations in seconds of the stand-in clock; reset restores them)
    POST   /_standin/setup_intents       a customer completes a setup: {"customer"?, "email"?,
           "payment_method"? (default pm_card_visa), "metadata"?} -> customer (created if absent),
           payment method attached, a succeeded SetupIntent, `setup_intent.succeeded`
    POST   /_standin/checkout_sessions   a Checkout Session made and completed in one step:
           {"mode"? payment|setup, "customer"?, "email"?, "payment_method"?, "amount"?,
           "currency"?, "metadata"?, "payment_intent_metadata"?, "setup_future_usage"? (default
           off_session)} -> in payment mode as `.../pay` below, a customer created when none is
           given; in setup mode a SetupIntent instead
    GET    /_standin/checkout_sessions/ID       the session (where its `url` points) and how to pay it
    POST   /_standin/checkout_sessions/ID/pay   the payer pays an open session made with
           POST /v1/checkout/sessions: {"payment_method"? (default pm_card_visa), "email"?,
           "order"? intent_first (default) | session_first, "webhook"? before|after|never} ->
           its customer (the session's; else, with `customer_creation=always`, a new one; else
           none), a succeeded PaymentIntent carrying `payment_intent_data` (its `metadata`, and
           with `setup_future_usage` the method attached to that customer, as Stripe attaches it
           only to a Customer), a charge, then the session `complete`, `payment_status: paid`,
           with `customer`, `payment_intent`, `metadata`, `client_reference_id` and
           `customer_details.email`. Events: `payment_intent.succeeded` and
           `checkout.session.completed`, in the order `order` says (Stripe does not promise one);
           with "webhook": "before" they are delivered one after the other in that order before
           the answer (with "after", each delivery runs in a thread of its own: their order at
           the receiver is not fixed). A declining card answers its 402 and leaves the session
           open (paid again later, the same PaymentIntent is confirmed again); a card that asks
           for 3-D Secure answers 402 `authentication_required` (the stand-in completes no 3DS)
    POST   /_standin/payment_intents/ID/settle  a processing intent settles now: {"outcome"?
           succeeded|failed (default: as its method does)} -> {"object", "charge", "events"}
    GET    /_standin/clock       the stand-in clock: {"now": UNIX_SECONDS}
    POST   /_standin/clock       move it: {"advance": SECONDS} or {"set": UNIX_SECONDS} -> {"now": ...}
    GET    /_standin/health

Time: one clock, the stand-in clock, gives every time the stand-in uses: objects' and events'
`created`, `canceled_at`, idempotency keys' ages, settlement of delayed payments, the `created[...]`
filters of lists, Checkout's `expires_at` bounds. It starts at real time and runs with it; POST
/_standin/clock moves it (forward or back) and /_standin/reset puts it back on real time, so a
test can live through days (a key's 24 hours, a debit's settlement, an authorization's 7 days) in
a second. Not on that clock: webhook signatures (`t=` is the real time, because the receiver checks
its 5-minute tolerance against its own real clock), delivery retries and the rate limiter (real
seconds), and the `at` of /_standin/requests and of delivery attempts (real time, for logs).

A fault matches requests by `method` (default POST), `path` (exact, or a prefix ending in `*`;
default `/v1/payment_intents`) and optionally `idempotency_key`, for `times` requests (default
1), first queued first used. Its fields:

    kind          a preset: lock_timeout (429 lock_timeout, phase before, Stripe-Should-Retry:
                  true), rate_limit (429 rate_limit, before), error_after_charge (500 api_error,
                  after), reset_after_charge (reset, after), reset (reset, before), delay, webhook
    status        answer with this status instead (an error body from `type`, `code`, `message`,
                  `decline_code`, or the status's default)
    phase         before: the endpoint never runs, nothing is done or saved;
                  after: the endpoint runs (the charge is made, events raised) and the fault's
                  answer (its status, or with `reset` the real answer) is what is saved for the key
    reset         close the connection with a TCP reset instead of answering
    should_retry  true|false: send `Stripe-Should-Retry` (null: don't)
    delay_ms      hold the request this long while its key is in flight (to overlap requests)
    webhook       before | after (default) | never: deliver this request's events before the
                  answer is written, after it, or hold them (see /_standin/events/ID/resend)
    intent_status one of the PaymentIntent statuses (stripe-python's `PaymentIntent.status`): the
                  next matching POST /v1/payment_intents runs (the intent created, saved for the
                  key, its events raised) but ends in this status, answered 200, so a client can
                  be tested against each: `succeeded` (a succeeded charge); `processing` (as a
                  SEPA debit: a pending charge, settled later by the clock, as its method does);
                  `requires_capture` (an authorization: a succeeded charge with `captured: false`,
                  `amount_capturable` = amount, `capture_method: manual`,
                  `payment_intent.amount_capturable_updated`; an authorization not captured in
                  time is released and its intent canceled,
                  https://docs.stripe.com/payments/place-a-hold-on-a-payment-method: here after 7
                  days on the clock, the charge's `payment_method_details.card.capture_before`
                  (Stripe's window is 7 days for most card-not-present payments, 4 days 18 hours
                  for Visa's merchant-initiated ones), then `charge.expired`, the intent
                  `canceled` with `cancellation_reason: automatic`, `payment_intent.canceled`);
                  `requires_confirmation` (nothing charged);
                  `requires_action` (`next_action` 3DS, `payment_intent.requires_action`);
                  `requires_payment_method` (a failed charge, `last_payment_error` as the method
                  declines, a Visa's `card_declined`, `payment_intent.payment_failed`); `canceled`
                  (`canceled_at`, `cancellation_reason` from the fault's `cancellation_reason`,
                  default `automatic`, `payment_intent.canceled`). A status that needs a payment
                  method uses the request's, else a new test Visa. Capture is not emulated.

Webhooks: `payment_intent.succeeded`, `payment_intent.payment_failed`,
`payment_intent.requires_action`, `payment_intent.processing`, `payment_intent.canceled`,
`setup_intent.succeeded`, `payment_method.detached`, `checkout.session.completed`,
`charge.refunded` and `refund.created` (`--webhook-events` changes the set; `payment_intent.created`,
`payment_intent.amount_capturable_updated`, `charge.succeeded`, `charge.pending`, `charge.failed`,
`charge.expired`, `customer.created` and `payment_method.attached` are raised too, kept in
/_standin/events and GET /v1/events, delivered only if listed) are POSTed to
`--webhook-url` as Stripe event objects (`id evt_...`, `object: event`, `api_version`,
`created`, `type`, `data.object`, `livemode: false`, `pending_webhooks`, `request: {id,
idempotency_key}`) with `Stripe-Signature: t=<now>,v1=<HMAC-SHA256 of "t.payload" keyed with
the whsec secret's UTF-8 bytes>`, signed again at each attempt, after the API answer, in a thread
of their own. A non-2xx answer or a connection error is retried after each delay of
`--retry-schedule` (seconds, default 0.5,2,5,15,30), then given up.

A rate limit (`--rate-limit N` or `rate_limit` in /_standin/config; off by default): more than N
API requests in the last second answer 429 `rate_limit`, not saved, as Stripe's limiter does
(https://docs.stripe.com/rate-limits: 25 requests a second in test mode), so a client's token
bucket can be shown to keep under it.

Not emulated: other endpoints and parameters (an unknown parameter is a 400, as on Stripe),
Checkout's Prices and Products (`line_items[n][price]` is a `resource_missing`), its setup and
subscription modes through /v1, session expiry, tax, discounts, embedded UI modes,
amounts' currency-specific minimums beyond usd/eur/gbp, the search index's lag for updates (only
new intents lag, by `search_lag_s`), the per-endpoint and per-object limits,
API versions (one `--api-version` for every event), Connect, refunds beyond a succeeded card or
debit charge's (`pending`/`failed` refunds, `refund.updated`, refunds of a balance), disputes, Billing,
capture (`/v1/payment_intents/ID/capture`, `capture_method=manual` on create: an uncaptured
authorization comes only from the `intent_status` fault), delayed-notification methods other than SEPA Direct Debit (ACH, Bacs, BECS), SEPA's mandates
(a charge names a made-up `mandate_...`), its `eur`-only rule (any currency is debited here), the
"three minutes" between Stripe's non-delayed and `Delayed` test IBANs (both settle by
`settle_after_s`), `pm_disputed_*` and the weekly-limit IBANs, a SEPA method in Checkout (its
`checkout.session.async_payment_*` events; paying a session with one is a 400 here), 3DS
completion, webhook endpoints' management API, event ordering guarantees beyond "in the order
raised, retries interleaved".
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import heapq
import hmac
import json
import re
import secrets
import signal
import socket
import string
import struct
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_API_VERSION = "2026-10-28.endive"  # stripe-python 16.1.0's _ApiVersion.CURRENT
DEFAULT_RETRY_SCHEDULE = (0.5, 2.0, 5.0, 15.0, 30.0)
DEFAULT_KEY_TTL_S = 86400  # Stripe prunes idempotency keys once they are at least 24 hours old
CAPTURE_WINDOW_S = 7 * 86400  # Stripe cancels an uncaptured card authorization after 7 days
PI_STATUSES = ("canceled", "processing", "requires_action", "requires_capture", "requires_confirmation",
               "requires_payment_method", "succeeded")  # stripe-python's PaymentIntent.status
EVENT_RETENTION_S = 30 * 86400  # Stripe lists and retrieves the events of the last 30 days
DEFAULT_SETTLE_AFTER_S = 4 * 86400  # a SEPA debit: up to 14 business days, on average 7 to 8
DEFAULT_EVENTS = (
    "payment_intent.succeeded",
    "payment_intent.payment_failed",
    "payment_intent.requires_action",
    "payment_intent.processing",
    "payment_intent.canceled",
    "setup_intent.succeeded",
    "payment_method.detached",
    "checkout.session.completed",
    "charge.refunded",
    "refund.created",
)
# Refund.reason's values a request may set (docs.stripe.com/api/refunds/create)
REFUND_REASONS = ("duplicate", "fraudulent", "requested_by_customer")
MAX_KEY_LEN = 255
_ALNUM = string.ascii_letters + string.digits


def new_id(prefix: str, n: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ALNUM) for _ in range(n))


# ------------------------------------------------------------------ test cards

def _decline(code, decline_code, message, param=None):
    return {"code": code, "decline_code": decline_code, "message": message, "param": param}


DECLINED = "Your card was declined."
# name -> (brand, last4, outcome); outcome None = succeeds, "auth" = needs authentication
CARDS = {
    "visa": ("visa", "4242", None),
    "visa_debit": ("visa", "5556", None),
    "mastercard": ("mastercard", "4444", None),
    "amex": ("amex", "8431", None),
    "chargeDeclined": ("visa", "0002", _decline("card_declined", "generic_decline", DECLINED)),
    "chargeDeclinedInsufficientFunds": (
        "visa", "9995", _decline("card_declined", "insufficient_funds", "Your card has insufficient funds.")),
    "chargeDeclinedLostCard": ("visa", "9987", _decline("card_declined", "lost_card", DECLINED)),
    "chargeDeclinedStolenCard": ("visa", "9979", _decline("card_declined", "stolen_card", DECLINED)),
    "chargeDeclinedFraudulent": ("visa", "0019", _decline("card_declined", "fraudulent", DECLINED)),
    "chargeDeclinedExpiredCard": (
        "visa", "0069", _decline("expired_card", "expired_card", "Your card has expired.", "exp_month")),
    "chargeDeclinedIncorrectCvc": (
        "visa", "0127", _decline("incorrect_cvc", "incorrect_cvc", "Your card's security code is incorrect.", "cvc")),
    "chargeDeclinedProcessingError": (
        "visa", "0119", _decline("processing_error", "processing_error",
                                 "An error occurred while processing your card. Try again in a little bit.")),
    "chargeCustomerFail": ("visa", "0341", _decline("card_declined", "generic_decline", DECLINED)),
    "authenticationRequired": ("visa", "3184", "auth"),
}
AUTH_MESSAGE = "Your card was declined. This transaction requires authentication."


def card_name_of(pm_or_token: str):
    """The card name behind a test id (`pm_card_visa_chargeDeclined`, `tok_chargeDeclined`), or None."""
    m = re.fullmatch(r"(?:pm_card_|tok_)(.+)", pm_or_token or "")
    if not m:
        return None
    name = m.group(1)
    if name not in CARDS and name.startswith("visa_"):
        name = name[len("visa_"):]
    return name if name in CARDS else None


# SEPA Direct Debit, a delayed-notification method: the intent is `processing` until the debit
# settles (https://docs.stripe.com/payments/payment-methods#payment-notification). Stripe's test
# PaymentMethods (https://docs.stripe.com/payments/sepa-debit/accept-a-payment, "Test your
# integration": `pm_success_at` ... one per IBAN) for three of its countries, and the stand-in's
# own two names. name -> (IBAN, fails)
SEPA_IBANS = {
    "at": ("AT611904300234573201", "AT321904300235473204", "AT861904300235473202", "AT051904300235473205",
           "AT981904300002222227"),
    "de": ("DE89370400440532013000", "DE08370400440532013003", "DE62370400440532013001", "DE78370400440532013004",
           "DE65370400440002222227"),
    "fr": ("FR1420041010050500013M02606", "FR3020041010050500013M02609", "FR8420041010050500013M02607",
           "FR7920041010050500013M02600", "FR9720041010050000002222227"),
}
SEPA = {"sepa_debit": (SEPA_IBANS["at"][0], False), "sepa_debit_fails": (SEPA_IBANS["at"][2], True)}
for _cc, _ibans in SEPA_IBANS.items():
    for _outcome, _iban in zip(("success", "successDelayed", "failed", "failedDelayed", "insufficientFunds"), _ibans):
        SEPA[f"{_outcome}_{_cc}"] = (_iban, not _outcome.startswith("success"))
# What a failed debit says. Stripe documents the charge's `failure_code` (`insufficient_funds` for
# pm_insufficientFunds_*); the PaymentIntent's `last_payment_error` (type, code) is the stand-in's
# choice, Stripe's docs not giving it for bank debits.
SEPA_FAILURE = {"code": "payment_method_provider_decline", "decline_code": "insufficient_funds",
                "failure_code": "insufficient_funds",
                "message": "The customer's bank account has insufficient funds to cover this payment."}


def sepa_name_of(pm_id: str):
    """The SEPA test method behind `pm_sepa_debit`, `pm_sepa_debit_fails`, `pm_success_at`, ..., or None."""
    m = re.fullmatch(r"pm_(.+)", pm_id or "")
    return m.group(1) if m and m.group(1) in SEPA else None


def method_name_of(pm_id: str):
    """The test method (a card's or a SEPA debit's name) behind a test id, or None."""
    return card_name_of(pm_id) or sepa_name_of(pm_id)


def iban_parts(iban: str) -> dict:
    """`sepa_debit` of a PaymentMethod: Stripe shows the bank (and branch) code, never the IBAN."""
    country, bban = iban[:2], iban[4:]
    bank, branch = {"AT": (bban[:5], ""), "DE": (bban[:8], ""), "FR": (bban[:5], bban[5:10])}.get(
        country, (bban[:4], ""))
    return {"bank_code": bank, "branch_code": branch, "country": country,
            "fingerprint": hashlib.sha256(iban.encode()).hexdigest()[:16], "generated_from": None,
            "last4": iban[-4:]}


# ------------------------------------------------------------------ form encoding

def parse_form(pairs) -> dict:
    """Stripe's bracket notation into nested dicts and lists: a[b]=1, e[]=x, e[0]=x."""
    out: dict = {}
    for raw_key, value in pairs:
        m = re.fullmatch(r"([^\[\]]+)((?:\[[^\[\]]*\])*)", raw_key)
        parts = [raw_key] if not m else [m.group(1)] + re.findall(r"\[([^\[\]]*)\]", m.group(2))
        node = out
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if part == "" or last:
                    if last:
                        node.append(value)
                        break
                    node.append({})
                    node = node[-1]
                    continue
            nxt_is_list = not last and parts[i + 1] == ""
            if last:
                node[part] = value
            else:
                if part not in node or not isinstance(node[part], (dict, list)):
                    node[part] = [] if nxt_is_list else {}
                node = node[part]
    return _listify(out)


def _listify(v):
    if isinstance(v, dict):
        v = {k: _listify(x) for k, x in v.items()}
        if v and all(k.isdigit() for k in v):
            return [v[k] for k in sorted(v, key=int)]
        return v
    if isinstance(v, list):
        return [_listify(x) for x in v]
    return v


# ------------------------------------------------------------------ errors

class ApiError(Exception):
    """An error answer. `saved`: whether the idempotency layer keeps it (the endpoint ran)."""

    def __init__(self, status, type_, message, code=None, param=None, saved=True, **extra):
        super().__init__(message)
        self.status = status
        self.saved = saved
        self.body = {"error": {"type": type_, "message": message}}
        if code:
            self.body["error"]["code"] = code
            self.body["error"]["doc_url"] = f"https://docs.stripe.com/error-codes/{code.replace('_', '-')}"
        if param:
            self.body["error"]["param"] = param
        self.body["error"].update({k: v for k, v in extra.items() if v is not None})


def invalid(message, param=None, code=None):
    """A parameter-validation 400: never saved for the key."""
    return ApiError(400, "invalid_request_error", message, code=code, param=param, saved=False)


def missing(kind, id_, param=None):
    return ApiError(400 if param else 404, "invalid_request_error", f"No such {kind}: '{id_}'",
                    code="resource_missing", param=param)


DEFAULT_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (injected by the stand-in)."),
    402: ("card_error", "card_declined", DECLINED),
    409: ("invalid_request_error", "idempotency_key_in_use",
          "There is currently another in-progress request using this idempotency key."),
    429: ("invalid_request_error", "rate_limit",
          "Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits."),
    500: ("api_error", None, "An unknown error occurred (injected by the stand-in)."),
}
LOCK_TIMEOUT = ("This object cannot be accessed right now because another API request or Stripe process "
                "is currently accessing it. If you see this error intermittently, retry the request. If you "
                "see this error frequently and are making multiple concurrent requests to a single object, "
                "make your requests serially or at a lower rate.")

PRESETS = {
    "lock_timeout": {"status": 429, "code": "lock_timeout", "message": LOCK_TIMEOUT, "phase": "before",
                     "should_retry": True},
    "rate_limit": {"status": 429, "code": "rate_limit", "phase": "before"},
    "error_after_charge": {"status": 500, "phase": "after"},
    "reset_after_charge": {"reset": True, "phase": "after"},
    "reset": {"reset": True, "phase": "before"},
    "delay": {"phase": "before"},
    "webhook": {"phase": "before"},
}


def make_fault(spec: dict) -> dict:
    if not isinstance(spec, dict):
        raise ValueError("a fault is a JSON object")
    f = dict(PRESETS.get(spec.get("kind"), {})) if spec.get("kind") else {}
    if spec.get("kind") and spec["kind"] not in PRESETS:
        raise ValueError(f"unknown fault kind {spec['kind']!r}; one of {sorted(PRESETS)}")
    f.update(spec)
    f.setdefault("method", "POST")
    f.setdefault("path", "/v1/payment_intents")
    f.setdefault("times", 1)
    f.setdefault("phase", "before")
    if f["phase"] not in ("before", "after"):
        raise ValueError("phase is before or after")
    if f.get("webhook", "after") not in ("before", "after", "never"):
        raise ValueError("webhook is before, after or never")
    if f.get("intent_status") is not None and f["intent_status"] not in PI_STATUSES:
        raise ValueError(f"intent_status is one of {list(PI_STATUSES)}")
    return f


def fault_error(f: dict):
    status = int(f["status"])
    type_, code, message = DEFAULT_ERRORS.get(status, DEFAULT_ERRORS[500 if status >= 500 else 400])
    body = {"error": {"type": f.get("type", type_), "message": f.get("message", message)}}
    if f.get("code", code):
        body["error"]["code"] = f.get("code", code)
    if f.get("decline_code"):
        body["error"]["decline_code"] = f["decline_code"]
    return status, body


# ------------------------------------------------------------------ the stand-in's state

class IdemEntry:
    __slots__ = ("endpoint", "params", "state", "status", "body", "request_id", "created")

    def __init__(self, endpoint, params, request_id, created):
        self.endpoint, self.params, self.request_id = endpoint, params, request_id
        self.state, self.status, self.body = "running", None, None
        self.created = created  # its first request, on the stand-in clock


class StandIn:
    def __init__(self, webhook_url=None, webhook_secret="whsec_standin", api_key=None,
                 retry_schedule=DEFAULT_RETRY_SCHEDULE, api_version=DEFAULT_API_VERSION,
                 enabled_events=DEFAULT_EVENTS, webhook_timeout=5.0, rate_limit=None, log=None):
        self.lock = threading.RLock()
        self.webhook_url = webhook_url
        self.webhook_secret = webhook_secret
        self.api_key = api_key
        self.retry_schedule = list(retry_schedule)
        self.api_version = api_version
        self.enabled_events = set(enabled_events)
        self.webhook_timeout = webhook_timeout
        self.rate_limit = rate_limit  # API requests a second before 429 rate_limit (None: no limit)
        self.recent: list[float] = []
        self.log = log or (lambda msg: None)
        self.base_url = "http://127.0.0.1"  # where its sessions' `url`s point (set by `start`)
        self.deliverer = Deliverer(self)
        self.reset()

    def reset(self):
        with self.lock:
            self.objects: dict[str, dict] = {}   # id -> public object
            self.seq: dict[str, int] = {}         # id -> creation order (for lists)
            self.cards: dict[str, str] = {}       # pm id -> test method name (CARDS or SEPA)
            self.pending: set[str] = set()        # processing intents, settled by the clock (`tick`)
            self.authorized: set[str] = set()     # requires_capture intents, canceled after 7 days
            self.detached: set[str] = set()
            self.idem: dict[tuple, IdemEntry] = {}
            self.faults: list[dict] = []
            self.requests: list[dict] = []
            self.charges: list[str] = []
            self.charge_keys: dict[str, str | None] = {}
            self.events: list[str] = []
            self.event_state: dict[str, dict] = {}
            self.counter = 0
            self.clock_offset = 0.0  # the stand-in clock: real time + this (see `now`)
            self.key_ttl_s = DEFAULT_KEY_TTL_S
            self.settle_after_s = DEFAULT_SETTLE_AFTER_S
            self.search_lag_s = 0  # how long a new intent stays out of search (Stripe: usually < 1 min)
            self.drop_webhooks = False  # webhooks dropped until told otherwise (/_standin/webhooks)
            self.drop_until = None  # ... or until this time of the stand-in clock
            self.deliverer.generation += 1

    # ---- the clock
    def now(self) -> int:
        """The stand-in clock, in Unix seconds: every time it gives (objects' and events' `created`,
        key ages, settlement, list filters) comes from here. It runs with real time from where it was
        last moved (POST /_standin/clock). Webhook signatures use the real time instead."""
        return int(time.time() + self.clock_offset)

    def tick(self) -> list:
        """What is due on the stand-in clock, done: processing intents whose charge is at least
        `settle_after_s` old settle, and authorizations at least 7 days old are released (their
        intents canceled). Run on every request and when the clock moves. Returns the events raised
        (for `flush_events`)."""
        with self.lock:
            ctx = {"request_id": None, "idempotency_key": None, "events": []}
            now, api = self.now(), Api(self)
            for pid in sorted(self.pending, key=lambda i: self.seq[i]):
                pi = self.objects[pid]
                if now >= self.objects[pi["latest_charge"]]["created"] + self.settle_after_s:
                    api.settle(ctx, pi)
            for pid in sorted(self.authorized, key=lambda i: self.seq[i]):
                pi = self.objects[pid]
                if now >= self.objects[pi["latest_charge"]]["created"] + CAPTURE_WINDOW_S:
                    api.expire_authorization(ctx, pi)
            return ctx["events"]

    def move_clock(self, advance=None, set_to=None) -> int:
        with self.lock:
            if set_to is not None:
                self.clock_offset = float(set_to) - time.time()
            if advance is not None:
                self.clock_offset += float(advance)
            return self.now()

    # ---- objects
    def put(self, obj: dict) -> dict:
        with self.lock:
            if obj["id"] not in self.objects:
                self.counter += 1
                self.seq[obj["id"]] = self.counter
            self.objects[obj["id"]] = obj
            return obj

    def get(self, kind: str, prefix: str, id_, param=None) -> dict:
        obj = self.objects.get(id_) if isinstance(id_, str) else None
        if obj is None or not id_.startswith(prefix):
            raise missing(kind, id_, param)
        return obj

    def over_rate_limit(self) -> bool:
        """Stripe's limiter, roughly: more than `rate_limit` API requests in the last second."""
        if not self.rate_limit:
            return False
        now = time.monotonic()
        with self.lock:
            self.recent = [t for t in self.recent if now - t < 1.0]
            if len(self.recent) >= self.rate_limit:
                return True
            self.recent.append(now)
            return False

    # ---- faults
    def add_faults(self, specs):
        made = [make_fault(s) for s in specs]
        with self.lock:
            self.faults.extend(made)
            return list(self.faults)

    def take_fault(self, method, path, key, early):
        """The first queued fault matching the request, used up. `early`: those answering before the
        endpoint runs (phase before with a status or a reset); else the others, taken only by a
        request that executes (not by a replay or a conflict)."""
        with self.lock:
            for f in self.faults:
                if early != (f["phase"] == "before" and bool(f.get("reset") or f.get("status"))):
                    continue
                p = f["path"]
                if f["method"].upper() != method:
                    continue
                if not (path == p or (p.endswith("*") and path.startswith(p[:-1]))):
                    continue
                if f.get("idempotency_key") is not None and f["idempotency_key"] != key:
                    continue
                f["times"] -= 1
                if f["times"] <= 0:
                    self.faults.remove(f)
                return dict(f)
        return None

    # ---- idempotency
    def idem_begin(self, api_key, key, endpoint, params, request_id):
        """None: run it (the key is now in flight); else the answer (status, body, headers, replayed)."""
        with self.lock:
            e = self.idem.get((api_key, key))
            if e is not None and self.key_expired(e):
                # pruned: Stripe forgets a key at least 24 hours old and runs its reuse as a new request
                e = None
            if e is None:
                self.idem[(api_key, key)] = IdemEntry(endpoint, params, request_id, self.now())
                return None
            if e.state == "running":
                err = ApiError(409, "invalid_request_error",
                               "There is currently another in-progress request using this idempotency key "
                               "(that probably means you submitted twice, and the other request is still going "
                               "through). Please try again later.", code="idempotency_key_in_use")
                return 409, err.body, {}, False
            if e.endpoint != endpoint:
                err = ApiError(400, "idempotency_error",
                               f"Keys for idempotent requests can only be used for the same endpoint they were "
                               f"first used for ('{e.endpoint}' vs '{endpoint}'). Try using a key other than "
                               f"'{key}' if you meant to execute a different request.")
                return 400, err.body, {}, False
            if e.params != params:
                err = ApiError(400, "idempotency_error",
                               f"Keys for idempotent requests can only be used with the same parameters they "
                               f"were first used with. Try using a key other than '{key}' if you meant to "
                               f"execute a different request.")
                return 400, err.body, {}, False
            return e.status, e.body, {"Idempotent-Replayed": "true", "Original-Request": e.request_id}, True

    def key_expired(self, e: IdemEntry) -> bool:
        """A saved key old enough to be pruned (one still running is never: its request is in flight)."""
        return e.state == "done" and self.now() - e.created >= self.key_ttl_s

    def idem_end(self, api_key, key, status=None, body=None):
        """Save the answer for the key, or (status None) forget the key: nothing was saved."""
        with self.lock:
            if status is None:
                self.idem.pop((api_key, key), None)
            else:
                e = self.idem[(api_key, key)]
                e.state, e.status, e.body = "done", status, body

    # ---- events
    def event(self, ctx, type_, obj):
        """Raise an event (delivered later by `flush_events`)."""
        evt = {
            "id": new_id("evt_"),
            "object": "event",
            "api_version": self.api_version,
            "created": self.now(),
            "data": {"object": public(obj, self)},  # its internal fields (`_…`) left out
            "livemode": False,
            "pending_webhooks": 1 if type_ in self.enabled_events else 0,
            "request": {"id": ctx.get("request_id"), "idempotency_key": ctx.get("idempotency_key")},
            "type": type_,
        }
        with self.lock:
            self.put(evt)
            self.events.append(evt["id"])
            self.event_state[evt["id"]] = {"deliveries": [], "status": "pending", "mode": None}
        ctx.setdefault("events", []).append(evt["id"])
        return evt

    def flush_events(self, ids, mode):
        for eid in ids:
            with self.lock:
                st = self.event_state.get(eid)
                if st is None:
                    continue
                st["mode"] = mode
                enabled = self.objects[eid]["type"] in self.enabled_events
                if not enabled or not self.webhook_url:
                    st["status"] = "not_enabled" if not enabled else "no_webhook_url"
                    continue
                if mode == "never":
                    st["status"] = "held"
                    continue
                if self.dropping():  # the endpoint "down": never delivered unless resent
                    st["status"] = "dropped"
                    continue
            if mode == "before":
                self.deliverer.attempt(eid, 0, self.deliverer.generation)
            else:
                self.deliverer.schedule(eid, 0, 0.0)

    def event_kept(self, evt) -> bool:
        """Stripe keeps events 30 days (on the stand-in clock): older ones are neither listed nor
        retrieved."""
        return evt["created"] >= self.now() - EVENT_RETENTION_S

    def delivered(self, eid) -> bool:
        """`delivery_success`: whether every webhook of the event was delivered. False while one
        is pending, retrying, held, dropped or failed; an event sent to no endpoint (its type not
        enabled, no webhook URL) has no webhook to fail and counts as delivered (the stand-in's
        reading of "all webhooks were successfully delivered")."""
        with self.lock:
            return self.event_state[eid]["status"] in ("delivered", "not_enabled", "no_webhook_url")

    def dropping(self) -> bool:
        """Whether webhooks are being dropped now (/_standin/webhooks)."""
        return self.drop_webhooks or (self.drop_until is not None and self.now() < self.drop_until)

    def signed(self, payload: bytes, t: int | None = None) -> str:
        t = int(time.time()) if t is None else t
        mac = hmac.new(self.webhook_secret.encode("utf-8"), f"{t}.".encode() + payload, hashlib.sha256)
        return f"t={t},v1={mac.hexdigest()}"

    # ---- control-API snapshots
    def snapshot_events(self, type_=None):
        with self.lock:
            out = []
            for eid in self.events:
                evt = self.objects[eid]
                if type_ and evt["type"] != type_:
                    continue
                out.append({"event": evt, **copy.deepcopy(self.event_state[eid])})
            return out


# ------------------------------------------------------------------ webhook delivery

class Deliverer:
    """Delivers events on a schedule in its own thread; each attempt in a thread of its own."""

    def __init__(self, standin: StandIn):
        self.s = standin
        self.cond = threading.Condition()
        self.heap: list = []
        self.n = 0
        self.generation = 0
        self.stopped = False
        self.thread = threading.Thread(target=self.run, name="standin-webhooks", daemon=True)
        self.thread.start()

    def schedule(self, eid, attempt, delay):
        with self.cond:
            self.n += 1
            heapq.heappush(self.heap, (time.monotonic() + delay, self.n, eid, attempt, self.generation))
            self.cond.notify()

    def run(self):
        while True:
            with self.cond:
                while not self.stopped and (not self.heap or self.heap[0][0] > time.monotonic()):
                    self.cond.wait(None if not self.heap else max(0.0, self.heap[0][0] - time.monotonic()))
                if self.stopped:
                    return
                _, _, eid, attempt, gen = heapq.heappop(self.heap)
            if gen == self.generation:
                threading.Thread(target=self.attempt, args=(eid, attempt, gen), daemon=True).start()

    def stop(self):
        with self.cond:
            self.stopped = True
            self.cond.notify()

    def attempt(self, eid, attempt, gen):
        s = self.s
        with s.lock:
            evt = s.objects.get(eid)
            st = s.event_state.get(eid)
            url, timeout = s.webhook_url, s.webhook_timeout
            if evt is None or st is None or gen != self.generation:
                return
            payload = json.dumps(evt, indent=2).encode()
        record = {"attempt": attempt + 1, "at": time.time()}
        try:
            req = urllib.request.Request(url, data=payload, method="POST", headers={
                "Content-Type": "application/json; charset=utf-8",
                "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
                "Stripe-Signature": s.signed(payload),
            })
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                record["status"] = resp.status
        except urllib.error.HTTPError as e:
            record["status"] = e.code
        except (OSError, ValueError) as e:
            record["error"] = f"{type(e).__name__}: {e}"
        ok = 200 <= record.get("status", 0) < 300
        with s.lock:
            if gen != self.generation:
                return
            st["deliveries"].append(record)
            if ok:
                st["status"] = "delivered"
            elif attempt < len(s.retry_schedule):
                st["status"] = "retrying"
            else:
                st["status"] = "failed"
        s.log(f"webhook {evt['type']} {eid} attempt {attempt + 1}: {record.get('status', record.get('error'))}")
        if not ok and attempt < len(s.retry_schedule):
            self.schedule(eid, attempt + 1, s.retry_schedule[attempt])


# ------------------------------------------------------------------ parameters

COMMON = {"expand"}


def check_params(params: dict, allowed: set):
    for k in params:
        if k not in allowed | COMMON:
            raise invalid(f"Received unknown parameter: {k}", param=k, code="parameter_unknown")


def as_bool(params, name, default=False):
    v = params.get(name)
    if v is None:
        return default
    if v in ("true", "false"):
        return v == "true"
    raise invalid(f"Invalid boolean: {v}", param=name, code="parameter_invalid_boolean")


def as_int(params, name, required=False, minimum=None):
    v = params.get(name)
    if v is None:
        if required:
            raise invalid(f"Missing required param: {name}.", param=name, code="parameter_missing")
        return None
    if not isinstance(v, str) or not re.fullmatch(r"-?\d+", v):
        raise invalid(f"Invalid integer: {v}", param=name, code="parameter_invalid_integer")
    n = int(v)
    if minimum is not None and n < minimum:
        raise invalid(f"This value must be greater than or equal to {minimum}.", param=name,
                      code="parameter_invalid_integer")
    return n


def as_str(params, name, required=False):
    v = params.get(name)
    if v is None or v == "":
        if required:
            raise invalid(f"Missing required param: {name}.", param=name, code="parameter_missing")
        return None
    if not isinstance(v, str):
        raise invalid(f"Invalid string: {json.dumps(v)}", param=name)
    return v


def metadata_of(params, existing=None) -> dict:
    md = dict(existing or {})
    v = params.get("metadata")
    if v is None or v == "":
        return md if v is None else {}
    if not isinstance(v, dict):
        raise invalid("Invalid object", param="metadata")
    for k, x in v.items():
        if not isinstance(x, str):
            raise invalid("Metadata values must be strings.", param=f"metadata[{k}]")
        if len(k) > 40:
            raise invalid("Metadata keys can have at most 40 characters.", param=f"metadata[{k}]")
        if len(x) > 500:
            raise invalid("Metadata values can have at most 500 characters.", param=f"metadata[{k}]")
        if x == "":
            md.pop(k, None)
        else:
            md[k] = x
    if len(md) > 50:
        raise invalid("Metadata can have at most 50 keys.", param="metadata")
    return md


MINIMUM = {"usd": 50, "eur": 50, "gbp": 30}


# ------------------------------------------------------------------ the API's endpoints

class Api:
    def __init__(self, s: StandIn):
        self.s = s

    # ---- customers
    def customer_create(self, ctx, p):
        check_params(p, {"email", "name", "description", "metadata", "payment_method", "phone",
                         "invoice_settings"})
        md = metadata_of(p)
        pm_id = as_str(p, "payment_method")
        c = {"id": new_id("cus_", 14), "object": "customer", "created": self.s.now(), "livemode": False,
             "email": as_str(p, "email"), "name": as_str(p, "name"), "description": as_str(p, "description"),
             "phone": as_str(p, "phone"), "metadata": md, "balance": 0, "currency": None,
             "default_source": None, "delinquent": False,
             "invoice_settings": {"custom_fields": None, "default_payment_method": None, "footer": None,
                                  "rendering_options": None}}
        self.s.put(c)
        self.s.event(ctx, "customer.created", c)
        if pm_id:
            self._attach(ctx, pm_id, c["id"], "payment_method")
        dpm = (p.get("invoice_settings") or {}).get("default_payment_method") if isinstance(
            p.get("invoice_settings"), dict) else None
        if dpm:
            self.s.get("payment method", "pm_", dpm, "invoice_settings[default_payment_method]")
            c["invoice_settings"]["default_payment_method"] = dpm
        return c

    def customer_get(self, ctx, p, cid):
        check_params(p, set())
        return self.s.get("customer", "cus_", cid)

    def customer_update(self, ctx, p, cid):
        check_params(p, {"email", "name", "description", "metadata", "phone", "invoice_settings"})
        c = self.s.get("customer", "cus_", cid)
        md = metadata_of(p, c["metadata"])
        for k in ("email", "name", "description", "phone"):
            if k in p:
                c[k] = p[k] or None
        c["metadata"] = md
        inv = p.get("invoice_settings")
        if isinstance(inv, dict) and "default_payment_method" in inv:
            dpm = inv["default_payment_method"] or None
            if dpm:
                pm = self.s.get("payment method", "pm_", dpm, "invoice_settings[default_payment_method]")
                if pm["customer"] != cid:
                    raise ApiError(400, "invalid_request_error",
                                   f"The payment method `{dpm}` is not attached to customer `{cid}`.",
                                   param="invoice_settings[default_payment_method]")
            c["invoice_settings"]["default_payment_method"] = dpm
        return c

    def customer_payment_methods(self, ctx, p, cid):
        check_params(p, {"type", "limit", "starting_after", "ending_before"})
        self.s.get("customer", "cus_", cid)
        return self._list(p, "pm_", f"/v1/customers/{cid}/payment_methods",
                          lambda o: o["customer"] == cid)

    # ---- payment methods
    def _new_pm(self, card_name, customer=None, metadata=None):
        if card_name in SEPA:
            pm = {"id": new_id("pm_"), "object": "payment_method", "created": self.s.now(), "livemode": False,
                  "type": "sepa_debit", "customer": customer, "metadata": metadata or {},
                  "allow_redisplay": "unspecified",
                  "billing_details": {"address": None, "email": None, "name": None, "phone": None},
                  "sepa_debit": iban_parts(SEPA[card_name][0])}
            self.s.cards[pm["id"]] = card_name
            return self.s.put(pm)
        brand, last4, _ = CARDS[card_name]
        pm = {"id": new_id("pm_"), "object": "payment_method", "created": self.s.now(), "livemode": False,
              "type": "card", "customer": customer, "metadata": metadata or {}, "allow_redisplay": "unspecified",
              "billing_details": {"address": None, "email": None, "name": None, "phone": None},
              "card": {"brand": brand, "last4": last4, "exp_month": 12,
                       "exp_year": time.gmtime(self.s.now()).tm_year + 3,
                       "funding": "debit" if card_name.endswith("debit") else "credit", "country": "US",
                       "checks": {"address_line1_check": None, "address_postal_code_check": None,
                                  "cvc_check": "pass"},
                       "three_d_secure_usage": {"supported": True}, "wallet": None, "networks": {
                           "available": [brand], "preferred": None}}}
        self.s.cards[pm["id"]] = card_name
        return self.s.put(pm)

    def _resolve_pm(self, pm_id, param="payment_method"):
        """A usable payment method for `pm_id`: a test id makes a new one, as on Stripe."""
        name = method_name_of(pm_id)
        if name and pm_id not in self.s.objects:
            return self._new_pm(name)
        return self.s.get("payment method", "pm_", pm_id, param)

    def pm_create(self, ctx, p):
        check_params(p, {"type", "card", "sepa_debit", "metadata", "billing_details"})
        type_ = as_str(p, "type", required=True)
        if type_ == "sepa_debit":
            iban = re.sub(r"\s", "", ((p.get("sepa_debit") or {}) if isinstance(p.get("sepa_debit"), dict)
                                      else {}).get("iban") or "").upper()
            name = next((n for n, (i, _) in SEPA.items() if i == iban and n not in
                         ("sepa_debit", "sepa_debit_fails")), None)
            if not name:
                raise invalid("The stand-in takes Stripe's test IBANs only (e.g. AT611904300234573201).",
                              param="sepa_debit[iban]", code="invalid_bank_account_iban")
            return self._new_pm(name, metadata=metadata_of(p))
        if type_ != "card":
            raise invalid("The stand-in only has card and sepa_debit payment methods.", param="type",
                          code="parameter_invalid")
        card = p.get("card")
        token = card.get("token") if isinstance(card, dict) else None
        if not token:
            raise invalid("Missing required param: card[token] (the stand-in takes test tokens, e.g. tok_visa).",
                          param="card[token]", code="parameter_missing")
        name = card_name_of(token)
        if not name:
            raise missing("token", token, "card[token]")
        return self._new_pm(name, metadata=metadata_of(p))

    def pm_get(self, ctx, p, pm_id):
        check_params(p, set())
        if method_name_of(pm_id):
            return self._resolve_pm(pm_id, None)
        return self.s.get("payment method", "pm_", pm_id)

    def pm_list(self, ctx, p):
        check_params(p, {"customer", "type", "limit", "starting_after", "ending_before"})
        cid = as_str(p, "customer")
        return self._list(p, "pm_", "/v1/payment_methods", lambda o: cid is None or o["customer"] == cid)

    def _attach(self, ctx, pm_id, cid, param="customer"):
        self.s.get("customer", "cus_", cid, param)
        pm = self._resolve_pm(pm_id, "payment_method" if param != "customer" else None)
        if pm["id"] in self.s.detached:
            raise ApiError(400, "invalid_request_error",
                           "The provided PaymentMethod was previously used with a PaymentIntent without Customer "
                           "attachment, shared with a connected account without Customer attachment, or was "
                           "detached from a Customer. It may not be used again. To use a PaymentMethod multiple "
                           "times, you must attach it to a Customer first.", param="payment_method")
        if pm["customer"] and pm["customer"] != cid:
            raise ApiError(400, "invalid_request_error",
                           "The payment method you provided has already been attached to a customer.",
                           param="payment_method")
        if pm["customer"] is None:
            pm["customer"] = cid
            self.s.event(ctx, "payment_method.attached", pm)
        return pm

    def pm_attach(self, ctx, p, pm_id):
        check_params(p, {"customer"})
        return self._attach(ctx, pm_id, as_str(p, "customer", required=True))

    def pm_detach(self, ctx, p, pm_id):
        check_params(p, set())
        pm = self.s.get("payment method", "pm_", pm_id)
        if pm["customer"] is None:
            raise ApiError(400, "invalid_request_error",
                           "The payment method you provided is not attached to a customer so detachment is "
                           "impossible.", param="payment_method")
        pm["customer"] = None
        self.s.detached.add(pm["id"])
        for c in self.s.objects.values():
            if c["object"] == "customer" and c["invoice_settings"]["default_payment_method"] == pm["id"]:
                c["invoice_settings"]["default_payment_method"] = None
        self.s.event(ctx, "payment_method.detached", pm)
        return pm

    # ---- payment intents
    PI_PARAMS = {"amount", "currency", "customer", "payment_method", "confirm", "off_session", "metadata",
                 "description", "payment_method_types", "capture_method", "setup_future_usage", "receipt_email",
                 "statement_descriptor", "statement_descriptor_suffix", "automatic_payment_methods",
                 "return_url", "error_on_requires_action", "confirmation_method"}

    def pi_create(self, ctx, p):
        check_params(p, self.PI_PARAMS)
        amount = as_int(p, "amount", required=True, minimum=1)
        currency = as_str(p, "currency", required=True).lower()
        if not re.fullmatch(r"[a-z]{3}", currency):
            raise invalid(f"Invalid currency: {currency}.", param="currency", code="parameter_invalid_string")
        if amount < MINIMUM.get(currency, 1):
            raise invalid(f"Amount must be at least {MINIMUM[currency]} {currency}", param="amount",
                          code="amount_too_small")
        confirm = as_bool(p, "confirm")
        off = p.get("off_session")
        if off is not None and off not in ("true", "false", "one_off", "recurring"):
            raise invalid(f"Invalid off_session: {off}", param="off_session")
        off_session = off in ("true", "one_off", "recurring")
        if off_session and not confirm:
            raise invalid("You can only set `off_session` when `confirm` is true.", param="off_session")
        if (p.get("capture_method") or "automatic") not in ("automatic", "automatic_async"):
            raise invalid("The stand-in captures automatically only.", param="capture_method")
        pm_param, cid = as_str(p, "payment_method"), as_str(p, "customer")
        if confirm and not pm_param:
            raise invalid("You cannot confirm this PaymentIntent because it's missing a payment method.",
                          param="payment_method", code="payment_intent_unexpected_state")
        md = metadata_of(p)
        erra = as_bool(p, "error_on_requires_action")
        # validated: the endpoint starts executing here; what follows is saved for the key
        if cid:
            self.s.get("customer", "cus_", cid, "customer")
        pm = self._usable_pm(pm_param, cid) if pm_param else None
        now = self.s.now()
        pid = new_id("pi_3")
        pi = {"id": pid, "object": "payment_intent", "created": now, "livemode": False, "amount": amount,
              "amount_capturable": 0, "amount_received": 0, "capture_method": "automatic",
              "client_secret": f"{pid}_secret_{new_id('', 25)}", "confirmation_method": "automatic",
              "currency": currency, "customer": cid, "description": as_str(p, "description"),
              "last_payment_error": None, "latest_charge": None, "metadata": md, "next_action": None,
              "payment_method": pm["id"] if pm else None, "payment_method_types": [pm["type"] if pm else "card"],
              "receipt_email": as_str(p, "receipt_email"), "setup_future_usage": as_str(p, "setup_future_usage"),
              "status": "requires_confirmation" if pm else "requires_payment_method",
              "canceled_at": None, "cancellation_reason": None, "statement_descriptor": None}
        self.s.put(pi)
        self.s.event(ctx, "payment_intent.created", pi)
        if ctx.get("intent_status"):  # a fault: the intent ends in the status asked for
            return self._force_status(ctx, pi, pm, ctx["intent_status"])
        if confirm:
            return self._confirm(ctx, pi, pm, off_session, erra)
        return pi

    def _usable_pm(self, pm_id, cid):
        pm = self._resolve_pm(pm_id)
        if pm["id"] in self.s.detached:
            raise ApiError(400, "invalid_request_error",
                           "The provided PaymentMethod was previously used with a PaymentIntent without Customer "
                           "attachment, shared with a connected account without Customer attachment, or was "
                           "detached from a Customer. It may not be used again. To use a PaymentMethod multiple "
                           "times, you must attach it to a Customer first.", param="payment_method")
        if pm["customer"] and pm["customer"] != cid:
            raise ApiError(400, "invalid_request_error",
                           f"The provided PaymentMethod belongs to Customer {pm['customer']}, not to "
                           f"{cid or 'no Customer'}.", param="payment_method")
        return pm

    def _charge(self, ctx, pi, pm, failure=None, pending=False, authorize_only=False):
        """A charge of the intent: succeeded, failed (`failure`), pending (a bank debit, until
        `settle`), or an authorization not captured (`authorize_only`: succeeded, `captured: false`)."""
        if pm["type"] == "sepa_debit":
            details = {"type": "sepa_debit", "sepa_debit": {
                **{k: pm["sepa_debit"][k] for k in ("bank_code", "branch_code", "country", "fingerprint",
                                                    "last4")}, "mandate": new_id("mandate_")}}
        else:
            details = {"type": "card", "card": {"brand": pm["card"]["brand"], "last4": pm["card"]["last4"]}}
        ch = {"id": new_id("ch_3" if pm["type"] == "card" else "py_3"), "object": "charge",
              "created": self.s.now(), "livemode": False, "amount": pi["amount"], "amount_refunded": 0,
              "currency": pi["currency"], "customer": pi["customer"], "description": pi["description"],
              "metadata": dict(pi["metadata"]), "payment_intent": pi["id"], "payment_method": pm["id"],
              "refunded": False, "payment_method_details": details}
        self._charge_outcome(ch, "pending" if pending else "failed" if failure else "succeeded", failure)
        if authorize_only:
            ch.update(captured=False, amount_captured=0, balance_transaction=None)
            if pm["type"] == "card":
                details["card"]["capture_before"] = ch["created"] + CAPTURE_WINDOW_S
        self.s.put(ch)
        self.s.charges.append(ch["id"])
        self.s.charge_keys[ch["id"]] = ctx.get("idempotency_key")
        self.s.event(ctx, "charge." + ch["status"], ch)
        return ch

    @staticmethod
    def _charge_outcome(ch, status, failure=None):
        ok, code = status == "succeeded", failure and failure.get("failure_code", failure["code"])
        ch.update(status=status, paid=ok, captured=status != "failed",
                  amount_captured=0 if status == "failed" else ch["amount"],
                  balance_transaction=None if status == "failed" else ch.get("balance_transaction") or new_id(
                      "txn_3"), failure_code=code, failure_message=failure and failure["message"],
                  outcome=None if status == "pending" else {
                      "network_status": "declined_by_network" if failure else "approved_by_network",
                      "reason": failure and failure["decline_code"], "risk_level": "normal",
                      "seller_message": "The bank did not return any further details with this decline."
                      if failure else "Payment complete.",
                      "type": "issuer_declined" if failure else "authorized"})

    def _failure(self, pm):
        """How a payment with this method fails: the card's decline, or a bank debit's return."""
        name = self.s.cards.get(pm["id"], "visa")
        if name in SEPA:
            return SEPA_FAILURE
        outcome = CARDS[name][2]
        if outcome == "auth":
            return _decline("authentication_required", "authentication_required", AUTH_MESSAGE)
        return outcome or _decline("card_declined", "generic_decline", DECLINED)

    def _payment_error(self, pm, failure, ch):
        """A `last_payment_error`, as on a declined intent."""
        err = {"type": "card_error", "code": failure["code"], "decline_code": failure["decline_code"],
               "message": failure["message"], "charge": ch["id"],
               "doc_url": f"https://docs.stripe.com/error-codes/{failure['code'].replace('_', '-')}",
               "payment_method": copy.deepcopy(pm)}
        if failure.get("param"):
            err["param"] = failure["param"]
        return err

    def _start_processing(self, ctx, pi, pm):
        """A delayed-notification payment begun: the intent `processing`, its charge `pending`, until
        the clock reaches the charge's `created` + `settle_after_s` (or /_standin/.../settle)."""
        ch = self._charge(ctx, pi, pm, pending=True)
        pi.update(status="processing", latest_charge=ch["id"], last_payment_error=None, next_action=None,
                  payment_method=pm["id"], amount_received=0)
        if pi["setup_future_usage"] and pi["customer"] and pm["customer"] is None:
            self._attach(ctx, pm["id"], pi["customer"])
        self.s.pending.add(pi["id"])
        self.s.event(ctx, "payment_intent.processing", pi)
        return pi

    def _force_status(self, ctx, pi, pm, status):
        """The intent made to end in `status` (the fault `intent_status`), as Stripe would leave it
        there: what a client must handle for each status, on demand. A status that needs a payment
        method uses the request's, else a new test Visa."""
        if pm is None and status != "canceled":
            pm = self._new_pm("visa")
        if status == "succeeded":
            ch = self._charge(ctx, pi, pm)
            pi.update(status="succeeded", amount_received=pi["amount"], latest_charge=ch["id"],
                      payment_method=pm["id"])
            self.s.event(ctx, "payment_intent.succeeded", pi)
        elif status == "processing":
            self._start_processing(ctx, pi, pm)
        elif status == "requires_capture":
            ch = self._charge(ctx, pi, pm, authorize_only=True)
            pi.update(status="requires_capture", capture_method="manual", amount_capturable=pi["amount"],
                      latest_charge=ch["id"], payment_method=pm["id"])
            self.s.authorized.add(pi["id"])
            self.s.event(ctx, "payment_intent.amount_capturable_updated", pi)
        elif status == "requires_confirmation":
            pi.update(status="requires_confirmation", payment_method=pm["id"])
        elif status == "requires_action":
            pi.update(status="requires_action", payment_method=pm["id"], next_action={
                "type": "use_stripe_sdk",
                "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": "https://hooks.stripe.com/"
                                   "3d_secure_2/hosted", "source": new_id("src_")}})
            self.s.event(ctx, "payment_intent.requires_action", pi)
        elif status == "requires_payment_method":
            failure = self._failure(pm)
            ch = self._charge(ctx, pi, pm, failure)
            pi.update(status="requires_payment_method", latest_charge=ch["id"], payment_method=None,
                      last_payment_error=self._payment_error(pm, failure, ch))
            self.s.event(ctx, "payment_intent.payment_failed", pi)
        else:  # canceled
            pi.update(status="canceled", canceled_at=self.s.now(),
                      cancellation_reason=ctx.get("cancellation_reason") or "automatic")
            self.s.event(ctx, "payment_intent.canceled", pi)
        return pi

    def expire_authorization(self, ctx, pi):
        """An authorization not captured within 7 days: Stripe releases it and cancels the intent
        (`cancellation_reason: automatic`)."""
        ch = self.s.objects[pi["latest_charge"]]
        self._release(pi)
        self.s.event(ctx, "charge.expired", ch)
        pi.update(status="canceled", canceled_at=self.s.now(), cancellation_reason="automatic")
        self.s.event(ctx, "payment_intent.canceled", pi)
        return pi

    def _release(self, pi):
        """An uncaptured authorization's hold given back (expired or its intent canceled)."""
        if pi["id"] in self.s.authorized:
            self.s.authorized.discard(pi["id"])
            ch = self.s.objects[pi["latest_charge"]]
            ch.update(refunded=True, amount_refunded=ch["amount"])
            pi["amount_capturable"] = 0

    def settle(self, ctx, pi, outcome=None):
        """A processing intent's payment settles: `succeeded`, or `failed` (the intent back to
        `requires_payment_method`); by default as its method does."""
        ch = self.s.objects[pi["latest_charge"]]
        pm = self.s.objects[ch["payment_method"]]
        name = self.s.cards.get(pm["id"], "visa")
        if outcome is None:
            fails = SEPA[name][1] if name in SEPA else CARDS[name][2] is not None
            outcome = "failed" if fails else "succeeded"
        if outcome not in ("succeeded", "failed"):
            raise ValueError("outcome is succeeded or failed")
        self.s.pending.discard(pi["id"])
        if outcome == "succeeded":
            self._charge_outcome(ch, "succeeded")
            pi.update(status="succeeded", amount_received=pi["amount"])
            self.s.event(ctx, "charge.succeeded", ch)
            self.s.event(ctx, "payment_intent.succeeded", pi)
        else:
            failure = self._failure(pm)
            self._charge_outcome(ch, "failed", failure)
            pi.update(status="requires_payment_method", payment_method=None,
                      last_payment_error=self._payment_error(pm, failure, ch))
            self.s.event(ctx, "charge.failed", ch)
            self.s.event(ctx, "payment_intent.payment_failed", pi)
        return pi

    def _confirm(self, ctx, pi, pm, off_session, error_on_requires_action=False):
        pi["payment_method_types"] = [pm["type"]]
        if pm["type"] == "sepa_debit":  # on- or off-session alike: no authentication, a debit begun
            return self._start_processing(ctx, pi, pm)
        outcome = CARDS[self.s.cards.get(pm["id"], "visa")][2]
        if outcome is None:
            ch = self._charge(ctx, pi, pm)
            pi.update(status="succeeded", amount_received=pi["amount"], latest_charge=ch["id"],
                      last_payment_error=None, next_action=None, payment_method=pm["id"])
            if pi["setup_future_usage"] and pi["customer"] and pm["customer"] is None:
                self._attach(ctx, pm["id"], pi["customer"])
            self.s.event(ctx, "payment_intent.succeeded", pi)
            return pi
        if outcome == "auth" and not off_session and not error_on_requires_action:
            pi.update(status="requires_action", payment_method=pm["id"], next_action={
                "type": "use_stripe_sdk",
                "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": "https://hooks.stripe.com/"
                                   "3d_secure_2/hosted", "source": new_id("src_")}})
            self.s.event(ctx, "payment_intent.requires_action", pi)
            return pi
        failure = self._failure(pm)
        ch = self._charge(ctx, pi, pm, failure)
        err = self._payment_error(pm, failure, ch)
        pi.update(status="requires_payment_method", latest_charge=ch["id"], next_action=None,
                  payment_method=None, last_payment_error=err)
        self.s.event(ctx, "payment_intent.payment_failed", pi)
        raise ApiError(402, "card_error", failure["message"], code=failure["code"], param=failure.get("param"),
                       decline_code=failure["decline_code"], charge=ch["id"], payment_intent=copy.deepcopy(pi),
                       payment_method=copy.deepcopy(pm),
                       request_log_url=f"https://dashboard.stripe.com/test/logs/{ctx['request_id']}")

    def pi_confirm(self, ctx, p, pid):
        check_params(p, {"payment_method", "off_session", "return_url", "error_on_requires_action",
                         "setup_future_usage"})
        off = p.get("off_session")
        off_session = off in ("true", "one_off", "recurring")
        erra = as_bool(p, "error_on_requires_action")
        pi = self.s.get("payment_intent", "pi_", pid)
        if pi["status"] not in ("requires_payment_method", "requires_confirmation", "requires_action"):
            raise ApiError(400, "invalid_request_error",
                           f"This PaymentIntent's status is {pi['status']}, so it cannot be confirmed.",
                           code="payment_intent_unexpected_state")
        pm_id = as_str(p, "payment_method") or pi["payment_method"]
        if not pm_id:
            raise ApiError(400, "invalid_request_error",
                           "You cannot confirm this PaymentIntent because it's missing a payment method.",
                           code="payment_intent_unexpected_state", param="payment_method")
        if p.get("setup_future_usage"):
            pi["setup_future_usage"] = p["setup_future_usage"]
        return self._confirm(ctx, pi, self._usable_pm(pm_id, pi["customer"]), off_session, erra)

    def pi_cancel(self, ctx, p, pid):
        check_params(p, {"cancellation_reason"})
        pi = self.s.get("payment_intent", "pi_", pid)
        if pi["status"] in ("succeeded", "canceled", "processing"):  # a debit under way can't be stopped
            raise ApiError(400, "invalid_request_error",
                           f"You cannot cancel this PaymentIntent because it has a status of {pi['status']}. "
                           f"Only a PaymentIntent with one of the following statuses may be canceled: "
                           f"requires_payment_method, requires_capture, requires_confirmation, requires_action.",
                           code="payment_intent_unexpected_state")
        self._release(pi)
        pi.update(status="canceled", canceled_at=self.s.now(),
                  cancellation_reason=p.get("cancellation_reason"))
        self.s.event(ctx, "payment_intent.canceled", pi)
        return pi

    def pi_get(self, ctx, p, pid):
        check_params(p, {"client_secret"})
        return self.s.get("payment_intent", "pi_", pid)

    @staticmethod
    def _created_filter(p):
        """`created=T` or `created[gt|gte|lt|lte]=T` as a predicate on an object's `created`."""
        created = p.get("created")
        bounds = {}
        if isinstance(created, str):
            bounds = {"gte": as_int(p, "created"), "lte": as_int(p, "created")}
        elif isinstance(created, dict):
            for op, v in created.items():
                if op not in ("gt", "gte", "lt", "lte"):
                    raise invalid(f"Received unknown parameter: created[{op}]", param=f"created[{op}]",
                                  code="parameter_unknown")
                bounds[op] = as_int(created, op)
                if bounds[op] is None:
                    raise invalid("Invalid integer", param=f"created[{op}]")
        return lambda t: (("gt" not in bounds or t > bounds["gt"]) and ("gte" not in bounds or t >= bounds["gte"])
                          and ("lt" not in bounds or t < bounds["lt"]) and ("lte" not in bounds or t <= bounds["lte"]))

    def pi_list(self, ctx, p):
        """Strongly consistent, as Stripe's lists are: an intent is listed the moment it exists."""
        check_params(p, {"customer", "limit", "starting_after", "ending_before", "created"})
        cid = as_str(p, "customer")
        in_range = self._created_filter(p)
        return self._list(p, "pi_", "/v1/payment_intents",
                          lambda o: (cid is None or o["customer"] == cid) and in_range(o["created"]))

    def pi_search(self, ctx, p):
        check_params(p, {"query", "limit", "page"})
        query = as_str(p, "query", required=True)
        clauses = []
        for part in re.split(r"\s+AND\s+", query.strip()):
            m = re.fullmatch(r"""(metadata\[(['"])(.+?)\2\]|[a-z_]+)\s*(:|>=|<=|>|<)\s*(['"]?)(.*?)\5""", part)
            if not m:
                raise invalid(f"The stand-in cannot parse the search clause {part!r} (it takes field:'value' "
                              f"clauses joined by AND).", param="query")
            field = ("metadata", m.group(3)) if m.group(3) else m.group(1)
            clauses.append((field, m.group(4), m.group(6)))

        def keep(o):
            for field, op, val in clauses:
                have = o["metadata"].get(field[1]) if isinstance(field, tuple) else o.get(field)
                if op == ":":
                    if have is None or str(have) != val:
                        return False
                else:
                    try:
                        a, b = int(have), int(val)
                    except (TypeError, ValueError):
                        return False
                    if not {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]:
                        return False
            return True
        limit = as_int(p, "limit", minimum=1) or 10
        if limit > 100:
            raise invalid("This value must be less than or equal to 100.", param="limit",
                          code="parameter_invalid_integer")
        # not read-after-write: an intent younger than `search_lag_s` on the clock is not indexed yet
        indexed_before = self.s.now() - self.s.search_lag_s
        found = sorted((o for o in self.s.objects.values()
                        if o["id"].startswith("pi_") and o["created"] <= indexed_before and keep(o)),
                       key=lambda o: -self.s.seq[o["id"]])
        start = int(p.get("page") or 0) if str(p.get("page") or "0").isdigit() else 0
        page = found[start:start + limit]
        more = len(found) > start + limit
        return {"object": "search_result", "data": page, "has_more": more,
                "next_page": str(start + limit) if more else None, "url": "/v1/payment_intents/search",
                "total_count": len(found)}

    # ---- lists, reads
    def _list(self, p, prefix, url, keep):
        limit = as_int(p, "limit", minimum=1) or 10
        if limit > 100:
            raise invalid("This value must be less than or equal to 100.", param="limit",
                          code="parameter_invalid_integer")
        items = sorted((o for o in self.s.objects.values() if o["id"].startswith(prefix) and keep(o)),
                       key=lambda o: -self.s.seq[o["id"]])
        after, before = as_str(p, "starting_after"), as_str(p, "ending_before")
        if after:
            ids = [o["id"] for o in items]
            if after not in self.s.objects:
                raise missing("object", after, "starting_after")
            items = items[ids.index(after) + 1:] if after in ids else []
            page = items[:limit]
            more = len(items) > limit
        elif before:
            ids = [o["id"] for o in items]
            if before not in self.s.objects:
                raise missing("object", before, "ending_before")
            items = items[:ids.index(before)] if before in ids else []
            page = items[-limit:]
            more = len(items) > limit
        else:
            page, more = items[:limit], len(items) > limit
        return {"object": "list", "data": page, "has_more": more, "url": url}

    def charge_get(self, ctx, p, cid):
        check_params(p, set())
        ch = self.s.objects.get(cid) if isinstance(cid, str) else None
        if ch is None or ch["object"] != "charge":  # `ch_` for cards, `py_` for other methods
            raise missing("charge", cid)
        return ch

    # ---- refunds
    def refund_create(self, ctx, p):
        """`POST /v1/refunds` (docs.stripe.com/api/refunds/create): a charge's or a PaymentIntent's
        (its latest charge) succeeded payment refunded in part (`amount`) or in what is left of it;
        refunds add up to at most the charge's amount. The charge's `amount_refunded` grows and
        `refunded` turns true once all of it is refunded; a card refund `succeeded` at once here.
        Events: `charge.refunded` (the charge, "including partial refunds") and `refund.created`."""
        check_params(p, {"charge", "payment_intent", "amount", "reason", "metadata"})
        cid, pid = as_str(p, "charge"), as_str(p, "payment_intent")
        if not cid and not pid:
            raise invalid("One of the following params should be provided for this request: charge or "
                          "payment_intent.", code="parameter_missing")
        if cid and pid:
            raise invalid("Pass either charge or payment_intent, not both.", param="payment_intent")
        reason = as_str(p, "reason")
        if reason is not None and reason not in REFUND_REASONS:
            raise invalid(f"Invalid reason: must be one of {', '.join(REFUND_REASONS)}", param="reason")
        amount = as_int(p, "amount", minimum=1)
        md = metadata_of(p)
        if pid:
            pi = self.s.get("payment_intent", "pi_", pid, "payment_intent")
            ch = self.s.objects.get(pi.get("latest_charge") or "")
        else:
            ch = self.s.objects.get(cid)
            if ch is None or ch["object"] != "charge":
                raise missing("charge", cid, "charge")
        if ch is None or ch["status"] != "succeeded" or ch.get("captured") is False:
            raise invalid(f"This {'PaymentIntent' if pid else 'charge'} does not have a successful "
                          f"charge to refund.", param="payment_intent" if pid else "charge")
        left = ch["amount"] - ch["amount_refunded"]
        if left <= 0:
            raise invalid(f"Charge {ch['id']} has already been refunded.", code="charge_already_refunded")
        amount = left if amount is None else amount
        if amount > left:
            raise invalid(f"Refund amount ({amount}) is greater than unrefunded amount on charge ({left})",
                          param="amount")
        re_ = {"id": new_id("re_3"), "object": "refund", "amount": amount, "balance_transaction": None,
               "charge": ch["id"], "created": self.s.now(), "currency": ch["currency"], "metadata": md,
               "payment_intent": ch["payment_intent"], "reason": reason, "receipt_number": None,
               "source_transfer_reversal": None, "status": "succeeded", "transfer_reversal": None}
        self.s.put(re_)
        ch["amount_refunded"] += amount
        ch["refunded"] = ch["amount_refunded"] == ch["amount"]
        self.s.event(ctx, "charge.refunded", ch)
        self.s.event(ctx, "refund.created", re_)
        return re_

    def refund_get(self, ctx, p, rid):
        check_params(p, set())
        return self.s.get("refund", "re_", rid)

    def seti_get(self, ctx, p, sid):
        check_params(p, {"client_secret"})
        return self.s.get("setup_intent", "seti_", sid)

    def cs_get(self, ctx, p, sid):
        check_params(p, set())
        return self.s.get("checkout.session", "cs_", sid)

    def event_get(self, ctx, p, eid):
        check_params(p, set())
        evt = self.s.get("event", "evt_", eid)
        if not self.s.event_kept(evt):  # "if it was created in the last 30 days"
            raise missing("event", eid)
        return evt

    def event_list(self, ctx, p):
        """List all events (https://docs.stripe.com/api/events/list): newest first, paged, only
        those of the last 30 days; `type` (one name, or a group with `*` as a wildcard) or
        `types` (up to 20 names), not both; `created`; `delivery_success`."""
        check_params(p, {"type", "types", "limit", "starting_after", "ending_before", "created",
                         "delivery_success"})
        t = as_str(p, "type")
        types = p.get("types")
        if types is not None:
            if t is not None:
                raise invalid("You may pass either `type` or `types`, but not both.", param="types")
            if not isinstance(types, list) or not all(isinstance(x, str) and x for x in types):
                raise invalid("Invalid array", param="types", code="parameter_invalid_array")
            if len(types) > 20:
                raise invalid("`types` can have at most 20 event types.", param="types",
                              code="parameter_invalid_array")
        pattern = re.compile("[^*]*".join(re.escape(x) for x in t.split("*"))) if t else None
        success = as_bool(p, "delivery_success", default=None)
        in_range = self._created_filter(p)

        def keep(o):
            return (self.s.event_kept(o) and in_range(o["created"])
                    and (pattern is None or pattern.fullmatch(o["type"]))
                    and (types is None or o["type"] in types)
                    and (success is None or self.s.delivered(o["id"]) == success))
        return self._list(p, "evt_", "/v1/events", keep)

    # ---- what a customer does in Stripe's pages (the control API)
    def complete_setup(self, ctx, spec):
        cid = spec.get("customer") or self.customer_create(ctx, parse_form([("email", spec.get("email") or "")]))["id"]
        pm = self._attach(ctx, spec.get("payment_method") or "pm_card_visa", cid, "payment_method")
        md = {str(k): str(v) for k, v in (spec.get("metadata") or {}).items()}
        sid = new_id("seti_1")
        seti = {"id": sid, "object": "setup_intent", "created": self.s.now(), "livemode": False,
                "client_secret": f"{sid}_secret_{new_id('', 25)}", "customer": cid, "description": None,
                "last_setup_error": None, "metadata": md, "next_action": None, "payment_method": pm["id"],
                "payment_method_types": [pm["type"]], "status": "succeeded", "usage": spec.get("usage", "off_session"),
                "latest_attempt": new_id("setatt_")}
        self.s.put(seti)
        self.s.event(ctx, "setup_intent.succeeded", seti)
        return seti

    def complete_checkout(self, ctx, spec):
        """The one-step control endpoint: a session made here (not through /v1) and completed."""
        mode = spec.get("mode", "payment")
        if mode not in ("payment", "setup"):
            raise ValueError("mode is payment or setup")
        md = {str(k): str(v) for k, v in (spec.get("metadata") or {}).items()}
        pm_id = spec.get("payment_method") or "pm_card_visa"
        if mode == "setup":
            cid = spec.get("customer") or self.customer_create(
                ctx, parse_form([("email", spec.get("email") or "")]))["id"]
            cs = self._new_session("setup", None, None, cid, md, spec.get("client_reference_id"), {})
            seti = self.complete_setup(ctx, {"customer": cid, "payment_method": pm_id, "metadata": md})
            cs.update(setup_intent=seti["id"], status="complete", customer_details={"email": spec.get("email")})
            self.s.put(cs)
            self.s.event(ctx, "checkout.session.completed", cs)
            return cs
        sfu = spec.get("setup_future_usage", "off_session")
        pid = {"metadata": {str(k): str(v) for k, v in (spec.get("payment_intent_metadata") or {}).items()}}
        if sfu:
            pid["setup_future_usage"] = sfu
        amount, currency = int(spec.get("amount", 2000)), spec.get("currency", "usd")
        cs = self._new_session("payment", currency, amount, spec.get("customer"), md,
                               spec.get("client_reference_id"), pid)
        if not cs["customer"]:
            cs["customer_creation"] = "always"
        self.s.put(cs)
        return self.pay_checkout(ctx, cs["id"], {"payment_method": pm_id, "email": spec.get("email")})

    # ---- Checkout Sessions (payment mode)
    CS_PARAMS = {"mode", "line_items", "success_url", "cancel_url", "client_reference_id", "customer",
                 "customer_email", "customer_creation", "metadata", "payment_intent_data", "payment_method_types",
                 "expires_at", "locale", "submit_type"}
    PID_PARAMS = {"metadata", "setup_future_usage", "description", "receipt_email", "statement_descriptor",
                  "statement_descriptor_suffix", "capture_method"}
    MAXIMUM = 99999999  # Stripe's largest amount: 8 digits of minor units

    def _new_session(self, mode, currency, amount, cid, md, ref, pid, success_url=None, cancel_url=None,
                     customer_creation=None, email=None, expires_at=None):
        now = self.s.now()
        sid = new_id("cs_test_a1", 56)
        return {"id": sid, "object": "checkout.session", "created": now, "livemode": False, "mode": mode,
                "status": "open", "payment_status": "unpaid" if mode == "payment" else "no_payment_required",
                "amount_subtotal": amount, "amount_total": amount, "currency": currency, "customer": cid,
                "customer_creation": customer_creation if mode == "payment" else None,
                "customer_details": None, "customer_email": email, "client_reference_id": ref, "metadata": md,
                "payment_intent": None, "setup_intent": None, "success_url": success_url,
                "cancel_url": cancel_url, "url": f"{self.s.base_url}/_standin/checkout_sessions/{sid}",
                "expires_at": expires_at or now + 86400, "payment_method_types": ["card"],
                "_payment_intent_data": pid}

    def _url(self, p, name):
        url = as_str(p, name)
        if url is not None:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise invalid("Not a valid URL", param=name, code="url_invalid")
        return url

    def _line_items(self, p):
        """(currency, total) of `line_items`, each priced inline with `price_data`."""
        items = p.get("line_items")
        if items is None or items == "":
            raise invalid("Missing required param: line_items.", param="line_items", code="parameter_missing")
        if not isinstance(items, list) or not items:
            raise invalid("Invalid array", param="line_items")
        currency, total = None, 0
        for i, item in enumerate(items):
            at = f"line_items[{i}]"
            if not isinstance(item, dict):
                raise invalid("Invalid object", param=at)
            for k in item:
                if k not in ("price", "price_data", "quantity"):
                    raise invalid(f"Received unknown parameter: {at}[{k}]", param=f"{at}[{k}]",
                                  code="parameter_unknown")
            if item.get("price"):
                raise missing("price", item["price"], f"{at}[price]")  # the stand-in has no Prices
            data = item.get("price_data")
            if not isinstance(data, dict):
                raise invalid(f"You must specify either `price` or `price_data` in {at}.", param=at,
                              code="parameter_missing")
            for k in data:
                if k not in ("currency", "unit_amount", "product_data", "tax_behavior"):
                    raise invalid(f"Received unknown parameter: {at}[price_data][{k}]",
                                  param=f"{at}[price_data][{k}]", code="parameter_unknown")
            cur = (as_str(data, "currency") or "").lower()
            if not cur:
                raise invalid(f"Missing required param: {at}[price_data][currency].",
                              param=f"{at}[price_data][currency]", code="parameter_missing")
            if not re.fullmatch(r"[a-z]{3}", cur):
                raise invalid(f"Invalid currency: {cur}.", param=f"{at}[price_data][currency]",
                              code="parameter_invalid_string")
            if currency is not None and cur != currency:
                raise invalid("All line items must have the same currency.", param=f"{at}[price_data][currency]")
            currency = cur
            if data.get("unit_amount") is None:
                raise invalid(f"Missing required param: {at}[price_data][unit_amount].",
                              param=f"{at}[price_data][unit_amount]", code="parameter_missing")
            try:
                unit = as_int(data, "unit_amount", minimum=0)
            except ApiError as e:
                e.body["error"]["param"] = f"{at}[price_data][unit_amount]"
                raise
            product = data.get("product_data")
            if not isinstance(product, dict) or not as_str(product, "name"):
                raise invalid(f"Missing required param: {at}[price_data][product_data][name].",
                              param=f"{at}[price_data][product_data][name]", code="parameter_missing")
            for k in product:
                if k not in ("name", "description", "images", "metadata"):
                    raise invalid(f"Received unknown parameter: {at}[price_data][product_data][{k}]",
                                  param=f"{at}[price_data][product_data][{k}]", code="parameter_unknown")
            if item.get("quantity") is None:
                raise invalid(f"Quantity is required. Add `quantity` to `{at}`", param=f"{at}[quantity]",
                              code="parameter_missing")
            try:
                qty = as_int(item, "quantity", minimum=1)
            except ApiError as e:
                e.body["error"]["param"] = f"{at}[quantity]"
                raise
            total += unit * qty
        minimum = MINIMUM.get(currency, 1)
        if total < minimum:
            raise invalid(f"The Checkout Session's total amount due must add up to at least "
                          f"{minimum / 100:.2f} {currency}", param="line_items", code="amount_too_small")
        if total > self.MAXIMUM:
            raise invalid(f"The Checkout Session's total amount due must be no more than "
                          f"{self.MAXIMUM / 100:.2f} {currency}", param="line_items", code="amount_too_large")
        return currency, total

    def cs_create(self, ctx, p):
        check_params(p, self.CS_PARAMS)
        mode = as_str(p, "mode", required=True)
        if mode not in ("payment", "setup", "subscription"):
            raise invalid("Invalid mode: must be one of payment, setup, or subscription", param="mode")
        if mode != "payment":
            raise invalid(f"The stand-in creates Checkout Sessions in payment mode only (not {mode}); "
                          f"POST /_standin/checkout_sessions completes one in setup mode.", param="mode")
        currency, total = self._line_items(p)
        success_url, cancel_url = self._url(p, "success_url"), self._url(p, "cancel_url")
        cid, creation = as_str(p, "customer"), as_str(p, "customer_creation")
        if cid and creation:
            raise invalid("You may only specify one of these parameters: customer, customer_creation.",
                          param="customer_creation")
        if creation not in (None, "always", "if_required"):
            raise invalid("Invalid customer_creation: must be one of always or if_required",
                          param="customer_creation")
        if cid and as_str(p, "customer_email"):
            raise invalid("You may only specify one of these parameters: customer, customer_email.",
                          param="customer_email")
        ref = as_str(p, "client_reference_id")
        if ref is not None and len(ref) > 200:
            raise invalid("client_reference_id can have at most 200 characters.", param="client_reference_id")
        md = metadata_of(p)
        pid = p.get("payment_intent_data") or {}
        if not isinstance(pid, dict):
            raise invalid("Invalid object", param="payment_intent_data")
        for k in pid:
            if k not in self.PID_PARAMS:
                raise invalid(f"Received unknown parameter: payment_intent_data[{k}]",
                              param=f"payment_intent_data[{k}]", code="parameter_unknown")
        sfu = as_str(pid, "setup_future_usage")
        if sfu not in (None, "on_session", "off_session"):
            raise invalid("Invalid payment_intent_data[setup_future_usage]: must be one of on_session or "
                          "off_session", param="payment_intent_data[setup_future_usage]")
        try:
            pi_md = metadata_of(pid)
        except ApiError as e:
            e.body["error"]["param"] = "payment_intent_data[metadata]" + e.body["error"].get(
                "param", "metadata")[len("metadata"):]
            raise
        expires_at = as_int(p, "expires_at")
        if expires_at is not None and not self.s.now() + 1800 <= expires_at <= self.s.now() + 86400:
            raise invalid("The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout "
                          "Session creation.", param="expires_at")
        # validated: the endpoint starts executing here; what follows is saved for the key
        if cid:
            self.s.get("customer", "cus_", cid, "customer")
        cs = self._new_session("payment", currency, total, cid, md, ref,
                               {"metadata": pi_md, **({"setup_future_usage": sfu} if sfu else {}),
                                **({"description": pid["description"]} if pid.get("description") else {})},
                               success_url, cancel_url, creation or "if_required", as_str(p, "customer_email"),
                               expires_at)
        self.s.put(cs)
        return cs

    def pay_checkout(self, ctx, sid, spec):
        """What the payer does on Stripe's page: pays an open payment-mode session with a test card.
        A Customer is the session's, else one created when `customer_creation` is `always` (with
        `setup_future_usage` the method is attached to it: saved for off-session charges), else none
        (a guest: a method set up for future use is then attached to no one, as on Stripe). The
        PaymentIntent carries `payment_intent_data` (its metadata, `setup_future_usage`); a declining
        card leaves the session open (its intent in `requires_payment_method`) for another try."""
        cs = self.s.get("checkout.session", "cs_", sid)
        if cs["mode"] != "payment" or cs["status"] != "open":
            raise ApiError(400, "invalid_request_error",
                           f"This Checkout Session is {cs['status']} ({cs['mode']} mode): only an open session "
                           f"in payment mode can be paid.", code="checkout_session_unexpected_state")
        pid = cs["_payment_intent_data"]
        email = spec.get("email") or cs.get("customer_email")
        cid = cs["customer"]
        if not cid and cs.get("customer_creation") == "always":
            cid = self.customer_create(ctx, parse_form([("email", email or "")]))["id"]
            cs["customer"] = cid
        pm_id = spec.get("payment_method") or "pm_card_visa"
        if sepa_name_of(pm_id) or self.s.cards.get(pm_id) in SEPA:
            raise ApiError(400, "invalid_request_error", "The stand-in pays Checkout Sessions with cards only "
                           "(a delayed method's checkout.session.async_payment_* events are not emulated).",
                           param="payment_method")
        if cs.get("_pi"):
            pi = self.s.objects[cs["_pi"]]
            pi = self._confirm(ctx, pi, self._usable_pm(pm_id, pi["customer"]), False)
        else:
            form = [("amount", str(cs["amount_total"])), ("currency", cs["currency"]), ("payment_method", pm_id),
                    ("confirm", "true")]
            form += [("customer", cid)] if cid else []
            form += [("setup_future_usage", pid["setup_future_usage"])] if pid.get("setup_future_usage") else []
            form += [("description", pid["description"])] if pid.get("description") else []
            form += [(f"metadata[{k}]", v) for k, v in pid.get("metadata", {}).items()]
            try:
                pi = self.pi_create(ctx, parse_form(form))
            except ApiError as e:
                cs["_pi"] = (e.body["error"].get("payment_intent") or {}).get("id")
                raise
        if pi["status"] != "succeeded":  # 3-D Secure asked: the stand-in does not complete it
            cs["_pi"] = pi["id"]
            raise ApiError(402, "card_error", AUTH_MESSAGE, code="authentication_required",
                           decline_code="authentication_required", payment_intent=copy.deepcopy(pi))
        cs.update(payment_intent=pi["id"], status="complete", payment_status="paid", customer=cid,
                  customer_details={"email": email})
        cs.pop("_pi", None)
        self.s.put(cs)
        self.s.event(ctx, "checkout.session.completed", cs)
        return cs


ROUTES = [
    ("POST", r"/v1/customers", "customer_create"),
    ("GET", r"/v1/customers/([^/]+)", "customer_get"),
    ("POST", r"/v1/customers/([^/]+)", "customer_update"),
    ("GET", r"/v1/customers/([^/]+)/payment_methods", "customer_payment_methods"),
    ("POST", r"/v1/payment_methods", "pm_create"),
    ("GET", r"/v1/payment_methods", "pm_list"),
    ("GET", r"/v1/payment_methods/([^/]+)", "pm_get"),
    ("POST", r"/v1/payment_methods/([^/]+)/attach", "pm_attach"),
    ("POST", r"/v1/payment_methods/([^/]+)/detach", "pm_detach"),
    ("POST", r"/v1/payment_intents", "pi_create"),
    ("GET", r"/v1/payment_intents", "pi_list"),
    ("GET", r"/v1/payment_intents/search", "pi_search"),
    ("GET", r"/v1/payment_intents/([^/]+)", "pi_get"),
    ("POST", r"/v1/payment_intents/([^/]+)/confirm", "pi_confirm"),
    ("POST", r"/v1/payment_intents/([^/]+)/cancel", "pi_cancel"),
    ("GET", r"/v1/charges/([^/]+)", "charge_get"),
    ("POST", r"/v1/refunds", "refund_create"),
    ("GET", r"/v1/refunds/([^/]+)", "refund_get"),
    ("GET", r"/v1/setup_intents/([^/]+)", "seti_get"),
    ("POST", r"/v1/checkout/sessions", "cs_create"),
    ("GET", r"/v1/checkout/sessions/([^/]+)", "cs_get"),
    ("GET", r"/v1/events", "event_list"),
    ("GET", r"/v1/events/([^/]+)", "event_get"),
]


def route(method, path):
    """(handler name, path arguments, endpoint name for idempotency) or None."""
    for m, pattern, name in ROUTES:
        match = re.fullmatch(pattern, path)
        if m == method and match:
            return name, match.groups(), f"{m} {pattern}"
    return None


def public(obj, s: StandIn, expand=()):
    """A copy for the wire: internal fields dropped, `expand[]` paths replaced by their objects."""
    out = json.loads(json.dumps(obj, default=str))

    def strip(v):
        if isinstance(v, dict):
            for k in [k for k in v if k.startswith("_")]:
                del v[k]
            for x in v.values():
                strip(x)
        elif isinstance(v, list):
            for x in v:
                strip(x)

    def expand_path(node, parts):
        if not parts or not isinstance(node, dict):
            return
        head, rest = parts[0], parts[1:]
        if head == "data" and isinstance(node.get("data"), list):
            for item in node["data"]:
                expand_path(item, rest)
            return
        val = node.get(head)
        if isinstance(val, str) and val in s.objects:
            node[head] = json.loads(json.dumps(s.objects[val]))
        expand_path(node.get(head), rest)

    for path in expand or ():
        if isinstance(path, str):
            expand_path(out, path.split("."))
    strip(out)
    return out


# ------------------------------------------------------------------ HTTP

def _read_body(handler) -> bytes:
    """The request body, by Content-Length or chunked (as some HTTP clients send forms)."""
    if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
        out = b""
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return out
            out += handler.rfile.read(size)
            handler.rfile.readline()
    n = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(n) if n else b""


def _json_body(handler) -> dict:
    raw = _read_body(handler)
    return json.loads(raw) if raw.strip() else {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

    def version_string(self):
        return "stripe-standin"

    @property
    def s(self) -> StandIn:
        return self.server.standin

    def log_message(self, fmt, *args):  # one line a request, through the stand-in's log
        self.s.log("%s %s" % (self.address_string(), fmt % args))

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_DELETE(self):
        self._handle("DELETE")

    # ---- answers
    def _send(self, status, body, headers=None):
        data = json.dumps(body, indent=2).encode() + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            if v is not None:
                self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _reset_connection(self):
        """Close the socket with a TCP RST, no answer written."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        for f in (self.rfile, self.wfile, self.connection):
            try:
                f.close()
            except OSError:
                pass

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    # ---- dispatch
    def _handle(self, method):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/_standin/health":  # what the clock made due happens before anything is seen
            self.s.flush_events(self.s.tick(), "after")
        if url.path.startswith("/_standin/"):
            try:
                self._control(method, url)
            except (ValueError, KeyError, TypeError) as e:
                self._send(400, {"error": f"{type(e).__name__}: {e}"})
            return
        self._api(method, url)

    def _auth(self):
        """The API key, or an ApiError (401)."""
        h = self.headers.get("Authorization") or ""
        key = None
        if h.startswith("Bearer "):
            key = h[len("Bearer "):].strip()
        elif h.startswith("Basic "):
            try:
                key = base64.b64decode(h[len("Basic "):]).decode().split(":", 1)[0]
            except (ValueError, UnicodeDecodeError):
                key = None
        if not key:
            raise ApiError(401, "invalid_request_error",
                           "You did not provide an API key. You need to provide your API key in the Authorization "
                           "header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See "
                           "https://stripe.com/docs/api#authentication for details.", saved=False)
        ok = key == self.s.api_key if self.s.api_key else re.fullmatch(r"(sk|rk)_test_\w+", key)
        if not ok:
            shown = key[:8] + "*" * max(0, len(key) - 12) + key[-4:] if len(key) > 12 else key
            raise ApiError(401, "invalid_request_error", f"Invalid API Key provided: {shown}", saved=False)
        return key

    def _api(self, method, url):
        s = self.s
        rid = new_id("req_", 14)
        headers = {"Request-Id": rid, "Stripe-Version": self.headers.get("Stripe-Version") or s.api_version}
        raw = _read_body(self).decode("utf-8", "replace")
        key = self.headers.get("Idempotency-Key") if method == "POST" else None
        if key is not None:
            headers["Idempotency-Key"] = key
        entry = {"seq": None, "at": time.time(), "method": method, "path": url.path, "query": url.query,
                 "idempotency_key": key, "status": None, "replayed": False, "request_id": rid, "fault": None,
                 "reset": False}
        with s.lock:
            entry["seq"] = len(s.requests) + 1
            s.requests.append(entry)

        def answer(status, body, extra=None):
            entry["status"] = status
            self._send(status, body, {**headers, **(extra or {})})

        try:
            api_key = self._auth()
            params = parse_form(urllib.parse.parse_qsl(url.query if method != "POST" else raw,
                                                       keep_blank_values=True))
            if key is not None and (len(key) > MAX_KEY_LEN or not key):
                raise invalid(f"Invalid idempotency key: must be between 1 and {MAX_KEY_LEN} characters long.",
                              param="Idempotency-Key")
        except ApiError as e:
            return answer(e.status, e.body)

        def retry_header(f):
            if f and f.get("should_retry") is not None:
                return {"Stripe-Should-Retry": "true" if f["should_retry"] else "false"}
            return {}

        def name_of(f):
            return f.get("kind") or ("reset" if f.get("reset") else str(f.get("status") or "fault"))

        if s.over_rate_limit():
            entry["fault"] = "rate_limit"
            return answer(*fault_error({"status": 429}))
        fault = s.take_fault(method, url.path, key, early=True)
        retry_hdr = retry_header(fault)
        if fault:
            entry["fault"] = name_of(fault)
            if fault.get("delay_ms"):
                time.sleep(fault["delay_ms"] / 1000)
            if fault.get("reset"):
                entry["reset"] = True
                return self._reset_connection()
            if fault.get("status"):
                status, body = fault_error(fault)
                return answer(status, body, retry_hdr)
        found = route(method, url.path)
        if not found:
            return answer(404, {"error": {"type": "invalid_request_error",
                                          "message": f"Unrecognized request URL ({method}: {url.path})."}})
        name, args, endpoint = found
        if key is not None:
            prior = s.idem_begin(api_key, key, endpoint, params, rid)
            if prior is not None:
                status, body, extra, replayed = prior
                entry["replayed"] = replayed
                return answer(status, body, extra)
        fault = s.take_fault(method, url.path, key, early=False)
        retry_hdr = retry_header(fault)
        if fault:
            entry["fault"] = name_of(fault)
        if fault and fault.get("delay_ms"):
            time.sleep(fault["delay_ms"] / 1000)  # the key is in flight meanwhile
        ctx = {"request_id": rid, "idempotency_key": key, "events": [],
               "intent_status": (fault or {}).get("intent_status"),
               "cancellation_reason": (fault or {}).get("cancellation_reason")}
        saved = True
        with s.lock:
            try:
                obj = getattr(Api(s), name)(ctx, params, *args)
                status, body = 200, public(obj, s, params.get("expand") if isinstance(params.get("expand"),
                                                                                        list) else ())
            except ApiError as e:
                status, body, saved = e.status, e.body, e.saved
            except Exception as e:  # a bug of the stand-in: Stripe's 500, saved like any 500
                status, body = 500, {"error": {"type": "api_error", "message": f"stand-in bug: {e!r}"}}
        if not saved:
            ctx["events"] = []
        if fault and fault["phase"] == "after" and fault.get("status"):
            status, body = fault_error(fault)
        if key is not None:
            s.idem_end(api_key, key, status if saved else None, body)
        mode = (fault or {}).get("webhook", "after")
        if mode != "after":  # delivered now, or marked held, before the answer is seen
            s.flush_events(ctx["events"], mode)
        if fault and fault.get("reset"):
            entry["status"], entry["reset"] = status, True
            self._reset_connection()
        else:
            answer(status, body, retry_hdr)
        if mode == "after":
            s.flush_events(ctx["events"], mode)

    # ---- the control API
    # settings of /_standin/config, in seconds of the stand-in clock
    DURATIONS = ("key_ttl_s", "settle_after_s", "search_lag_s")

    def _control(self, method, url):
        s = self.s
        path = url.path[len("/_standin"):]
        q = dict(urllib.parse.parse_qsl(url.query))
        if (method, path) == ("GET", "/health"):
            return self._send(200, {"ok": True})
        if path == "/clock" and method in ("GET", "POST"):
            spec = _json_body(self) if method == "POST" else {}
            for k in spec:
                if k not in ("advance", "set"):
                    raise ValueError(f"unknown clock field {k!r}: advance (seconds) or set (Unix seconds)")
            for k in ("advance", "set"):
                if k in spec and (isinstance(spec[k], bool) or not isinstance(spec[k], (int, float))):
                    raise ValueError(f"{k} is a number of seconds")
            now = s.move_clock(spec.get("advance"), spec.get("set"))
            s.flush_events(s.tick(), "after")
            return self._send(200, {"now": now})
        if (method, path) == ("POST", "/reset"):
            s.reset()
            return self._send(200, {"reset": True})
        if path == "/faults":
            if method == "POST":
                spec = _json_body(self)
                return self._send(200, {"faults": s.add_faults(spec["faults"] if "faults" in spec else [spec])})
            if method == "DELETE":
                with s.lock:
                    s.faults.clear()
            with s.lock:
                return self._send(200, {"faults": list(s.faults)})
        if (method, path) == ("GET", "/requests"):
            with s.lock:
                data = [dict(r) for r in s.requests if r["path"].startswith(q.get("path", ""))]
            return self._send(200, {"data": data})
        if (method, path) == ("GET", "/keys"):
            with s.lock:
                data = [{"idempotency_key": k, "endpoint": e.endpoint, "state": e.state, "status": e.status,
                         "request_id": e.request_id, "created": e.created, "expired": s.key_expired(e)}
                        for (_, k), e in s.idem.items()]
            return self._send(200, {"data": data})
        if (method, path) == ("GET", "/charges"):
            with s.lock:
                data = [{**public(s.objects[c], s), "idempotency_key": s.charge_keys.get(c)} for c in s.charges]
            return self._send(200, {"data": data, **{st: sum(c["status"] == st for c in data)
                                                     for st in ("succeeded", "pending", "failed")},
                                    "uncaptured": sum(c["status"] == "succeeded" and not c["captured"]
                                                      and not c["refunded"] for c in data)})
        if (method, path) == ("GET", "/events"):
            return self._send(200, {"data": s.snapshot_events(q.get("type"))})
        m = re.fullmatch(r"/events/(evt_\w+)/resend", path)
        if method == "POST" and m:
            with s.lock:
                if m.group(1) not in s.event_state:
                    return self._send(404, {"error": f"no event {m.group(1)}"})
                s.event_state[m.group(1)]["status"] = "pending"
            s.deliverer.schedule(m.group(1), 0, 0.0)
            return self._send(200, {"resent": m.group(1)})
        if path == "/webhooks" and method in ("GET", "POST"):
            spec = _json_body(self) if method == "POST" else {}
            for k in spec:
                if k not in ("drop", "drop_for_s"):
                    raise ValueError(f"unknown webhooks field {k!r}: drop (true|false) or drop_for_s (seconds)")
            if "drop" in spec and not isinstance(spec["drop"], bool):
                raise ValueError("drop is true or false")
            if "drop_for_s" in spec and (isinstance(spec["drop_for_s"], bool) or not isinstance(
                    spec["drop_for_s"], (int, float)) or spec["drop_for_s"] < 0):
                raise ValueError("drop_for_s is a number of seconds >= 0")
            with s.lock:
                if "drop" in spec:
                    s.drop_webhooks, s.drop_until = spec["drop"], None
                if "drop_for_s" in spec:
                    s.drop_webhooks, s.drop_until = False, s.now() + spec["drop_for_s"]
                dropped = [e for e in s.events if s.event_state[e]["status"] == "dropped"]
                return self._send(200, {"dropping": s.dropping(), "drop_until": s.drop_until,
                                        "dropped": dropped})
        if (method, path) == ("POST", "/webhooks/redeliver"):
            with s.lock:
                dropped = [e for e in s.events if s.event_state[e]["status"] == "dropped"]
                for e in dropped:
                    s.event_state[e]["status"] = "pending"
            for e in dropped:  # in the order raised, each in a thread of its own as retries are
                s.deliverer.schedule(e, 0, 0.0)
            return self._send(200, {"redelivered": dropped})
        if (method, path) == ("POST", "/config"):
            spec = _json_body(self)
            with s.lock:
                if "webhook_url" in spec:
                    s.webhook_url = spec["webhook_url"]
                if "webhook_secret" in spec:
                    s.webhook_secret = spec["webhook_secret"]
                if "retry_schedule" in spec:
                    s.retry_schedule = [float(x) for x in spec["retry_schedule"]]
                if "enabled_events" in spec:
                    s.enabled_events = set(spec["enabled_events"])
                if "rate_limit" in spec:
                    s.rate_limit = spec["rate_limit"] and int(spec["rate_limit"])
                    s.recent = []
                for k in self.DURATIONS:
                    if k in spec:
                        v = spec[k]
                        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                            raise ValueError(f"{k} is a number of seconds >= 0")
                        setattr(s, k, v)
                return self._send(200, {"webhook_url": s.webhook_url, "retry_schedule": s.retry_schedule,
                                        "rate_limit": s.rate_limit,
                                        "enabled_events": sorted(s.enabled_events),
                                        **{k: getattr(s, k) for k in self.DURATIONS}})
        m = re.fullmatch(r"/payment_intents/(pi_\w+)/settle", path)
        if method == "POST" and m:
            spec = _json_body(self)
            ctx = {"request_id": None, "idempotency_key": None, "events": []}
            with s.lock:
                pi = s.objects.get(m.group(1))
                if pi is None:
                    return self._send(404, {"error": f"no payment intent {m.group(1)}"})
                if pi["id"] not in s.pending:
                    return self._send(400, {"error": f"{pi['id']} is {pi['status']}, not processing: "
                                                     f"nothing to settle"})
                Api(s).settle(ctx, pi, spec.get("outcome"))
                out = {"object": public(pi, s), "charge": public(s.objects[pi["latest_charge"]], s),
                       "events": ctx["events"]}
            self._send(200, out)
            s.flush_events(ctx["events"], "after")
            return
        m = re.fullmatch(r"/checkout_sessions/(cs_\w+)", path)
        if method == "GET" and m:  # where a session's `url` points: the payer's page, as JSON
            with s.lock:
                cs = s.objects.get(m.group(1))
                if cs is None:
                    return self._send(404, {"error": f"no checkout session {m.group(1)}"})
                out = public(cs, s)
            return self._send(200, {"object": out, "pay": f"POST {out['url']}/pay {{\"payment_method\"?, "
                                                          f"\"email\"?, \"order\"?, \"webhook\"?}}"})
        pay = re.fullmatch(r"/checkout_sessions/(cs_\w+)/pay", path)
        if method == "POST" and (path in ("/setup_intents", "/checkout_sessions") or pay):
            spec = _json_body(self)
            order = spec.get("order", "intent_first")
            if order not in ("intent_first", "session_first"):
                raise ValueError("order is intent_first or session_first")
            if spec.get("webhook", "after") not in ("before", "after", "never"):
                raise ValueError("webhook is before, after or never")
            ctx = {"request_id": None, "idempotency_key": None, "events": []}
            with s.lock:
                try:
                    api = Api(s)
                    if pay:
                        obj = api.pay_checkout(ctx, pay.group(1), spec)
                    elif path == "/setup_intents":
                        obj = api.complete_setup(ctx, spec)
                    else:
                        obj = api.complete_checkout(ctx, spec)
                except ApiError as e:  # e.g. a declining card in a Checkout Session: it stays open
                    failed = e
                else:
                    failed = None
                if order == "session_first":
                    done = [e for e in ctx["events"] if s.objects[e]["type"] == "checkout.session.completed"]
                    ctx["events"] = done + [e for e in ctx["events"] if e not in done]
            mode = spec.get("webhook", "after")
            if failed:
                status, body = failed.status, {**failed.body, "events": ctx["events"]}
            else:
                with s.lock:
                    out = public(obj, s)
                    related = {k: public(s.objects[out[k]], s) for k in ("customer", "payment_method",
                                                                          "payment_intent", "setup_intent")
                               if isinstance(out.get(k), str) and out[k] in s.objects}
                status, body = 200, {"object": out, **related, "events": ctx["events"]}
            if mode != "after":  # one after the other, in order (or marked held), before the answer
                s.flush_events(ctx["events"], mode)
            self._send(status, body)
            if mode == "after":
                s.flush_events(ctx["events"], mode)
            return
        self._send(404, {"error": f"no control endpoint {method} {url.path}"})


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, standin: StandIn):
        super().__init__(addr, Handler)
        self.standin = standin


def start(port=0, host="127.0.0.1", **kwargs):
    """Start a stand-in in this process; returns (server, base URL). Stop with `stop(server)`."""
    server = Server((host, port), StandIn(**kwargs))
    server.standin.base_url = f"http://{host}:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="standin-http",
                     daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}"


def stop(server: Server):
    server.shutdown()
    server.standin.deliverer.stop()
    server.server_close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=12111, help="0: any free port (printed)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--webhook-url", required=True, help="where events are POSTed ('' for nowhere)")
    ap.add_argument("--webhook-secret", required=True, help="the whsec_... signing secret")
    ap.add_argument("--api-key", help="the only key accepted (default: any sk_test_/rk_test_ key)")
    ap.add_argument("--retry-schedule", default=",".join(str(x) for x in DEFAULT_RETRY_SCHEDULE),
                    help="seconds before each webhook retry, comma-separated")
    ap.add_argument("--webhook-events", default=",".join(DEFAULT_EVENTS), help="event types delivered")
    ap.add_argument("--api-version", default=DEFAULT_API_VERSION)
    ap.add_argument("--rate-limit", type=int, help="API requests a second before a 429 rate_limit (test mode: 25)")
    ap.add_argument("--quiet", action="store_true", help="no log line per request and delivery")
    a = ap.parse_args(argv)
    log = (lambda m: None) if a.quiet else (lambda m: print(f"[stripe-standin] {m}", file=sys.stderr, flush=True))
    server, base = start(a.port, a.host, webhook_url=a.webhook_url or None, webhook_secret=a.webhook_secret,
                         api_key=a.api_key, retry_schedule=[float(x) for x in a.retry_schedule.split(",") if x],
                         api_version=a.api_version, enabled_events=[e for e in a.webhook_events.split(",") if e],
                         rate_limit=a.rate_limit,
                         log=log)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(f"stripe-standin ready on {base} (webhooks to {a.webhook_url or 'nowhere'})", flush=True)
    done.wait()
    stop(server)
    print("stripe-standin stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
