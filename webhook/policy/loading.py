"""Checking one policy document: schema check → the checks a schema cannot express → :class:`Policy`.

Reading files and directories is :mod:`webhook.policy.files`. Policies are checked once at
start-up; every problem is a
:class:`~webhook.vocab.errors.PolicyError` naming the file and the key, so an operator can fix
it without reading code.
"""

from __future__ import annotations

import functools
import re
import string
import typing as t

import jsonschema_rs

from webhook.compiler.types import DisruptionKind, PolicyKind
from webhook.policy.celbinding import binding
from webhook.policy.childtemplates import load_child_templates
from webhook.policy.membership import load_membership
from webhook.policy.model import ChildTemplate, DefaultRule, NodeSpec, PodCount, Policy, RefusedField
from webhook.policy.native import load_native
from webhook.policy.schedulability import Schedulability, load_schedulability
from webhook.policy.schema import POLICY_SCHEMA, TEMPLATE_PLACEHOLDERS
from webhook.vocab.errors import PolicyError
from webhook.vocab.field import FieldPath
from webhook.vocab.gates import KNOWN_GATES

if t.TYPE_CHECKING:
    import cel
    import jsonschema

__all__ = ["parse_policy", "schema_errors"]

_PLACEHOLDERS = frozenset(TEMPLATE_PLACEHOLDERS)
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MACRO_VARIABLE = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
# The verdict on a policy file comes from jsonschema_rs; python-jsonschema, whose errors name
# the key to fix, is imported only for a file that fails (it is a third of a short
# `wasp validate`'s start-up). Tests compare the two verdicts on valid and broken files.
_VERDICT: t.Final = jsonschema_rs.validator_for(POLICY_SCHEMA)


@functools.cache
def _reference() -> jsonschema.protocols.Validator:
    import jsonschema

    return jsonschema.Draft202012Validator(POLICY_SCHEMA)


def schema_errors(doc: object) -> list[jsonschema.ValidationError]:
    """The policy-schema errors of ``doc``, shallowest first (``[]``: it matches the schema)."""
    if _VERDICT.is_valid(doc):
        return []
    errors = _reference().iter_errors(t.cast(t.Any, doc))
    return sorted(errors, key=lambda e: (len(e.absolute_path), list(map(str, e.path))))


def _where(source: str, location: t.Iterable[object]) -> str:
    dotted = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in location).replace(".[", "[")
    return f"{source}: {dotted or '<root>'}"


def _schema_problem(source: str, error: jsonschema.ValidationError) -> PolicyError:
    location = list(error.absolute_path)
    if error.validator == "additionalProperties":
        schema = error.schema if isinstance(error.schema, t.Mapping) else {}
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(t.cast(dict[str, t.Any], error.instance)) - set(allowed))
        keys = ", ".join(repr(k) for k in extra)
        return PolicyError(f"{_where(source, location)}: unknown key {keys} (allowed: {', '.join(allowed)})")
    return PolicyError(f"{_where(source, location)}: {error.message}")


