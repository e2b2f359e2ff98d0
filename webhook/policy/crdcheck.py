"""A policy checked against the CRD it governs: every path it reads exists, with the right type.

A policy names fields of a custom resource by path; a typo, a list that is really a map or a
pod count that is really a string would only show when users' objects are judged, as
denials that cite fields they never wrote. :func:`check_against_crd` walks the CRD's
``openAPIV3Schema`` along every path of the policy instead, so a policy author finds the
mistake in CI. Pure: it takes decoded documents and returns problems.

What the walk knows about the schema: ``properties`` name fields; ``items`` is a list's
element; ``additionalProperties`` a map's value; ``x-kubernetes-preserve-unknown-fields``
(or a schema with no ``properties`` at all) accepts any path below it; ``metadata`` is the
standard ObjectMeta (labels and annotations are maps of strings), which CRDs do not spell
out. Pod count expressions are not walked (CEL over ``self`` is checked when the policy
loads). :func:`check_child_templates` walks the pod-template paths of ``stamping.childTemplates``
through the child kinds' CRDs (a RayJob policy's paths into the RayCluster).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.policy.model import NodeSpec, Policy, RefusedField
from webhook.vocab.field import FieldPath, Key

__all__ = ["Problem", "check_against_crd", "check_child_templates", "crd_identity", "crd_versions"]

Schema = t.Mapping[str, t.Any]

# ObjectMeta as far as a policy may read it; CRD schemas leave metadata to the apiserver.
_STRING_MAP: t.Final[Schema] = {"type": "object", "additionalProperties": {"type": "string"}}
_OBJECT_META: t.Final[Schema] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
}
_ANY: t.Final[Schema] = {"x-kubernetes-preserve-unknown-fields": True}


@dataclass(frozen=True, slots=True)
class Problem:
    """One mistake: ``where`` is the policy key (``spec.root.children[0].podCount.path``)."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def crd_identity(crd: Schema) -> tuple[object, object]:
    """``(group, kind)`` a CRD document defines (either may be missing in a malformed one)."""
    spec = _mapping(crd.get("spec"))
    return spec.get("group"), _mapping(spec.get("names")).get("kind")


def crd_versions(crd: Schema) -> dict[str, Schema]:
    """The ``openAPIV3Schema`` of each version of a CRD document, by version name."""
    spec = _mapping(crd.get("spec"))
    out: dict[str, Schema] = {}
    for version in spec.get("versions") or ():
        if isinstance(version, dict) and isinstance(version.get("name"), str):
            schema = _mapping(version.get("schema")).get("openAPIV3Schema")
            if isinstance(schema, dict):
                out[version["name"]] = schema
    return out


def check_against_crd(policy: Policy, crd: Schema) -> list[Problem]:
    """Every problem of ``policy`` against ``crd`` (a decoded CustomResourceDefinition)."""
    group, kind = crd_identity(crd)
    problems: list[Problem] = []
    if (group, kind) != (policy.group, policy.kind):
        problems.append(
            Problem(
                "spec.target", f"targets {policy.group}/{policy.kind}, but the CRD defines {group}/{kind}"
            )
        )
        return problems
    schemas = crd_versions(crd)
    for version in policy.versions:
        schema = schemas.get(version)
        if schema is None:
            problems.append(Problem("spec.target.versions", f"the CRD has no schema for version {version!r}"))
            continue
        walker = _Walker(version if len(policy.versions) > 1 else None)
        root = _with_metadata(schema)
        walker.node(policy.root, "spec.root", root)
        for i, refused in enumerate(policy.refused_fields):
            _refused_field(walker, root, refused, f"spec.refusedFields[{i}]")
        problems.extend(walker.problems)
    return problems


def _refused_field(walker: _Walker, root: Schema, refused: RefusedField, where: str) -> None:
    """A refused field must exist in the CRD (one it lacks is pruned: refusing it is moot), in
    every element of its ``forEach`` list."""
    context = _elements(walker, root, refused.for_each, f"{where}.forEach")
    if context is not None:
        walker.resolve(context, refused.path, f"{where}.path")


