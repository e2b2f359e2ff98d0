"""``spec.native``: how to recognise a controller that manages Workload-Aware Scheduling itself.

When the controller of a governed kind creates its own Workload and PodGroups (JobSet,
LeaderWorkerSet, KubeRay, Trainer and Kueue are adopting WAS), wasp must create nothing and stamp
nothing for it, and keep validating. Three signs say so, any one is enough:

* ``crdFields``: a field the kind's served CRD schema carries (read from the cluster at start
  and on every change of the CRD): the installed controller's API has the native field, so the
  whole kind is native;
* ``objectFields`` / ``annotations``: a field or an annotation present on the object: this
  object asks its controller for native WAS;
* always, with no key needed: a Workload whose ``spec.controllerRef`` names the object and that
  wasp did not create (``webhook.governed.grouping``, ``webhook.governed.reconcile``).

Paths are dotted field names; a list on the way is walked into (its elements' fields), so
``spec.replicatedJobs.template.spec.schedulingGroup`` reaches into every replicated job. A schema
that leaves a subtree open (``x-kubernetes-preserve-unknown-fields``, no ``properties``) does not
count as carrying the field: wasp never guesses a controller native.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.vocab.formats import label_key

__all__ = ["Native", "load_native", "object_native", "schema_native"]

Json = t.Mapping[str, t.Any]


@dataclass(frozen=True, slots=True)
class Native:
    crd_fields: tuple[tuple[str, ...], ...] = ()
    object_fields: tuple[tuple[str, ...], ...] = ()
    annotations: tuple[str, ...] = ()


class _Loader(t.Protocol):
    def fail(self, location: str, message: str) -> t.NoReturn: ...


def _fields(loader: _Loader, where: str, paths: t.Sequence[str]) -> tuple[tuple[str, ...], ...]:
    out = []
    for i, path in enumerate(paths):
        parts = tuple(path.split("."))
        if not all(parts) or any(c in path for c in "[]"):
            loader.fail(
                f"{where}[{i}]", f"{path!r} is not a dotted field path (lists are walked into: no brackets)"
            )
        out.append(parts)
    return tuple(out)


def load_native(loader: _Loader, doc: Json | None) -> Native | None:
    """The schema-checked ``spec.native``, or ``None`` when it is absent."""
    if doc is None:
        return None
    for i, key in enumerate(doc.get("annotations", [])):
        problems = label_key(key)
        if problems:
            loader.fail(
                f"spec.native.annotations[{i}]", f"{key!r} is not an annotation key: {'; '.join(problems)}"
            )
    return Native(
        crd_fields=_fields(loader, "spec.native.crdFields", doc.get("crdFields", [])),
        object_fields=_fields(loader, "spec.native.objectFields", doc.get("objectFields", [])),
        annotations=tuple(doc.get("annotations", [])),
    )


def _schema_has(schema: object, path: tuple[str, ...]) -> bool:
    for name in path:
        while isinstance(schema, dict) and schema.get("type") == "array":
            schema = schema.get("items")
        if not isinstance(schema, dict):
            return False
        properties = schema.get("properties")
        if not isinstance(properties, dict) or name not in properties:
            return False  # an open subtree is not proof that the controller reads the field
        schema = properties[name]
    return isinstance(schema, dict)


def schema_native(native: Native | None, crd: Json, version: str) -> str | None:
    """Which ``crdFields`` path the CRD's ``version`` schema carries (the kind is native), or ``None``."""
    if native is None or not native.crd_fields:
        return None
    spec = crd.get("spec")
    versions = spec.get("versions") if isinstance(spec, dict) else None
    for entry in versions if isinstance(versions, list) else []:
        if not isinstance(entry, dict) or entry.get("name") != version:
            continue
        schema = (entry.get("schema") or {}).get("openAPIV3Schema")
        for path in native.crd_fields:
            if _schema_has(schema, path):
                return f"its CRD's {version} schema has {'.'.join(path)}"
    return None


def _object_has(value: object, path: tuple[str, ...]) -> bool:
    if not path:
        return value is not None
    if isinstance(value, list):
        return any(_object_has(item, path) for item in value)
    return isinstance(value, dict) and _object_has(value.get(path[0]), path[1:])


def object_native(native: Native | None, obj: Json) -> str | None:
    """Which ``objectFields`` path or ``annotations`` key ``obj`` carries, or ``None``."""
    if native is None:
        return None
    for path in native.object_fields:
        if _object_has(obj, path):
            return f"it sets {'.'.join(path)}"
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    for key in native.annotations:
        if isinstance(annotations, dict) and key in annotations:
            return f"it carries the annotation {key}"
    return None
