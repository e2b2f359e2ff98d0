"""``wasp explain --from DUMP``: the same answer from ``kubectl get ... -o yaml`` output.

A dump is a file, or a directory of ``.yaml``/``.yml``/``.json`` files (not recursed into),
each holding ``List`` documents (what ``kubectl get -o yaml`` writes) or single objects.
Nodes are read if the dump has any, and capacity then counts the requests of every pod of
the dump bound to them, so a dump for capacity holds the pods of all namespaces
(``kubectl get pods -A -o yaml``). Whether the cluster serves Workloads and PodGroups is read
from an ``APIGroupList`` (``kubectl get --raw /apis``) when the dump has one; otherwise they
are taken as served.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import yaml

from webhook.explain.capacity import Usage, add_usage
from webhook.explain.kinds import KindSpec
from webhook.explain.selection import resolve
from webhook.explain.snapshot import Snapshot
from webhook.policy import PolicySet

__all__ = ["DumpError", "load", "snapshot"]

Json = dict[str, t.Any]
_SUFFIXES: t.Final = (".yaml", ".yml", ".json")
_SCHEDULING: t.Final = frozenset({"Workload", "PodGroup", "CompositePodGroup"})


class DumpError(Exception):
    """The dump cannot be read (exit 2)."""


def _items(doc: object) -> t.Iterator[Json]:
    if not isinstance(doc, dict):
        return
    if (
        isinstance(doc.get("items"), list)
        and str(doc.get("kind", "")).endswith("List")
        and doc.get("kind") != "APIGroupList"
    ):
        for item in doc["items"]:
            yield from _items(item)
    elif doc.get("kind"):
        yield doc


def load(path: Path) -> list[Json]:
    """Every object of the dump at ``path``."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _SUFFIXES)
        if not files:
            raise DumpError(f"{path}: no .yaml, .yml or .json file in the directory")
    elif path.is_file():
        files = [path]
    else:
        raise DumpError(f"{path}: no such file or directory")
    out: list[Json] = []
    for file in files:
        try:
            with file.open(encoding="utf-8") as stream:
                for doc in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
                    out.extend(_items(doc))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise DumpError(f"{file}: cannot read it: {exc}") from None
    return out


def _meta(obj: Json) -> t.Mapping[str, t.Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _group(api_version: object) -> str:
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


def _served(objects: t.Sequence[Json]) -> bool:
    for doc in objects:
        if doc.get("kind") == "APIGroupList":
            for group in doc.get("groups") or []:
                if isinstance(group, dict) and group.get("name") == "scheduling.k8s.io":
                    return any(
                        isinstance(v, dict) and v.get("version") == "v1beta1"
                        for v in group.get("versions") or []
                    )
            return False
    return True


def snapshot(objects: t.Sequence[Json], spec: KindSpec, namespace: str | None, name: str,
             policies: PolicySet) -> Snapshot:  # fmt: skip
    """The :class:`Snapshot` of what ``spec``/``name`` leads to, from the dump's ``objects``;
    without ``namespace``, the namespace of the only object of that kind and name."""
    if namespace is None:
        found = {str(_meta(o).get("namespace", "")) for o in objects
                 if o.get("kind") == spec.kind and _group(o.get("apiVersion")) == spec.group and _meta(o).get("name") == name}  # fmt: skip
        if len(found) > 1:
            raise DumpError(
                f"{spec.kind} {name} is in several namespaces of the dump ({', '.join(sorted(found))}): give -n"
            )
        namespace = found.pop() if found else "default"

    def find(group: str, kind: str, ns: str, wanted: str) -> Json | None:
        return next((o for o in objects if o.get("kind") == kind and _group(o.get("apiVersion")) == group
                     and _meta(o).get("namespace", "") == ns and _meta(o).get("name") == wanted), None)  # fmt: skip

    start = find(spec.group, spec.kind, namespace, name)
    if start is None:
        raise DumpError(f"{spec.kind} {namespace}/{name} is not in the dump")
    target, trail = resolve(start, policies, lambda v, k, n: find(_group(v), k, namespace, n))
    ns = str(_meta(target).get("namespace", "")) if target is not None else namespace
    here = [o for o in objects if _meta(o).get("namespace") == ns]
    nodes = [o for o in objects if o.get("kind") == "Node" and o.get("apiVersion") == "v1"]
    pods = [o for o in objects if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
    usage: Usage = {}
    add_usage(usage, pods)
    return Snapshot(
        target, trail,
        workloads=[o for o in here if o.get("kind") == "Workload"],
        groups=[o for o in here if o.get("kind") in _SCHEDULING - {"Workload"}],
        pods=[p for p in pods if _meta(p).get("namespace") == ns],
        events=[o for o in here if o.get("kind") == "Event"],
        nodes=nodes if nodes else None, usage=usage if nodes else None, was_served=_served(objects),
        unread={} if nodes else {"nodes": "the dump has no Node objects (kubectl get nodes -o yaml)"},
    )  # fmt: skip
