"""The stand-in's list semantics: label and field selectors, pages with ``limit`` and ``continue``.

A STAND-IN for kube-apiserver's paginated lists: items come in (namespace, name) order;
``continue`` is an opaque token naming the list's resourceVersion and the last key served;
a token issued before the last compaction is answered ``410 Expired``, as kube-apiserver does
when etcd has compacted the revision a token points at. Unlike kube-apiserver, later pages
show the objects as they are now, not as they were at the first page's resourceVersion.
"""

from __future__ import annotations

import base64
import re
import typing as t

import orjson

Json = dict[str, t.Any]
Key = tuple[str, str]

_REQUIREMENT: t.Final = re.compile(
    r"^\s*(!?)([\w./-]+)\s*(?:(==|=|!=)\s*([\w.-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*$"
)


def _split(selector: str) -> list[str]:
    """Split on commas outside parentheses (``a in (x,y),b``)."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [p for p in (*parts, current) if p.strip()]


def selector(text: str) -> t.Callable[[t.Mapping[str, str]], bool]:
    """A predicate over labels for ``labelSelector`` (=, ==, !=, in, notin, exists, !exists);
    ``ValueError`` on a selector it cannot parse."""
    tests: list[t.Callable[[t.Mapping[str, str]], bool]] = []
    for part in _split(text):
        m = _REQUIREMENT.match(part)
        if m is None:
            raise ValueError(f"unable to parse requirement: {part!r}")
        neg, key, op, value, set_op, values = m.groups()
        if op in ("=", "=="):
            tests.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif op == "!=":
            tests.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif set_op:
            members = frozenset(v.strip() for v in values.split(","))
            inside = set_op == "in"
            tests.append(
                lambda labels, k=key, s=members, i=inside: (
                    (labels.get(k) in s) == i and (k in labels or not i)
                )
            )
        else:
            tests.append(lambda labels, k=key, n=bool(neg): (k in labels) != n)
    return lambda labels: all(test(labels) for test in tests)


# kube-apiserver's field labels per kind (each registry's GetAttrs / field label conversion:
# pkg/registry/core/pod/strategy.go, core/event/strategy.go, core/node/strategy.go); every
# kind has metadata.name and metadata.namespace. Any other field is a 400.
_FIELDS: t.Final[dict[str, tuple[str, ...]]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"),
    "Event": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
              "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
              "reason", "reportingComponent", "source", "type"),
    "Node": ("spec.unschedulable",),
}  # fmt: skip


def _field(obj: Json, path: str) -> str:
    node: t.Any = obj
    if path == "source":  # an Event's source is its source.component
        path = "source.component"
    for step in path.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    if isinstance(node, bool):
        return "true" if node else "false"
    return "" if node is None else str(node)


def fields(text: str, kind: str) -> t.Callable[[Json], bool]:
    """A predicate over objects for ``fieldSelector`` (``=``, ``==``, ``!=``, comma-separated);
    ``ValueError`` for a field the kind does not index or a requirement it cannot parse."""
    tests: list[t.Callable[[Json], bool]] = []
    allowed = ("metadata.name", "metadata.namespace", *_FIELDS.get(kind, ()))
    for part in (p for p in text.split(",") if p.strip()):
        m = re.match(r"^\s*([\w.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if m is None:
            raise ValueError(f"invalid selector: {part!r}")
        path, op, value = m.groups()
        if path not in allowed:
            raise ValueError(f"field label not supported: {path}")
        equal = op != "!="
        tests.append(lambda obj, p=path, v=value, e=equal: (_field(obj, p) == v) == e)
    return lambda obj: all(test(obj) for test in tests)


def labels_of(obj: Json) -> t.Mapping[str, str]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def encode(rv: int, epoch: int, last: Key) -> str:
    """``epoch``: compactions so far; a token from an earlier epoch has expired."""
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "epoch": epoch, "start": list(last)})).decode()


def decode(token: str) -> tuple[int, int, Key]:
    """(rv, epoch, last key); ``ValueError`` for a token this stand-in did not issue."""
    try:
        doc = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(doc["rv"]), int(doc["epoch"]), (str(doc["start"][0]), str(doc["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError("continue key is not valid") from exc
