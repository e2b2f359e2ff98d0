"""``python -m tests.standin``: run the stand-in API server (see tests/standin/server.py)."""

from __future__ import annotations

import argparse
import gc
import sys
import threading
import time

from tests.standin import gates
from tests.standin.server import StandInServer
from tests.standin.store import BUILTIN, Resource, Store


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.standin", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    parser.add_argument("--resource", action="append", default=[], metavar="GROUP/VERSION/PLURAL/KIND[/cluster]",
                        help="an extra resource, e.g. a CRD: ml.example.com/v1/trainers/Trainer")  # fmt: skip
    parser.add_argument("--feature-gates", default="", metavar="GATE=BOOL,...",
                        help=f"turn WAS gates off ({', '.join(gates.GATES)}); all are on by default")  # fmt: skip
    parser.add_argument(
        "--server-version", default="1.37", metavar="MAJOR.MINOR", help="what /version answers"
    )
    parser.add_argument("--hide", action="append", default=[], metavar="GROUP/VERSION/PLURAL",
                        help="serve the resource but leave it out of discovery and answer 404 (startup checks)")  # fmt: skip
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    parser.add_argument("--log-size", type=int, default=200_000, help="watch events kept per resource")
    args = parser.parse_args(argv)
    try:
        off = gates.parse(args.feature_gates)
    except ValueError as exc:
        parser.error(str(exc))
    store = Store([*BUILTIN, *map(Resource.parse, args.resource)], log_size=args.log_size, gates_off=off)
    hidden = frozenset(args.hide) | gates.hidden(off)
    server = StandInServer(
        args.port, store, bookmark_interval=args.bookmark_interval, hidden=hidden, version=args.server_version
    )

    # The store is long-lived, acyclic JSON: a full cyclic collection over 100,000s of stored
    # objects and log entries stalls every request for about a second; keep it out of the heap
    # the collector scans (replaced objects are still freed by reference counting).
    def freeze() -> None:
        while True:
            time.sleep(1.0)
            gc.freeze()

    threading.Thread(target=freeze, daemon=True).start()
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
