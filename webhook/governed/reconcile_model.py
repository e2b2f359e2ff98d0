"""The vocabulary of :mod:`webhook.governed.reconcile`: plans, observations, discovery helpers.

Pure data and functions over JSON objects; the reconciler's I/O edge executes the plans.
"""

from __future__ import annotations

import enum
import typing as t
from dataclasses import dataclass, field

from webhook.compiler.builder import parse_group
from webhook.governed.ownership import controller_of

__all__ = [
    "Create", "Kind", "Mode", "Observed", "Patch", "Plan", "Report",
    "controller_ref_names", "controls", "count_patch", "counts", "group_count", "meta", "only",
    "string", "taken", "unstamped", "warn", "workload_owner", "workload_ref",
]  # fmt: skip

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
Kind = t.Literal["Workload", "CompositePodGroup", "PodGroup"]


class Mode(enum.Enum):
    NONE = "none"  # wasp creates nothing for this object
    BOTH = "both"  # a root: its Workload and every runtime group
    DELEGATED = "delegated"  # a delegated child: only its PodGroup, in the parent's Workload


@dataclass(frozen=True, slots=True)
class Create:
    kind: Kind
    body: Json

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass(frozen=True, slots=True)
class Patch:
    """A JSON Patch (RFC 6902) on a controlled object; ``test`` ops guard the indices."""

    kind: Kind
    name: str
    ops: tuple[Json, ...]
    summary: str


@dataclass(frozen=True, slots=True)
class Report:
    """An Event on the governed object: ``Normal`` or ``Warning``, a CamelCase reason."""

    type: t.Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Plan:
    """``writes`` in order; ``again``: re-plan once the writes are done (the Workload was
    created, its groups come next); ``retry``: re-plan later with backoff (e.g. no parent)."""

    writes: tuple[Create | Patch, ...] = ()
    reports: tuple[Report, ...] = ()
    again: bool = False
    retry: bool = False


@dataclass(frozen=True, slots=True)
class Observed:
    """What the caches hold in the object's namespace.

    ``workloads``: Workloads whose ``spec.controllerRef`` names the object (a delegated
    child: its controller owner); ``groups``: PodGroups and CompositePodGroups whose
    ``workloadRef`` names one of them; ``by_name``: any object of a kind by name (to tell a
    foreign object holding a wanted name); ``unstamped_pods``: pods the object controls that
    have no ``schedulingGroup``.
    """

    workloads: t.Sequence[Obj] = ()
    groups: t.Sequence[Obj] = ()
    by_name: t.Callable[[Kind, str], Obj | None] = field(default=lambda kind, name: None)
    unstamped_pods: int = 0


def warn(reason: str, message: str) -> Report:
    return Report("Warning", reason, message)


def only(reason: str, message: str, *, retry: bool = False) -> Plan:
    """A plan that writes nothing and reports one warning."""
    return Plan(reports=(warn(reason, message),), retry=retry)


def meta(obj: Obj) -> Obj:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def string(value: object) -> str:
    return value if isinstance(value, str) else ""


def controls(obj: Obj, other: Obj) -> bool:
    """``other`` has a controller ownerReference to ``obj`` (by UID)."""
    ref = controller_of(other)
    uid = meta(obj).get("uid")
    return ref is not None and bool(uid) and ref.get("uid") == uid


