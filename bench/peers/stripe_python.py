"""stripe-python's webhook verification, timed in a loop: a peer of the ingest benchmark
(functions/ingest/benches/sidebyside.rs). Reads commands on stdin, one per line:
  version               the library's version
  load <label> <file>   the payload (JSON: id, body, header, secret) of one event size -> "ok"
  run <label> <n>       n calls of stripe.Webhook.construct_event on it -> elapsed ns
The library comes from the folder `bench/peers/install.sh` fills (PYTHONPATH)."""
import json
import sys
import time

import stripe

DAY = 86400
payloads = {}


def answer(text):
    sys.stdout.write(f"{text}\n")
    sys.stdout.flush()


for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    cmd = parts[0]
    if cmd == "version":
        answer(stripe.VERSION)
    elif cmd == "load":
        with open(parts[2], encoding="utf-8") as f:
            p = json.load(f)
        # The raw body as an HTTP server hands it over.
        p["raw"] = p["body"].encode("utf-8")
        payloads[parts[1]] = p
        answer("ok")
    elif cmd == "run":
        p = payloads[parts[1]]
        n = int(parts[2])
        event = None
        start = time.perf_counter_ns()
        for _ in range(n):
            event = stripe.Webhook.construct_event(p["raw"], p["header"], p["secret"], DAY)
        ns = time.perf_counter_ns() - start
        if event is None or event["id"] != p["id"]:
            raise SystemExit("verified the wrong event")
        answer(ns)
    elif cmd == "quit":
        break
