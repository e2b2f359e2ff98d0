"""A faithful Python port of upstream ``workloadbuilder`` (Kubernetes 1.37, generation G4).

Upstream is ``scheduling/schedulingv1/workloadbuilder/`` in ``kubernetes/component-helpers`` at
``1961876b9c57`` (docs/design.md §1.5); functions keep upstream's names in snake_case.

Controllers embed scheduling *building blocks* (``scheduling.k8s.io/v1alpha3``) in their
own APIs. This package turns them into the ``Workload`` and ``PodGroup`` objects
(``scheduling.k8s.io/v1beta1``) that kube-scheduler gang-schedules:

* :mod:`.types` — the WorkloadItem tree (one node per pod group; composite nodes group
  groups) and the version-independent IR, :class:`SchedulingConfig` (``types.go``);
* :mod:`.mapconfig` — user blocks (decoded JSON) → IR; empty unions map to *unset*
  (``mapconfig.go``);
* :mod:`.resolve` — ``resolve_scheduling_config``: defaults → user blocks → callbacks,
  whole-field replacement (``builder.go``);
* :mod:`.builder` — compilation into templates and :class:`Builder` (``builder.go``);
* :mod:`.tree` — ``validate_workload_item_tree``, the structural check of the tree
  (``validate.go``);
* :mod:`.validate` — ``Builder.validate``: tree check, the structural layer from
  :mod:`webhook.declarative` (JSON Schema data, ratcheted on update), closed allow-lists and
  the basic+all cross-field rule, every error at the user's own field path (``validate.go``);
* :mod:`.podgroup` — PodGroup / CompositePodGroup materialisation (``podgroup.go``);
* :mod:`.names` / :mod:`.annotations` — naming hashes and annotation keys, which upstream
  keeps outside the library at that commit (see each module).

Everything here is pure: no Flask, no I/O, inputs never mutated. Build failures raise
:class:`~webhook.vocab.errors.BuildError`; user errors are returned as
:class:`~webhook.vocab.field.FieldError` lists.
"""

from __future__ import annotations

from webhook.compiler.builder import Builder as Builder
from webhook.compiler.names import generate_pod_group_name as generate_pod_group_name
from webhook.compiler.names import generate_workload_name as generate_workload_name
from webhook.compiler.resolve import resolve_scheduling_config as resolve_scheduling_config
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
