"""Generate ``charts/wasp/values.schema.json`` from the comments of ``charts/wasp/values.yaml``.

Each key's description is the comment block right above it; a comment line starting with
``@schema`` holds JSON merged into the key's schema. Types come from the default values, and
every object is closed (``additionalProperties: false``) unless ``@schema`` says otherwise, in
which case its children are not described. Run ``python -m tests.chart.values_schema --write``
after editing ``values.yaml``; ``test_chart_values.py`` fails while the two disagree.
"""

from __future__ import annotations

import json
import re
import sys
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CHART: t.Final = Path(__file__).resolve().parents[2] / "charts" / "wasp"
VALUES: t.Final = CHART / "values.yaml"
SCHEMA: t.Final = CHART / "values.schema.json"

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):")
_COMMENT = re.compile(r"^(?P<indent> *)# ?(?P<text>.*)$")
Json = dict[str, t.Any]


@dataclass
class Doc:
    """The comment block of one key: description lines and the merged ``@schema`` JSON."""

    lines: list[str] = field(default_factory=list)
    schema: Json = field(default_factory=dict)


def key_docs(text: str) -> dict[tuple[str, ...], Doc]:
    """Every mapping key of ``text`` by its path, with the comment block right above it."""
    docs: dict[tuple[str, ...], Doc] = {}
    stack: list[tuple[int, str]] = []
    pending = Doc()
    for line in text.splitlines():
        if not line.strip():
            pending = Doc()  # a blank line detaches a comment (the file header)
            continue
        if comment := _COMMENT.match(line):
            body = comment["text"]
            if body.startswith("@schema"):
                pending.schema.update(json.loads(body.removeprefix("@schema")))
            else:
                pending.lines.append(body)
            continue
        match = _KEY.match(line)
        if match is None:
            pending = Doc()  # a list item or a continuation: not a key
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        docs[tuple(k for _, k in stack)] = pending
        pending = Doc()
    return docs


def _type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _schema(path: tuple[str, ...], value: object, docs: dict[tuple[str, ...], Doc]) -> Json:
    doc = docs[path]
    out: Json = {"type": _type(value), "description": " ".join(doc.lines)}
    if isinstance(value, dict) and "additionalProperties" not in doc.schema:
        out["additionalProperties"] = False
        out["properties"] = {k: _schema((*path, k), v, docs) for k, v in value.items()}
    out.update(doc.schema)
    return out


def generate(text: str) -> Json:
    values = yaml.safe_load(text)
    docs = key_docs(text)
    properties = {k: _schema((k,), v, docs) for k, v in values.items()}
    # Helm passes `global` to every chart (subchart or not); it is not wasp's to describe.
    properties["global"] = {"type": "object", "description": "Helm's global values (unused by wasp)."}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Values of the wasp chart (generated from values.yaml; do not edit)",
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
    }


def render(text: str) -> str:
    return json.dumps(generate(text), indent=2) + "\n"


def main(argv: list[str]) -> int:
    rendered = render(VALUES.read_text())
    if argv == ["--write"]:
        SCHEMA.write_text(rendered)
        return 0
    if SCHEMA.read_text() != rendered:
        print(f"{SCHEMA} is out of date: run python -m tests.chart.values_schema --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
