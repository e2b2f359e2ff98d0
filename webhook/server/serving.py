"""gunicorn, run programmatically for ``wasp serve``: TLS, gthread workers, hooks.

* ``gthread`` workers (a thread per connection, with :mod:`webhook.server.edge`'s deadlines) keep
  HTTP/1.1 connections alive, which the apiserver pools and reuses (docs/design.md §9.8, §9.10;
  docs/operations-hardening.md); ``reuse_port`` lets the kernel spread those connections over
  the workers, and worker recycling (``max_requests``) stays off because with reuse_port it
  refuses connections while a worker restarts (docs/design.md §11.1).
* TLS comes from :class:`webhook.certs.serving.CertReloader` through gunicorn's per-connection
  ``ssl_context`` hook, so a rotated certificate is used without restarting anything.
* The arbiter runs the probe/metrics server (:mod:`webhook.server.probes`) from ``when_ready``, marks
  dead workers' metric files from ``child_exit``, and stops it from ``on_exit``. With a
  membership policy, each worker starts its identity watch from ``post_worker_init`` and
  accepts no connection before it has listed (:mod:`webhook.watches.identities`).
* Everything loaded before the fork (modules, policies, compiled schemas, the app) is moved
  to the collector's permanent generation in ``pre_fork`` (``gc.freeze``, as the ``gc`` docs
  advise for fork without exec): a worker's full collections then walk only what it made
  itself, and never write to the shared pages, so they stay shared copy-on-write.
* SIGTERM is gunicorn's graceful stop: listeners close, in-flight reviews get
  ``graceful_timeout`` (below the apiserver's 10 s timeout) to finish. The ``pre_request`` and
  ``post_request`` hooks count the requests a worker is answering; one that still has some at
  ``worker_exit`` logs how many it cut and :meth:`WaspServer.reviews_cut` says so (``wasp
  serve`` exits 3 instead of 0).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import mmap
import threading
import typing as t
from datetime import UTC, datetime

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from webhook import certs
from webhook.server import edge, metrics
from webhook.server.app import state_of
from webhook.server.edge import DeadlineSocket, EdgeWorker, edge_app
from webhook.server.logs import logging_config
from webhook.server.probes import ProbeServer, create_probe_app, listening_problems

if t.TYPE_CHECKING:
    import ssl

    from flask import Flask

    from webhook.server.settings import Settings

__all__ = ["WaspServer"]

log = logging.getLogger("wasp.connections")

# Bytes shared by the arbiter and the workers it forks (an anonymous shared mapping): [0] a
# worker stopped with reviews still running (``wasp serve`` exits 3), [1] a worker has
# started (its identity caches listed) and takes connections (readiness).
_SHARED: t.Final = mmap.mmap(-1, 2)

# The gunicorn heartbeat: a worker silent this long is killed. Far above any review's
# time, it only catches a wedged worker.
WORKER_TIMEOUT: t.Final = 30


class _Logger(Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    """gunicorn's logger without the access log: the review line (uid and outcome; every review
    at debug) replaces it, and gunicorn would format access atoms on every request.
    With ``reuse_port`` the arbiter holds no listener, so its "Listening at" line is given
    the configured address instead of an empty one."""

    def access(self, resp: object, req: object, environ: object, request_time: object) -> None:
        pass

    def info(self, msg: str, *args: object, **kwargs: object) -> None:
        if msg.startswith("Listening at") and args and not args[0]:
            args = (",".join(self.cfg.bind), *args[1:])
        super().info(msg, *args, **kwargs)


class WaspServer(BaseApplication):  # type: ignore[misc]  # gunicorn ships no type hints
    """Serve ``app`` (built by :func:`webhook.server.app.create_app`) as ``settings`` say."""

    def __init__(self, settings: Settings, app: Flask) -> None:
        self.settings = settings
        self.application = app
        self.probes: ProbeServer | None = None
        super().__init__()

    def reviews_cut(self) -> bool:
        """Whether a worker stopped with reviews still running (after the arbiter exits)."""
        return _SHARED[0] != 0

    def load_config(self) -> None:
        s = self.settings
        _SHARED[0] = _SHARED[1] = 0
        # wasp's JSON lines carry no thread or process names: logging need not gather them
        # for every record (the documented switches of the logging HOWTO's "Optimization").
        logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
        state = state_of(self.application)
        socket_class = DeadlineSocket.bound(s)
        running = _Running()

        # gunicorn checks hooks by their positional arity, so these are plain closures.
        def ssl_context(config: object, default_factory: object) -> ssl.SSLContext:
            context = state.reloader.context()
            context.sslsocket_class = socket_class  # a documented SSLContext attribute
            return context

        def when_ready(arbiter: t.Any) -> None:
            def readiness() -> list[str]:
                # No OpenSSL here: the arbiter forks workers, and a fork in the middle of OpenSSL
                # work leaves the child with its locks held. A connect says a worker listens;
                # a slow or busy worker still accepts, so overload never reads as unready.
                started = [] if _SHARED[1] else ["no worker has started serving yet"]
                return [*listening_problems(s.probe_host, s.port), *started, *certificate_problems()]

            def certificate_problems() -> list[str]:
                # The pair loaded at start, or once it expired the rotated certificate the
                # workers load from the same file (parsed without OpenSSL).
                problems = state.reloader.problems()
                with contextlib.suppress(OSError, ValueError):
                    if problems and certs.not_after(s.cert_file.read_bytes()) > datetime.now(UTC):
                        return []
                return problems

            self.probes = ProbeServer(
                s.bind_address, s.metrics_port, create_probe_app(readiness), header_timeout=s.header_timeout
            )
            self.probes.start()

        def pre_fork(arbiter: t.Any, worker: t.Any) -> None:
            gc.freeze()

        def post_worker_init(worker: t.Any) -> None:
            if state.reloader.current is not None:
                metrics.CERT_EXPIRY.set(state.reloader.current.not_after.timestamp())
            if state.identities is not None:
                # Each worker watches for itself (no thread survives the fork), and takes no
                # connection before its caches have listed once; until one worker has,
                # /readyz says 503 (docs/decisions.md §28).
                state.identities.start()
                while worker.alive and not state.identities.wait(1.0):
                    worker.notify()  # the arbiter kills a worker silent for WORKER_TIMEOUT
            _SHARED[1] = 1

        def pre_request(worker: t.Any, req: t.Any) -> None:
            edge.pre_request(worker, req)
            running.add(1)

        def post_request(worker: t.Any, req: t.Any, environ: object, resp: object) -> None:
            running.add(-1)

        def worker_exit(arbiter: t.Any, worker: t.Any) -> None:
            # The worker's graceful time is over (or it was told to quit): what still runs is cut.
            if cut := running.count:
                _SHARED[0] = 1
                log.error("graceful timeout: requests still running were cut without an answer",
                          extra={"fields": {"pid": worker.pid, "cut": cut, "graceful_timeout": s.graceful_timeout}})  # fmt: skip

        def child_exit(arbiter: t.Any, worker: t.Any) -> None:
            metrics.mark_process_dead(worker.pid)

        def on_exit(arbiter: t.Any) -> None:
            if self.probes is not None:
                self.probes.stop()

        options: dict[str, object] = {
            "bind": [s.bind],
            "worker_class": EdgeWorker,
            "worker_connections": s.max_connections,
            "worker_tmp_dir": str(s.temp_dir) if s.temp_dir is not None else None,
            "workers": s.workers,
            "threads": s.threads,
            "reuse_port": True,
            "max_requests": 0,
            "keepalive": s.keepalive,
            "graceful_timeout": s.graceful_timeout,
            "timeout": WORKER_TIMEOUT,
            "preload_app": True,
            # certfile/keyfile make gunicorn treat the listener as TLS; the context itself
            # comes from the hook, so these files are only read by our reloader.
            "certfile": str(s.cert_file),
            "keyfile": str(s.key_file),
            "ssl_context": ssl_context,
            "when_ready": when_ready,
            "pre_fork": pre_fork,
            "post_worker_init": post_worker_init,
            "pre_request": pre_request,
            "post_request": post_request,
            "worker_exit": worker_exit,
            "child_exit": child_exit,
            "on_exit": on_exit,
            "http_protocols": "h1",
            "logger_class": _Logger,
            "logconfig_dict": logging_config(s.log_level),
            "loglevel": s.log_level,
            # gunicorn 27's control socket defaults to a per-user path shared by every
            # instance; wasp needs none of it.
            "control_socket_disable": True,
            "proc_name": "wasp",
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> t.Any:
        return edge_app(self.application)


class _Running:
    """Requests a worker's threads are answering (from gunicorn's pre/post_request hooks)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.count += n
