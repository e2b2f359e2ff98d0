"""A minimal fake kube-apiserver, so the real ``kubectl`` binary can be pointed at wasp (docs/design.md §9).

It serves plain HTTP on 127.0.0.1 and answers just what ``kubectl create -f job.yaml
--validate=false`` asks for:

* the legacy discovery documents (``/api``, ``/apis``, ``/api/v1``, ``/apis/batch/v1``), so
  kubectl can map ``batch/v1 Job`` to the ``jobs`` resource. kubectl asks for aggregated
  discovery first (an ``Accept`` of ``application/json;g=apidiscovery.k8s.io;v=v2;…``);
  answering plain ``application/json`` makes client-go fall back to the legacy documents,
  exactly as against an apiserver without aggregated discovery;
* ``POST /apis/batch/v1/namespaces/{ns}/jobs``: admission through wasp's ``/mutate`` and
  ``/validate`` over verified TLS, by :class:`apiserver.ApiServer` (which builds the
  AdmissionReviews and checks the answers, so none of that is written twice here), then the
  apiserver's answer to the client: 201 with the patched object, or the denial as a
  ``metav1.Status`` with ``status.code`` as the HTTP status (docs/design.md §9.2), and every webhook warning
  as a ``Warning: 299 - "<text>"`` header (docs/design.md §9.4).

Everything else gets a 404 ``Status``, which kubectl copes with (e.g. ``/openapi/v3`` is only
fetched for validation, which the tests turn off). What is not modelled: scheme defaulting
(the real apiserver fills in Job defaults before admission), authentication, field
management, and any persistence beyond "name already exists".
"""

from __future__ import annotations

import re
import secrets
import threading
import typing as t
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from apiserver import Admission, ApiServer, StatusError, WebhookCallError

Json = dict[str, t.Any]

# The one writable collection: jobs in a namespace; the only query the tests rely on is dryRun.
JOBS_PATH: t.Final = re.compile(r"^/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs$")


def _resource(name: str, kind: str, *, namespaced: bool = True, short: list[str] | None = None) -> Json:
    verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
    doc: Json = {"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs}
    if short:
        doc["shortNames"] = short
    return doc


def discovery(address: str) -> dict[str, Json]:
    """The legacy discovery documents, by path: just the groups and resources the tests use."""
    cidrs = [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}]
    batch = {"groupVersion": "batch/v1", "version": "v1"}
    return {
        "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": cidrs},
        "/apis": {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [{"name": "batch", "versions": [batch], "preferredVersion": batch}],
        },
        "/api/v1": {
            "kind": "APIResourceList",
            "groupVersion": "v1",
            "resources": [
                _resource("namespaces", "Namespace", namespaced=False, short=["ns"]),
                _resource("pods", "Pod", short=["po"]),
            ],
        },
        "/apis/batch/v1": {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "batch/v1",
            "resources": [_resource("jobs", "Job")],
        },
    }


def status_body(code: int, reason: str, message: str, details: Json | None = None) -> Json:
    """A failure ``metav1.Status``, the body kube-apiserver sends with every error."""
    body: Json = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def denial_body(error: StatusError) -> Json:
    """The webhook's denial as the apiserver returns it (``ToStatusErr``, docs/design.md §9.2).

    ``ApiServer`` has already forced the code to ≥ 400 and prefixed the message with
    ``admission webhook "<name>" denied the request``; reason and details pass through.
    """
    return status_body(error.code, error.reason, error.message, error.details)


@dataclass
class Request:
    """One request kubectl made, recorded so tests (and readers) can see the discovery dance."""

    method: str
    path: str
    accept: str
    status: int = 0


