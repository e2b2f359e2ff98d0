"""Which ``scheduling.k8s.io`` versions to use, from what the cluster serves (discovery), never
guessed: a version wasp has no schema for is reported, by name, with what to do.

Everything that talks to a cluster asks this one function: ``wasp reconcile`` (it writes, so only
the versions the compiler emits will do: Workload and PodGroup ``v1beta1``, CompositePodGroup
``v1alpha3``), ``wasp audit`` and ``wasp doctor`` (they read, so any version wasp validates:
:data:`webhook.scheduling_objects.SERVED_VERSIONS`). Pure: the caller passes what discovery said.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.compiler.builder import API_VERSION
from webhook.scheduling_objects import SERVED_VERSIONS

__all__ = ["GROUP", "PLURALS", "Chosen", "choose"]

GROUP: t.Final = "scheduling.k8s.io"
PLURALS: t.Final = {
    "Workload": "workloads",
    "PodGroup": "podgroups",
    "CompositePodGroup": "compositepodgroups",
}
# What compile_object writes: the only versions the reconciler may create in.
EMITTED: t.Final = {"Workload": API_VERSION.rpartition("/")[2], "PodGroup": API_VERSION.rpartition("/")[2],
                    "CompositePodGroup": "v1alpha3"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Chosen:
    """The version to use for each kind served in one wasp knows, and for each other kind why not."""

    versions: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    # kind -> the resource wanted, as ``wasp audit``'s summary lists what is not served
    missing: dict[str, str] = field(default_factory=dict)


def choose(served: t.Mapping[str, t.Collection[str] | None], *, write: bool) -> Chosen:
    """``served``: each version of ``scheduling.k8s.io`` discovery lists, with its resources."""
    chosen = Chosen()
    for kind, plural in PLURALS.items():
        known = (EMITTED[kind],) if write else SERVED_VERSIONS[kind]
        found = next((v for v in known if plural in (served.get(v) or ())), None)
        if found is not None:
            chosen.versions[kind] = found
            continue
        elsewhere = sorted(v for v, names in served.items() if names and plural in names)
        chosen.missing[kind] = f"{GROUP}/{known[0]}/{plural}" + (
            f" (served in {', '.join(elsewhere)} only: no schema in this wasp)" if elsewhere else ""
        )
        missing = f"{GROUP}/{known[0]} does not serve {plural}"
        if elsewhere:
            verb = "creates them only in" if write else "has a schema only for"
            missing += (
                f" (the cluster serves {plural} in {', '.join(elsewhere)}, and wasp {verb} {', '.join(known)}: "
                f"a wasp release that knows {elsewhere[-1]} can use it; this one does not guess)"
            )
        chosen.problems[kind] = missing
    return chosen
