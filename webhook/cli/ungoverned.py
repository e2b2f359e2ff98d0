"""Objects no loaded policy governs: what ``wasp validate`` says instead of skipping them silently.

The webhook never sees such an object (its configuration matches the governed resources
only), so a skip there is right; in CI it hides a mistake when the object was meant to be
judged: it carries wasp's blocks (the ``scheduling.wasp.dev/blocks`` annotation or a
``spec.scheduling`` block), or its apiVersion or kind is a slip from a governed one
(``kind: job``, ``batch/v2``). Those are warnings, naming what would govern the object;
``--reject-ungoverned`` makes every ungoverned object invalid, as kubeconform fails a kind
it has no schema for.
"""

from __future__ import annotations

import functools
import typing as t

from webhook.declarative.document import BlockType, block_schema
from webhook.governed.result import Result
from webhook.policy import PolicySet
from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths
from webhook.vocab.errors import WaspError
from webhook.vocab.field import FieldError, FieldPath, forbidden

__all__ = ["BLOCKS_ANNOTATION", "blocks_field", "judged", "rejection", "warning"]

# The annotation every shipped integration reads its blocks from (docs/integrations/).
BLOCKS_ANNOTATION: t.Final = "scheduling.wasp.dev/blocks"
# The members of an embedded scheduling block, as the building-blocks document declares them.
BLOCK_MEMBERS: t.Final = frozenset(block_schema(BlockType.SCHEDULING)["properties"])


def blocks_field(obj: t.Mapping[str, object]) -> str | None:
    """Where ``obj`` carries wasp's blocks, as a field path; ``None`` when it carries none."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict) and BLOCKS_ANNOTATION in annotations:
        return f"metadata.annotations[{BLOCKS_ANNOTATION}]"
    spec = obj.get("spec")
    scheduling = spec.get("scheduling") if isinstance(spec, dict) else None
    # Another controller's own `spec.scheduling` (a mapping of other fields) is not wasp's: only
    # one holding a building block's member is reported, or a CI run with --strict would fail
    # on CRDs that merely share the field's name.
    if isinstance(scheduling, dict) and not BLOCK_MEMBERS.isdisjoint(scheduling):
        return "spec.scheduling"
    return None


@functools.cache
def _integrations() -> PolicySet | None:
    """The shipped integrations' policies, to name the one that governs a kind; loaded only
    when an ungoverned object needs a hint."""
    try:
        return PolicySet.load(integration_paths(KNOWN_INTEGRATIONS), builtin=False)
    except WaspError:  # a build without them: no hint, the warning stands on its own
        return None


def _integration_name(source: str) -> str:
    stem = source.replace("\\", "/").rpartition("/")[2]
    return stem.rpartition(".")[0] or stem


def _hint(api_version: str, kind: str, policies: PolicySet) -> str:
    """What would govern ``apiVersion``/``kind``: a shipped integration to enable, or the
    governed kind it slips from (another version, another case)."""
    group = api_version.rpartition("/")[0]
    shipped = _integrations()
    if shipped is not None:
        for policy in shipped.policies:
            if (policy.group, policy.kind) == (group, kind):
                name = _integration_name(policy.source)
                versions = ", ".join(f"{group}/{v}" for v in policy.versions)
                served = "" if shipped.for_kind(api_version, kind) else f" (it governs {versions})"
                return f"; enable --integrations {name}{served}"
    for policy in policies.policies:
        if policy.group == group and policy.kind.lower() == kind.lower():
            versions = ", ".join(f"{policy.group}/{v}" if policy.group else v for v in policy.versions)
            return f"; policy {policy.name} governs {policy.kind} in {versions}: is the apiVersion or kind a typo?"
    return ""


def _slip(api_version: str, kind: str, policies: PolicySet) -> bool:
    """``apiVersion``/``kind`` is a near miss of a governed kind (another version of its
    group, or the kind in another case): the apiserver would refuse it, wasp would skip it."""
    group = api_version.rpartition("/")[0]
    return any(
        p.group == group and (p.kind == kind or p.kind.lower() == kind.lower()) for p in policies.policies
    )


def warning(obj: t.Mapping[str, object], policies: PolicySet) -> str | None:
    """The warning an ungoverned object gets, or ``None`` when nothing suggests it was meant
    to be judged (a ConfigMap, a Deployment without blocks)."""
    api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    field = blocks_field(obj)
    if field is None and not _slip(api_version, kind, policies):
        return None
    carries = f"carries {field}, but " if field else ""
    return (
        f"{carries}no loaded policy governs {api_version} {kind}: not checked"
        f"{_hint(api_version, kind, policies)}"
    )


def rejection(obj: t.Mapping[str, object], policies: PolicySet) -> FieldError:
    """``--reject-ungoverned``: the object is invalid, its ``kind`` Forbidden."""
    api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    detail = f"no loaded policy governs {api_version} {kind} (--reject-ungoverned)"
    return forbidden(FieldPath.of("kind"), detail + _hint(api_version, kind, policies))


def judged(obj: t.Mapping[str, object], result: Result, policies: PolicySet, *, reject: bool) -> Result:
    """The verdict on an object nothing loaded governs (``result`` skipped it): invalid under
    ``--reject-ungoverned``; else skipped, with a warning when it looks meant to be judged."""
    if reject:
        return Result.judged("--reject-ungoverned", [rejection(obj, policies)], [])
    found = warning(obj, policies)
    return result if found is None else result._replace(warnings=(*result.warnings, found))
