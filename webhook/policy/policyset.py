"""``PolicySet``: the loaded policies and the assumed feature gates, looked up per review."""

from __future__ import annotations

import typing as t
from dataclasses import replace
from pathlib import Path

from webhook.policy.files import load_policies
from webhook.policy.model import BUILTIN_POLICY_DIR, Enforcement, GroupingLookup, Policy
from webhook.vocab.errors import PolicyError
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

__all__ = ["PolicySet"]


class PolicySet:
    """The loaded policies plus the assumed feature gates; immutable after construction.

    A policy whose ``metadata.name`` equals a built-in one's (or a shipped integration's)
    replaces it (so a platform team can override a built-in policy); two other files with one name, and two different policies
    for the same kind, are errors.
    """

    def __init__(
        self,
        policies: t.Iterable[Policy] = (),
        *,
        gates: FeatureGates = DEFAULT_GATES,
        notes: t.Iterable[str] = (),
        grouping: GroupingLookup | None = None,
    ) -> None:
        by_name: dict[str, Policy] = {}
        for policy in policies:
            earlier = by_name.get(policy.name)
            if earlier is not None and earlier.source != policy.source and not _builtin(earlier):
                # Replacing a built-in policy by name is how a platform team overrides it; two
                # of their own files with one name would silently drop one of them.
                raise PolicyError(
                    f"{policy.source}: metadata.name {policy.name!r} is already used by {earlier.source}; "
                    "policy names must be unique (only a built-in policy may be replaced by name)"
                )
            by_name[policy.name] = policy
        self.gates = gates
        self.policies: tuple[Policy, ...] = tuple(by_name.values())
        self._by_kind: dict[tuple[str, str], Policy] = {}
        for policy in self.policies:
            key = (policy.group, policy.kind)
            other = self._by_kind.get(key)
            if other is not None:
                raise PolicyError(
                    f"{policy.source}: policy {policy.name!r} targets {policy.group or 'core'}/{policy.kind}, "
                    f"already governed by policy {other.name!r} ({other.source}); give it the same "
                    "metadata.name to replace that policy"
                )
            self._by_kind[key] = policy
        # Keyed by the apiVersion as objects spell it, so a review's lookup is one dict probe.
        self._served: dict[tuple[str, str], Policy] = {
            (f"{p.group}/{v}" if p.group else v, p.kind): p for p in self.policies for v in p.versions
        }
        self.warnings: tuple[str, ...] = tuple(w for p in self.policies for w in p.warnings)
        # What loading skipped (documents beside the policies that are not policies), for a log line.
        self.notes: tuple[str, ...] = tuple(notes)
        # What the cluster holds about workloads, for stamping (all or nothing, native mode):
        # set by the webhook server, ``None`` elsewhere (docs/decisions.md §30).
        self.grouping = grouping

    @classmethod
    def load(
        cls, locations: t.Iterable[Path] = (), *, builtin: bool = True, gates: FeatureGates = DEFAULT_GATES
    ) -> PolicySet:
        found = load_policies([BUILTIN_POLICY_DIR]) if builtin else []
        notes: list[str] = []
        return cls([*found, *load_policies(locations, notes)], gates=gates, notes=notes)

    def for_kind(self, api_version: str, kind: str) -> Policy | None:
        """The policy governing objects of this apiVersion (``group/version``, or ``version``
        for the core group) and kind, or ``None``."""
        return self._served.get((api_version, kind))

    def for_object(self, obj: t.Mapping[str, t.Any]) -> Policy | None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return None
        return self.for_kind(api_version, kind)

    def with_enforcement(self, enforcement: Enforcement | None) -> PolicySet:
        """Every policy with ``enforcement`` in place of its own ``spec.enforcement`` (the
        ``--enforcement`` flag of ``wasp serve`` and ``wasp validate``); ``None`` keeps them."""
        if enforcement is None or all(p.enforcement == enforcement for p in self.policies):
            return self
        return PolicySet(
            [p.enforced(enforcement) for p in self.policies],
            gates=self.gates,
            notes=self.notes,
            grouping=self.grouping,
        )

    def with_grouping(self, grouping: GroupingLookup | None) -> PolicySet:
        """These policies with the webhook's view of the cluster's workloads attached."""
        return PolicySet(self.policies, gates=self.gates, notes=self.notes, grouping=grouping)

    def with_schedulers(self, schedulers: frozenset[str] | None) -> PolicySet:
        """Every policy with ``schedulers`` as the schedulers that implement WAS (rule
        ``foreign-scheduler``, docs/schedulability.md); ``None`` keeps each policy's own."""
        if schedulers is None:
            return self
        changed = [
            replace(p, schedulability=replace(p.schedulability, schedulers=schedulers)) for p in self.policies
        ]
        return PolicySet(changed, gates=self.gates, notes=self.notes, grouping=self.grouping)


def _builtin(policy: Policy) -> bool:
    """Shipped with wasp: a built-in policy, or an integration (a user file may replace either by name)."""
    shipped = (BUILTIN_POLICY_DIR.resolve(), (BUILTIN_POLICY_DIR / "integrations").resolve())
    return Path(policy.source).resolve().parent in shipped
