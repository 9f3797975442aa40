#!/usr/bin/env python3
"""`make soak`'s driver: load a running `make dev` stack the way a team does, then a verdict.

    python scripts/soak.py --minutes 30 [--burst 500] [--burst-every 120] [--log FILE ...]

Run by scripts/soak.sh (which starts the stack with scripts/dev.sh and stops it after), with the
stack's settings in the environment (`.local/dev-env-<moto port>.sh`) and `SOAK_LAMBDA_URL`,
`SOAK_STRIPE_URL`, `SOAK_INBOXCTL`. For `--minutes` it runs, every loop bounded in count and time:

- steady traffic: signed events of several providers (stripe with Stripe's library, mailer with
  Standard Webhooks', github and custom HMACs) to ingest, and wallet holds, releases and reads;
- bursts of `--burst` concurrent requests (default 500), alternately to ingest and to the wallet
  API, every `--burst-every` seconds;
- destinations that fail (500; stripe's events), time out (the receiver answers after the
  destination's timeout; mailer's) and throttle (429 + Retry-After every other request; github's),
  served by receivers it starts, and one that succeeds (every event);
- autopay: a saved card for the soak's tenant, then an off-session charge every minute
  (scripts/autopay_demo.py against the Stripe stand-in), each crediting the wallet;
- `git status` every 30 s, and half-way a concurrent `cargo build` (`--cargo`, default
  `cargo build --release --bin reaper`) while ingest's source is touched, so a rebuild meets a
  held cargo lock.

Then it drains (at most `--drain` seconds) and prints the verdict, exit 1 if any check fails:
every request answered (a connection error or no answer within `--request-timeout` is a failure;
a 429/503 with Retry-After is an answer), every accepted event processed (no open message),
every delivery ended or scheduled (none left `delivering`), the wallet's arithmetic exact
(balance = the charges credited, held = the holds granted and not released, available = balance -
held, `inboxctl wallet reconcile` clean), no permissive CORS (a foreign `Origin` gets no
`Access-Control-Allow-*` from the wallet API or ingest), ingest's p50/p99 latency, and no
traceback or panic in any component's log. A JSON summary goes to `--summary`.
"""

from __future__ import annotations

import argparse
import base64
import collections
import datetime as dt
import hashlib
import hmac
import http.client
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
STOP = threading.Event()

# Lines that mean a component broke (a Python traceback, a Rust panic, moto's races).
FAILURE_PATTERNS = [
    re.compile(r"Traceback \(most recent call last\)"),
    re.compile(r"panicked at"),
    re.compile(r"RuntimeError: .*changed size during iteration"),
    re.compile(r"ValueError: list\.remove"),
]


