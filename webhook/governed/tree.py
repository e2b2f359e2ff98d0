"""Find an object's building blocks with its policy and build the compiler's WorkloadItem tree.

This is the one place that knows where a governed object keeps its scheduling blocks,
how its template names are formed and what its pod counts are. Validation, defaulting,
pod stamping, ``wasp compile`` and the reconciler all read the object through it, so
names and paths can never disagree between them.
"""

from __future__ import annotations

import heapq
import json
import typing as t

from webhook.compiler.types import (
    EMPTY_INPUT,
    SchedulingConfig,
    SchedulingPolicy,
    WorkloadInput,
    WorkloadItem,
)
from webhook.governed.counts import evaluate_count
from webhook.policy import NodeSpec, PodCount, Policy
from webhook.vocab.field import (
    OMIT,
    FieldError,
    FieldPath,
    Key,
    duplicate,
    invalid,
    required,
    too_many,
    type_invalid,
)

__all__ = ["MAX_TEMPLATES_PER_LIST", "ObjectNode", "build_tree", "get_path"]

MAX_TEMPLATES_PER_LIST: t.Final = 8  # WorkloadMaxPodGroupTemplates
_BASIC: t.Final = SchedulingConfig(SchedulingPolicy.of_basic())
_SHOWN_EXPRESSION: t.Final = 100  # characters of a pod count expression that messages quote


def get_path(value: object, path: FieldPath) -> object:
    """The value at ``path`` below ``value``, or ``None`` when any step is absent or not traversable."""
    current = value
    for seg in path.segments:
        if isinstance(seg, int):
            current = current[seg] if isinstance(current, list) and seg < len(current) else None
        elif isinstance(current, dict):
            current = current.get(seg.name if isinstance(seg, Key) else seg)
        else:
            return None
        if current is None:
            return None
    return current


class ObjectNode(WorkloadItem):
    """One tree node found in an object. It *is* the compiler's :class:`WorkloadItem` for
    that node (``name`` is the template name, ``path`` the block's absolute path, children
    are nodes), so a review builds one object per node, and adds what the layers above need.
    """

    __slots__ = (
        "block", "context", "context_path", "group_count", "key", "pod_count", "pod_count_explicit", "spec",
        "template_name",
    )  # fmt: skip
    children: list[ObjectNode]
    path: FieldPath  # absolute path of the node's scheduling block

    def __init__(
        self,
        spec: NodeSpec,
        path: FieldPath,
        context_path: FieldPath,
        context: t.Mapping[str, t.Any],
        block: object,
        template_name: str,
        key: str | None = None,
    ) -> None:
        # Slots set directly (not through WorkloadItem's __init__): one is built per node per review.
        self.name = self.template_name = template_name
        self.path = path
        self.default_config = None
        self.input = EMPTY_INPUT
        self.callbacks = ()
        self.children = []
        self.spec = spec
        self.context_path = context_path  # absolute path of the node's context (object or list element)
        self.context = context
        self.block = block  # the raw block (None when absent)
        self.key = key
        self.pod_count: int | None = None  # resolved pod count (value, or the policy default)
        self.pod_count_explicit = False
        self.group_count: int | None = None  # repeated leaves: how many runtime PodGroups

    @property
    def pod_count_source(self) -> str:
        """What the pod count is read from, for messages: the field's path, or the expression
        and the context it runs on (built on demand: only messages need it)."""
        pc = self.spec.pod_count
        if pc is None:
            return ""
        if pc.path is not None:
            return str(self.context_path / pc.path)
        where = f" of {self.context_path}" if self.context_path else ""
        # A long expression (a sum over groups with clamps) would bury the message the user
        # reads; the policy file holds it.
        shown = f" ({pc.expression})" if len(t.cast(str, pc.expression)) <= _SHOWN_EXPRESSION else ""
        return f"the pod count{where}{shown}"

    @property
    def pod_count_shown(self) -> str:
        """The pod count and how it was derived, for messages: ``the pod count (7: the head and
        every worker ...)`` with the policy's words, else ``<source> (7)``."""
        pc = self.spec.pod_count
        if pc is not None and pc.description is not None:
            where = f" of {self.context_path}" if self.context_path else ""
            return f"the pod count{where} ({self.pod_count}: {pc.description})"
        return f"{self.pod_count_source} ({self.pod_count})"

    def walk(self) -> list[ObjectNode]:
        """This node and its descendants in pre-order (a list: a review walks a tree often)."""
        out: list[ObjectNode] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(node.children))
        return out


def _min_count_callback(pod_count: int) -> t.Callable[[SchedulingConfig], None]:
    def fill(cfg: SchedulingConfig) -> None:
        # A paused Job may have parallelism 0; the gang size must stay positive.
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = max(1, pod_count)

    return fill


