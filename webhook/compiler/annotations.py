"""Annotation keys for delegated children (docs/decisions.md §5).

Upstream declared them in ``workloadbuilder/annotations.go`` (``kubernetes/kubernetes`` staging at
``91d980256a69``); at component-helpers ``1961876b9c57`` the library has no such file and the Job
controller revision read takes ``GroupTemplateNameAnnotation`` from ``pkg/apis/scheduling``.
"""

from __future__ import annotations

import typing as t

__all__ = [
    "GROUP_TEMPLATE_NAME",
    "PARENT_COMPOSITE_POD_GROUP",
    "PARENT_COMPOSITE_POD_GROUP_KEYS",
    "parent_composite_pod_group",
]

GROUP_TEMPLATE_NAME: t.Final = "scheduling.k8s.io/group-template-name"
"""Set by a parent on a delegated child: the template (in the parent's Workload) its pods belong to."""

PARENT_COMPOSITE_POD_GROUP: t.Final = "scheduling.k8s.io/parent-compositepodgroup"
"""The spelling wasp writes: the in-tree constant and the newest KEP text."""

PARENT_COMPOSITE_POD_GROUP_KEYS: t.Final = (
    PARENT_COMPOSITE_POD_GROUP,
    # One workloadbuilder revision and JobSet spell it with a hyphen; accepted on input.
    "scheduling.k8s.io/parent-composite-podgroup",
)


def parent_composite_pod_group(annotations: t.Mapping[str, object] | None) -> str | None:
    """The parent CompositePodGroup named by either spelling; the written spelling wins."""
    if not annotations:
        return None
    for key in PARENT_COMPOSITE_POD_GROUP_KEYS:
        value = annotations.get(key)
        if isinstance(value, str):
            return value
    return None
