"""Machine-read formats: JSON (the public contract of docs/cli.md), SARIF 2.1.0 and JUnit XML.

All three stream: a record is written when it arrives (JUnit: when its file is complete).
JSON is serialised with orjson (a sixth of ``json.dumps``'s time); a value orjson refuses
(an integer beyond 64 bits) falls back to :mod:`json`, and so does a stream that is not
UTF-8, which gets ``\\u`` escapes instead of failing on a non-ASCII name.
"""

from __future__ import annotations

import json
import typing as t
import urllib.parse
from pathlib import PurePath

import orjson

from webhook.cli.checker import Record, Summary
from webhook.cli.reporting import Reporter, plural, record_json, severity, summary_json
from webhook.governed.result import Status
from webhook.vocab.field import ErrorType

__all__ = ["JsonReporter", "JunitReporter", "SarifReporter"]

_ORJSON_OPTIONS: t.Final = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME


def dumps(value: object, *, utf8: bool, indent: str = "") -> str:
    """``value`` as indented JSON; nested lines shifted by ``indent``.

    ``default=str``: YAML can decode timestamps and binary, which JSON has no type for.
    """
    if utf8:
        try:
            text = orjson.dumps(value, default=str, option=_ORJSON_OPTIONS).decode()
        except (orjson.JSONEncodeError, TypeError):
            text = json.dumps(value, indent=2, default=str, ensure_ascii=False)
    else:
        text = json.dumps(value, indent=2, default=str, ensure_ascii=True)
    return text.replace("\n", "\n" + indent) if indent else text


class JsonReporter(Reporter):
    """``{"results": [...], "summary": {...}}``; with ``--summary`` only ``summary``."""

    name = "json"
    shows_controls = False

    def start(self) -> None:
        self.first = True
        if not self.summary_only:
            self.stream.write('{\n  "results": [')

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        sep = "\n    " if self.first else ",\n    "
        self.first = False
        self.stream.write(sep + dumps(record_json(record), utf8=self.utf8, indent="    "))

    def finish(self, summary: Summary, exit_code: int) -> None:
        body = dumps(summary_json(summary), utf8=self.utf8, indent="  ")
        if self.summary_only:
            self.write(f'{{\n  "summary": {body}\n}}')
        else:
            self.write(f'{"" if self.first else chr(10) + "  "}],\n  "summary": {body}\n}}')


# --------------------------------------------------------------------------- SARIF

SARIF_SCHEMA: t.Final = "https://json.schemastore.org/sarif-2.1.0.json"
_INPUT_RULE: t.Final = "InputError"
_WARNING_RULE: t.Final = "Warning"
_NOTE_RULE: t.Final = "Note"
_RULES: t.Final = [
    *((e.value, e.title) for e in ErrorType),
    (_INPUT_RULE, "The input cannot be judged (unreadable, unparsable, not a Kubernetes object)"),
    (_WARNING_RULE, "Advice that does not block admission"),
    (_NOTE_RULE, "What was not checked, which is no finding (an object new to --old)"),
]
_RULE_INDEX: t.Final = {rule: i for i, (rule, _) in enumerate(_RULES)}


