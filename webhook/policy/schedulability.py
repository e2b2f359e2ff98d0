"""``spec.schedulability``: what a policy knows about whether its gangs can ever form.

A valid gang must be one the cluster can satisfy. Each check
(:mod:`webhook.governed.schedulability`) is a *rule* with an id and a default action; a
policy may set a rule to ``deny``, ``warn`` or ``off`` with the reason in the file
(``rules``). The rest describes the controller once, as data:

* ``podTemplates``: the pod templates of the object whose pods join a leaf's group (their
  scheduler, priority class, a PodGroup they name themselves, blocks written on them);
* ``jobTemplates``: batch/v1 Job templates the cluster will judge as Jobs (their own
  ``spec.scheduling``);
* ``startOrder``: pods that exist only after others are ready or complete (rule
  ``sequenced-start``);
* ``podsAtOnce``: the most pods that exist at once (``job-concurrency``; a count of 0 is
  ``pods-never-exist``).

This module is the schema piece, the frozen data and the checks a schema cannot express.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from webhook.vocab.field import FieldPath

if t.TYPE_CHECKING:
    import cel

__all__ = [
    "DEFAULT_SCHEDULERS",
    "RULES",
    "Action",
    "JobTemplate",
    "PodLimit",
    "PodTemplate",
    "RuleSetting",
    "SCHEDULABILITY_SCHEMA",
    "Schedulability",
    "load_schedulability",
]

Action = t.Literal["deny", "warn", "off"]

# Each rule and its default: what is provably impossible is denied; what depends on the
# cluster (which schedulers implement Workload-Aware Scheduling) warns. docs/schedulability.md.
RULES: t.Final[t.Mapping[str, Action]] = {
    "sequenced-start": "deny",
    "job-concurrency": "deny",
    "pods-never-exist": "deny",
    "foreign-scheduler": "warn",
    "mixed-group": "deny",
    "template-names-podgroup": "deny",
    "blocks-unread": "deny",
    "child-scheduling": "deny",
    "delegation-unreachable": "deny",
}
# The scheduler that implements WAS in a default cluster (kube-scheduler's default profile).
DEFAULT_SCHEDULERS: t.Final = frozenset({"default-scheduler"})


@dataclass(frozen=True, slots=True)
class RuleSetting:
    action: Action
    reason: str = ""


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """A pod template of the object (``path``, relative to the object or to each element of
    ``for_each``). ``member``: its pods join the policy's leaf (a submitter pod does not).
    ``scheduler_from``/``scheduler_default``: the scheduler its pods get when the template
    names none (Volcano: the Job's ``spec.schedulerName``), else kube-scheduler's default."""

    path: FieldPath
    for_each: FieldPath | None = None
    member: bool = True
    scheduler_from: FieldPath | None = None
    scheduler_default: str = "default-scheduler"


@dataclass(frozen=True, slots=True)
class JobTemplate:
    """A batch/v1 JobTemplateSpec in the object (JobSet ``replicatedJobs[].template``)."""

    path: FieldPath
    for_each: FieldPath | None = None


@dataclass(frozen=True, slots=True)
class PodLimit:
    """While ``when`` holds (always when unset), at most ``count`` pods of the ``node``'s group
    exist before anything waits (``startOrder``) or at once (``podsAtOnce``). ``count`` is CEL,
    or ``count_path`` a field read as it is (no limit while the field is unset). ``explain`` and
    ``fix`` are the words a user reads; ``{count}`` in them is the computed count."""

    rule: str
    node: str
    count: str
    explain: str
    fix: str
    when: str | None = None
    count_path: FieldPath | None = None
    count_program: cel.Program | None = field(default=None, compare=False, repr=False)
    when_program: cel.Program | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Schedulability:
    rules: t.Mapping[str, RuleSetting] = field(default_factory=dict)
    schedulers: frozenset[str] = DEFAULT_SCHEDULERS
    pod_templates: tuple[PodTemplate, ...] = ()
    job_templates: tuple[JobTemplate, ...] = ()
    limits: tuple[PodLimit, ...] = ()

    def action(self, rule: str) -> Action:
        setting = self.rules.get(rule)
        return setting.action if setting is not None else RULES[rule]


_PATH = {"type": "string", "minLength": 1}
_WORDS = {"type": "string", "minLength": 1, "maxLength": 300}
_LIMIT_PROPERTIES: dict[str, t.Any] = {
    "node": {"type": "string", "minLength": 1, "description": "The leaf (default: root)."},
    "when": {"type": "string", "minLength": 1, "description": "CEL over the object as `self`."},
    "count": {"type": "string", "minLength": 1, "description": "CEL integer over the object as `self`."},
    "countPath": {
        **_PATH,
        "description": "Instead of count: an integer field of the object, no limit while it is unset.",
    },
    "explain": {**_WORDS, "description": "Why at most {count} pods exist, in the user's words."},
    "fix": {**_WORDS, "description": "What the user can change; {count} is the count."},
}


def _limits(extra: dict[str, t.Any]) -> dict[str, t.Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["explain", "fix"],
            # A field read as it is needs no CEL: the Job's own limit is judged on every review.
            "oneOf": [{"required": ["count"]}, {"required": ["countPath"]}],
            "properties": {**_LIMIT_PROPERTIES, **extra},
        },
    }


SCHEDULABILITY_SCHEMA: t.Final[dict[str, t.Any]] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Whether this controller's gangs can form: docs/schedulability.md.",
    "properties": {
        "rules": {
            "type": "object",
            "propertyNames": {"enum": sorted(RULES)},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["action", "reason"],
                "properties": {"action": {"enum": ["deny", "warn", "off"]}, "reason": _WORDS},
            },
        },
        "schedulers": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "string", "minLength": 1},
            "description": "Scheduler names that implement Workload-Aware Scheduling (default: default-scheduler).",
        },
        "podTemplates": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path"],
                "properties": {
                    "path": _PATH,
                    "forEach": _PATH,
                    "member": {"type": "boolean"},
                    "schedulerNameFrom": _PATH,
                    "schedulerNameDefault": {"type": "string", "minLength": 1},
                },
            },
        },
        "jobTemplates": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path"],
                "properties": {"path": _PATH, "forEach": _PATH},
            },
        },
        "startOrder": _limits({}),
        "podsAtOnce": _limits({"rule": {"enum": ["job-concurrency", "pods-never-exist"]}}),
    },
}


class _Loader(t.Protocol):
    ids: set[str]

    def fail(self, location: str, message: str) -> t.NoReturn: ...

    def path(self, location: str, text: str) -> FieldPath: ...

    def cel(self, location: str, expression: str) -> cel.Program: ...


def load_schedulability(loader: _Loader, doc: t.Mapping[str, t.Any] | None) -> Schedulability:
    """The schema-checked ``spec.schedulability`` (defaults when absent)."""
    if doc is None:
        return Schedulability()
    where = "spec.schedulability"
    rules = {rule: RuleSetting(s["action"], s["reason"]) for rule, s in doc.get("rules", {}).items()}
    pods = tuple(
        PodTemplate(
            path=loader.path(f"{where}.podTemplates[{i}].path", p["path"]),
            for_each=loader.path(f"{where}.podTemplates[{i}].forEach", p["forEach"])
            if "forEach" in p
            else None,
            member=p.get("member", True),
            scheduler_from=(
                loader.path(f"{where}.podTemplates[{i}].schedulerNameFrom", p["schedulerNameFrom"])
                if "schedulerNameFrom" in p
                else None
            ),
            scheduler_default=p.get("schedulerNameDefault", "default-scheduler"),
        )
        for i, p in enumerate(doc.get("podTemplates", []))
    )
    jobs = tuple(
        JobTemplate(
            path=loader.path(f"{where}.jobTemplates[{i}].path", j["path"]),
            for_each=loader.path(f"{where}.jobTemplates[{i}].forEach", j["forEach"])
            if "forEach" in j
            else None,
        )
        for i, j in enumerate(doc.get("jobTemplates", []))
    )
    limits = []
    for section, rule in (("startOrder", "sequenced-start"), ("podsAtOnce", "job-concurrency")):
        for i, entry in enumerate(doc.get(section, [])):
            at = f"{where}.{section}[{i}]"
            node = entry.get("node", "root")
            if node not in loader.ids:
                loader.fail(f"{at}.node", f"no node with id {node!r}")
            when = entry.get("when")
            limits.append(
                PodLimit(
                    rule=entry.get("rule", rule),
                    node=node,
                    count=entry.get("count", ""),
                    explain=entry["explain"],
                    fix=entry["fix"],
                    when=when,
                    count_path=(
                        loader.path(f"{at}.countPath", entry["countPath"]) if "countPath" in entry else None
                    ),
                    count_program=loader.cel(f"{at}.count", entry["count"]) if "count" in entry else None,
                    when_program=loader.cel(f"{at}.when", when) if when is not None else None,
                )
            )
    schedulers = frozenset(doc["schedulers"]) if "schedulers" in doc else DEFAULT_SCHEDULERS
    return Schedulability(rules, schedulers, pods, jobs, tuple(limits))
