"""Whether ``minCount`` pods of a group's shape fit on the nodes' free allocatable: an estimate.

The estimate mirrors the parts of kube-scheduler's filters a snapshot can answer without
running them: ``NodeResourcesFit`` (a pod's request is the sum of its containers' requests,
or the largest init container's when that is more, plus ``spec.overhead``; a node's free
room is its ``status.allocatable`` minus the requests of the pods bound to it that have not
finished), ``NodeUnschedulable``, ``TaintToleration`` (``NoSchedule`` and ``NoExecute``
taints) and ``nodeSelector``. It does not model affinity, topology spread, ports, volumes,
DRA claims or preemption, and the snapshot may be stale by the time it is read: the answer
says "estimate" wherever it is shown.

With a topology constraint (``schedulingConstraints.topology[0].key``) the gang must fit in
one domain (the nodes sharing a value of that label), so the best domain is reported.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

__all__ = ["Fit", "Shape", "Usage", "add_usage", "fit", "parse_quantity", "pod_requests", "shape_of"]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
Resources = dict[str, Decimal]
Usage = dict[str, Resources]  # node name -> requests of the active pods bound there

# apimachinery's resource.Quantity suffixes.
_BINARY: t.Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: t.Final = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
                     "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
                     "P": Decimal("1e15"), "E": Decimal("1e18")}  # fmt: skip
_FINISHED: t.Final = frozenset({"Succeeded", "Failed"})
_BLOCKING_EFFECTS: t.Final = frozenset({"NoSchedule", "NoExecute"})


def _dict(value: object) -> t.Mapping[str, t.Any]:
    return value if isinstance(value, dict) else {}


def parse_quantity(value: object) -> Decimal | None:
    """A Kubernetes quantity (``500m``, ``1Gi``, ``2``, ``1e3``) as a number, or ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            number = _number(text[: -len(suffix)])
            return number * factor if number is not None else None
    if text[-1] in _DECIMAL:
        number = _number(text[:-1])
        return number * _DECIMAL[text[-1]] if number is not None else None
    return _number(text)


def _number(text: str) -> Decimal | None:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    return number if number.is_finite() and number >= 0 else None


def _requests(container: object) -> Resources:
    resources = container.get("resources") if isinstance(container, dict) else None
    requests = resources.get("requests") if isinstance(resources, dict) else None
    out: Resources = {}
    for name, raw in requests.items() if isinstance(requests, dict) else ():
        if amount := parse_quantity(raw):
            out[str(name)] = amount
    return out


def _add(into: Resources, more: t.Mapping[str, Decimal]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Decimal(0)) + amount


def pod_requests(pod: Obj) -> Resources:
    """What the scheduler reserves for ``pod``: the larger of the containers' sum and each
    init container (per resource), plus the pod's overhead."""
    spec = pod.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    total: Resources = {}
    for container in spec.get("containers") or []:
        _add(total, _requests(container))
    for container in spec.get("initContainers") or []:
        for name, amount in _requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    overhead = spec.get("overhead")
    for name, raw in overhead.items() if isinstance(overhead, dict) else ():
        if extra := parse_quantity(raw):
            _add(total, {str(name): extra})
    return total


def add_usage(usage: Usage, pods: t.Iterable[Obj]) -> None:
    """Add the requests of the bound, unfinished pods of ``pods`` to ``usage`` (one page at a time)."""
    for pod in pods:
        spec = pod.get("spec")
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        status = pod.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        if not isinstance(node, str) or not node or phase in _FINISHED:
            continue
        _add(usage.setdefault(node, {}), {**pod_requests(pod), "pods": Decimal(1)})


@dataclass(frozen=True)
class Shape:
    """One pod of the group, as the filters see it."""

    requests: Resources
    node_selector: t.Mapping[str, str]
    tolerations: tuple[Obj, ...]

    def describe(self) -> str:
        inner = ", ".join(f"{k}: {_show(v)}" for k, v in sorted(self.requests.items()))
        return "{" + inner + "}"