class _Builder:
    __slots__ = ("errors", "name", "stored")

    def __init__(self, obj: t.Mapping[str, t.Any], stored: bool) -> None:
        self.stored = stored
        self.name = _object_name(obj)
        self.errors: list[FieldError] = []

    def lookup(self, context: object, context_path: FieldPath, path: FieldPath) -> object:
        """Like :func:`get_path`, but a present step that is not a mapping (``spec: "x"``) or
        not a list is reported as a type error at that step instead of reading as "absent"."""
        current = context
        segments = path.segments
        for i, seg in enumerate(segments):
            if current is None:
                return None
            if isinstance(seg, int):
                if not isinstance(current, list):
                    self.errors.append(
                        type_invalid(context_path.child(*segments[:i]), current, "must be of type array")
                    )
                    return None
                current = current[seg] if seg < len(current) else None
            else:
                if not isinstance(current, dict):
                    self.errors.append(
                        type_invalid(context_path.child(*segments[:i]), current, "must be of type object")
                    )
                    return None
                current = current.get(seg.name if isinstance(seg, Key) else seg)
        return current

    def pod_count(self, node: ObjectNode) -> None:
        pc = node.spec.pod_count
        if pc is None:
            return
        found = self.count(node, pc, "pod count")
        if found is not None:
            node.pod_count, node.pod_count_explicit = found

    def group_count(self, node: ObjectNode) -> None:
        """How many groups a repeated leaf has (``groups``); a negative count is an error."""
        pc = node.spec.groups
        assert pc is not None  # called for repeated leaves only
        found = self.count(node, pc, "group count")
        if found is None:
            return
        if found[0] < 0:
            where = node.context_path / pc.path if pc.path is not None else node.context_path
            self.errors.append(
                invalid(where, found[0], "the group count must not be negative", origin="groups")
            )
            return
        node.group_count = found[0]

    def count(self, node: ObjectNode, pc: PodCount, what: str) -> tuple[int, bool] | None:
        """``(count, explicit)`` of a count field or expression (the default when unset), or
        ``None`` with the error that says why there is none."""
        if pc.path is not None:
            raw = self.lookup(node.context, node.context_path, pc.path)
            where = node.context_path / pc.path
        else:
            (raw, failure), where = evaluate_count(pc, node.context), node.context_path
            if failure is not None:
                detail = f"the {what} {_shown(pc)} cannot be computed: {failure}"
                self.errors.append(invalid(where, OMIT, detail[:300], origin="podCount"))
                return None
        if raw is None:
            return pc.default, False
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw, True
        if pc.path is not None:
            self.errors.append(type_invalid(where, raw, "must be of type integer"))
        else:
            detail = f"the {what} {_shown(pc)} gives {type(raw).__name__} {raw!r}, not an integer"
            self.errors.append(invalid(where, OMIT, detail[:300], origin="podCount"))
        return None

    def node(
        self,
        spec: NodeSpec,
        context: t.Mapping[str, t.Any],
        context_path: FieldPath,
        *,
        key: str | None = None,
        index: int | None = None,
    ) -> ObjectNode:
        path = context_path / spec.path if context_path.segments else spec.path
        block = self.lookup(context, context_path, spec.path)
        if spec.json_encoded:
            block = self.decode(block, path)
        name = spec.template_for(self.name, key or "", index)
        node = ObjectNode(spec, path, context_path, context, block, name, key)
        if spec.pod_count is not None and not self.stored:
            self.pod_count(node)
        if spec.groups is not None and not self.stored:
            self.group_count(node)
        for child_spec in spec.children:
            node.children.extend(self.children(child_spec, context, context_path))
        if spec.composite and not node.children:
            self.childless(spec, context, context_path)
        if not self.stored:
            _fill_item(node)  # once the children (part of the item) are known
        return node

    def decode(self, raw: object, path: FieldPath) -> object:
        """The blocks a JSON string holds (an annotation), or ``None`` with the error that says
        why not: a value that is not a string, or text that is not JSON (with its position)."""
        if raw is None:
            return None
        if not isinstance(raw, str):
            self.errors.append(type_invalid(path, raw, "must be of type string"))
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            # The value is shown (apimachinery quotes it once), and where in it decoding stopped.
            where = f"column {exc.colno}" if "\n" not in raw else f"line {exc.lineno}, column {exc.colno}"
            detail = f"must be valid JSON: {exc.msg[:1].lower()}{exc.msg[1:]} at {where} of the value"
            self.errors.append(invalid(path, raw, detail, origin="json"))
        except RecursionError:  # the value itself would be too long to quote
            self.errors.append(
                invalid(path, OMIT, "must be valid JSON: nested too deeply to decode", origin="json")
            )
        return None

    def childless(self, spec: NodeSpec, context: t.Mapping[str, t.Any], context_path: FieldPath) -> None:
        """A composite node whose repeated children all came out empty has no Workload: say
        which list must not be empty (a list of the wrong type was already reported).
        """
        for child_spec in spec.children:
            if child_spec.for_each is None:
                continue
            elements = get_path(context, child_spec.for_each)
            if elements is None or elements == [] or elements == {}:
                where = context_path / child_spec.for_each
                self.errors.append(
                    required(where, "needs at least one element: each is a group of the composite")
                )

    def children(
        self, spec: NodeSpec, context: t.Mapping[str, t.Any], context_path: FieldPath
    ) -> list[ObjectNode]:
        if spec.for_each is None:
            return [self.node(spec, context, context_path)]
        list_path = context_path / spec.for_each
        elements = self.lookup(context, context_path, spec.for_each)
        if elements is None:
            return []
        # Each element becomes a template; a Workload holds at most 8 per list. Past a few times
        # that, reading more elements only makes more errors: the work stays bounded.
        total, entries = self.entries(spec, elements, list_path, limit=MAX_TEMPLATES_PER_LIST * 4)
        if total > MAX_TEMPLATES_PER_LIST:
            self.errors.append(too_many(list_path, total, MAX_TEMPLATES_PER_LIST, origin="maxTemplates"))
        nodes = []
        lowered: set[str] = set()
        for i, (element_path, element, key) in enumerate(entries):
            if spec.for_each_map and key is not None:
                # Template names use the lowercased key: two keys that differ only in case
                # would name one template twice.
                if key.lower() in lowered:
                    self.errors.append(duplicate(element_path, key, origin="lowercaseKey"))
                    continue
                lowered.add(key.lower())
            if not isinstance(element, dict):
                self.errors.append(type_invalid(element_path, element, "must be of type object"))
                continue
            if spec.item_key is not None:
                raw_key = get_path(element, spec.item_key)
                if not isinstance(raw_key, str) or not raw_key:
                    self.errors.append(
                        required(element_path / spec.item_key, "identifies the scheduling group")
                    )
                    continue
                key = raw_key
            nodes.append(self.node(spec, element, element_path, key=key, index=i))
        return nodes

    def entries(
        self, spec: NodeSpec, elements: object, list_path: FieldPath, *, limit: int
    ) -> tuple[int, list[tuple[FieldPath, object, str | None]]]:
        """How many elements a ``forEach`` list or map has, and ``(path, element, map key)``
        for the first ``limit`` of them, in order (a map's entries by key, the order in which
        the apiserver serialises a map); ``(0, [])`` with an error for a value of the wrong type."""
        if spec.for_each_map:
            if not isinstance(elements, dict):
                self.errors.append(type_invalid(list_path, elements, "must be of type object"))
                return 0, []
            keys = heapq.nsmallest(limit, elements, key=str)  # the first keys, without sorting them all
            return len(elements), [(list_path.key(str(k)), elements[k], str(k)) for k in keys]
        if not isinstance(elements, list):
            self.errors.append(type_invalid(list_path, elements, "must be of type array"))
            return 0, []
        return len(elements), [(list_path.index(i), e, None) for i, e in enumerate(elements[:limit])]


