"""A faithful Python port of upstream ``workloadbuilder`` (Kubernetes 1.37, generation G4).

Controllers embed scheduling *building blocks* (``scheduling.k8s.io/v1alpha3``) in their
own APIs. This package turns them into the ``Workload`` and ``PodGroup`` objects
(``scheduling.k8s.io/v1beta1``) that kube-scheduler gang-schedules:

* :mod:`.types` — the WorkloadItem tree (one node per pod group; composite nodes group
  groups) and the version-independent IR, :class:`SchedulingConfig`;
* :mod:`.mapping` — user blocks (decoded JSON) → IR; empty unions map to *unset*;
* :mod:`.builder` — resolution (defaults → user blocks → callbacks, whole-field
  replacement) and compilation into templates; :class:`Builder`;
* :mod:`.validate` — ``Builder.validate``: tree check, the structural layer from
  :mod:`.schema` (JSON Schema data, ratcheted on update), closed allow-lists and the
  basic+all cross-field rule, every error at the user's own field path;
* :mod:`.podgroup` — PodGroup / CompositePodGroup materialisation;
* :mod:`.names` / :mod:`.annotations` — naming hashes and annotation keys.

Everything here is pure: no Flask, no I/O, inputs never mutated. Build failures raise
:class:`~webhook.vocab.errors.BuildError`; user errors are returned as
:class:`~webhook.vocab.field.FieldError` lists.
"""

from __future__ import annotations

from webhook.compiler.builder import Builder as Builder
from webhook.compiler.names import generate_pod_group_name as generate_pod_group_name
from webhook.compiler.names import generate_workload_name as generate_workload_name
from webhook.compiler.resolve import resolve as resolve
from webhook.compiler.types import Block as Block
from webhook.compiler.types import BuildOptions as BuildOptions
from webhook.compiler.types import DisruptionKind as DisruptionKind
from webhook.compiler.types import DisruptionMode as DisruptionMode
from webhook.compiler.types import GangPolicy as GangPolicy
from webhook.compiler.types import PolicyKind as PolicyKind
from webhook.compiler.types import ResourceClaim as ResourceClaim
from webhook.compiler.types import SchedulingConfig as SchedulingConfig
from webhook.compiler.types import SchedulingConstraints as SchedulingConstraints
from webhook.compiler.types import SchedulingPolicy as SchedulingPolicy
from webhook.compiler.types import TopologyConstraint as TopologyConstraint
from webhook.compiler.types import WorkloadInput as WorkloadInput
from webhook.compiler.types import WorkloadItem as WorkloadItem