def artifact_uri(path: str) -> str:
    """A relative path as a relative URI reference (``deploy/a%20b.yaml``), an absolute one as ``file://``."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri()
    return urllib.parse.quote(pure.as_posix())


class SarifReporter(Reporter):
    """SARIF 2.1.0: one run, a rule per apimachinery error type, a result per error and warning."""

    name = "sarif"
    shows_controls = False

    def start(self) -> None:
        from importlib.metadata import version  # only this format names the tool's version

        driver = {
            "name": "wasp",
            "version": version("wasp"),
            "informationUri": "https://kubernetes.io/docs/concepts/scheduling-eviction/",
            "rules": [
                {"id": rule, "name": rule, "shortDescription": {"text": text}} for rule, text in _RULES
            ],
        }
        head = {"$schema": SARIF_SCHEMA, "version": "2.1.0"}
        self.first = True
        text = dumps(head, utf8=self.utf8)[:-2]  # without the closing "\n}"
        tool = dumps({"driver": driver}, utf8=self.utf8, indent="      ")
        self.stream.write(f'{text},\n  "runs": [\n    {{\n      "tool": {tool},\n      "results": [')

    def _result(self, rule: str, level: str, record: Record, message: str, line: int | None) -> None:
        result: dict[str, object] = {
            "ruleId": rule,
            "ruleIndex": _RULE_INDEX[rule],
            "level": level,
            "message": {"text": f"{record.title}: {message}" if record.kind else message},
        }
        if record.file != "<stdin>":
            physical: dict[str, object] = {"artifactLocation": {"uri": artifact_uri(record.file)}}
            if line:
                physical["region"] = {"startLine": line}
            result["locations"] = [{"physicalLocation": physical}]
        sep = "\n        " if self.first else ",\n        "
        self.first = False
        self.stream.write(sep + dumps(result, utf8=self.utf8, indent="        "))

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        if record.status is Status.ERROR:
            self._result(_INPUT_RULE, "error", record, record.reason, record.line)
        level = severity(record)
        for err in record.errors:
            self._result(err.type, level, record, err.message, err.line or record.line)
        for warning in record.warnings:
            self._result(_WARNING_RULE, "warning", record, warning, record.line)
        for note in record.notes:
            self._result(_NOTE_RULE, "note", record, note, record.line)

    def finish(self, summary: Summary, exit_code: int) -> None:
        invocation = dumps(
            [{"executionSuccessful": exit_code != 2, "exitCode": exit_code}], utf8=self.utf8, indent="      "
        )
        close = "" if self.first else "\n      "
        self.write(f'{close}],\n      "invocations": {invocation}\n    }}\n  ]\n}}')


# --------------------------------------------------------------------------- JUnit


class JunitReporter(Reporter):
    """JUnit XML: a ``testsuite`` per file, a ``testcase`` per object, with ``file``, ``line``
    and ``time``; ``classname`` is the kind (no dots: Jenkins splits class names at dots);
    failures and errors carry the details as their body."""

    name = "junit"

    def start(self) -> None:
        self.write('<?xml version="1.0" encoding="UTF-8"?>')
        self.pending: list[Record] = []
        if not self.summary_only:
            self.write('<testsuites name="wasp">')

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        if self.pending and self.pending[0].file != record.file:
            self._flush()
        self.pending.append(record)

    def _flush(self) -> None:
        import xml.etree.ElementTree as ET  # only this format needs it

        records, self.pending = self.pending, []
        name = records[0].file
        suite = ET.Element("testsuite", name=name, file=name, tests=str(len(records)))
        counts = {s: sum(1 for r in records if r.status is s and not r.warned) for s in Status}
        suite.set("failures", str(counts[Status.INVALID]))
        suite.set("errors", str(counts[Status.ERROR]))
        suite.set("skipped", str(counts[Status.SKIPPED]))
        suite.set("time", f"{sum(r.seconds for r in records):.6f}")
        for record in records:
            case = ET.SubElement(suite, "testcase", classname=record.kind or "document")
            case.set("name", f"{record.title} ({record.file}:{record.line or '-'})")
            case.set("file", record.file)
            if record.line:
                case.set("line", str(record.line))
            case.set("time", f"{record.seconds:.6f}")
            if record.status is Status.INVALID and not record.warned:  # warned: no failure, see below
                failure = ET.SubElement(
                    case, "failure", type="invalid", message=plural(len(record.errors), "field error")
                )
                failure.text = "\n".join(
                    f"{record.file}:{e.line or record.line or '-'}: {e.message}" for e in record.errors
                )
            elif record.status is Status.ERROR:
                ET.SubElement(case, "error", type="error", message=record.reason).text = record.reason
            elif record.status is Status.SKIPPED:
                ET.SubElement(case, "skipped", message=record.reason)
            warnings = [*(e.message for e in record.errors if record.warned), *record.warnings]
            said = [*(f"warning: {w}" for w in warnings), *(f"note: {n}" for n in record.notes)]
            if said:
                ET.SubElement(case, "system-out").text = "\n".join(said)
        ET.indent(suite, level=1)
        encoding = "unicode" if self.utf8 else "us-ascii"
        text = ET.tostring(suite, encoding=encoding, xml_declaration=False)
        self.write("  " + (text if isinstance(text, str) else text.decode("ascii")))

    def finish(self, summary: Summary, exit_code: int) -> None:
        if self.summary_only:
            self.write(
                f'<testsuites name="wasp" tests="{summary.objects}" failures="{summary.invalid}" '
                f'errors="{summary.errors}" skipped="{summary.skipped}"/>'
            )
            return
        if self.pending:
            self._flush()
        self.write("</testsuites>")