def _shown(pc: PodCount) -> str:
    """A count expression as messages name it: the policy's words when it has them, else the CEL."""
    return f"({pc.description})" if pc.description is not None else repr(pc.expression)


def _min_group_count_callback(children: int) -> t.Callable[[SchedulingConfig], None]:
    def fill(cfg: SchedulingConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.min_count is None:
            cfg.policy.gang.min_count = max(1, children)

    return fill


def _fill_item(node: ObjectNode) -> None:
    """The compiler fields of ``node``: default config (always Basic), input slots and callbacks
    (which only fill an unset gang count)."""
    spec = node.spec
    priority = ""
    if spec.priority_class_name_from is not None:
        value = get_path(node.context, spec.priority_class_name_from)
        priority = value if isinstance(value, str) else ""
    # resolve_scheduling_config() only ever copies a default config, so nodes without a priority share one.
    node.default_config = (
        SchedulingConfig(SchedulingPolicy.of_basic(), priority_class_name=priority) if priority else _BASIC
    )
    block = node.block if isinstance(node.block, dict) else None
    if spec.composite:
        node.input = WorkloadInput.from_composite(block)
        if spec.min_group_count_default:
            node.callbacks = (_min_group_count_callback(len(node.children)),)
    else:
        node.input = WorkloadInput.from_leaf(block)
        if spec.min_count_default and node.pod_count is not None:
            node.callbacks = (_min_count_callback(node.pod_count),)


def build_tree(
    policy: Policy, obj: t.Mapping[str, t.Any], *, stored: bool = False
) -> tuple[ObjectNode, list[FieldError]]:
    """The object's tree under ``policy`` and the errors met while reading it (wrong types,
    missing element keys, too many elements). Never raises on malformed objects.

    Every node is the compiler's item for it (default config, input slots, callbacks), but
    for a stored tree.
    ``stored=True`` builds the stored object's tree on an update: names, blocks and paths,
    which the update rules, ratcheting and the compiler's rename check compare; no pod counts
    and no compiler fields (the compiler's declarative layer, the only reader of an old
    node's blocks, is off for governed objects), and its read errors are not reported again
    (it was admitted already).
    """
    builder = _Builder(obj, stored)
    root = builder.node(policy.root, obj, _OBJECT)
    return root, builder.errors


def _object_name(obj: t.Mapping[str, t.Any]) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


_OBJECT: t.Final = FieldPath()  # the root's context path: the object itself