def controller_ref_names(workload: Obj, api_version: str, kind: str, name: str) -> bool:
    spec = workload.get("spec")
    ref = spec.get("controllerRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return False
    return (string(ref.get("apiGroup")), ref.get("kind"), ref.get("name")) == (
        parse_group(api_version),
        kind,
        name,
    )


def workload_ref(group: Obj) -> tuple[str, str]:
    spec = group.get("spec")
    ref = spec.get("workloadRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict):
        return "", ""
    return string(ref.get("workloadName")), string(ref.get("templateName"))


class _Template(t.NamedTuple):
    pointer: str  # JSON pointer of the template in the Workload
    variant: str  # "gang" or "basic"
    gang_count: int | None  # the gang's minCount / minGroupCount
    count_field: str
    place: str  # the path of names from the root: the tree's shape


def counts(workload: Obj) -> dict[str, _Template]:
    """Every template of ``workload`` by name, in pre-order (leaves before composites)."""
    out: dict[str, _Template] = {}
    _add_templates(workload.get("spec"), "/spec", "", out)
    return out


def _add_templates(node: object, pointer: str, place: str, out: dict[str, _Template]) -> None:
    # A module function, not a closure: a recursive closure is a reference cycle, which leaves
    # every planned object's templates to the cyclic garbage collector.
    if not isinstance(node, dict):
        return
    for key, count_field in (
        ("podGroupTemplates", "minCount"),
        ("compositePodGroupTemplates", "minGroupCount"),
    ):
        items = node.get(key)
        for i, tpl in enumerate(items if isinstance(items, list) else []):
            if not isinstance(tpl, dict):
                continue
            policy = tpl.get("schedulingPolicy")
            gang = policy.get("gang") if isinstance(policy, dict) else None
            count = gang.get(count_field) if isinstance(gang, dict) else None
            name = string(tpl.get("name"))
            out[name] = _Template(
                f"{pointer}/{key}/{i}", "gang" if isinstance(gang, dict) else "basic",
                count if isinstance(count, int) else None, count_field, f"{place}/{key}",
            )  # fmt: skip
            _add_templates(tpl, f"{pointer}/{key}/{i}", f"{place}/{key}:{name}", out)


def count_patch(live: Obj, wanted: Obj) -> tuple[list[Json], list[str]] | str:
    """The ops that bring the live Workload's gang counts to the wanted ones, or why the live
    Workload's structure (templates, their places and variants) differs (decision 21)."""
    have, want = counts(live), counts(wanted)
    if {n: (v.variant, v.place) for n, v in have.items()} != {
        n: (v.variant, v.place) for n, v in want.items()
    }:
        return f"templates {sorted(have)} do not match the compiled {sorted(want)}"
    ops: list[Json] = []
    changed = []
    for name, tpl in want.items():
        live_count = have[name].gang_count
        if tpl.variant == "gang" and tpl.gang_count is not None and tpl.gang_count != live_count:
            ops.append({"op": "test", "path": f"{tpl.pointer}/name", "value": name})
            ops.append(
                {
                    "op": "replace",
                    "path": f"{tpl.pointer}/schedulingPolicy/gang/{tpl.count_field}",
                    "value": tpl.gang_count,
                }
            )
            changed.append(f"{name} {tpl.count_field} {live_count} → {tpl.gang_count}")
    return ops, changed


def group_count(group: Obj) -> tuple[str, int | None]:
    spec = group.get("spec")
    policy = spec.get("schedulingPolicy") if isinstance(spec, dict) else None
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if not isinstance(gang, dict):
        return "", None
    key = "minGroupCount" if group.get("kind") == "CompositePodGroup" else "minCount"
    value = gang.get(key)
    return key, value if isinstance(value, int) else None


def taken(kind: Kind, name: str, holder: Obj | None, obj: Obj) -> Report:
    owner = controller_of(holder) if holder is not None else None
    by = f"{owner.get('kind')} {owner.get('name')}" if owner is not None else "no controller"
    return warn(
        "NameTaken",
        f"{kind} {name} exists and is not controlled by this object (controlled by {by}); it is left alone",
    )


def workload_owner(workload: Obj) -> Json:
    """The non-controller reference a root PodGroup carries to its Workload (§7.2)."""
    m = meta(workload)
    return {"apiVersion": workload.get("apiVersion", "scheduling.k8s.io/v1beta1"), "kind": "Workload",
            "name": m.get("name", ""), "uid": m.get("uid", "")}  # fmt: skip


def unstamped(observed: Observed) -> Report:
    return warn(
        "StartedWithoutGroups",
        f"{observed.unstamped_pods} pod(s) of this object run without a schedulingGroup (created before wasp governed it): no scheduling objects are created for it",
    )
