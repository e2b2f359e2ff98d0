"""The apiserver's admission dispatch, driven by the chart's *rendered* webhook configurations.

:class:`Dispatcher` takes the rendered ValidatingWebhookConfiguration and
MutatingWebhookConfiguration and does, for one write, what kube-apiserver's admission
plugins do (docs/design.md §9.7, §9.8):

* an entry is called only if a rule matches (group, version, resource, operation, scope),
  the namespaceSelector matches the namespace's labels (never for cluster-scoped objects),
  the objectSelector matches the labels of the object or the old object, and every
  matchCondition (CEL over ``object``, ``oldObject`` and ``request``) is true; an evaluation
  error applies the failurePolicy;
* mutating entries run in order, each on the previous one's output; validating entries run
  after them (the apiserver runs them in parallel: the first denial is the one returned);
* the call goes to the Service's ``path`` over TLS, verified against the entry's
  ``caBundle`` for ``<service>.<namespace>.svc`` (the Service's port is mapped to the test's
  real ``wasp serve``), with ``timeoutSeconds`` as the deadline; a failed call becomes the
  apiserver's ``failed calling webhook`` error under ``Fail`` and is ignored under ``Ignore``.

The AdmissionReview and the answer checks are the existing harness's (tests/http/apiserver.py).
"""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import typing as t
from dataclasses import dataclass, field

import cel
import jsonpatch
import orjson

from tests.http.apiserver import StatusError, build_review

Json = dict[str, t.Any]

CLUSTER_SCOPED: t.Final = frozenset({"Namespace", "Node", "ClusterRole", "ValidatingWebhookConfiguration"})


