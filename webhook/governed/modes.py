"""Which mode each governed kind is in: ``adapter`` (wasp creates and stamps) or ``native`` (its
controller manages WAS itself, ``spec.native.crdFields`` in its served CRD). One pure function,
for ``wasp audit`` and ``wasp doctor`` (docs/coexistence.md); per object, the plan's
``ManagedNatively`` report says the rest (an object field, an annotation, a Workload its
controller made)."""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from webhook.governed.outsiders import crd_natives
from webhook.governed.ownership import WAS_AWARE_KINDS
from webhook.policy import PolicySet

__all__ = ["KindMode", "kind_modes"]


@dataclass(frozen=True, slots=True)
class KindMode:
    kind: str
    mode: t.Literal["adapter", "native", "controller"]
    why: str

    def text(self) -> str:
        return f"{self.kind} {self.mode} ({self.why})"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "mode": self.mode, "why": self.why}


def kind_modes(policies: PolicySet, crds: t.Mapping[str, t.Mapping[str, t.Any] | None]) -> list[KindMode]:
    """One entry per governed kind; ``crds``: the CRD of each policy by its name
    (``<resource>.<group>``) as the cluster serves it, ``None`` when it is not installed."""
    out = []
    for policy in policies.policies:
        if (policy.group, policy.kind) in WAS_AWARE_KINDS:
            out.append(KindMode(policy.kind, "controller", "the 1.37 Job controller creates its objects"))
            continue
        crd = crds.get(f"{policy.resource}.{policy.group}")
        why = (
            next((w for g, k, w in crd_natives(policies, crd) if k == policy.kind and w), None)
            if crd
            else None
        )
        if why is not None:
            out.append(KindMode(policy.kind, "native", why))
        elif policy.native is not None and policy.native.crd_fields:
            out.append(KindMode(policy.kind, "adapter", "its served CRD has none of spec.native.crdFields"))
        else:
            out.append(
                KindMode(
                    policy.kind,
                    "adapter",
                    "no native marker released; a Workload its controller makes switches an object",
                )
            )
    return out