def log(msg: str) -> None:
    ts = dt.datetime.now().strftime("%H:%M:%S")
    print(f"\033[1;32m[soak]\033[0m {ts} {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ pure parts (unit-tested)


def percentile(values: list[float], p: float) -> float | None:
    """The p-th percentile (nearest rank) of values, None when empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100.0 * len(s)) - 1))
    return s[k]


def failure_lines(lines: list[str]) -> list[str]:
    """The lines of a log that show a traceback, a panic or moto's SQS races."""
    return [ln.rstrip() for ln in lines if any(p.search(ln) for p in FAILURE_PATTERNS)]


def sign_github(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def sign_custom(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Answer:
    """One request's fate: an HTTP status (with Retry-After or not), or an error (no answer)."""

    __slots__ = ("kind", "status", "retry_after", "error", "seconds", "body")

    def __init__(self, kind: str, status: int | None, retry_after: bool, error: str | None,
                 seconds: float, body: bytes = b"") -> None:
        self.kind, self.status, self.retry_after, self.error = kind, status, retry_after, error
        self.seconds, self.body = seconds, body


def tally(answers: list[Answer]) -> dict[str, Any]:
    """Counts by kind and status; failures: requests without an answer, and 5xx/429 without
    Retry-After (a server error not telling when to come back)."""
    by: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    unanswered: list[str] = []
    for a in answers:
        key = str(a.status) if a.status is not None else "no answer"
        by[a.kind][key] += 1
        if a.status is None:
            unanswered.append(f"{a.kind}: {a.error}")
    return {"by_kind": {k: dict(v) for k, v in by.items()}, "unanswered": unanswered,
            "total": len(answers)}


# ------------------------------------------------------------------ HTTP


class Client:
    """Records every request's answer; one connection per request (bursts open hundreds)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.lock = threading.Lock()
        self.answers: list[Answer] = []

    def request(self, kind: str, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> Answer:
        u = urlsplit(url)
        start = time.monotonic()
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=self.timeout)
        try:
            conn.request(method, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            a = Answer(kind, resp.status, resp.getheader("Retry-After") is not None, None,
                       time.monotonic() - start, data)
        except (OSError, http.client.HTTPException) as e:
            a = Answer(kind, None, False, f"{type(e).__name__}: {e}", time.monotonic() - start)
        finally:
            conn.close()
        with self.lock:
            self.answers.append(a)
        return a


# ------------------------------------------------------------------ receivers


class Receiver(BaseHTTPRequestHandler):
    mode = "ok"
    delay_s = 0.0
    counter = collections.Counter()
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            self.counter[self.mode] += 1
            n = self.counter[self.mode]
        if self.mode == "fail":
            self.answer(500)
        elif self.mode == "slow":
            STOP.wait(self.delay_s) if not STOP.is_set() else None
            self.answer(200)
        elif self.mode == "throttle" and n % 2:
            self.answer(429, {"Retry-After": "1"})
        else:
            self.answer(200)

    def answer(self, status: int, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass


def start_receiver(mode: str, delay_s: float = 0.0) -> tuple[ThreadingHTTPServer, int]:
    handler = type(f"Receiver_{mode}", (Receiver,), {"mode": mode, "delay_s": delay_s})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


# ------------------------------------------------------------------ the soak


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lambda_url = os.environ.get("SOAK_LAMBDA_URL", "http://127.0.0.1:9000").rstrip("/")
        self.inboxctl = os.environ.get("SOAK_INBOXCTL", "inboxctl")
        self.client = Client(args.request_timeout)
        self.secrets = json.loads((ROOT / "local" / "secrets.json").read_text())
        self.run_id = uuid.uuid4().hex[:8]
        self.tenant = f"soak-{self.run_id}"
        self.accepted: set[tuple[str, str]] = set()
        self.holds: dict[str, int] = {}      # hold_id -> amount, granted and not released
        self.released = 0
        self.charged = 0                     # the charges that succeeded, minor units
        self.charges = 0
        self.git_runs = 0
        self.git_failures: list[str] = []
        self.events: list[str] = []
        self.lock = threading.Lock()
        self.servers: list[ThreadingHTTPServer] = []

    # ---------------------------------------------------------------- helpers

    def ctl(self, *argv: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        cp = subprocess.run([self.inboxctl, *argv], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "USER": "soak"})
        if check and cp.returncode != 0:
            raise RuntimeError(f"inboxctl {' '.join(argv)}: exit {cp.returncode}: {cp.stderr.strip()[:500]}")
        return cp

    def note(self, msg: str) -> None:
        log(msg)
        with self.lock:
            self.events.append(f"{dt.datetime.now():%H:%M:%S} {msg}")

    # ---------------------------------------------------------------- setup

    def setup(self) -> None:
        fail, fail_port = start_receiver("fail")
        slow, slow_port = start_receiver("slow", delay_s=3.0)
        thr, thr_port = start_receiver("throttle")
        ok, ok_port = start_receiver("ok")
        self.servers = [fail, slow, thr, ok]
        schedule = "0,2s,5s,10s,20s"
        # each provider's events to one troubled destination, every event to the good one
        for name, port, pattern, extra in (("fail", fail_port, "stripe:*", []),
                                           ("slow", slow_port, "mailer:*", ["--timeout-ms", "1000"]),
                                           ("throttle", thr_port, "github:*", []), ("ok", ok_port, "*", [])):
            self.ctl("dest", "add", f"soak-{self.run_id}-{name}", "--url", f"http://127.0.0.1:{port}/hook",
                     "--pattern", pattern, "--allow-http", "--schedule", schedule, *extra)
        self.note(f"destinations soak-{self.run_id}-{{fail: stripe, slow: mailer, throttle: github, ok: all}} on receivers "
                  f"{fail_port}, {slow_port}, {thr_port}, {ok_port} (schedule {schedule})")
        self.ctl("wallet", "create", self.tenant, "--currency", "usd", "--price", "25", "--floor", "-1000000000")
        self.note(f"wallet {self.tenant} (floor -10,000,000.00: holds never refused for funds)")
        cp = subprocess.run([sys.executable, str(ROOT / "scripts" / "autopay_demo.py"), "setup", self.tenant],
                            capture_output=True, text=True, timeout=120)
        if cp.returncode != 0:
            raise RuntimeError(f"autopay_demo.py setup: {cp.stdout[-500:]} {cp.stderr[-500:]}")

    # ---------------------------------------------------------------- requests

    def signed_event(self, i: int) -> tuple[str, str, bytes, dict[str, str]]:
        """(source, event id, body, headers) of a freshly signed event of one of four providers."""
        source = ("stripe", "mailer", "github", "custom")[i % 4]
        eid = f"soak_{self.run_id}_{i}"
        now = int(time.time())
        if source == "stripe":
            import stripe
            body = json.dumps({"id": f"evt_{eid}", "object": "event", "type": "customer.created",
                               "created": now, "data": {"object": {"id": f"cus_{eid}", "object": "customer"}}}).encode()
            sig = stripe.WebhookSignature.generate_signature_header(body.decode(), self.secrets["stripe"][0], timestamp=now)
            return source, f"evt_{eid}", body, {"Stripe-Signature": sig,
                                                 "Content-Type": "application/json"}
        if source == "mailer":
            from standardwebhooks.webhooks import Webhook
            msg_id = f"msg_{eid}"
            body = json.dumps({"type": "message.delivered", "timestamp": now,
                               "data": {"message_id": f"m_{eid}"}}).encode()
            sig = Webhook(self.secrets["mailer"][0]).sign(msg_id, dt.datetime.fromtimestamp(now, dt.timezone.utc), body.decode())
            return source, msg_id, body, {"webhook-id": msg_id, "webhook-timestamp": str(now),
                                          "webhook-signature": sig, "Content-Type": "application/json"}
        if source == "github":
            body = json.dumps({"zen": "soak", "hook_id": i}).encode()
            delivery = str(uuid.uuid4())
            return source, delivery, body, {"X-GitHub-Delivery": delivery, "X-GitHub-Event": "ping",
                                            "X-Hub-Signature-256": sign_github(self.secrets["github"][0], body),
                                            "Content-Type": "application/json"}
        body = json.dumps({"id": f"c_{eid}", "kind": "soak"}).encode()
        return source, f"c_{eid}", body, {"X-Signature": sign_custom(self.secrets["custom"][0], body),
                                          "X-Event-Type": "soak.tick", "Content-Type": "application/json"}

    def ingest(self, i: int, kind: str = "ingest") -> None:
        source, eid, body, headers = self.signed_event(i)
        a = self.client.request(kind, "POST", f"{self.lambda_url}/lambda-url/ingest/webhooks/{source}", body, headers)
        if a.status is not None and 200 <= a.status < 300:
            with self.lock:
                self.accepted.add((source, eid))

    def hold(self, i: int, kind: str = "wallet") -> None:
        amount = 1 + (i % 97)
        a = self.client.request(kind, "POST", f"{self.lambda_url}/lambda-url/wallet-api/wallets/{self.tenant}/holds",
                                json.dumps({"message_id": f"m_{self.run_id}_{i}", "amount": amount}).encode(),
                                {"Idempotency-Key": f"{self.run_id}-hold-{i}", "Content-Type": "application/json"})
        if a.status == 201:
            doc = json.loads(a.body)
            with self.lock:
                self.holds[doc["hold_id"]] = int(doc["amount"])

    def release_one(self, i: int) -> None:
        with self.lock:
            if not self.holds:
                return
            hold_id = next(iter(self.holds))
        a = self.client.request("wallet", "POST",
                                f"{self.lambda_url}/lambda-url/wallet-api/wallets/{self.tenant}/holds/{hold_id}/release",
                                b"{}", {"Idempotency-Key": f"{self.run_id}-rel-{i}", "Content-Type": "application/json"})
        if a.status == 200:
            with self.lock:
                if self.holds.pop(hold_id, None) is not None:
                    self.released += 1

    def read_wallet(self) -> Answer:
        return self.client.request("wallet", "GET", f"{self.lambda_url}/lambda-url/wallet-api/wallets/{self.tenant}")

    # ---------------------------------------------------------------- activities

    def burst(self, kind: str, start: int) -> None:
        n = self.args.burst
        self.note(f"burst: {n} concurrent requests to {kind}")
        t0 = time.monotonic()
        target = self.ingest if kind == "ingest" else self.hold
        threads = [threading.Thread(target=target, args=(start + k, f"{kind} burst"), daemon=True) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.args.request_timeout + 30)
        self.note(f"burst to {kind} answered in {time.monotonic() - t0:.1f} s")

    def steady(self, deadline: float) -> None:
        i = 0
        while not STOP.is_set() and time.monotonic() < deadline and i < 10_000_000:
            i += 1
            self.ingest(i)
            if i % 3 == 0:
                self.hold(5_000_000 + i)
            if i % 11 == 0:
                self.release_one(i)
            if i % 7 == 0:
                self.read_wallet()
            STOP.wait(self.args.steady_interval)

    def bursts(self, deadline: float) -> None:
        k = 0
        while not STOP.wait(self.args.burst_every if k else 15) and time.monotonic() < deadline and k < 1000:
            self.burst("ingest" if k % 2 == 0 else "wallet", 1_000_000 * (k + 1))
            k += 1

    def autopay(self, deadline: float) -> None:
        n = 0
        while not STOP.is_set() and time.monotonic() < deadline and n < 10_000:
            n += 1
            amount = 500 + n
            cp = subprocess.run([sys.executable, str(ROOT / "scripts" / "autopay_demo.py"), "charge", self.tenant,
                                 "--amount", str(amount), "--currency", "usd"],
                                capture_output=True, text=True, timeout=180)
            if cp.returncode == 0 and "succeeded" in cp.stdout:
                with self.lock:
                    self.charged += amount
                    self.charges += 1
            else:
                self.note(f"autopay charge {n} did not succeed: exit {cp.returncode}: "
                          f"{(cp.stdout + cp.stderr).strip()[-300:]}")
            STOP.wait(60)

    def git(self, deadline: float) -> None:
        while not STOP.is_set() and time.monotonic() < deadline and self.git_runs < 10_000:
            cp = subprocess.run(["git", "status", "--porcelain"], cwd=str(ROOT), capture_output=True, text=True, timeout=60)
            self.git_runs += 1
            if cp.returncode != 0:
                self.git_failures.append(cp.stderr.strip()[:200])
            STOP.wait(30)

    def cargo(self, at: float, deadline: float) -> None:
        if STOP.wait(max(0.0, at - time.monotonic())):
            return
        self.note(f"concurrent build: {self.args.cargo}; touching functions/ingest/src/main.rs")
        proc = subprocess.Popen(self.args.cargo, shell=True, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        STOP.wait(3)
        os.utime(ROOT / "functions" / "ingest" / "src" / "main.rs")
        while proc.poll() is None and time.monotonic() < deadline and not STOP.wait(1):
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            proc.wait(30)
            self.note("concurrent build stopped at the end of the load")
        else:
            self.note(f"concurrent build ended (exit {proc.returncode})")

    def run(self) -> dict[str, Any]:
        self.setup()
        start = time.monotonic()
        deadline = start + self.args.minutes * 60
        before = self.host_status()
        workers = [threading.Thread(target=self.steady, args=(deadline,), daemon=True),
                   threading.Thread(target=self.bursts, args=(deadline,), daemon=True),
                   threading.Thread(target=self.autopay, args=(deadline,), daemon=True),
                   threading.Thread(target=self.git, args=(deadline,), daemon=True),
                   threading.Thread(target=self.cargo, args=(start + self.args.minutes * 30, deadline), daemon=True)]
        for w in workers:
            w.start()
        while time.monotonic() < deadline and not STOP.wait(30):
            self.note(f"{len(self.client.answers)} requests so far; host answers "
                      f"{(self.host_status() or {}).get('answers')}")
        STOP.set()
        for w in workers:
            w.join(self.args.request_timeout + 200)
        load_seconds = time.monotonic() - start
        self.note(f"load stopped after {load_seconds:.0f} s; draining (at most {self.args.drain:.0f} s)")
        return self.verdict(load_seconds, before)

    # ---------------------------------------------------------------- the verdict

    def host_status(self) -> dict[str, Any] | None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", urlsplit(self.lambda_url).port, timeout=10)
            conn.request("GET", "/_local/status")
            return json.loads(conn.getresponse().read())
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def open_work(self) -> tuple[dict[str, int], dict[str, int]]:
        """(messages by status, deliveries by status) from `inboxctl --json stats`."""
        stats = json.loads(self.ctl("--json", "stats", timeout=300).stdout)
        deliveries: collections.Counter[str] = collections.Counter()
        for d in stats.get("destinations") or []:
            for status, n in (d.get("by_status") or {}).items():
                deliveries[str(status)] += int(n)
        return stats_by_status(stats), dict(deliveries)

    def verdict(self, load_seconds: float, before: dict[str, Any] | None) -> dict[str, Any]:
        checks: dict[str, tuple[bool, str]] = {}
        drain_end = time.monotonic() + self.args.drain
        messages: dict[str, int] = {}
        deliveries: dict[str, int] = {}
        while True:
            messages, deliveries = self.open_work()
            open_msgs = sum(messages.get(s, 0) for s in ("pending", "processing", "retrying"))
            in_flight = deliveries.get("delivering", 0)
            if (open_msgs == 0 and in_flight == 0) or time.monotonic() > drain_end:
                break
            time.sleep(5)
        t = tally(self.client.answers)
        checks["every request answered"] = (not t["unanswered"],
                                            f"{t['total']} requests, {len(t['unanswered'])} without an answer"
                                            + (f": {t['unanswered'][:3]}" if t["unanswered"] else ""))
        no_retry = [a for a in self.client.answers if a.status in (429, 503) and not a.retry_after]
        checks["429/503 carry Retry-After"] = (not no_retry, f"{len(no_retry)} without")
        open_msgs = {s: messages.get(s, 0) for s in ("pending", "processing", "retrying") if messages.get(s)}
        checks["every accepted event processed"] = (not open_msgs,
                                                   f"{len(self.accepted)} accepted by ingest; messages by status {messages}")
        checks["every delivery ended or scheduled"] = (deliveries.get("delivering", 0) == 0,
                                                      f"deliveries by status {deliveries}")
        checks.update(self.wallet_checks())
        checks["no permissive CORS"] = self.cors_check()
        latency: dict[str, dict[str, Any]] = {}
        for kind in ("ingest", "ingest burst", "wallet", "wallet burst"):
            ms = [a.seconds * 1000 for a in self.client.answers if a.kind == kind and a.status is not None]
            latency[kind] = {"p50": percentile(ms, 50), "p99": percentile(ms, 99), "n": len(ms)}
        ingest = latency["ingest"]
        checks["ingest latency reported"] = (bool(ingest["n"]), "; ".join(
            f"{k}: p50 {v['p50']:.0f} ms, p99 {v['p99']:.0f} ms over {v['n']}" for k, v in latency.items() if v["n"]))
        bad = []
        for path in self.args.log:
            try:
                lines = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                continue
            bad += [f"{Path(path).name}: {ln[:200]}" for ln in failure_lines(lines)]
        checks["no traceback or panic in any log"] = (not bad, f"{len(bad)} lines" + (f": {bad[:5]}" if bad else ""))
        after = self.host_status()
        waited = sum(Path(p).read_text(errors="replace").count("waiting for another cargo's lock")
                     for p in self.args.log[:1] if Path(p).exists())
        checks["git status rebuilt nothing"] = (not self.git_failures, f"{self.git_runs} git status runs; "
                                               f"builds before/after: {builds(before)} -> {builds(after)} "
                                               f"(ingest's source was touched once; the host waited for "
                                               f"another cargo's lock {waited} times)")
        ok = all(v[0] for v in checks.values())
        summary = {
            "ok": ok,
            "minutes": round(load_seconds / 60, 1),
            "requests": t,
            "latency_ms": latency,
            "checks": {k: {"ok": v[0], "detail": v[1]} for k, v in checks.items()},
            "host": after,
            "events": self.events,
        }
        print("\n  ======================= soak verdict =======================", file=sys.stderr)
        print(f"  {summary['minutes']} min of load; requests by kind and status: {t['by_kind']}", file=sys.stderr)
        for k, (good, detail) in checks.items():
            print(f"  {'PASS' if good else 'FAIL'}  {k}: {detail}", file=sys.stderr)
        print(f"  verdict: {'PASS' if ok else 'FAIL'}", file=sys.stderr)
        print("  ============================================================\n", file=sys.stderr)
        return summary

    def cors_check(self) -> tuple[bool, str]:
        return cors_check(self.lambda_url, self.tenant, self.args.request_timeout)

    def wallet_checks(self) -> dict[str, tuple[bool, str]]:
        out: dict[str, tuple[bool, str]] = {}
        # the last charge's webhook may still be on its way: poll until the balance matches
        deadline = time.monotonic() + 120
        doc: dict[str, Any] = {}
        while time.monotonic() < deadline:
            a = self.read_wallet()
            if a.status == 200:
                doc = json.loads(a.body)
                if doc.get("balance") == self.charged and doc.get("held") == sum(self.holds.values()):
                    break
            time.sleep(3)
        held = sum(self.holds.values())
        exact = (doc.get("balance") == self.charged and doc.get("held") == held
                 and doc.get("available") == doc.get("balance", 0) - doc.get("held", 0))
        out["wallet arithmetic exact"] = (exact, f"balance {doc.get('balance')} (charges credited: {self.charges} "
                                          f"for {self.charged}), held {doc.get('held')} (holds granted and not "
                                          f"released: {len(self.holds)} for {held}; released {self.released}), "
                                          f"available {doc.get('available')}")
        cp = self.ctl("wallet", "reconcile", check=False, timeout=300)
        out["inboxctl wallet reconcile clean"] = (cp.returncode == 0, (cp.stdout + cp.stderr).strip()[-300:])
        return out


def cors_check(lambda_url: str, tenant: str, timeout: float) -> tuple[bool, str]:
    """A page on another origin open in the developer's browser gets no leave to read or write:
    the wallet API and ingest answer a foreign `Origin` (a simple GET or POST, and a preflight
    naming `Idempotency-Key`) without any `Access-Control-Allow-*` header."""
    evil = "https://evil.example"
    asks = [
        ("GET", f"/lambda-url/wallet-api/wallets/{tenant}", {"Origin": evil}),
        ("OPTIONS", f"/lambda-url/wallet-api/wallets/{tenant}/holds",
         {"Origin": evil, "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "idempotency-key,content-type"}),
        ("POST", "/lambda-url/ingest/webhooks/stripe", {"Origin": evil, "Content-Type": "text/plain"}),
        ("OPTIONS", "/lambda-url/ingest/webhooks/stripe", {"Origin": evil, "Access-Control-Request-Method": "POST"}),
    ]
    allowed, seen = [], []
    u = urlsplit(lambda_url)
    for method, path, headers in asks:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        try:
            conn.request(method, path, body=b"{}" if method == "POST" else None, headers=headers)
            resp = conn.getresponse()
            resp.read()
            seen.append(f"{method} {path.split('/')[2]}: {resp.status}")
            allowed += [f"{method} {path}: {k}: {v}" for k, v in resp.getheaders()
                        if k.lower().startswith("access-control-allow")]
        except (OSError, http.client.HTTPException) as e:
            allowed.append(f"{method} {path}: no answer ({type(e).__name__})")
        finally:
            conn.close()
    return (not allowed, f"Origin {evil}: {', '.join(seen)}"
            + (f"; allowed: {allowed[:4]}" if allowed else "; no Access-Control-Allow-* header"))


def stats_by_status(stats: Any) -> dict[str, int]:
    """Messages by status from `inboxctl --json stats` (its `by_status` object, or a list of rows)."""
    if isinstance(stats, dict):
        for key in ("by_status", "statuses", "status"):
            v = stats.get(key)
            if isinstance(v, dict):
                return {str(k): int(n) for k, n in v.items() if isinstance(n, (int, float))}
    return {}


def builds(status: dict[str, Any] | None) -> dict[str, int]:
    if not status:
        return {}
    return {n: f.get("generation", 0) for n, f in status.get("functions", {}).items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30")))
    p.add_argument("--burst", type=int, default=int(os.environ.get("SOAK_BURST", "500")))
    p.add_argument("--burst-every", type=float, default=float(os.environ.get("SOAK_BURST_EVERY", "120")))
    p.add_argument("--steady-interval", type=float, default=float(os.environ.get("SOAK_STEADY_INTERVAL", "0.2")))
    p.add_argument("--request-timeout", type=float, default=180.0,
                   help="seconds without an answer that count a request as unanswered")
    p.add_argument("--drain", type=float, default=float(os.environ.get("SOAK_DRAIN_SECONDS", "300")))
    p.add_argument("--cargo", default=os.environ.get("SOAK_CARGO", "cargo build --release --bin reaper"))
    p.add_argument("--log", action="append", default=[], help="a component's log to check (repeat)")
    p.add_argument("--summary", type=Path, default=None, help="write the JSON summary here")
    args = p.parse_args(argv)
    soak = Soak(args)
    try:
        summary = soak.run()
    finally:
        STOP.set()
        for s in soak.servers:
            s.shutdown()
    if args.summary:
        args.summary.write_text(json.dumps(summary, indent=2, default=str))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
