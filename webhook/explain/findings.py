"""The findings of ``wasp explain``: a code, what it is about, its evidence and the fix.

Codes are stable identifiers (tools match on them; docs/explain.md lists them); ``blocks``
says whether the finding, by itself, keeps the gang from running (exit 1) or is worth
knowing while it runs or can run (warnings, what could not be checked).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

__all__ = ["CODES", "Finding"]

Json = dict[str, t.Any]
Severity = t.Literal["error", "warning", "info"]

# code -> (severity, what it means). The fix is the finding's own: it depends on the object.
CODES: t.Final[dict[str, tuple[Severity, str]]] = {
    "not-governed": ("error", "no policy governs the object named, or nothing governed was found from it"),
    "invalid": ("error", "the object is not valid: wasp compiles no Workload for it"),
    "never-forms": ("error", "the gang can never form: a schedulability rule denies it (docs/schedulability.md)"),
    "reconcile-blocked": ("error", "the reconciler will not create or change the object's Workload or groups"),
    "no-workload": ("error", "the Workload the object compiles to does not exist"),
    "no-podgroup": ("error", "a PodGroup or CompositePodGroup the object compiles to does not exist"),
    "suspended": ("error", "the workload is suspended: its controller creates no pods"),
    "failed-create": ("error", "the controller tried to create pods or children and was refused"),
    "held-back-sequenced": ("error", "the controller creates some pods only once others are ready"),
    "pods-not-created": ("error", "fewer pods exist than the gang's minCount"),
    "podgroup-missing": ("error", "pods name a PodGroup that does not exist"),
    "half-grouped": ("error", "pods of the workload are outside its groups, or in another's"),
    "schedulinggroup-dropped": ("error", "the apiserver dropped the pods' spec.schedulingGroup (GenericWorkload off)"),
    "foreign-scheduler": ("warning", "pods are placed by a scheduler that does not implement gang scheduling"),
    "second-gang-system": ("warning", "another gang system (Volcano, scheduler-plugins, Kueue) also groups the pods"),
    "failed-scheduling": ("error", "the scheduler's own words: FailedScheduling events of the group's pods"),
    "insufficient-capacity": ("error", "minCount pods of the group's shape do not fit on the nodes' free room (estimate)"),
    "capacity-unknown": ("info", "capacity could not be checked"),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Finding:
    """``object``: ``{apiVersion, kind, namespace, name}`` the finding is about; ``evidence``:
    what was seen, one line each; ``detail``: the same, as data for tools and tests."""

    code: str
    object: Json | None
    message: str
    evidence: tuple[str, ...] = ()
    fix: str = ""
    detail: Json = field(default_factory=dict)
    severity: Severity | None = None  # None: the code's

    @property
    def level(self) -> Severity:
        return self.severity or CODES[self.code][0]

    def to_json(self) -> Json:
        return {"code": self.code, "severity": self.level, "object": self.object, "message": self.message,
                "evidence": list(self.evidence), "fix": self.fix, "detail": self.detail}  # fmt: skip