@dataclass
class FakeApiServer:
    """The fake apiserver: ``start()`` it, point kubectl at ``url``, ``stop()`` it."""

    admitter: ApiServer
    requests: list[Request] = field(default_factory=list)
    # Every admission outcome, so a test can hold kubectl's output against the StatusError it came from.
    admissions: list[Admission] = field(default_factory=list)
    stored: dict[tuple[str, str], Json] = field(default_factory=dict)
    # ApiServer keeps one http.client connection per webhook path, which is not thread-safe;
    # kubectl sends one write at a time anyway, so serialising admission costs nothing.
    lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FakeApiServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="fake-apiserver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self.admitter.close()

    def __enter__(self) -> FakeApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------------- writes

    def create(self, namespace: str, obj: Json, *, dry_run: bool) -> tuple[int, Json, list[str]]:
        """What kube-apiserver's create handler does: identity checks, admission, persistence."""
        meta = obj.setdefault("metadata", {})
        # The handler fills the namespace in from the URL and refuses a conflicting one.
        if meta.setdefault("namespace", namespace) != namespace:
            message = "the namespace of the provided object does not match the namespace sent on the request"
            return 400, status_body(400, "BadRequest", message), []
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        name = str(meta.get("name", ""))
        if not name:
            message = "Job.batch is invalid: metadata.name: Required value: name or generateName is required"
            return 422, status_body(422, "Invalid", message), []
        try:
            with self.lock:
                admission = self.admitter.admit(obj, dry_run=dry_run)
                self.admissions.append(admission)
        except (WebhookCallError, OSError) as exc:
            # failurePolicy: Fail (docs/design.md §9.8): any call failure is an internal error for the client.
            message = (
                f'Internal error occurred: failed calling webhook "{self.admitter.validating_name}": {exc}'
            )
            return 500, status_body(500, "InternalError", message), []
        if admission.error is not None:
            return admission.error.code, denial_body(admission.error), admission.warnings
        if (namespace, name) in self.stored:
            message = f'jobs.batch "{name}" already exists'
            details = {"name": name, "group": "batch", "kind": "jobs"}
            return 409, status_body(409, "AlreadyExists", message, details), admission.warnings
        created = admission.object
        # Fields the registry sets on create (BeforeCreate), after admission.
        created["metadata"].update(
            uid=str(uuid.uuid4()),
            resourceVersion="1",
            generation=1,
            creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        created.setdefault("status", {})
        if not dry_run:
            self.stored[(namespace, name)] = created
        return 201, created, admission.warnings


class _Handler(BaseHTTPRequestHandler):
    fake: t.ClassVar[FakeApiServer]
    # HTTP/1.1 so kubectl's client keeps its connection, as it does with the real apiserver.
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: t.Any) -> None:
        pass  # recorded in fake.requests instead of printed to stderr

    def _record(self) -> Request:
        request = Request(self.command, self.path, self.headers.get("Accept", ""))
        self.fake.requests.append(request)
        return request

    def _send(self, request: Request, status: int, body: Json, warnings: t.Sequence[str] = ()) -> None:
        payload = orjson.dumps(body)
        request.status = status
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for text in warnings:
            # apimachinery NewWarningHeader: code 299, agent "-", text quoted with `"` and `\`
            # escaped. It is written as UTF-8 bytes, as Go does; send_header would encode
            # latin-1 and fail on the "…" wasp appends to a shortened warning.
            quoted = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
            self._headers_buffer.append(f"Warning: 299 - {quoted}\r\n".encode())  # type: ignore[attr-defined]
        self.end_headers()
        self.wfile.write(payload)

    def _not_found(self, request: Request) -> None:
        self._send(
            request, 404, status_body(404, "NotFound", "the server could not find the requested resource")
        )

    def do_GET(self) -> None:
        request = self._record()
        path = urllib.parse.urlsplit(self.path).path
        host = self.headers.get("Host", "127.0.0.1")
        doc = discovery(host).get(path)
        if doc is None:
            self._not_found(request)
        else:
            self._send(request, 200, doc)

    def do_POST(self) -> None:
        request = self._record()
        url = urllib.parse.urlsplit(self.path)
        match = JOBS_PATH.match(url.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if match is None:
            self._not_found(request)
            return
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            self._send(request, 400, status_body(400, "BadRequest", f"invalid JSON: {exc}"))
            return
        query = urllib.parse.parse_qs(url.query)
        # kubectl's --dry-run=server sends dryRun=All, the only value the apiserver accepts.
        dry_run = query.get("dryRun") == ["All"]
        status, answer, warnings = self.fake.create(match["ns"], obj, dry_run=dry_run)
        self._send(request, status, answer, warnings)


__all__ = ["FakeApiServer", "Request", "denial_body", "discovery", "status_body"]
