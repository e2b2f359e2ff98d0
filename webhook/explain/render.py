"""``wasp explain``'s output: a tree for people, a JSON document for tools (docs/explain.md).

Colour only on a terminal and never with ``NO_COLOR`` (the caller decides, as
``wasp validate`` does); the text without colour is what the golden tests keep.
"""

from __future__ import annotations

import typing as t

import click
import orjson

from webhook.explain.diagnose import SCHEMA_VERSION, Explanation
from webhook.explain.findings import Finding
from webhook.explain.tree import GroupNode, WorkloadNode

__all__ = ["failure_json", "to_json", "to_text"]

Json = dict[str, t.Any]
_COLOURS: t.Final = {"runs": "green", "can-run": "green", "blocked": "red", "error": "red", "warning": "yellow",
                     "info": "cyan", "missing": "red", "waiting-for-pods": "red", "pending": "yellow"}  # fmt: skip
_MARKS: t.Final = {"error": "✗", "warning": "!", "info": "i"}


def _paint(text: str, key: str, colour: bool) -> str:
    return click.style(text, fg=_COLOURS.get(key), bold=key in ("blocked", "error")) if colour else text


def _group_line(group: GroupNode, colour: bool) -> str:
    parts = [f"{group.kind} {group.name}"]
    if not group.exists:
        return f"{parts[0]}  {_paint('missing', 'missing', colour)}"
    count = "minGroupCount" if group.kind == "CompositePodGroup" else "minCount"
    parts.append(f"{count} {group.min_count}" if group.min_count is not None else "basic")
    if group.topology_key:
        parts.append(f"topology {group.topology_key}")
    if group.kind == "PodGroup":
        p = group.pods
        parts.append(f"pods {p.exist} exist, {p.scheduled} scheduled, {p.running} running")
    parts.append(_paint(group.verdict, group.verdict, colour))
    return "  ".join(parts)


def _branches(groups: t.Sequence[GroupNode], prefix: str, colour: bool, lines: list[str]) -> None:
    for i, group in enumerate(groups):
        last = i == len(groups) - 1
        lines.append(f"{prefix}{'└── ' if last else '├── '}{_group_line(group, colour)}")
        _branches(group.children, prefix + ("    " if last else "│   "), colour, lines)


def _tree(tree: WorkloadNode, colour: bool) -> list[str]:
    state = "" if tree.exists else f"  {_paint('missing', 'missing', colour)}"
    p = tree.pods
    lines = [f"Workload {tree.name}{state}  pods {p.exist} exist, {p.scheduled} scheduled, {p.running} running"
             + (f", {tree.ungrouped} without a group" if tree.ungrouped else "")]  # fmt: skip
    _branches(tree.groups, "", colour, lines)
    return lines


def _finding(f: Finding, colour: bool) -> list[str]:
    about = f"{f.object['kind']} {f.object['name']}: " if f.object else ""
    lines = [f"{_paint(_MARKS[f.level] + ' ' + f.code, f.level, colour)}  {about}{f.message}"]
    lines += [f"    evidence: {e}" for e in f.evidence]
    if f.fix:
        lines.append(f"    fix: {f.fix}")
    return lines


def to_text(explanation: Explanation, *, colour: bool = False) -> str:
    target = explanation.target
    head = f"{target['kind']} {target['namespace']}/{target['name']}" if target else "nothing governed"
    verdict = explanation.verdict
    lines = [f"{head}: {_paint(verdict, verdict, colour)}"]
    if len(explanation.trail) > 1:
        lines.append("  via " + " → ".join(explanation.trail))
    if explanation.tree is not None:
        lines += ["", *_tree(explanation.tree, colour)]
    if explanation.findings:
        lines += ["", "Findings"]
        for f in explanation.findings:
            lines += _finding(f, colour)
    elif verdict != "blocked":
        lines += ["", "No findings."]
    for note in explanation.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def to_json(explanation: Explanation) -> str:
    return orjson.dumps(explanation.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n"


def failure_json(error: str, target: Json | None = None) -> str:
    """The closed document for exit 2: the cluster or the dump could not be read."""
    doc: Json = {"apiVersion": SCHEMA_VERSION, "kind": "Explanation", "target": target, "trail": [], "verdict": "unknown",
           "exitCode": 2, "tree": None, "findings": [], "notes": [], "error": error}  # fmt: skip
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
