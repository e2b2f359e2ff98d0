"""Policy defaults: fill the building blocks a user left unset, on CREATE, never rejecting.

A policy's ``spec.defaults`` lists rules ``{name, when?, node, set, materializeMinCount?}``.
For every node of the object's tree, the first rule for that node whose condition holds
wins, and fills each of ``schedulingPolicy``, ``schedulingConstraints``, ``disruptionMode``
and ``resourceClaims`` that the user left unset *as a whole* (upstream's whole-field
merge: nothing is ever merged inside a block, and nothing a user wrote is overwritten).

Contracts (the tests check each):

* **CREATE only.** ``spec.scheduling`` is NoSet on update, and the other frozen blocks
  cannot be added either; even where a policy has ``updateRules: none`` (CronJob) a
  default appearing on UPDATE would fight ``kubectl apply``, so UPDATE is never defaulted.
* **Never invalid.** A candidate is re-checked with the validator; a rule whose result
  would add a field error (``all`` on a Basic node, ``minCount`` above the pod count, a
  block next to a user-managed ``schedulingGroup``, ...) is skipped with a warning, and
  the node's next rule gets its turn, exactly as for a rule whose condition fails.
* **CEL never blocks admission.** Conditions (over the variable ``object``) are compiled
  at policy load; the object is bound once per pass (below), and only when a condition is
  actually evaluated (binding a Job costs ~190 µs); in practice that is once per request,
  because a rule with nothing left to fill is never evaluated. An evaluation error or a non-bool result skips the rule with a warning.
* **minCount stays unset** unless the rule says ``materializeMinCount: true``, so that a
  change of the pod count keeps resizing the gang (docs/design.md §5.5).
* **Kueue defaults first.** An object carrying Kueue's queue-name label
  (``kueue.x-k8s.io/queue-name``) is not defaulted at all: Kueue owns its gang defaults and its
  suspend/admit cycle (docs/coexistence.md), and a block wasp filled first would read to Kueue
  as the user's, so its own default (``GangSchedulingByDefault``) would never apply.
  Admission order between the two mutating webhooks is not defined; skipping the object is
  the only rule that holds in both orders.
* **Idempotent.** Rules are applied in passes until a pass changes nothing, so the output
  is a fixpoint and defaulting it again gives an empty patch (reinvocationPolicy
  IfNeeded). Conditions see the object as the previous pass left it: a condition such as
  ``!has(object.spec.scheduling)`` stops matching once its rule applied, and the node's
  next rule may then fill what is still unset. Guard conditions on the input fields they
  are about (parallelism, containers, ...), not on the blocks defaults write.
"""

from __future__ import annotations

import copy
import json
import typing as t
from dataclasses import dataclass

from webhook.governed.patch import assoc
from webhook.governed.tree import ObjectNode, build_tree, get_path
from webhook.governed.validation import validate_governed
from webhook.policy import DefaultRule, Policy, PolicySet
from webhook.policy.celbinding import binding
from webhook.vocab.field import FieldPath

if t.TYPE_CHECKING:
    import cel

__all__ = ["BLOCKS", "KUEUE_QUEUE_NAME", "Defaulted", "default_object", "kueue_managed"]

Obj = t.Mapping[str, t.Any]

KUEUE_QUEUE_NAME: t.Final = "kueue.x-k8s.io/queue-name"
BLOCKS: t.Final = ("schedulingPolicy", "schedulingConstraints", "disruptionMode", "resourceClaims")
# A block whose gate is off is dropped by the apiserver; filling it would be a silent no-op.
_BLOCK_GATES: t.Final = {
    "schedulingConstraints": "TopologyAwareWorkloadScheduling",
    "resourceClaims": "DRAWorkloadResourceClaims",
}


_MAX_PASSES: t.Final = 4 * 64  # four members per node, far more nodes than a Workload holds


@dataclass(frozen=True, slots=True)
class Defaulted:
    """The defaulted object (``obj`` itself when nothing changed), the warnings, and the
    absolute paths of the scheduling blocks that were changed (the roots to diff)."""

    object: t.Any
    warnings: tuple[str, ...] = ()
    roots: tuple[FieldPath, ...] = ()


