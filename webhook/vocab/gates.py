"""The feature-gate set wasp assumes the cluster runs with (docs/decisions.md §14).

wasp cannot read the apiserver's gates, so the set is configuration: a policy/chart value
and a CLI flag. When a block would be dropped or forbidden because its gate is off, the
validators return a warning that names the gate instead of silently passing.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

__all__ = ["KNOWN_GATES", "FeatureGates", "DEFAULT_GATES"]

KNOWN_GATES: t.Final = (
    "GenericWorkload",
    "WorkloadWithJob",
    "TopologyAwareWorkloadScheduling",
    "DRAWorkloadResourceClaims",
    "CompositePodGroup",
    "PodGroupPreemptionPolicy",
)

_DEFAULT_ON: t.Final = frozenset(
    {"GenericWorkload", "WorkloadWithJob", "TopologyAwareWorkloadScheduling", "DRAWorkloadResourceClaims"}
)


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """The enabled gates. Unknown names are rejected so a typo cannot silently disable a rule."""

    enabled: frozenset[str] = field(default=_DEFAULT_ON)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.enabled) - set(KNOWN_GATES))
        if unknown:
            raise ValueError(
                f"unknown feature gate(s): {', '.join(unknown)}; known: {', '.join(KNOWN_GATES)}"
            )

    def __contains__(self, gate: object) -> bool:
        return gate in self.enabled

    @classmethod
    def parse(cls, spec: str) -> FeatureGates:
        """Parse ``Gate=true,Other=false`` (apiserver ``--feature-gates`` syntax) over the defaults."""
        enabled = set(_DEFAULT_ON)
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, sep, value = item.partition("=")
            if not sep or value.lower() not in ("true", "false"):
                raise ValueError(f"feature gate {item!r}: expected Name=true or Name=false")
            (enabled.add if value.lower() == "true" else enabled.discard)(name.strip())
        return cls(frozenset(enabled))


DEFAULT_GATES: t.Final = FeatureGates()
