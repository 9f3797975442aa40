#!/usr/bin/env python3
"""The template's functions served locally as Lambda serves them: `make dev`'s function host.

It replaces `cargo lambda watch` on the public port (docs/local-stack.md, "The function host"
says why: a burst of 200 requests wedged every function there, any `git status` restarted them
all, and a function process that died was never started again). Standard library only.

- **Invoking.** The URLs users and the pipeline already use:
  `http://HOST:PORT/lambda-url/<function>/<path>` (a Function URL: payload 2.0 event, the
  function's HTTP response), `POST /2015-03-31/functions/<function>/invocations` (the Invoke API:
  the payload as is, `cargo lambda invoke` works), and `GET /_local/status` (JSON: per function
  its build, instances, queue, counts).
- **Concurrency as deployed.** Each function process runs one invocation at a time, as a Lambda
  execution environment does; a function scales out to `--concurrency` processes (default 10)
  when invocations wait. Invocations beyond the running processes wait in the function's queue
  (at most `--queue` per function, default 2,000); a fuller queue is answered at once with 429
  TooManyRequestsException and `Retry-After` (Lambda throttles with a 429 too), and an
  invocation that waited `--queue-wait` seconds (default 60) without a free process is answered
  503 with `Retry-After`. Every request is answered; none is left hanging.
- **Timeouts and deaths.** An invocation runs for at most its function's `Timeout`
  (template.yaml); past it the process is killed (as Lambda resets a sandbox) and the caller gets
  Lambda's `Task timed out` error. A process that exits is replaced on the next invocation; an
  invocation it held is answered with `Runtime.ExitError`.
- **Rebuilds.** It watches only what a build reads: `*.rs`, `Cargo.toml`, `Cargo.lock` and
  `.cargo/` outside `target/`, `.git/`, `.local/`, `.venv/`, `node_modules/`, `docs/`, `scripts/`.
  After a change it runs `cargo build --bin <function>` for each function (one at a time; a cargo
  lock held by another build is waited for, with a line saying so), and only a function whose
  binary changed is restarted: new invocations go to processes of the new build, invocations in
  flight finish on the old one. A build that fails keeps the previous build serving.

    python scripts/lambda_local.py --port 9000 --function ingest --function process ... \\
        [--env-file .local/dev.env] [--template template.yaml] [--concurrency 10]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import datetime as dt
import json
import os
import re
import shutil
import signal
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "123456789012"
REGION = os.environ.get("AWS_REGION", "us-east-1")
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 20 * 1024 * 1024  # above Lambda's 6 MB payload limit: the function decides
WATCH_EVERY_S = 1.0
START_DEADLINE_S = 30.0   # a process that has not asked for work by then is replaced
IDLE_REAP_S = 600.0       # a process idle this long is stopped (memory), one always kept
# Directories never watched: build output, VCS, the stack's state, the venv, docs and scripts.
SKIP_DIRS = {"target", ".git", ".local", ".venv", "node_modules", "docs", "scripts", ".aws-sam",
             "__pycache__", ".peers", "proptest-regressions"}


def log(msg: str) -> None:
    ts = dt.datetime.now().strftime("%H:%M:%S.%f")[:-3]
    print(f"\033[1;36m[lambda]\033[0m {ts} {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ pure parts (unit-tested)


def is_watched(relpath: str) -> bool:
    """Whether a change to this path (relative to the workspace, '/'-separated) can change a build."""
    parts = relpath.split("/")
    if any(p in SKIP_DIRS for p in parts[:-1]):
        return False
    name = parts[-1]
    if parts[0] == ".cargo":
        return True
    return name.endswith(".rs") or name in ("Cargo.toml", "Cargo.lock")


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every watched file under root."""
    out: dict[str, tuple[int, int]] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS or (d == root / ".cargo"):
                        stack.append(Path(e.path))
                    continue
                rel = os.path.relpath(e.path, root).replace(os.sep, "/")
                if is_watched(rel):
                    st = e.stat(follow_symlinks=False)
                    out[rel] = (st.st_mtime_ns, st.st_size)
            except OSError:
                continue
    return out