def _unset(block: t.Mapping[str, t.Any], member: str) -> bool:
    # Absent or null; an empty claim list is what the apiserver stores as "no claims".
    value = block.get(member)
    return value is None or (member == "resourceClaims" and value == [])


class _Run:
    """One defaulting pass over one object: lazily bound CEL context, cached conditions."""

    def __init__(self, policy: Policy, policies: PolicySet, obj: Obj) -> None:
        self.policy = policy
        self.gates = policies.gates
        self.original = obj
        self.current: Obj = obj
        self.warnings: list[str] = []
        self.roots: list[FieldPath] = []
        self._context: cel.Context | None = None
        self._bind_failed = False
        self._verdicts: dict[int, bool] = {}
        self._base_errors: set[tuple[str, str]] | None = None

    def warn(self, rule: DefaultRule, why: str) -> None:
        self.warnings.append(f"default rule {rule.name!r} of policy {self.policy.name!r} skipped: {why}")

    def matches(self, index: int, rule: DefaultRule) -> bool:
        """Whether ``rule``'s condition holds for the object (cached per rule)."""
        if rule.program is None:
            return True
        if index not in self._verdicts:
            self._verdicts[index] = self._evaluate(rule)
        return self._verdicts[index]

    def _evaluate(self, rule: DefaultRule) -> bool:
        assert rule.program is not None
        try:
            if self._context is None:
                if self._bind_failed:
                    raise ValueError("the object could not be bound to CEL")
                try:
                    context: cel.Context = binding().Context()
                    context.add_variable("object", self.original)
                except Exception:
                    self._bind_failed = True
                    raise
                self._context = context
            result = rule.program.execute(self._context)
        except Exception as exc:  # noqa: BLE001 - any failure of a user's expression only skips the rule
            self.warn(rule, f"condition {rule.condition!r} failed: {type(exc).__name__}: {exc}")
            return False
        if not isinstance(result, bool):
            self.warn(rule, f"condition {rule.condition!r} gave {type(result).__name__}, not bool")
            return False
        return result

    def fills(self, rule: DefaultRule, node: ObjectNode, block: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
        """The members ``rule`` would write into ``block`` (deep copies of the policy's values)."""
        out: dict[str, t.Any] = {}
        for member in BLOCKS:
            if member not in rule.values or not _unset(block, member):
                continue
            if member == "resourceClaims" and node.spec.composite:
                self.warnings.append(
                    f"default rule {rule.name!r}: resourceClaims ignored, composite node {node.spec.id!r} has none"
                )
                continue
            gate = _BLOCK_GATES.get(member)
            if gate is not None and gate not in self.gates:
                self.warnings.append(
                    f"default rule {rule.name!r}: {node.path}.{member} not set: feature gate {gate} is off"
                )
                continue
            out[member] = copy.deepcopy(rule.values[member])
        if rule.materialize_min_count and isinstance(out.get("schedulingPolicy"), dict):
            self._materialize(rule, node, out["schedulingPolicy"])
        return out

    def _materialize(self, rule: DefaultRule, node: ObjectNode, policy: dict[str, t.Any]) -> None:
        gang = policy.get("gang")
        field = "minGroupCount" if node.spec.composite else "minCount"
        if not isinstance(gang, dict) or gang.get(field) is not None:
            return
        count = len(node.children) if node.spec.composite else node.pod_count
        if count is None:
            self.warnings.append(
                f"default rule {rule.name!r}: {field} not written: node {node.spec.id!r} has no pod count"
            )
            return
        gang[field] = max(1, count)  # the controller's own resolution (a paused Job has 0 pods)

    def new_errors(self, candidate: Obj) -> list[str]:
        """Field errors of ``candidate`` that the object did not already have."""
        errors, _ = validate_governed(self.policy, candidate, None, gates=self.gates)
        if not errors:
            return []
        if self._base_errors is None:
            base, _ = validate_governed(self.policy, self.original, None, gates=self.gates)
            self._base_errors = {e.key() for e in base}
        return [e.error() for e in errors if e.key() not in self._base_errors]

    def node(self, node: ObjectNode, rules: list[tuple[int, DefaultRule]]) -> None:
        # The node's block as the tree read it (decoded when the policy keeps it as JSON text);
        # a pass writes each node's block at most once, so it is still the current one.
        current_block = node.block
        if node.spec.json_encoded and current_block is None and get_path(self.current, node.path) is not None:
            return  # text that is not JSON: the validator reports it; nothing sensible to fill
        if current_block is not None and not isinstance(current_block, dict):
            return  # malformed block: the validator reports it; nothing sensible to fill
        block: t.Mapping[str, t.Any] = current_block if current_block is not None else {}
        if not any(_unset(block, m) for _, r in rules for m in r.values):
            return  # every block a rule could fill is set: no condition needs evaluating
        for index, rule in rules:
            if not self.matches(index, rule):
                continue
            fills = self.fills(rule, node, block)
            if not fills:
                return  # the first matching rule wins, even when it has nothing left to fill
            value: object = {**block, **fills}
            if node.spec.json_encoded:
                value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            try:
                candidate = assoc(self.current, node.path, value)
            except ValueError as exc:
                self.warn(rule, f"cannot write {node.path}: {exc}")
                continue
            problems = self.new_errors(candidate)
            if problems:
                self.warn(rule, f"the result would be invalid: {'; '.join(problems)}")
                continue
            self.current = candidate
            self.roots.append(node.path)
            return


def kueue_managed(obj: Obj) -> bool:
    """The object is queued by Kueue (its queue-name label, any value)."""
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return isinstance(labels, dict) and KUEUE_QUEUE_NAME in labels


def default_object(
    obj: object, policies: PolicySet, *, operation: str = "CREATE", old_obj: object = None
) -> Defaulted:
    """Apply the governing policy's defaults to a copy of ``obj``; ``obj`` is never modified.

    ``operation`` is the admission operation; anything but ``"CREATE"`` returns ``obj``
    unchanged. ``old_obj`` is not read (it is accepted so every mutator has the same
    signature). Objects no policy governs, policies without defaults and malformed
    objects come back unchanged (malformed ones with a warning). Never raises on bad input.
    """
    del old_obj  # defaults apply on CREATE only; see the module docstring
    if operation != "CREATE" or not isinstance(obj, dict):
        return Defaulted(obj)
    policy = policies.for_object(obj)
    if policy is None or not policy.defaults or kueue_managed(obj):
        return Defaulted(obj)
    if policy.feature_gate and policy.feature_gate not in policies.gates:
        return Defaulted(
            obj,
            (
                f"defaults of policy {policy.name!r} not applied: feature gate {policy.feature_gate} is off, "
                f"so the apiserver drops {policy.root.path}",
            ),
        )
    tree, problems = build_tree(policy, obj)
    if problems:
        return Defaulted(obj, (f"defaults of policy {policy.name!r} not applied: {problems[0].error()}",))
    by_node: dict[str, list[tuple[int, DefaultRule]]] = {}
    for index, rule in enumerate(policy.defaults):
        by_node.setdefault(rule.node, []).append((index, rule))
    current: Obj = obj
    warnings: list[str] = []
    roots: list[FieldPath] = []
    # Passes run to a fixpoint, so that defaulting the output changes nothing (idempotence):
    # a condition may read the blocks an earlier pass filled, and a rule skipped for
    # validity may become valid once another rule filled a block. Every pass that changes
    # something fills at least one unset member and members are never unset again, so the
    # bound is never reached; a pass that changes nothing is cheap (it evaluates only rules
    # that still have something to fill, and binds CEL only then).
    for _ in range(_MAX_PASSES):
        run = _Run(policy, policies, current)
        for node in tree.walk():
            rules = by_node.get(node.spec.id)
            if rules:
                run.node(node, rules)
        warnings.extend(run.warnings)
        if not run.roots:
            break
        current = run.current
        roots.extend(run.roots)
        tree, _ = build_tree(policy, current)
    return Defaulted(current, tuple(dict.fromkeys(warnings)), tuple(dict.fromkeys(roots)))