def shape_of(pod: Obj) -> Shape:
    spec = pod.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    selector = spec.get("nodeSelector")
    tolerations = spec.get("tolerations")
    return Shape(
        pod_requests(pod),
        {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else {},
        tuple(x for x in tolerations if isinstance(x, dict)) if isinstance(tolerations, list) else (),
    )


def _show(amount: Decimal) -> str:
    return str(amount.normalize()) if amount == amount.to_integral_value() else f"{amount.normalize():f}"


def _tolerates(tolerations: t.Sequence[Obj], taint: Obj) -> bool:
    """corev1 ``Toleration.ToleratesTaint`` for any of ``tolerations``."""
    for tol in tolerations:
        if (tol.get("effect") or "") not in ("", taint.get("effect")):
            continue
        if (tol.get("key") or "") not in ("", taint.get("key")):
            continue
        operator = tol.get("operator") or "Equal"
        if operator == "Exists" or (
            operator == "Equal" and (tol.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def _why_not(node: Obj, shape: Shape) -> str | None:
    """Why no pod of ``shape`` can go on ``node`` whatever its free room, or ``None``."""
    meta = _dict(node.get("metadata"))
    labels = _dict(meta.get("labels"))
    spec = _dict(node.get("spec"))
    if spec.get("unschedulable") is True:
        return "unschedulable (cordoned)"
    for key, value in shape.node_selector.items():
        if labels.get(key) != value:
            return f"nodeSelector {key}={value}"
    for taint in spec.get("taints") or []:
        if isinstance(taint, dict) and taint.get("effect") in _BLOCKING_EFFECTS:
            if not _tolerates(shape.tolerations, taint):
                return f"taint {taint.get('key')}={taint.get('value', '')}:{taint.get('effect')}"
    return None


def _free(node: Obj, used: t.Mapping[str, Decimal]) -> Resources:
    status = _dict(node.get("status"))
    allocatable = _dict(status.get("allocatable"))
    out: Resources = {}
    for name, raw in allocatable.items():
        amount = parse_quantity(raw)
        if amount is not None:
            out[str(name)] = amount - used.get(str(name), Decimal(0))
    return out


def _pods_fitting(free: t.Mapping[str, Decimal], shape: Shape) -> int:
    """How many pods of ``shape`` the free room holds (also bounded by the ``pods`` count)."""
    wanted = {**shape.requests, "pods": Decimal(1)}
    fits: int | None = None
    for name, amount in wanted.items():
        have = free.get(name, Decimal(0))
        n = int(have // amount) if have > 0 else 0
        fits = n if fits is None else min(fits, n)
    return max(fits or 0, 0)


@dataclass
class Fit:
    """The estimate: how many pods of the shape fit in all and in the best domain."""

    needed: int
    shape: Shape
    total: int = 0
    nodes: int = 0  # nodes read
    eligible: int = 0  # nodes the filters allow
    excluded: dict[str, int] = field(default_factory=dict)  # why -> nodes
    topology_key: str = ""
    best_domain: str = ""
    best_fit: int = 0
    domains: int = 0

    @property
    def enough(self) -> bool:
        if self.total < self.needed:
            return False
        return not self.topology_key or self.best_fit >= self.needed


def _label(node: Obj, key: str) -> str | None:
    meta = _dict(node.get("metadata"))
    labels = _dict(meta.get("labels"))
    value = labels.get(key)
    return value if isinstance(value, str) else None


def fit(nodes: t.Iterable[Obj], usage: t.Mapping[str, t.Mapping[str, Decimal]], shape: Shape,
        needed: int, topology_key: str = "") -> Fit:  # fmt: skip
    """The estimate for ``needed`` pods of ``shape`` on ``nodes`` given ``usage``."""
    result = Fit(needed, shape, topology_key=topology_key)
    per_domain: dict[str, int] = {}
    for node in nodes:
        result.nodes += 1
        why = _why_not(node, shape)
        if why is not None:
            result.excluded[why] = result.excluded.get(why, 0) + 1
            continue
        result.eligible += 1
        name = str((node.get("metadata") or {}).get("name", ""))
        n = _pods_fitting(_free(node, usage.get(name, {})), shape)
        result.total += n
        if topology_key:
            domain = _label(node, topology_key)
            if domain is not None:
                per_domain[domain] = per_domain.get(domain, 0) + n
    if topology_key:
        result.domains = len(per_domain)
        if per_domain:
            result.best_domain, result.best_fit = max(sorted(per_domain.items()), key=lambda kv: kv[1])
    return result
