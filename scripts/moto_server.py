#!/usr/bin/env python3
"""The local AWS emulator: moto in server mode, made serializable where DynamoDB is.

moto serves each request on its own thread, and its DynamoDB is not isolated: a
TransactWriteItems that fails restores a deep copy of every table it touched, taken when it
started (the stream shard included), erasing what other requests wrote meanwhile. Against it,
concurrent ingest and processing lose acknowledged items and stream records, which real DynamoDB
never does. This launcher runs every DynamoDB and DynamoDB Streams request alone (one lock,
taken for requests whose `X-Amz-Target` starts with `DynamoDB`); SQS, Secrets Manager and the
rest stay concurrent, so an SQS long poll never holds DynamoDB up.

    python scripts/moto_server.py [-H HOST] [-p PORT] [--no-serialize]

`--no-serialize` (or MOTO_SERIALIZE=0) runs plain moto, to show what the lock prevents.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any, Callable, Iterable

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import run_simple


class SerializedDynamoDB:
    """WSGI middleware: DynamoDB and Streams requests run one at a time, start to finish."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if not environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            return self.app(environ, start_response)
        with self.lock:
            # The whole response is produced under the lock: moto may build it lazily.
            result = self.app(environ, start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        return [body]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, default=int(os.environ.get("MOTO_PORT", "5000")))
    parser.add_argument(
        "--no-serialize",
        action="store_true",
        default=os.environ.get("MOTO_SERIALIZE", "1") == "0",
        help="plain moto: DynamoDB requests run concurrently (not serializable)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))

    app: Any = DomainDispatcherApplication(create_backend_app)
    if not args.no_serialize:
        app = SerializedDynamoDB(app)
    mode = "plain (NOT serializable)" if args.no_serialize else "DynamoDB requests serialized"
    print(f"moto on http://{args.host}:{args.port}: {mode}", flush=True)
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
