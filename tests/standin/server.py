"""A STAND-IN Kubernetes API server: REST + watch over HTTP on 127.0.0.1 (tests only).

No kube-apiserver binary can be obtained on these machines, so wasp's reconciler is tested
against this process. It speaks the parts of the protocol the reconciler's resources need:

* discovery: ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>``;
  ``/version`` (``--server-version``);
* per resource: list (``resourceVersion`` in the list metadata; ``labelSelector``; ``fieldSelector``
  on the fields kube-apiserver indexes for Pods, Events and Nodes (tests/standin/listing.py); pages with
  ``limit`` and ``continue``, 410 ``Expired`` for a token from before a compaction, see
  tests/standin/listing.py), ``watch=true`` streams
  (newline-delimited JSON events over chunked HTTP/1.1, ``resourceVersion`` to resume,
  ``allowWatchBookmarks``, ``timeoutSeconds``; an ``ERROR`` event with a 410 ``Status`` when
  resuming from a compacted version), get, create (201; 409 ``AlreadyExists``), replace
  (409 ``Conflict`` on a stale ``resourceVersion``), merge / JSON / strategic-merge patch,
  delete; Leases are an ordinary resource; ``dryRun=All`` on create checks and answers but
  stores nothing; with ``--feature-gates Gate=false`` a create drops that gate's fields and
  the gate's resources are not served (tests/standin/gates.py);
* test controls under ``/standin/``: ``faults`` (POST a rule ``{"verb", "plural", "code",
  "count"}``, and ``retryAfter`` seconds for a 429, answered as the apiserver's throttling
  filters do: text with a ``Retry-After`` header; DELETE clears them), ``compact``, ``drop-watches``, ``stats`` (GET request counts by verb and
  resource), ``objects`` (GET a resource's objects).

It does no authentication, admission, defaulting, validation (beyond a name) or garbage
collection; webhook configurations, Services and EndpointSlices are stored, never acted on.
Run it with ``python -m tests.standin [--port N] [--resource group/version/plural/Kind]...``;
it prints ``listening on http://127.0.0.1:<port>`` once it accepts connections.
"""

from __future__ import annotations

import time
import typing as t
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import orjson

from tests.standin.store import ApiError, Resource, Store

Json = dict[str, t.Any]
_EVENTS_PER_CHUNK: t.Final = 256  # an initial list of 10,000s of objects goes out in bounded pieces


class TooManyRequests(Exception):
    def __init__(self, seconds: int) -> None:
        super().__init__(f"too many requests, retry after {seconds}s")
        self.seconds = seconds


class StandInServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512

    def __init__(
        self,
        port: int,
        store: Store,
        *,
        bookmark_interval: float,
        hidden: frozenset[str],
        version: str = "1.37",
    ) -> None:
        # 127.0.0.1 only: the stand-in has no authentication at all.
        super().__init__(("127.0.0.1", port), Handler)
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.hidden = hidden  # "group/version/plural" left out of discovery (startup-check tests)
        major, _, minor = version.partition(".")
        self.version = {"major": major, "minor": minor, "gitVersion": f"v{version}.0-standin",
                        "platform": "linux/amd64"}  # fmt: skip

    def handle_error(self, request: t.Any, client_address: t.Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # a client going away is normal here


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle's algorithm on, each answer
    # would wait ~40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True
    server: StandInServer

    def log_message(self, format: str, *args: t.Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: tests read stdout for the port line only

    # -- plumbing --------------------------------------------------------------------------------

    def _send(self, code: int, body: object) -> None:
        data = orjson.dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> t.Any:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            return orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            raise ApiError(400, "BadRequest", "the request body is not JSON") from None

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = [p for p in url.path.split("/") if p]
        try:
            # Read the body first, whatever the answer: keep-alive needs the stream in step.
            body = self._body() if method in ("POST", "PUT", "PATCH") else None
            if parts and parts[0] == "standin":
                self._control(method, parts[1:], query, body)
            elif method == "GET" and parts == ["version"]:
                self._send(200, self.server.version)
            elif parts in (["healthz"], ["readyz"], ["livez"]):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            elif method == "GET" and self._discovery(parts):
                pass
            else:
                self._resource(method, parts, query, body)
        except TooManyRequests as exc:
            # As the apiserver's max-in-flight and priority-and-fairness filters answer: a plain
            # text 429 that names the wait in a Retry-After header (seconds).
            data = b"Too many requests, please try again later.\n"
            self.send_response(429)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Retry-After", str(exc.seconds))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except ApiError as exc:
            self._send(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- discovery --------------------------------------------------------------------------------

    def _served(self) -> list[Resource]:
        return [
            r
            for r in self.server.store.resources.values()
            if f"{r.api_version}/{r.plural}" not in self.server.hidden
        ]

    def _discovery(self, parts: list[str]) -> bool:
        served = self._served()
        groups: dict[str, list[str]] = {}
        for r in served:
            if r.group:
                versions = groups.setdefault(r.group, [])
                if r.version not in versions:
                    versions.append(r.version)

        def group_doc(name: str) -> Json:
            versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
            return {"name": name, "versions": versions, "preferredVersion": versions[0]}

        def resource_list(group: str, version: str) -> Json:
            found = [r for r in served if (r.group, r.version) == (group, version)]
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": f"{group}/{version}" if group else version,
                    "resources": [{"name": r.plural, "singularName": r.kind.lower(), "namespaced": r.namespaced,
                                   "kind": r.kind, "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
                                  for r in found]}  # fmt: skip

        if parts == ["api"]:
            self._send(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        elif parts == ["api", "v1"]:
            self._send(200, resource_list("", "v1"))
        elif parts == ["apis"]:
            self._send(
                200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group_doc(g) for g in groups]}
            )
        elif len(parts) == 2 and parts[0] == "apis" and parts[1] in groups:
            self._send(200, {"kind": "APIGroup", "apiVersion": "v1", **group_doc(parts[1])})
        elif len(parts) == 3 and parts[0] == "apis" and parts[2] in groups.get(parts[1], []):
            self._send(200, resource_list(parts[1], parts[2]))
        else:
            return False
        return True

    # -- resources ----------------------------------------------------------------------------------

    def _locate(self, parts: list[str]) -> tuple[str, str | None, str | None]:
        """(resource key, namespace or None, name or None) of a resource path."""
        if parts[:2] == ["api", "v1"]:
            prefix, rest = "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            prefix, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({self.path})")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        key = f"{prefix}/{rest[0]}"
        if key not in self.server.store.resources or f"{prefix}/{rest[0]}" in self.server.hidden:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource ({key})")
        name = rest[1] if len(rest) > 1 else None  # rest[2] == "status" is the same object here
        return key, namespace, name

    def _resource(self, method: str, parts: list[str], query: dict[str, str], body: t.Any) -> None:
        store = self.server.store
        key, namespace, name = self._locate(parts)
        plural = store.resources[key].plural
        verb = {"GET": "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list"),
                "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]  # fmt: skip
        store.count(verb, plural)
        fault = store.faults.take(verb, plural)
        if fault is not None:
            code = int(fault.get("code", 500))
            if code == 429:
                raise TooManyRequests(int(fault.get("retryAfter", 1)))
            raise ApiError(code, "InternalError" if code >= 500 else "Injected", f"injected failure ({code})")
        ns = namespace or ""
        if verb == "watch":
            self._watch(key, namespace, query)
        elif verb == "list":
            try:
                limit = int(query.get("limit") or 0)
            except ValueError:
                raise ApiError(400, "BadRequest", f"limit: not an integer: {query['limit']!r}") from None
            items, rv, token, left = store.page(
                key,
                namespace,
                limit=limit,
                token=query.get("continue", ""),
                labels=query.get("labelSelector", ""),
                field_selector=query.get("fieldSelector", ""),
            )
            r = store.resources[key]
            list_meta: Json = {"resourceVersion": str(rv)}
            if token:
                list_meta.update({"continue": token, "remainingItemCount": left})
            self._send(200, {"kind": f"{r.kind}List", "apiVersion": r.api_version,
                             "metadata": list_meta, "items": items})  # fmt: skip
        elif verb == "get":
            self._send(200, store.get(key, ns, t.cast(str, name)))
        elif verb == "create":
            if query.get("dryRun") not in (None, "All"):
                raise ApiError(400, "BadRequest", f"dryRun: unsupported value {query['dryRun']!r} (only All)")
            self._send(201, store.create(key, ns, body or {}, dry_run="dryRun" in query))
        elif verb == "update":
            self._send(200, store.replace(key, ns, t.cast(str, name), body or {}))
        elif verb == "patch":
            self._send(
                200, store.patch(key, ns, t.cast(str, name), self.headers.get("Content-Type", ""), body)
            )
        else:
            self._send(200, store.delete(key, ns, t.cast(str, name)))

    def _chunk(self, events: t.Sequence[Json]) -> None:
        """Events as newline-delimited JSON in one HTTP chunk: kube-apiserver flushes a watch
        only when no further event is pending, so events that are ready together travel
        together (one write here, one read for the client)."""
        for start in range(0, len(events), _EVENTS_PER_CHUNK):
            data = b"".join(orjson.dumps(e) + b"\n" for e in events[start : start + _EVENTS_PER_CHUNK])
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, key: str, namespace: str | None, query: dict[str, str]) -> None:
        store = self.server.store
        resource = store.resources[key]
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        since = query.get("resourceVersion", "")
        pending: list[Json] = []
        with store.lock:
            generation = store.generation
            if since in ("", "0"):
                items, last = store.items(key, namespace)
                pending = [{"type": "ADDED", "object": o} for o in items]
            elif int(since) < store.horizon[key]:
                pending, last = [_gone(since)], -1
            else:
                last = int(since)
        next_bookmark = time.monotonic() + self.server.bookmark_interval
        try:
            while last >= 0:
                if pending:
                    self._chunk(pending)
                pending = []
                now = time.monotonic()
                if now >= deadline:
                    break
                if bookmarks and now >= next_bookmark:
                    bookmark = {"kind": resource.kind, "apiVersion": resource.api_version,
                                "metadata": {"resourceVersion": str(last)}}  # fmt: skip
                    self._chunk([{"type": "BOOKMARK", "object": bookmark}])
                    next_bookmark = now + self.server.bookmark_interval
                with store.lock:
                    if store.generation != generation:
                        break  # a dropped connection, as a load balancer or apiserver restart does
                    if last < store.horizon[key]:
                        pending, last = [_gone(str(last))], -1
                        continue
                    log = store.logs[key]
                    if not log or log[-1][0] <= last:
                        store.changed[key].wait(timeout=min(deadline, next_bookmark) - now)
                    fresh = []
                    for rv, kind, obj in reversed(log):
                        if rv <= last:
                            break
                        if namespace is None or obj["metadata"].get("namespace") == namespace:
                            fresh.append({"type": kind, "object": obj})
                    fresh.reverse()
                    pending, last = fresh, store.rv
            if pending:
                self._chunk(pending)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    # -- controls -----------------------------------------------------------------------------------

    def _control(self, method: str, parts: list[str], query: dict[str, str], body: t.Any) -> None:
        store = self.server.store
        if method == "POST" and parts == ["faults"]:
            rule = body or {}
            rule.setdefault("count", 1)
            store.faults.rules.append(rule)
            self._send(200, {"rules": store.faults.rules})
        elif method == "DELETE" and parts == ["faults"]:
            store.faults.rules.clear()
            self._send(200, {"rules": []})
        elif method == "POST" and parts == ["compact"]:
            store.compact()
            self._send(200, {"horizon": store.rv})
        elif method == "POST" and parts == ["drop-watches"]:
            store.drop_watches()
            self._send(200, {})
        elif method == "GET" and parts == ["stats"]:
            self._send(200, {"requests": store.requests, "resourceVersion": store.rv})
        elif method == "GET" and parts == ["objects"]:
            # ?resource=<apiVersion>/<plural>, e.g. scheduling.k8s.io/v1beta1/podgroups
            self._send(200, store.items(query["resource"], query.get("namespace"))[0])
        else:
            raise ApiError(404, "NotFound", f"no stand-in control {'/'.join(parts)}")


def _gone(since: str) -> Json:
    status = ApiError(410, "Expired", f"too old resource version: {since}").status()
    return {"type": "ERROR", "object": status}