def _elements(walker: _Walker, root: Schema, for_each: FieldPath | None, where: str) -> Schema | None:
    """The schema of each element of the list ``for_each`` (``root`` itself without one), or
    ``None`` when the path is missing or not a list (reported at ``where``)."""
    if for_each is None:
        return root
    found = walker.resolve(root, for_each, where)
    if found is not None and (_open(found) or found.get("type") == "array"):
        items = found.get("items")
        return items if isinstance(items, dict) else _ANY
    if found is not None:
        walker.fail(where, f"{for_each} is {_describe(found)}, not a list")
    return None


def check_child_templates(policy: Policy, crds: t.Iterable[Schema]) -> list[Problem]:
    """Every problem of ``policy``'s ``stamping.childTemplates`` against the CRDs of the child
    kinds among ``crds`` (a child kind without a CRD there, such as batch/v1 Job, is skipped)."""
    by_kind = {crd_identity(crd): crd for crd in crds}
    problems: list[Problem] = []
    for i, child in enumerate(policy.child_templates):
        group, _, version = child.api_version.rpartition("/")
        crd = by_kind.get((group, child.kind))
        if crd is None:
            continue
        where = f"spec.stamping.childTemplates[{i}]"
        schema = crd_versions(crd).get(version)
        if schema is None:
            problems.append(
                Problem(f"{where}.apiVersion", f"the {child.kind} CRD has no schema for version {version!r}")
            )
            continue
        walker = _Walker(None)
        root = _with_metadata(schema)
        for j, mapping in enumerate(child.templates):
            at = f"{where}.templates[{j}]" if mapping.node is not None else f"{where}.templatePath"
            context = _elements(walker, root, mapping.for_each, f"{at}.forEach")
            if context is not None and mapping.for_each is not None and mapping.item_key is not None:
                key = walker.resolve(context, mapping.item_key, f"{at}.itemKey")
                if key is not None:
                    walker.expect(key, "string", f"{at}.itemKey", mapping.item_key)
            if context is not None:
                template = walker.resolve(
                    context, mapping.path, f"{at}.path" if mapping.node is not None else at
                )
                if template is not None:
                    walker.expect(
                        template, "object", f"{at}.path" if mapping.node is not None else at, mapping.path
                    )
        problems.extend(walker.problems)
    return problems


def _with_metadata(schema: Schema) -> Schema:
    properties = dict(_mapping(schema.get("properties")))
    # Published CRDs say only `metadata: {type: object}` at the root: the apiserver owns it.
    if "properties" not in _mapping(properties.get("metadata")):
        properties["metadata"] = _OBJECT_META
    return {**schema, "properties": properties}


