"""A stand-in for kube-apiserver's webhook client (docs/design.md §9), for tests.

``ApiServer.admit`` does what the apiserver does for one write: it builds the
AdmissionReview (uid, kind, resource, operation, userInfo, dryRun, oldObject), calls the
mutating webhook and applies its JSON Patch, then calls the validating webhook with the
mutated object; it checks every answer the way the apiserver does (uid, apiVersion/kind
echo, patch and patchType together, status read only when denied, code < 400 → 400) and
renders the line kubectl prints for a denial (docs/design.md §9.6).

Connections are real: HTTPS over one kept-alive ``http.client`` connection per endpoint,
the server certificate verified against the CA bundle, like the apiserver's pooled client.
"""

from __future__ import annotations

import base64
import http.client
import ssl
import typing as t
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import jsonpatch
import orjson

Json = dict[str, t.Any]

REVIEW_VERSION: t.Final = "admission.k8s.io/v1"


class WebhookCallError(AssertionError):
    """The answer breaks the protocol: the apiserver would report "failed calling webhook"."""


@dataclass(frozen=True)
class StatusError:
    """The error the apiserver returns to the client for a denial (docs/design.md §9.2)."""

    code: int
    reason: str
    message: str
    causes: tuple[Json, ...] = ()
    # The webhook's status.details as sent, which the apiserver passes through to the client.
    details: Json | None = None


@dataclass
class Admission:
    allowed: bool
    object: Json
    warnings: list[str] = field(default_factory=list)
    error: StatusError | None = None
    patches: list[list[Json]] = field(default_factory=list)


def _gvk(obj: Json) -> tuple[str, str, str]:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    return group, version, str(obj["kind"])


def build_review(
    obj: Json | None,
    *,
    operation: str = "CREATE",
    old: Json | None = None,
    dry_run: bool = False,
    uid: str | None = None,
    user: str = "kubernetes-admin",
) -> Json:
    """The AdmissionReview kube-apiserver sends for a write of ``obj`` (docs/design.md §9.1)."""
    subject = obj if obj is not None else old
    assert subject is not None, "a review needs an object or an oldObject"
    group, version, kind = _gvk(subject)
    resource = kind.lower() + "s"  # every kind the suite uses pluralises regularly
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    meta = subject.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
    return {
        "apiVersion": REVIEW_VERSION,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid or str(uuid.uuid4()),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:masters", "system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options_kind.get(operation, "CreateOptions")},
        },
    }


def kubectl_error_line(
    error: StatusError, *, file: str, verb: str = "creating", kind: str = "", name: str = ""
) -> str:
    """What kubectl prints for ``error`` when applying ``file`` (docs/design.md §9.6, ``StandardErrorMessage``)."""
    if error.reason == "Invalid" and error.causes:
        lines = [f"{c['field']}: {c['message']}" for c in error.causes]
        body = lines[0] if len(lines) == 1 else "\n" + "\n".join(f"* {line}" for line in lines)
        return f'The {kind} "{name}" is invalid: {body}'
    prefix = f"Error from server ({error.reason})" if error.reason else "Error from server"
    return f'{prefix}: error when {verb} "{file}": {error.message}'


