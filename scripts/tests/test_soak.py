"""The pure parts of scripts/soak.py: percentiles, the log lines that fail a soak, the tally of
answers, the signatures it computes by hand, the message counts read from inboxctl, and the CORS
check against a host that allows a foreign origin."""

from __future__ import annotations

import hashlib
import hmac
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import soak  # noqa: E402


def test_percentile_nearest_rank() -> None:
    assert soak.percentile([], 50) is None
    values = [float(v) for v in range(1, 101)]
    assert soak.percentile(values, 50) == 50
    assert soak.percentile(values, 99) == 99
    assert soak.percentile(values, 100) == 100
    assert soak.percentile([7.0], 99) == 7.0


def test_failure_lines() -> None:
    lines = [
        "[lambda] 10:00:00 serving ingest",
        "Traceback (most recent call last):",
        "thread 'main' panicked at src/main.rs:1:1:",
        "RuntimeError: Set changed size during iteration",
        "ValueError: list.remove(x): x not in list",
        "ERROR something handled",
    ]
    assert soak.failure_lines(lines) == lines[1:5]


def test_tally_counts_unanswered() -> None:
    answers = [soak.Answer("ingest", 202, False, None, 0.01), soak.Answer("ingest", 429, True, None, 0.01),
               soak.Answer("wallet", None, False, "TimeoutError: timed out", 180.0)]
    t = soak.tally(answers)
    assert t["total"] == 3
    assert t["by_kind"] == {"ingest": {"202": 1, "429": 1}, "wallet": {"no answer": 1}}
    assert t["unanswered"] == ["wallet: TimeoutError: timed out"]


def test_hmac_signatures() -> None:
    body = b'{"id": "x"}'
    want = "sha256=" + hmac.new(b"s", body, hashlib.sha256).hexdigest()
    assert soak.sign_github("s", body) == want
    assert soak.sign_custom("s", body) == want


def test_stats_by_status() -> None:
    assert soak.stats_by_status({"by_status": {"processed": 3, "pending": 0}}) == {"processed": 3, "pending": 0}
    assert soak.stats_by_status([]) == {}


@pytest.mark.parametrize("allow", [False, True])
def test_cors_check_fails_on_any_allow_header(allow: bool) -> None:
    """The check sees what a browser would: one `Access-Control-Allow-*` header on any answer
    fails it (cargo lambda watch's default echoed the Origin with credentials allowed)."""
    seen: list[tuple[str, str, str | None]] = []

    class Host(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def answer(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Origin")))
            n = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(n)
            self.send_response(404)
            if allow and self.command == "OPTIONS":
                self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_OPTIONS = answer  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.1", 0), Host)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        ok, detail = soak.cors_check(f"http://127.0.0.1:{server.server_address[1]}", "acme", 5)
    finally:
        server.shutdown()
    assert ok is (not allow), detail
    assert len(seen) == 4 and all(origin == "https://evil.example" for _, _, origin in seen)
    assert {m for m, _, _ in seen} == {"GET", "POST", "OPTIONS"}