class _Walker:
    def __init__(self, version: str | None) -> None:
        self.version = version
        self.problems: list[Problem] = []

    def fail(self, where: str, message: str) -> None:
        suffix = f" (version {self.version})" if self.version else ""
        self.problems.append(Problem(where, message + suffix))

    def node(self, spec: NodeSpec, where: str, context: Schema) -> None:
        """Check ``spec``'s own fields against its context's schema, then its children."""
        block = self.resolve(context, spec.path, f"{where}.path")
        if block is not None:
            wanted = "string" if spec.json_encoded else "object"
            hint = (
                ""
                if spec.json_encoded
                else "; the apiserver prunes blocks the CRD has no field for: keep them in an "
                "annotation with encoding: json"
            )
            self.expect(block, wanted, f"{where}.path", spec.path, hint)
        # A pod count and a repeated leaf's group count are both integers the CRD must have.
        for key, counted in (("podCount", spec.pod_count), ("groups", spec.groups)):
            if counted is not None and counted.path is not None:
                count = self.resolve(context, counted.path, f"{where}.{key}.path")
                if count is not None:
                    self.expect(count, "integer", f"{where}.{key}.path", counted.path)
        if spec.priority_class_name_from is not None:
            source = self.resolve(context, spec.priority_class_name_from, f"{where}.priorityClassNameFrom")
            if source is not None:
                self.expect(source, "string", f"{where}.priorityClassNameFrom", spec.priority_class_name_from)
        for i, other in enumerate(spec.exclusive_with):
            self.resolve(context, other, f"{where}.exclusiveWith[{i}]")
        for i, child in enumerate(spec.children):
            child_where = f"{where}.children[{i}]"
            element = self.element(child, child_where, context)
            if element is not None:
                self.node(child, child_where, element)

    def element(self, spec: NodeSpec, where: str, context: Schema) -> Schema | None:
        """The schema of the context a child node sees: an element of its forEach, or the parent's."""
        if spec.for_each is None:
            return context
        found = self.resolve(context, spec.for_each, f"{where}.forEach")
        if found is None or _open(found):
            return _ANY if found is not None else None
        kind = found.get("type")
        if spec.for_each_map:
            if kind != "object" or not isinstance(found.get("additionalProperties"), dict):
                self.fail(
                    f"{where}.forEach",
                    f"{spec.for_each} is {_describe(found)}, not a map; drop forEachOver: map",
                )
                return None
            element: Schema = found["additionalProperties"]
        else:
            if kind != "array":
                hint = (
                    "; add forEachOver: map" if kind == "object" and "additionalProperties" in found else ""
                )
                self.fail(f"{where}.forEach", f"{spec.for_each} is {_describe(found)}, not a list{hint}")
                return None
            items = found.get("items")
            element = items if isinstance(items, dict) else _ANY
        if spec.item_key is not None:
            key = self.resolve(element, spec.item_key, f"{where}.itemKey")
            if key is not None:
                self.expect(key, "string", f"{where}.itemKey", spec.item_key)
        return element

    def resolve(self, schema: Schema, path: FieldPath, where: str) -> Schema | None:
        """The schema at ``path`` below ``schema``; ``None`` (and a problem) when it is not there."""
        current = schema
        for i, seg in enumerate(path.segments):
            if not isinstance(current, dict):
                self.fail(where, f"the CRD's schema at {FieldPath(path.segments[:i])} is not a schema object")
                return None
            if _open(current):
                return _ANY
            walked = FieldPath(path.segments[: i + 1])
            if isinstance(seg, int):
                items = current.get("items")
                if current.get("type") != "array" or not isinstance(items, dict):
                    self.fail(where, f"{walked} indexes {_describe(current)}, not a list")
                    return None
                current = items
            elif isinstance(seg, Key):
                value = current.get("additionalProperties")
                if not isinstance(value, dict):
                    self.fail(where, f"{walked} reads a key of {_describe(current)}, not a map")
                    return None
                current = value
            else:
                properties = _mapping(current.get("properties"))
                if seg not in properties:
                    known = ", ".join(sorted(properties)) or "none"
                    self.fail(where, f"the CRD has no field {walked} (fields there: {known})")
                    return None
                current = properties[seg]
        if not isinstance(current, dict):
            self.fail(where, f"the CRD's schema at {path} is not a schema object")
            return None
        return current

    def expect(self, schema: Schema, wanted: str, where: str, path: FieldPath, hint: str = "") -> None:
        if _open(schema) or schema.get("type") == wanted:
            return
        self.fail(
            where,
            f"{path} is {_describe(schema)}, not {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}{hint}",
        )


def _mapping(value: object) -> Schema:
    return value if isinstance(value, dict) else {}


def _open(schema: Schema) -> bool:
    """A schema that accepts anything below it: preserve-unknown-fields, or nothing declared."""
    if schema.get("x-kubernetes-preserve-unknown-fields") is True:
        return True
    return "type" not in schema and "properties" not in schema


def _describe(schema: Schema) -> str:
    kind = schema.get("type")
    if kind == "object" and "additionalProperties" in schema and "properties" not in schema:
        return "a map"
    return {"array": "a list", "object": "an object", "integer": "an integer"}.get(str(kind), f"a {kind}")