class ApiServer:
    """Calls ``mutate_path`` then ``validate_path`` on ``host:port`` over verified TLS."""

    def __init__(
        self,
        host: str,
        port: int,
        ca_file: Path,
        *,
        mutating_name: str = "mutate.wasp.dev",
        validating_name: str = "validate.wasp.dev",
        client_cert: tuple[Path, Path] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.host, self.port = host, port
        self.mutating_name, self.validating_name = mutating_name, validating_name
        self.context = ssl.create_default_context(cafile=str(ca_file))
        if client_cert is not None:
            self.context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
        self.timeout = timeout
        self._conns: dict[str, http.client.HTTPSConnection] = {}

    def connection(self, path: str) -> http.client.HTTPSConnection:
        conn = self._conns.get(path)
        if conn is None:
            conn = http.client.HTTPSConnection(
                self.host, self.port, context=self.context, timeout=self.timeout
            )
            self._conns[path] = conn
        return conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def post(self, path: str, review: Json) -> Json:
        """POST the review; any HTTP status other than 200 is a call failure (docs/design.md §9.8)."""
        conn = self.connection(path)
        conn.request("POST", f"{path}?timeout=10s", body=orjson.dumps(review),
                     headers={"Content-Type": "application/json", "Accept": "application/json"})  # fmt: skip
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise WebhookCallError(f"{path}: HTTP {resp.status}: {body[:300]!r}")
        answer: Json = orjson.loads(body)
        return answer

    def _response(self, name: str, review: Json, answer: Json) -> Json:
        if answer.get("apiVersion") != REVIEW_VERSION or answer.get("kind") != "AdmissionReview":
            raise WebhookCallError(f"webhook {name!r}: wrong apiVersion/kind {answer.get('apiVersion')!r}")
        response = answer.get("response")
        if not isinstance(response, dict):
            raise WebhookCallError(f"webhook {name!r}: no response")
        if response.get("uid") != review["request"]["uid"]:
            raise WebhookCallError(
                f"expected response.uid={review['request']['uid']!r}, got {response.get('uid')!r}"
            )
        if not isinstance(response.get("allowed"), bool):
            raise WebhookCallError(f"webhook {name!r}: response.allowed is not a bool")
        return response

    def _denial(self, name: str, response: Json) -> StatusError:
        status = response.get("status") or {}
        code = status.get("code") or 0
        code = 400 if code < 400 else code
        message = status.get("message") or status.get("reason")
        details = status.get("details")
        causes = tuple((details or {}).get("causes") or ())
        # ToStatusErr: "...denied the request: <message>", or "...denied the request without
        # explanation" (a space, no colon) when there is neither message nor reason.
        text = f"denied the request: {message}" if message else "denied the request without explanation"
        return StatusError(
            code, status.get("reason", ""), f'admission webhook "{name}" {text}', causes, details
        )

    def mutate(self, review: Json) -> tuple[Json, list[Json] | None]:
        answer = self._response(self.mutating_name, review, self.post("/mutate", review))
        patch, patch_type = answer.get("patch"), answer.get("patchType")
        if (patch is None) != (patch_type is None):
            raise WebhookCallError(
                "webhook returned response.patchType but not response.patch, or the reverse"
            )
        if patch_type is not None and patch_type != "JSONPatch":
            raise WebhookCallError(f"unsupported patchType {patch_type!r}")
        if patch is not None and not answer["allowed"]:
            raise WebhookCallError("a patch on a denial")
        return answer, (orjson.loads(base64.b64decode(patch)) if patch is not None else None)

    def admit(
        self,
        obj: Json,
        *,
        operation: str = "CREATE",
        old: Json | None = None,
        dry_run: bool = False,
        mutate: bool = True,
    ) -> Admission:
        """Admit a write of ``obj`` through both webhooks, as kube-apiserver does."""
        admission = Admission(allowed=True, object=obj)
        if mutate:
            review = build_review(obj, operation=operation, old=old, dry_run=dry_run)
            answer, ops = self.mutate(review)
            admission.warnings += answer.get("warnings", [])
            if not answer["allowed"]:
                admission.allowed, admission.error = False, self._denial(self.mutating_name, answer)
                return admission
            if ops:
                admission.object = jsonpatch.apply_patch(obj, ops)
                admission.patches.append(ops)
        review = build_review(admission.object, operation=operation, old=old, dry_run=dry_run)
        answer = self._response(self.validating_name, review, self.post("/validate", review))
        admission.warnings += answer.get("warnings", [])
        if answer.get("patch") is not None or answer.get("patchType") is not None:
            raise WebhookCallError("a validating webhook returned a patch")
        if not answer["allowed"]:
            admission.allowed, admission.error = False, self._denial(self.validating_name, answer)
        return admission