class _ServiceConnection(http.client.HTTPSConnection):
    """HTTPS to ``address`` with the certificate checked for ``host`` (the Service's DNS name)."""

    def __init__(
        self, host: str, address: tuple[str, int], *, context: ssl.SSLContext, timeout: float
    ) -> None:
        super().__init__(host, 443, context=context, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        sock = socket.create_connection(self.address, self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def _selector_matches(selector: Json | None, labels: t.Mapping[str, str]) -> bool:
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _labels(obj: Json | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _in(value: str, allowed: list[str]) -> bool:
    return "*" in allowed or value in allowed


@dataclass
class Outcome:
    """What the client gets: admitted (with the final object) or an error, and the calls made."""

    object: Json
    error: StatusError | None = None
    called: list[str] = field(default_factory=list)
    ignored_failures: list[str] = field(default_factory=list)

    @property
    def admitted(self) -> bool:
        return self.error is None


@dataclass
class Dispatcher:
    mutating: list[Json]
    validating: list[Json]
    address: tuple[str, int]  # where the Service's pods listen in this test
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_rendering(cls, objects: list[Json], address: tuple[str, int]) -> Dispatcher:
        def entries(kind: str) -> list[Json]:
            return [e for o in objects if o["kind"] == kind for e in o.get("webhooks") or ()]

        return cls(
            entries("MutatingWebhookConfiguration"), entries("ValidatingWebhookConfiguration"), address
        )

    def labels_of_namespace(self, name: str) -> dict[str, str]:
        # The apiserver sets kubernetes.io/metadata.name on every namespace (immutable).
        return {**self.namespace_labels.get(name, {}), "kubernetes.io/metadata.name": name}

    # ----------------------------------------------------------------------------- matching

    def _rule_matches(self, entry: Json, request: Json) -> bool:
        gvr, operation = request["resource"], request["operation"]
        scope = "Namespaced" if request["namespace"] else "Cluster"
        return any(
            _in(gvr["group"], rule["apiGroups"]) and _in(gvr["version"], rule["apiVersions"])
            and _in(gvr["resource"], rule["resources"]) and _in(operation, rule["operations"])
            and rule.get("scope", "*") in ("*", scope)
            for rule in entry["rules"]
        )  # fmt: skip

    def _conditions(self, entry: Json, review: Json) -> bool | str:
        """True, False, or the evaluation error (then failurePolicy applies)."""
        request = review["request"]
        variables = {"object": request["object"], "oldObject": request["oldObject"], "request": request}
        for condition in entry.get("matchConditions") or ():
            try:
                value = cel.compile(condition["expression"]).execute(variables)
            except Exception as exc:  # the CEL binding raises KeyError, ValueError, RuntimeError
                return f"matchCondition {condition['name']!r}: {exc!r}"
            if value is not True:
                return False
        return True

    def _selected(self, entry: Json, review: Json, kind: str) -> bool:
        request = review["request"]
        if request["namespace"] and kind not in CLUSTER_SCOPED:
            if not _selector_matches(
                entry.get("namespaceSelector"), self.labels_of_namespace(request["namespace"])
            ):
                return False
        selector = entry.get("objectSelector")
        return _selector_matches(selector, _labels(request["object"])) or (
            request["oldObject"] is not None and _selector_matches(selector, _labels(request["oldObject"]))
        )

    # -------------------------------------------------------------------------------- calls

    def _call(self, entry: Json, review: Json) -> Json:
        service, timeout = entry["clientConfig"]["service"], entry.get("timeoutSeconds", 10)
        context = ssl.create_default_context(
            cadata=base64.b64decode(entry["clientConfig"]["caBundle"]).decode()
        )
        host = f"{service['name']}.{service['namespace']}.svc"
        conn = _ServiceConnection(host, self.address, context=context, timeout=timeout)
        try:
            conn.request("POST", f"{service['path']}?timeout={timeout}s", body=orjson.dumps(review),
                         headers={"Content-Type": "application/json"})  # fmt: skip
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        if response.status != 200:
            raise OSError(f"the server responded with HTTP {response.status}")
        answer: Json = orjson.loads(body)["response"]
        if answer.get("uid") != review["request"]["uid"]:
            raise OSError("the response uid does not match the request")
        return answer

    def _failure(self, entry: Json, exc: Exception) -> StatusError:
        service, timeout = entry["clientConfig"]["service"], entry.get("timeoutSeconds", 10)
        url = f"https://{service['name']}.{service['namespace']}.svc:443{service['path']}?timeout={timeout}s"
        message = f'Internal error occurred: failed calling webhook "{entry["name"]}": failed to call webhook: Post "{url}": {exc}'
        return StatusError(500, "InternalError", message)

    def _denial(self, entry: Json, answer: Json) -> StatusError:
        status = answer.get("status") or {}
        code = max(int(status.get("code") or 0), 400)
        text = status.get("message") or status.get("reason")
        said = f"denied the request: {text}" if text else "denied the request without explanation"
        causes = tuple((status.get("details") or {}).get("causes") or ())
        return StatusError(
            code, status.get("reason", ""), f'admission webhook "{entry["name"]}" {said}', causes
        )

    def admit(self, obj: Json, *, operation: str = "CREATE", old: Json | None = None) -> Outcome:
        """One write of ``obj`` through every matching entry, as the apiserver dispatches it."""
        outcome = Outcome(object=obj)
        for phase, entries in (("mutating", self.mutating), ("validating", self.validating)):
            for entry in entries:
                review = build_review(outcome.object, operation=operation, old=old)
                if not self._rule_matches(entry, review["request"]) or not self._selected(
                    entry, review, obj["kind"]
                ):
                    continue
                matched = self._conditions(entry, review)
                try:
                    if isinstance(matched, str):
                        raise ValueError(matched)
                    if not matched:
                        continue
                    outcome.called.append(entry["name"])
                    answer = self._call(entry, review)
                except (OSError, ValueError) as exc:
                    if entry.get("failurePolicy", "Fail") == "Ignore":
                        outcome.ignored_failures.append(entry["name"])  # "failing open"
                        continue
                    outcome.error = self._failure(entry, exc)
                    return outcome
                if not answer["allowed"]:
                    outcome.error = self._denial(entry, answer)
                    return outcome
                if phase == "mutating" and answer.get("patch"):
                    outcome.object = jsonpatch.apply_patch(
                        outcome.object, orjson.loads(base64.b64decode(answer["patch"]))
                    )
        return outcome
