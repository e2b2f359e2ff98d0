"""Resolution of one node's effective configuration (upstream ``resolveSchedulingConfig`` in ``builder.go``).

A deep copy of the node's ``default_config`` (or an empty config), the mapped user blocks
overlaid field by field (whole-field replacement: a user ``gang: {}`` replaces a default
``gang: {minCount: 4}`` entirely), then the callbacks in order. Each node is resolved on its
own; children inherit nothing from their parent. Validation and compilation both resolve
through here, so the allow-lists judge exactly what gets compiled.
"""

from __future__ import annotations

from webhook.compiler.mapconfig import map_composite_group_input, map_workload_input
from webhook.compiler.types import SchedulingConfig, WorkloadItem

__all__ = ["resolve_scheduling_config"]


def resolve_scheduling_config(item: WorkloadItem) -> SchedulingConfig:
    """The effective config of ``item``: defaults, then user blocks, then callbacks."""
    # The mapped config is a fresh copy of the user's blocks, so it can be the result; each
    # field the user left unset takes a copy of the default's (whole-field replacement).
    cfg = map_composite_group_input(item.input) if item.is_composite else map_workload_input(item.input)
    default = item.default_config
    if default is not None:
        if cfg.policy is None and default.policy is not None:
            cfg.policy = default.policy.copy()
        if cfg.constraints is None and default.constraints is not None:
            cfg.constraints = default.constraints.copy()
        if cfg.disruption_mode is None and default.disruption_mode is not None:
            cfg.disruption_mode = default.disruption_mode.copy()
        if not cfg.resource_claims and default.resource_claims:
            cfg.resource_claims = default.copy().resource_claims
        if not cfg.priority_class_name:
            cfg.priority_class_name = default.priority_class_name
    for callback in item.callbacks:
        if callback is not None:
            callback(cfg)
    return cfg