def changed_paths(old: dict[str, tuple[int, int]], new: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def route(method: str, target: str) -> tuple[str, str, str]:
    """(kind, function, path) of a public request: kind `url` (Function URL), `invoke` (Invoke
    API), `status`, or `` (unknown)."""
    path = urlsplit(target).path
    m = re.fullmatch(r"/2015-03-31/functions/([^/]+)/invocations", path)
    if m and method == "POST":
        return "invoke", unquote(m.group(1)), ""
    m = re.fullmatch(r"/lambda-url/([^/]+)(/.*)?", path)
    if m:
        return "url", unquote(m.group(1)), m.group(2) or "/"
    if path == "/_local/status":
        return "status", "", ""
    return "", "", path


def function_url_event(function: str, method: str, target: str, path: str,
                       headers: list[tuple[str, str]], body: bytes, request_id: str,
                       now_ms: int) -> dict[str, Any]:
    """The payload 2.0 event a Function URL gives the function (as cargo lambda built it)."""
    query = urlsplit(target).query
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        merged[key] = f"{merged[key]},{value}" if key in merged else value
    params: dict[str, str] = {}
    for k, v in parse_qsl(query, keep_blank_values=True):
        params[k] = f"{params[k]},{v}" if k in params else v
    ctype = merged.get("content-type", "")
    text = not ctype or ctype.startswith("text/") or ctype.startswith("application/json")
    encoded = False
    payload: str | None = None
    if body:
        if text:
            try:
                payload = body.decode("utf-8")
            except UnicodeDecodeError:
                text = False
        if not text:
            payload, encoded = base64.b64encode(body).decode("ascii"), True
    when = dt.datetime.fromtimestamp(now_ms / 1000, dt.timezone.utc)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": merged,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": function,
            "domainName": "localhost",
            "domainPrefix": function,
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": merged.get("user-agent", "")},
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": when.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": now_ms,
        },
        "isBase64Encoded": encoded,
    }
    if cookies:
        event["cookies"] = cookies
    if params:
        event["queryStringParameters"] = params
    if payload is not None:
        event["body"] = payload
    return event


