"""Rendering records: one reporter per output format, chosen from :data:`REPORTERS`.

Reporters write results to the stream they are given (stdout); diagnostics never go
through them. The JSON shape is a public contract (docs/cli.md, ``JSON_OUTPUT_SCHEMA``).
"""

from __future__ import annotations

import json
import typing as t

from webhook.cli.checker import Record, Summary
from webhook.governed.result import Status

__all__ = ["REPORTERS", "Reporter", "record_json"]


class Reporter:
    """Base: ``report`` receives every record (in input order) and the summary."""

    name: t.ClassVar[str]

    def __init__(
        self, stream: t.TextIO, *, color: bool = False, summary_only: bool = False, verbose: bool = False
    ):
        self.stream = stream
        self.color = color
        self.summary_only = summary_only
        self.verbose = verbose

    def report(self, records: t.Sequence[Record], summary: Summary) -> None:
        raise NotImplementedError

    def write(self, text: str) -> None:
        self.stream.write(text + "\n")


def summary_text(summary: Summary) -> str:
    return (
        f"wasp: {summary.objects} object{'s' if summary.objects != 1 else ''}: {summary.valid} valid, "
        f"{summary.invalid} invalid, {summary.skipped} skipped, {summary.errors} error{'s' if summary.errors != 1 else ''}, "
        f"{summary.warnings} warning{'s' if summary.warnings != 1 else ''}"
    )


def _where(record: Record) -> str:
    document = "-" if record.document is None else str(record.document)
    item = f"[{record.item}]" if record.item is not None else ""
    return f"{record.file}:{document}{item}"


class TextReporter(Reporter):
    """``FILE:DOC: Kind ns/name: <field error>``; warnings marked; a summary line."""

    name = "text"
    _STYLES: t.ClassVar = {"error": "\033[31m", "warning": "\033[33m", "ok": "\033[32m", "bold": "\033[1m"}

    def paint(self, style: str, text: str) -> str:
        return f"{self._STYLES[style]}{text}\033[0m" if self.color else text

    def report(self, records: t.Sequence[Record], summary: Summary) -> None:
        if not self.summary_only:
            for record in records:
                if not record.input_error:  # already on stderr, with file and line
                    self._record(record)
        style = "error" if summary.invalid or summary.errors else "ok"
        self.write(self.paint(style, summary_text(summary)))

    def _record(self, record: Record) -> None:
        head = f"{_where(record)}: {record.title}" if record.kind else _where(record)
        if record.status is Status.ERROR:
            self.write(f"{head}: {self.paint('error', 'error')}: {record.reason}")
        for err in record.errors:
            self.write(f"{head}: {self.paint('error', err.message)}")
        for warning in record.warnings:
            self.write(f"{head}: {self.paint('warning', 'warning')}: {warning}")
        if self.verbose and record.status in (Status.VALID, Status.SKIPPED):
            detail = f" ({record.reason})" if record.reason else ""
            self.write(f"{head}: {record.status.value}{detail}")


def record_json(record: Record) -> dict[str, object]:
    """One ``results[]`` entry of the JSON output (docs/cli.md)."""
    return {
        "file": record.file,
        "document": record.document,
        "item": record.item,
        "line": record.line,
        "apiVersion": record.api_version,
        "kind": record.kind,
        "namespace": record.namespace,
        "name": record.name,
        "status": record.status.value,
        "errors": [
            {
                "type": e.type,
                "field": e.field,
                "badValue": e.bad_value,
                "detail": e.detail,
                "message": e.message,
                "line": e.line,
            }
            for e in record.errors
        ],
        "warnings": list(record.warnings),
        "reason": record.reason,
    }


def summary_json(summary: Summary) -> dict[str, int]:
    return {
        "valid": summary.valid,
        "invalid": summary.invalid,
        "skipped": summary.skipped,
        "errors": summary.errors,
    }


class JsonReporter(Reporter):
    name = "json"

    def report(self, records: t.Sequence[Record], summary: Summary) -> None:
        doc: dict[str, object] = {"summary": summary_json(summary)}
        if not self.summary_only:
            doc = {"results": [record_json(r) for r in records], **doc}
        # default=str: YAML can decode timestamps and binary, which JSON has no type for.
        self.write(json.dumps(doc, indent=2, default=str, ensure_ascii=False))


class JunitReporter(Reporter):
    """JUnit XML: a test suite per file, a test case per object; failures carry the errors."""

    name = "junit"

    def report(self, records: t.Sequence[Record], summary: Summary) -> None:
        import xml.etree.ElementTree as ET  # only this format needs it

        root = ET.Element("testsuites", name="wasp", tests=str(summary.objects))
        root.set("failures", str(summary.invalid))
        root.set("errors", str(summary.errors))
        root.set("skipped", str(summary.skipped))
        suites: dict[str, ET.Element] = {}
        for record in [] if self.summary_only else records:
            suite = suites.get(record.file)
            if suite is None:
                suite = suites[record.file] = ET.SubElement(root, "testsuite", name=record.file)
            case = ET.SubElement(
                suite, "testcase", classname=record.file, name=f"{_where(record)}: {record.title}"
            )
            if record.status is Status.INVALID:
                failure = ET.SubElement(
                    case, "failure", type="invalid", message=f"{len(record.errors)} field error(s)"
                )
                failure.text = "\n".join(e.message for e in record.errors)
            elif record.status is Status.ERROR:
                ET.SubElement(case, "error", type="error", message=record.reason)
            elif record.status is Status.SKIPPED:
                ET.SubElement(case, "skipped", message=record.reason)
            if record.warnings:
                ET.SubElement(case, "system-out").text = "\n".join(f"warning: {w}" for w in record.warnings)
        for suite in suites.values():
            cases = suite.findall("testcase")
            suite.set("tests", str(len(cases)))
            suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
            suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
            suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
        ET.indent(root)
        self.write('<?xml version="1.0" encoding="UTF-8"?>')
        self.write(ET.tostring(root, encoding="unicode"))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: ``::error file=F,line=L,title=T::message``.

    The line is the offending field's when the field exists in the YAML, else the parent's
    nearest existing node, else the document start.
    """

    name = "github"

    def annotate(self, level: str, record: Record, line: int | None, message: str) -> None:
        props = []
        if record.file != "<stdin>":
            props.append(f"file={_escape_property(record.file)}")
        if line:
            props.append(f"line={line}")
        props.append(f"title={_escape_property('wasp: ' + record.title)}")
        self.write(f"::{level} {','.join(props)}::{_escape_data(message)}")

    def report(self, records: t.Sequence[Record], summary: Summary) -> None:
        for record in [] if self.summary_only else records:
            if record.status is Status.ERROR:
                self.annotate("error", record, record.line, record.reason)
            for err in record.errors:
                self.annotate("error", record, err.line or record.line, err.message)
            for warning in record.warnings:
                self.annotate("warning", record, record.line, warning)
        self.write(summary_text(summary))


REPORTERS: t.Final[dict[str, type[Reporter]]] = {
    r.name: r for r in (TextReporter, JsonReporter, JunitReporter, GithubReporter)
}
