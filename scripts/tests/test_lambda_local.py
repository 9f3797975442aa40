"""The pure parts of scripts/lambda_local.py (the function host `make dev` runs): which paths
trigger a rebuild, how a request is routed, the Function URL event built and the answer read
back, the template's timeouts, the env file. No function and no cargo are needed."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))

import lambda_local as ll  # noqa: E402

TEMPLATE = SCRIPTS.parent / "template.yaml"


@pytest.mark.parametrize("path, watched", [
    ("functions/ingest/src/main.rs", True),
    ("shared/core/src/lib.rs", True),
    ("Cargo.toml", True),
    ("Cargo.lock", True),
    ("shared/core/Cargo.toml", True),
    (".cargo/config.toml", True),
    (".git/index", False),
    (".git/index.lock", False),
    (".local/dev.env", False),
    (".venv/lib/python3.11/site-packages/x.py", False),
    ("target/debug/build/x/out/y.rs", False),
    ("docs/local-stack.md", False),
    ("scripts/lambda_local.py", False),
    ("README.md", False),
    ("local/sources.json", False),
    ("local/dynamodb/node_modules/a/Cargo.toml", False),
])
def test_only_what_a_build_reads_is_watched(path: str, watched: bool) -> None:
    assert ll.is_watched(path) is watched


def test_snapshot_and_changes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "main.rs").write_text("fn main() {}")
    (tmp_path / ".git" / "index").write_text("x")
    (tmp_path / "notes.md").write_text("x")
    first = ll.snapshot(tmp_path)
    assert set(first) == {"src/main.rs"}
    (tmp_path / ".git" / "index").write_text("changed by git status")
    (tmp_path / "notes.md").write_text("edited")
    assert ll.changed_paths(first, ll.snapshot(tmp_path)) == []
    (tmp_path / "src" / "main.rs").write_text("fn main() { println!(); }")
    (tmp_path / "src" / "new.rs").write_text("")
    assert ll.changed_paths(first, ll.snapshot(tmp_path)) == ["src/main.rs", "src/new.rs"]


def test_routes_keep_the_documented_urls() -> None:
    assert ll.route("POST", "/lambda-url/ingest/webhooks/stripe?x=1") == ("url", "ingest", "/webhooks/stripe")
    assert ll.route("GET", "/lambda-url/wallet-api") == ("url", "wallet-api", "/")
    assert ll.route("POST", "/2015-03-31/functions/process/invocations") == ("invoke", "process", "")
    assert ll.route("GET", "/2015-03-31/functions/process/invocations")[0] == ""
    assert ll.route("GET", "/_local/status") == ("status", "", "")
    assert ll.route("GET", "/elsewhere") == ("", "", "/elsewhere")


def test_function_url_event_text_body_headers_cookies_query() -> None:
    ev = ll.function_url_event(
        "ingest", "POST", "/lambda-url/ingest/webhooks/stripe?a=1&a=2&b=", "/webhooks/stripe",
        [("Content-Type", "application/json"), ("X-Dup", "1"), ("x-dup", "2"), ("Cookie", "k=v; k2=v2")],
        b'{"id": "evt_1"}', "req-1", 1_700_000_000_123)
    assert ev["version"] == "2.0"
    assert ev["rawPath"] == "/webhooks/stripe"
    assert ev["rawQueryString"] == "a=1&a=2&b="
    assert ev["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert ev["headers"] == {"content-type": "application/json", "x-dup": "1,2"}
    assert ev["cookies"] == ["k=v", "k2=v2"]
    assert ev["body"] == '{"id": "evt_1"}' and ev["isBase64Encoded"] is False
    ctx = ev["requestContext"]
    assert ctx["http"]["method"] == "POST" and ctx["http"]["sourceIp"] == "127.0.0.1"
    assert ctx["requestId"] == "req-1" and ctx["timeEpoch"] == 1_700_000_000_123


def test_function_url_event_binary_body_is_base64() -> None:
    raw = b"\x00\xffbinary"
    ev = ll.function_url_event("ingest", "POST", "/x", "/x", [("Content-Type", "application/octet-stream")],
                               raw, "r", 0)
    assert ev["isBase64Encoded"] is True and base64.b64decode(ev["body"]) == raw
    ev = ll.function_url_event("ingest", "POST", "/x", "/x", [("Content-Type", "application/json")],
                               b"\xff\xfe", "r", 0)
    assert ev["isBase64Encoded"] is True  # not UTF-8: sent as bytes, never refused
    ev = ll.function_url_event("ingest", "GET", "/x", "/x", [], b"", "r", 0)
    assert "body" not in ev and ev["isBase64Encoded"] is False


def test_function_url_response() -> None:
    status, headers, body = ll.function_url_response(json.dumps({
        "statusCode": 202, "headers": {"content-type": "application/json"},
        "multiValueHeaders": {"x-m": ["1", "2"]}, "cookies": ["a=b"],
        "body": '{"ok":true}', "isBase64Encoded": False}).encode())
    assert status == 202 and body == b'{"ok":true}'
    assert ("content-type", "application/json") in headers and ("set-cookie", "a=b") in headers
    assert ("x-m", "1") in headers and ("x-m", "2") in headers
    status, _, body = ll.function_url_response(json.dumps({
        "statusCode": 200, "body": base64.b64encode(b"\x00\x01").decode(), "isBase64Encoded": True}).encode())
    assert status == 200 and body == b"\x00\x01"
    # an answer that is not an HTTP response shape: a 200 with it as JSON (as Lambda does)
    assert ll.function_url_response(b'{"hello": 1}') == (200, [("content-type", "application/json")], b'{"hello": 1}')


def test_template_timeouts() -> None:
    t = ll.template_functions(TEMPLATE)
    assert {"ingest", "process", "reaper", "reconcile", "deliver", "charge", "wallet-api"} <= set(t)
    assert all(v > 0 for v in t.values())
    assert t["reconcile"] == 300


def test_env_file(tmp_path: Path) -> None:
    f = tmp_path / "dev.env"
    f.write_text("# comment\nRUST_LOG='info,shared=debug'\nA=\"b\"\nPLAIN=x=y\n\n")
    assert ll.read_env_file(f) == {"RUST_LOG": "info,shared=debug", "A": "b", "PLAIN": "x=y"}
    assert ll.read_env_file(tmp_path / "missing") == {}