def function_url_response(payload: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """A function's answer to a Function URL event, as HTTP: its statusCode, headers, cookies and
    body; an answer without statusCode is a 200 with the answer as the JSON body (as Lambda does)."""
    try:
        doc = json.loads(payload) if payload.strip() else None
    except ValueError:
        return 200, [("content-type", "application/json")], payload
    if not isinstance(doc, dict) or "statusCode" not in doc:
        return 200, [("content-type", "application/json")], payload
    headers: list[tuple[str, str]] = []
    for k, v in (doc.get("headers") or {}).items():
        headers.append((k, str(v)))
    for k, vs in (doc.get("multiValueHeaders") or {}).items():
        if k.lower() in {h[0].lower() for h in headers}:
            continue
        for v in vs or []:
            headers.append((k, str(v)))
    for c in doc.get("cookies") or []:
        headers.append(("set-cookie", str(c)))
    body = doc.get("body")
    if body is None:
        raw = b""
    elif doc.get("isBase64Encoded"):
        raw = base64.b64decode(body)
    else:
        raw = str(body).encode("utf-8")
    return int(doc["statusCode"]), headers, raw


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def template_functions(template: Path) -> dict[str, float]:
    """Binary name -> Timeout (seconds) of every function of the template."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from local_pipeline import LAMBDA_DEFAULT_TIMEOUT_S, Resolver, load_template

    doc = load_template(template)
    resolve = Resolver(doc)
    global_timeout = ((doc.get("Globals") or {}).get("Function") or {}).get("Timeout", LAMBDA_DEFAULT_TIMEOUT_S)
    out: dict[str, float] = {}
    for fid, res in (doc.get("Resources") or {}).items():
        if not isinstance(res, dict) or res.get("Type") != "AWS::Serverless::Function":
            continue
        binary = ((res.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        if binary:
            props = res.get("Properties") or {}
            out[binary] = float(resolve(props.get("Timeout", global_timeout), f"{fid}.Timeout"))
    return out


def read_env_file(path: Path | None) -> dict[str, str]:
    """KEY=VALUE lines (values optionally in single or double quotes)."""
    out: dict[str, str] = {}
    if not path or not path.exists():
        return out
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
            v = v[1:-1]
        out[k.strip()] = v
    return out


# ------------------------------------------------------------------ HTTP/1.1 over asyncio


class BadRequest(Exception):
    pass


@dataclass
class Request:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes
    keep_alive: bool

    def header(self, name: str) -> str | None:
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    except ValueError:
        raise BadRequest("bad request line") from None
    headers: list[tuple[str, str]] = []
    size = 0
    while True:
        h = await reader.readline()
        size += len(h)
        if size > MAX_HEADER_BYTES:
            raise BadRequest("headers too large")
        if h in (b"\r\n", b"\n", b""):
            break
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep:
            raise BadRequest("bad header line")
        headers.append((name.strip(), value.strip()))
    req = Request(method, target, headers, b"", True)
    conn = (req.header("connection") or "").lower()
    req.keep_alive = conn != "close" if version == "HTTP/1.1" else conn == "keep-alive"
    if (req.header("expect") or "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    te = (req.header("transfer-encoding") or "").lower()
    if "chunked" in te:
        chunks = []
        total = 0
        while True:
            size_line = await reader.readline()
            n = int(size_line.split(b";")[0].strip() or b"0", 16)
            if n == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                break
            total += n
            if total > MAX_BODY_BYTES:
                raise BadRequest("body too large")
            chunks.append(await reader.readexactly(n))
            await reader.readline()
        req.body = b"".join(chunks)
    else:
        length = int(req.header("content-length") or 0)
        if length > MAX_BODY_BYTES:
            raise BadRequest("body too large")
        req.body = await reader.readexactly(length) if length else b""
    return req


REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request", 404: "Not Found",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


def write_response(writer: asyncio.StreamWriter, status: int, headers: list[tuple[str, str]],
                   body: bytes, keep_alive: bool) -> None:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    for k, v in headers:
        if k.lower() in ("content-length", "transfer-encoding", "connection"):
            continue
        lines.append(f"{k}: {v}")
    lines.append(f"content-length: {len(body)}")
    lines.append("connection: keep-alive" if keep_alive else "connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace") + body)


# ------------------------------------------------------------------ the functions


@dataclass
class Invocation:
    id: str
    payload: bytes
    future: asyncio.Future
    queued_at: float
    client_context: str | None = None


@dataclass
class Instance:
    id: str
    generation: int
    proc: asyncio.subprocess.Process | None = None
    started_at: float = field(default_factory=time.monotonic)
    idle_since: float = field(default_factory=time.monotonic)
    asked: bool = False              # has asked for work at least once
    waiter: asyncio.Future | None = None  # set while it waits in `next`
    current: Invocation | None = None
    timer: asyncio.TimerHandle | None = None
    retiring: bool = False


class Function:
    def __init__(self, host: "Host", name: str, timeout_s: float) -> None:
        self.host = host
        self.name = name
        self.timeout_s = timeout_s
        self.queue: collections.deque[Invocation] = collections.deque()
        self.instances: dict[str, Instance] = {}
        self.binary: Path | None = None
        self.source: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) of cargo's output
        self.generation = 0
        self.build_error: str | None = None
        self.counts: collections.Counter[str] = collections.Counter()
        self.crashes: collections.deque[float] = collections.deque(maxlen=5)
        self.respawn_at = 0.0

    # ---------------------------------------------------------------- invoking

    def invoke(self, payload: bytes, client_context: str | None = None) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if len(self.queue) >= self.host.max_queue:
            self.counts["throttled"] += 1
            fut.set_result(("throttled", b"", 1))
            return fut
        inv = Invocation(str(uuid.uuid4()), payload, fut, time.monotonic(), client_context)
        self.counts["invoked"] += 1
        self.queue.append(inv)
        self.dispatch()
        return fut

    def dispatch(self) -> None:
        """Hands queued invocations to waiting instances; starts instances if some still wait."""
        while self.queue:
            idle = next((i for i in self.instances.values()
                         if i.waiter is not None and not i.waiter.done() and not i.retiring), None)
            if idle is None:
                break
            inv = self.queue.popleft()
            if inv.future.done():
                continue
            self.start_on(idle, inv)
        pending = sum(1 for i in self.queue if not i.future.done())
        if pending == 0 or self.binary is None:
            return
        live = [i for i in self.instances.values() if not i.retiring]
        starting = sum(1 for i in live if i.current is None and i.waiter is None)
        if starting < pending and len(live) < self.host.concurrency and time.monotonic() >= self.respawn_at:
            self.spawn()

    def start_on(self, inst: Instance, inv: Invocation) -> None:
        inst.current = inv
        waiter, inst.waiter = inst.waiter, None
        loop = asyncio.get_running_loop()
        inst.timer = loop.call_later(self.timeout_s, self.timed_out, inst, inv)
        if waiter is not None:
            waiter.set_result(inv)

    def timed_out(self, inst: Instance, inv: Invocation) -> None:
        if inst.current is not inv:
            return
        self.counts["timed_out"] += 1
        log(f"{self.name}: invocation {inv.id} timed out after {self.timeout_s:.0f} s; "
            f"stopping its process (pid {inst.proc.pid if inst.proc else '?'}) as Lambda does")
        self.finish(inst, ("error", error_body(
            "Sandbox.Timedout", f"RequestId: {inv.id} Error: Task timed out after {self.timeout_s:.2f} seconds"), 0))
        inst.retiring = True
        self.kill(inst)

    def finish(self, inst: Instance, result: tuple[str, bytes, int]) -> None:
        inv = inst.current
        inst.current = None
        inst.idle_since = time.monotonic()
        if inst.timer:
            inst.timer.cancel()
            inst.timer = None
        if inv is not None and not inv.future.done():
            inv.future.set_result(result)

    def expire_waiting(self) -> None:
        now = time.monotonic()
        while self.queue and (self.queue[0].future.done() or now - self.queue[0].queued_at > self.host.queue_wait):
            inv = self.queue.popleft()
            if not inv.future.done():
                self.counts["queue_timeout"] += 1
                inv.future.set_result(("unavailable", b"", 5))

    # ---------------------------------------------------------------- runtime API

    async def next_for(self, inst: Instance) -> Invocation | None:
        inst.asked = True
        if inst.current is not None:
            # a `next` without a response for the last one: the runtime gave up on it
            self.finish(inst, ("error", error_body("Runtime.Unknown", "the runtime asked for the next invocation without answering"), 0))
        if inst.retiring:
            self.kill(inst)
            return None
        while self.queue and self.queue[0].future.done():
            self.queue.popleft()
        if self.queue:
            inv = self.queue.popleft()
            self.start_on(inst, inv)
            return inv
        inst.waiter = asyncio.get_running_loop().create_future()
        try:
            return await inst.waiter
        finally:
            inst.waiter = None

    # ---------------------------------------------------------------- processes

    def spawn(self) -> None:
        assert self.binary is not None
        inst = Instance(uuid.uuid4().hex[:12], self.generation)
        self.instances[inst.id] = inst
        self.counts["started"] += 1
        asyncio.get_running_loop().create_task(self.run_instance(inst))

    async def run_instance(self, inst: Instance) -> None:
        env = dict(os.environ)
        env.update(self.host.env)
        env.update({
            "AWS_LAMBDA_RUNTIME_API": f"http://127.0.0.1:{self.host.runtime_port}/.rt/{self.name}/{inst.id}",
            "AWS_LAMBDA_FUNCTION_NAME": self.name,
            "AWS_LAMBDA_FUNCTION_VERSION": "1",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "AWS_LAMBDA_LOG_STREAM_NAME": inst.id,
            "AWS_LAMBDA_INSTANCE_ID": inst.id,
        })
        env.pop("AWS_LAMBDA_MAX_CONCURRENCY", None)
        try:
            inst.proc = await asyncio.create_subprocess_exec(str(self.binary), env=env, stdin=asyncio.subprocess.DEVNULL)
        except OSError as e:
            log(f"{self.name}: cannot start {self.binary}: {e}")
            self.instances.pop(inst.id, None)
            self.crashed()
            return
        code = await inst.proc.wait()
        self.instances.pop(inst.id, None)
        if inst.timer:
            inst.timer.cancel()
        if inst.waiter is not None and not inst.waiter.done():
            inst.waiter.cancel()
        if not inst.retiring and not self.host.stopping:
            self.counts["exited"] += 1
            log(f"{self.name}: process {inst.proc.pid} exited ({code}); a new one starts on the next invocation")
            if not inst.asked:
                self.crashed()
                # the invocation that started it gets the init error, as in Lambda
                while self.queue and self.queue[0].future.done():
                    self.queue.popleft()
                if self.queue:
                    inv = self.queue.popleft()
                    inv.future.set_result(("error", error_body(
                        "Runtime.ExitError", f"RequestId: {inv.id} Error: Runtime exited during init: exit status {code}"), 0))
        if inst.current is not None:
            inv = inst.current
            inst.current = None
            if not inv.future.done():
                inv.future.set_result(("error", error_body(
                    "Runtime.ExitError", f"RequestId: {inv.id} Error: Runtime exited with error: exit status {code}"), 0))
        if not self.host.stopping:
            self.dispatch()

    def crashed(self) -> None:
        now = time.monotonic()
        self.crashes.append(now)
        recent = [t for t in self.crashes if now - t < 30]
        if len(recent) >= 3:
            self.respawn_at = now + min(10.0, 0.5 * 2 ** (len(recent) - 3))

    def kill(self, inst: Instance) -> None:
        if inst.proc is not None and inst.proc.returncode is None:
            try:
                inst.proc.kill()
            except ProcessLookupError:
                pass

    def retire_old(self) -> None:
        """After a new build: idle processes of older builds stop now, busy ones after their invocation."""
        for inst in list(self.instances.values()):
            if inst.generation < self.generation:
                inst.retiring = True
                if inst.current is None:
                    self.kill(inst)

    def housekeeping(self) -> None:
        self.expire_waiting()
        now = time.monotonic()
        idle = sorted((i for i in self.instances.values() if i.waiter is not None and i.current is None),
                      key=lambda i: i.idle_since)
        for inst in idle[:-1]:  # keep one warm
            if now - inst.idle_since > IDLE_REAP_S:
                inst.retiring = True
                self.kill(inst)
        for inst in self.instances.values():
            if not inst.asked and inst.proc is not None and now - inst.started_at > START_DEADLINE_S:
                log(f"{self.name}: process {inst.proc.pid} did not ask for work within {START_DEADLINE_S:.0f} s; replacing it")
                inst.retiring = True
                self.kill(inst)
        self.dispatch()

    def status(self) -> dict[str, Any]:
        return {
            "binary": str(self.binary) if self.binary else None,
            "generation": self.generation,
            "build_error": self.build_error,
            "timeout_s": self.timeout_s,
            "instances": len(self.instances),
            "busy": sum(1 for i in self.instances.values() if i.current is not None),
            "queued": sum(1 for i in self.queue if not i.future.done()),
            "counts": dict(self.counts),
        }


class Host:
    def __init__(self, args: argparse.Namespace, timeouts: dict[str, float]) -> None:
        self.args = args
        self.concurrency = args.concurrency
        self.max_queue = args.queue
        self.queue_wait = args.queue_wait
        self.env = read_env_file(args.env_file)
        self.functions = {name: Function(self, name, timeouts.get(name, 3.0)) for name in args.function}
        self.runtime_port = 0
        self.stopping = False
        self.bin_dir = args.state_dir / "lambda-bin"
        self.build_lock = asyncio.Lock()
        self.answers: collections.Counter[int] = collections.Counter()
        self.prebuilt = dict(b.split("=", 1) for b in args.binary)
        self.functions.update({n: Function(self, n, timeouts.get(n, 3.0)) for n in self.prebuilt if n not in self.functions})

    # ---------------------------------------------------------------- builds

    def install(self, fn: Function, executable: str) -> None:
        """Serve this executable from now on (a link in .local/lambda-bin/: a later build never
        changes a running binary); processes of the previous one stop once idle."""
        st = os.stat(executable)
        source = (st.st_ino, st.st_mtime_ns, st.st_size)
        if source == fn.source and fn.binary is not None:
            return
        fn.generation += 1
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        dest = self.bin_dir / f"{fn.name}-{os.getpid()}-{fn.generation}"
        try:
            dest.unlink()
        except OSError:
            pass
        try:
            os.link(executable, dest)
        except OSError:
            shutil.copy2(executable, dest)
        old = fn.binary
        fn.binary, fn.source = dest, source
        if old is not None:
            log(f"{fn.name}: new build; processes of the previous one stop once idle")
            fn.retire_old()
            try:
                old.unlink()
            except OSError:
                pass
        fn.dispatch()

    async def build(self, fn: Function, reason: str) -> None:
        if fn.name in self.prebuilt:
            self.install(fn, self.prebuilt[fn.name])
            return
        async with self.build_lock:
            cmd = ["cargo", "build", "--bin", fn.name, "--message-format", "json-render-diagnostics"]
            log(f"{fn.name}: {reason}: {' '.join(cmd)}")
            proc = await asyncio.create_subprocess_exec(*cmd, cwd=str(self.args.root),
                                                        stdout=asyncio.subprocess.PIPE,
                                                        stderr=asyncio.subprocess.PIPE)
            executable: str | None = None
            waited_since: float | None = None

            async def out() -> None:
                nonlocal executable
                assert proc.stdout is not None
                async for line in proc.stdout:
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        continue
                    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and \
                            msg.get("target", {}).get("name") == fn.name:
                        executable = msg["executable"]

            async def err() -> None:
                assert proc.stderr is not None
                async for line in proc.stderr:
                    text = line.decode("utf-8", "replace").rstrip()
                    if "Blocking waiting for file lock" in text:
                        nonlocal waited_since
                        waited_since = waited_since or time.monotonic()
                        log(f"{fn.name}: waiting for another cargo's lock ({text.strip()}); "
                            f"{'the previous build keeps serving' if fn.binary else 'invocations wait'}")
                    elif text.strip() and not text.lstrip().startswith(("Compiling", "Finished", "Checking")):
                        print(text, file=sys.stderr, flush=True)

            await asyncio.gather(out(), err())
            code = await proc.wait()
        if waited_since is not None:
            log(f"{fn.name}: build done {time.monotonic() - waited_since:.0f} s after it began waiting for the lock (exit {code})")
        if code != 0 or not executable:
            fn.build_error = f"cargo build --bin {fn.name} failed (exit {code})"
            log(f"{fn.name}: {fn.build_error}; " + ("the previous build keeps serving" if fn.binary else "not serving"))
            return
        fn.build_error = None
        self.install(fn, executable)

    async def watch(self) -> None:
        root = self.args.root
        seen = await asyncio.to_thread(snapshot, root)
        while not self.stopping:
            await asyncio.sleep(WATCH_EVERY_S)
            now = await asyncio.to_thread(snapshot, root)
            diff = changed_paths(seen, now)
            if not diff:
                continue
            # let an editor or a checkout finish writing
            while True:
                await asyncio.sleep(0.5)
                later = await asyncio.to_thread(snapshot, root)
                if later == now:
                    break
                now = later
            diff = changed_paths(seen, now)
            seen = now
            shown = ", ".join(diff[:3]) + (f" and {len(diff) - 3} more" if len(diff) > 3 else "")
            for fn in self.functions.values():
                await self.build(fn, f"changed: {shown}")

    # ---------------------------------------------------------------- servers

    async def public(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    req = await read_request(reader, writer)
                except BadRequest as e:
                    write_response(writer, 400, [("content-type", "text/plain")], str(e).encode(), False)
                    break
                if req is None:
                    break
                try:
                    status, headers, body = await self.answer(req)
                except asyncio.CancelledError:
                    # the host is stopping: say so instead of dropping the connection
                    write_response(writer, 503, [("retry-after", "5"), ("content-type", "application/json")],
                                   b'{"message": "the function host is stopping"}', False)
                    break
                self.answers[status] += 1
                write_response(writer, status, headers, body, req.keep_alive)
                await writer.drain()
                if not req.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def answer(self, req: Request) -> tuple[int, list[tuple[str, str]], bytes]:
        kind, name, path = route(req.method, req.target)
        json_h = [("content-type", "application/json")]
        if kind == "status":
            doc = {"functions": {n: f.status() for n, f in self.functions.items()},
                   "answers": {str(k): v for k, v in sorted(self.answers.items())}}
            return 200, json_h, json.dumps(doc).encode()
        if not kind:
            return 404, json_h, json.dumps({"message": f"no route {req.method} {path}: use /lambda-url/<function>/... "
                                                       "or /2015-03-31/functions/<function>/invocations"}).encode()
        fn = self.functions.get(name)
        if fn is None:
            return 404, json_h + [("x-amzn-errortype", "ResourceNotFoundException")], json.dumps({
                "Type": "User", "message": f"Function not found: {name} (serving {', '.join(self.functions)})"}).encode()
        req_id = str(uuid.uuid4())
        if kind == "url":
            event = function_url_event(name, req.method, req.target, path, req.headers, req.body, req_id,
                                       int(time.time() * 1000))
            payload = json.dumps(event).encode()
        else:
            payload = req.body
        outcome, data, retry = await fn.invoke(payload, req.header("x-amz-client-context"))
        if outcome == "throttled":
            fn_msg = {"Reason": "ConcurrentInvocationLimitExceeded", "Type": "User",
                      "message": f"Rate Exceeded: {name} has {self.max_queue} invocations waiting"}
            return 429, json_h + [("retry-after", str(retry)), ("x-amzn-errortype", "TooManyRequestsException")], \
                json.dumps(fn_msg).encode()
        if outcome == "unavailable":
            msg = {"Type": "Service", "message": f"{name}: no process free within {self.queue_wait:.0f} s"
                   + (f" ({fn.build_error})" if fn.build_error and fn.binary is None else "")}
            return 503, json_h + [("retry-after", str(retry)), ("x-amzn-errortype", "ServiceException")], \
                json.dumps(msg).encode()
        if outcome == "error":
            return (502 if kind == "url" else 500), json_h + [("x-amz-function-error", "Unhandled")], data
        if kind == "url":
            try:
                return function_url_response(data)
            except (ValueError, TypeError, KeyError) as e:
                return 502, json_h, error_body("Runtime.InvalidResponse", str(e))
        return 200, json_h, data

    async def runtime(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                req = await read_request(reader, writer)
                if req is None:
                    break
                status, headers, body = await self.runtime_answer(req)
                if status < 0:
                    break  # a retired instance: no answer, it is being killed
                write_response(writer, status, headers, body, True)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, BadRequest, ValueError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def runtime_answer(self, req: Request) -> tuple[int, list[tuple[str, str]], bytes]:
        m = re.fullmatch(r"/\.rt/([^/]+)/([^/]+)/2018-06-01/runtime/(.*)", urlsplit(req.target).path)
        fn = self.functions.get(m.group(1)) if m else None
        inst = fn.instances.get(m.group(2)) if fn and m else None
        if not m or fn is None or inst is None:
            return 404, [], b""
        rest = m.group(3)
        if rest == "invocation/next" and req.method == "GET":
            inv = await fn.next_for(inst)
            if inv is None:
                return -1, [], b""
            deadline = int((time.time() + fn.timeout_s) * 1000)
            headers = [("content-type", "application/json"),
                       ("lambda-runtime-aws-request-id", inv.id),
                       ("lambda-runtime-deadline-ms", str(deadline)),
                       ("lambda-runtime-invoked-function-arn", f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{fn.name}"),
                       ("lambda-runtime-trace-id", f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Sampled=0")]
            if inv.client_context:
                headers.append(("lambda-runtime-client-context", inv.client_context))
            return 200, headers, inv.payload
        m2 = re.fullmatch(r"invocation/([^/]+)/(response|error)", rest)
        if m2 and req.method == "POST":
            if inst.current is not None and inst.current.id == m2.group(1):
                fn.counts["ok" if m2.group(2) == "response" else "function_error"] += 1
                fn.finish(inst, ("ok" if m2.group(2) == "response" else "error", req.body, 0))
                if inst.retiring:
                    fn.kill(inst)
            return 202, [("content-type", "application/json")], b'{"status":"OK"}'
        if rest == "init/error" and req.method == "POST":
            log(f"{fn.name}: init error: {req.body[:500].decode('utf-8', 'replace')}")
            return 202, [("content-type", "application/json")], b'{"status":"OK"}'
        return 404, [], b""

    async def housekeeping(self) -> None:
        while not self.stopping:
            await asyncio.sleep(1.0)
            for fn in self.functions.values():
                fn.housekeeping()

    def remove_stale_links(self) -> None:
        """Links left by a host that was killed (`<function>-<pid>-<generation>`, its pid gone)."""
        for f in self.bin_dir.glob("*-*-*") if self.bin_dir.is_dir() else []:
            try:
                pid = int(f.name.rsplit("-", 2)[1])
                os.kill(pid, 0)
            except ProcessLookupError:
                f.unlink(missing_ok=True)
            except (ValueError, PermissionError, OSError):
                continue

    async def serve(self) -> None:
        self.remove_stale_links()
        rt = await asyncio.start_server(self.runtime, "127.0.0.1", 0, limit=MAX_BODY_BYTES)
        self.runtime_port = rt.sockets[0].getsockname()[1]
        for fn in self.functions.values():
            await self.build(fn, "first build")
        pub = await asyncio.start_server(self.public, self.args.host, self.args.port,
                                         limit=MAX_BODY_BYTES, backlog=4096)
        log(f"serving {', '.join(self.functions)} on http://{self.args.host}:{self.args.port} "
            f"(each function up to {self.concurrency} processes, one invocation each; "
            f"{self.max_queue} may wait; rebuilds on changes to Rust sources only)")
        tasks = [asyncio.create_task(self.housekeeping())]
        if not self.args.no_watch:
            tasks.append(asyncio.create_task(self.watch()))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        self.stopping = True
        pub.close()
        rt.close()
        for fn in self.functions.values():
            for inst in list(fn.instances.values()):
                inst.retiring = True
                fn.kill(inst)
            if fn.binary is not None:
                try:
                    fn.binary.unlink()
                except OSError:
                    pass
        for t in tasks:
            t.cancel()
        log("stopped")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9000)
    p.add_argument("--function", action="append", default=[], help="a binary to serve (repeat)")
    p.add_argument("--template", type=Path, default=ROOT / "template.yaml")
    p.add_argument("--env-file", type=Path, default=None, help="KEY=VALUE lines for the functions (RUST_LOG)")
    p.add_argument("--root", type=Path, default=ROOT, help="the workspace (watched, built)")
    p.add_argument("--state-dir", type=Path, default=ROOT / ".local")
    p.add_argument("--concurrency", type=int, default=int(os.environ.get("DEV_LAMBDA_CONCURRENCY", "10")),
                   help="processes per function at most (default 10; DEV_LAMBDA_CONCURRENCY)")
    p.add_argument("--queue", type=int, default=int(os.environ.get("DEV_LAMBDA_QUEUE", "2000")),
                   help="invocations waiting per function before 429s (default 2000; DEV_LAMBDA_QUEUE)")
    p.add_argument("--queue-wait", type=float, default=float(os.environ.get("DEV_LAMBDA_QUEUE_WAIT", "60")),
                   help="seconds an invocation may wait for a process before a 503 (default 60)")
    p.add_argument("--no-watch", action="store_true", help="never rebuild")
    p.add_argument("--binary", action="append", default=[], metavar="NAME=PATH",
                   help="serve this executable as function NAME, never built (a release bootstrap)")
    args = p.parse_args(argv)
    if not args.function and not args.binary:
        p.error("at least one --function or --binary")
    if any("=" not in b for b in args.binary):
        p.error("--binary NAME=PATH")
    try:
        timeouts = template_functions(args.template)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"lambda_local: {args.template}: {e}", file=sys.stderr)
        return 2
    host = Host(args, timeouts)
    asyncio.run(host.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