class _Loader:
    """Turns one schema-checked document into a :class:`Policy`, checking what a schema cannot."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.ids: set[str] = set()

    def fail(self, location: str, message: str) -> t.NoReturn:
        raise PolicyError(f"{self.source}: {location}: {message}")

    def path(self, location: str, text: str) -> FieldPath:
        try:
            parsed = FieldPath.parse(text)
        except ValueError as exc:
            self.fail(location, f"bad field path {text!r}: {exc}")
        if not parsed:
            self.fail(location, "field path must not be empty")
        for seg in parsed.segments:
            # A path names fields; anything else (an expression, a typo with a space) would
            # read as absent on every object instead of failing here.
            if isinstance(seg, str) and not _FIELD_NAME.fullmatch(seg):
                self.fail(
                    location,
                    f"{seg!r} in {text!r} is not a field name (letters, digits, '_' and '-'; "
                    "map keys go in brackets, e.g. metadata.annotations[example.com/x])",
                )
        return parsed

    def node(self, doc: dict[str, t.Any], location: str, *, in_for_each: bool) -> NodeSpec:
        node_id = doc.get("id", "root" if location == "spec.root" else location)
        if node_id in self.ids:
            self.fail(f"{location}.id", f"node id {node_id!r} is used twice")
        self.ids.add(node_id)
        composite = doc["type"] == "composite"
        children_docs = doc.get("children", [])
        if composite and not children_docs:
            self.fail(f"{location}.children", "a composite node needs at least one child")
        if not composite and children_docs:
            self.fail(f"{location}.children", "a leaf node cannot have children (use type: composite)")
        for_each = self.path(f"{location}.forEach", doc["forEach"]) if "forEach" in doc else None
        item_key = self.path(f"{location}.itemKey", doc["itemKey"]) if "itemKey" in doc else None
        for_each_map = doc.get("forEachOver", "list") == "map"
        if item_key is not None and for_each is None:
            self.fail(f"{location}.itemKey", "itemKey needs forEach")
        if "forEachOver" in doc and for_each is None:
            self.fail(f"{location}.forEachOver", "forEachOver needs forEach")
        if for_each_map and item_key is not None:
            self.fail(f"{location}.itemKey", "the entries of a map are keyed by their map key: drop itemKey")
        keyed = item_key is not None or for_each_map
        if location == "spec.root" and for_each is not None:
            self.fail(f"{location}.forEach", "the root node cannot repeat")
        self.check_template_name(f"{location}.templateName", doc["templateName"], for_each, keyed=keyed)
        if composite and "podCount" in doc:
            self.fail(f"{location}.podCount", "only leaf nodes have a pod count")
        if composite and "minCountDefault" in doc:
            self.fail(f"{location}.minCountDefault", "composite nodes default minGroupCount instead")
        if not composite and "minGroupCountDefault" in doc:
            self.fail(f"{location}.minGroupCountDefault", "leaf nodes default minCount instead")
        pod_count = None
        if "podCount" in doc:
            pod_count = self.pod_count(f"{location}.podCount", doc["podCount"])
        if doc.get("minCountDefault", "podCount") == "podCount" and not composite and pod_count is None:
            self.fail(f"{location}.minCountDefault", "minCountDefault: podCount needs podCount")
        label_value = doc["podLabel"].get("value") if "podLabel" in doc else None
        if label_value is not None and for_each is not None:
            self.fail(
                f"{location}.podLabel.value",
                "a node with forEach is chosen by its elements' keys: drop value",
            )
        if "podLabel" in doc and not keyed and label_value is None:
            self.fail(
                f"{location}.podLabel",
                "podLabel selects an element by its key: set forEach with itemKey, or forEachOver: map; "
                "or give the value pods of this node carry",
            )
        groups = None
        if "groups" in doc:
            if composite:
                self.fail(f"{location}.groups", "only leaf nodes repeat as groups")
            if for_each is not None:
                self.fail(f"{location}.groups", "a node with forEach cannot also repeat as groups")
            groups = self.pod_count(f"{location}.groups", doc["groups"])
        children = tuple(
            self.node(child, f"{location}.children[{i}]", in_for_each=in_for_each or for_each is not None)
            for i, child in enumerate(children_docs)
        )
        return NodeSpec(
            id=node_id,
            composite=composite,
            path=self.path(f"{location}.path", doc["path"]),
            template_name=doc["templateName"],
            json_encoded=doc.get("encoding", "object") == "json",
            for_each=for_each,
            for_each_map=for_each_map,
            item_key=item_key,
            pod_count=pod_count,
            min_count_default=doc.get("minCountDefault", "podCount") == "podCount",
            min_group_count_default=doc.get("minGroupCountDefault", "children") == "children",
            priority_class_name_from=(
                self.path(f"{location}.priorityClassNameFrom", doc["priorityClassNameFrom"])
                if "priorityClassNameFrom" in doc
                else None
            ),
            exclusive_with=tuple(
                self.path(f"{location}.exclusiveWith[{i}]", p)
                for i, p in enumerate(doc.get("exclusiveWith", []))
            ),
            pod_label=doc["podLabel"]["key"] if "podLabel" in doc else None,
            pod_label_value=label_value,
            groups=groups,
            group_index_label=doc["groups"]["indexLabel"] if groups is not None else None,
            group_count_label=doc["groups"].get("countLabel") if groups is not None else None,
            children=children,
        )

    def pod_count(self, location: str, doc: dict[str, t.Any]) -> PodCount:
        default = doc.get("default", 1)
        if "path" in doc:
            return PodCount(self.path(f"{location}.path", doc["path"]), default)
        expression = doc["expression"]
        program = _compile_cel(self, f"{location}.expression", expression)
        # The binding lists a macro's bound variable (`t` in self.tasks.map(t, t.replicas)) among
        # the expression's variables; it is not a free one.
        unknown = sorted(set(program.variables()) - {"self"} - set(_MACRO_VARIABLE.findall(expression)))
        if unknown:
            self.fail(
                f"{location}.expression",
                f"{expression!r} names {', '.join(map(repr, unknown))}: the node's context is `self` "
                "(e.g. self.replicas * self.template.spec.parallelism)",
            )
        return PodCount(None, default, expression, program, doc.get("description"))

    def check_template_name(
        self, location: str, pattern: str, for_each: FieldPath | None, *, keyed: bool
    ) -> None:
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(pattern) if f is not None]
        except ValueError as exc:
            self.fail(location, f"bad template name pattern {pattern!r}: {exc}")
        for name in fields:
            if name not in _PLACEHOLDERS:
                known = ", ".join(f"{{{p}}}" for p in TEMPLATE_PLACEHOLDERS)
                self.fail(location, f"unknown placeholder {{{name}}} (known: {known})")
            if name == "key" and not keyed:
                self.fail(location, "{key} needs forEach with itemKey, or forEachOver: map, on this node")
            if name == "index" and for_each is None:
                self.fail(location, "{index} needs forEach on this node")

    def cel(self, location: str, expression: str) -> cel.Program:
        program = _compile_cel(self, location, expression)
        unknown = sorted(set(program.variables()) - {"self"} - set(_MACRO_VARIABLE.findall(expression)))
        if unknown:
            self.fail(location, f"{expression!r} names {', '.join(map(repr, unknown))}: the object is `self`")
        return program

    def defaults(self, docs: list[dict[str, t.Any]]) -> tuple[DefaultRule, ...]:
        rules = []
        for i, doc in enumerate(docs):
            node = doc.get("node", "root")
            if node not in self.ids:
                self.fail(f"spec.defaults[{i}].node", f"no node with id {node!r}")
            program = _compile_cel(self, f"spec.defaults[{i}].when", doc["when"]) if "when" in doc else None
            rules.append(
                DefaultRule(
                    name=doc["name"],
                    node=node,
                    values=doc["set"],
                    condition=doc.get("when"),
                    program=program,
                    materialize_min_count=doc.get("materializeMinCount", False),
                )
            )
        return tuple(rules)


def _compile_cel(loader: _Loader, location: str, expression: str) -> cel.Program:
    try:
        return t.cast("cel.Program", binding().compile(expression))
    except (ValueError, RuntimeError) as exc:
        loader.fail(location, f"CEL expression does not compile: {exc}")


def parse_policy(source: str, doc: object) -> Policy:
    if not isinstance(doc, dict):
        raise PolicyError(f"{source}: a policy file must hold one mapping, got {type(doc).__name__}")
    errors = schema_errors(doc)
    if errors:
        raise _schema_problem(source, errors[0])
    loader = _Loader(source)
    spec = doc["spec"]
    root = loader.node(spec["root"], "spec.root", in_for_each=False)
    gate = spec.get("featureGate")
    if gate is not None and gate not in KNOWN_GATES:
        loader.fail("spec.featureGate", f"unknown feature gate {gate!r} (known: {', '.join(KNOWN_GATES)})")
    warnings = []
    for key in ("allowedPolicies", "allowedDisruptionModes"):
        if not spec[key]:
            warnings.append(
                f"{source}: spec.{key} is empty: every object of this kind that resolves to a value is denied"
            )
    stamping = spec.get("stamping", {})
    child_templates = load_child_templates(loader, root, stamping.get("childTemplates", []))
    membership = load_membership(loader, stamping.get("membership"))
    if stamping.get("pods", False) or child_templates or membership is not None:
        # Leaves are chosen by labels for pods, and for a child's one templatePath.
        by_labels = (
            stamping.get("pods", False)
            or membership is not None
            or any(m.node is None for c in child_templates for m in c.templates)
        )
        _check_stampable(loader, root, by_labels=by_labels)
    schedulability = load_schedulability(loader, spec.get("schedulability"))
    warnings.extend(_unreachable_delegation(loader, root, child_templates, schedulability))
    target = spec["target"]
    return Policy(
        name=doc["metadata"]["name"],
        source=source,
        group=target["group"],
        versions=tuple(target["versions"]),
        kind=target["kind"],
        resource=target["resource"],
        root=root,
        allowed_policies=frozenset(PolicyKind(p) for p in spec["allowedPolicies"]),
        allowed_disruption_modes=frozenset(DisruptionKind(m) for m in spec["allowedDisruptionModes"]),
        declarative_validation=spec.get("declarativeValidation", True),
        update_rules=spec.get("updateRules", "immutable"),
        feature_gate=gate,
        defaults=loader.defaults(spec.get("defaults", [])),
        stamp_pods=stamping.get("pods", False),
        child_templates=child_templates,
        membership=membership,
        native=load_native(loader, spec.get("native")),
        warnings=tuple(warnings),
        enforcement=spec.get("enforcement", "deny"),
        notice=spec.get("notice"),
        schedulability=schedulability,
        refused_fields=tuple(
            RefusedField(
                path=loader.path(f"spec.refusedFields[{i}].path", entry["path"]),
                message=entry["message"],
                for_each=(
                    loader.path(f"spec.refusedFields[{i}].forEach", entry["forEach"])
                    if "forEach" in entry
                    else None
                ),
            )
            for i, entry in enumerate(spec.get("refusedFields", []))
        ),
    )


def _unreachable_delegation(
    loader: _Loader, root: NodeSpec, children: tuple[ChildTemplate, ...], rules: Schedulability
) -> list[str]:
    """Rule ``delegation-unreachable`` (docs/schedulability.md): the 1.37 Job controller looks
    a delegated Job's template up among the Workload's top-level ``podGroupTemplates`` only
    (``getPodGroupTemplateByName``), where only a leaf root sits; a leaf under a composite is
    never found, and its Jobs' pods would get no group."""
    action = rules.action("delegation-unreachable")
    out: list[str] = []
    for i, child in enumerate(children):
        if child.mode != "delegate" or not root.composite or action == "off":
            continue
        where = f"spec.stamping.childTemplates[{i}].mode"
        message = (
            f"delegate: the leaves of this policy sit under the composite {root.id!r}, and the 1.37 Job "
            "controller finds a delegated template only among the Workload's top-level podGroupTemplates "
            "(getPodGroupTemplateByName), so the delegated Jobs' pods would get no group; use mode: stamp"
        )
        if action == "deny":
            loader.fail(where, message)
        out.append(f"{loader.source}: {where}: {message} (schedulability rule delegation-unreachable)")
    return out


def _check_stampable(loader: _Loader, root: NodeSpec, *, by_labels: bool) -> None:
    """Stamping computes a leaf's name from the owner reference, labels and element keys
    alone: an element's position in its list is in none of them, so ``{index}`` cannot be
    stamped; and where a leaf is chosen by labels, a composite's children must be told apart
    by them, so at most one may go without one."""
    for node in root.walk():
        unlabelled = [c.id for c in node.children if c.pod_label is None]
        if by_labels and node.composite and len(unlabelled) > 1:
            loader.fail(
                "spec.stamping",
                f"node {node.id!r}: children {', '.join(map(repr, unlabelled))} have no podLabel, so "
                "stamping cannot tell which of them a pod belongs to; give all but one of them a podLabel",
            )
        fields = {f for _, f, _, _ in string.Formatter().parse(node.template_name) if f is not None}
        if not node.composite and "index" in fields:
            loader.fail(
                "spec.stamping",
                f"node {node.id!r}: templateName {node.template_name!r} uses {{index}}, which stamping "
                "cannot compute (no API call is made); use {key} with podLabel instead",
            )
