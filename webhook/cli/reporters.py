"""The output formats, chosen from :data:`REPORTERS`: text, GitHub annotations and TAP here;
JSON, SARIF and JUnit in :mod:`webhook.cli.reporters_data`. The JSON shape is a public
contract (docs/cli.md).
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Iterator, Mapping

from webhook.cli.checker import Record, Summary
from webhook.cli.reporting import Reporter, location, record_json, severity, summary_text
from webhook.governed.result import Status

__all__ = ["REPORTERS", "Reporter", "record_json"]


class TextReporter(Reporter):
    """``FILE:LINE: Kind ns/name: <field error>`` (the field's line); warnings and notes
    marked; a summary."""

    name = "text"
    _STYLES: t.ClassVar = {"error": "\033[31m", "warning": "\033[33m", "ok": "\033[32m"}

    def paint(self, style: str, text: str) -> str:
        return f"{self._STYLES[style]}{text}\033[0m" if self.color else text

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        title = f": {record.title}" if record.kind else ""
        if record.input_error:  # the reason starts with the file, line and column of the problem
            where, _, detail = record.reason[len(record.file) :].partition(": ")
            if record.reason.startswith(record.file) and detail:
                self.write(f"{record.file}{where}: {self.paint('error', 'error')}: {detail}")
            else:
                self.write(f"{location(record)}: {self.paint('error', 'error')}: {record.reason}")
        elif record.status is Status.ERROR:
            self.write(f"{location(record)}{title}: {self.paint('error', 'error')}: {record.reason}")
        for err in record.errors:
            where = f"{location(record, err.line)}{title}"
            if record.warned:  # the denial line, as kubectl prints it after "Warning: "
                self.write(f"{where}: {self.paint('warning', 'warning')}: {err.message}")
            else:
                self.write(f"{where}: {self.paint('error', err.message)}")
        for warning in record.warnings:
            self.write(f"{location(record)}{title}: {self.paint('warning', 'warning')}: {warning}")
        for note in record.notes:
            self.write(f"{location(record)}{title}: note: {note}")
        if self.verbose and record.status in (Status.VALID, Status.SKIPPED):
            detail = f" ({record.reason})" if record.reason else ""
            self.write(f"{location(record)}{title}: {record.status.value}{detail}")

    def finish(self, summary: Summary, exit_code: int) -> None:
        style = "error" if summary.invalid or summary.errors or summary.unreadable else "ok"
        self.write(self.paint(style, summary_text(summary)))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: ``::error file=F,line=L,title=T::message``.

    The line is the offending field's when the field exists in the file, else the parent's
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

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        if record.status is Status.ERROR:
            self.annotate("error", record, record.line, record.reason)
        level = severity(record)
        for err in record.errors:
            self.annotate(level, record, err.line or record.line, err.message)
        for warning in record.warnings:
            self.annotate("warning", record, record.line, warning)
        for note in record.notes:
            self.annotate("notice", record, record.line, note)

    def finish(self, summary: Summary, exit_code: int) -> None:
        self.write(summary_text(summary))


class TapReporter(Reporter):
    """TAP version 13: a test point per object, a YAML block with the errors, the plan last."""

    name = "tap"

    def start(self) -> None:
        self.count = 0
        self.write("TAP version 13")

    def record(self, record: Record) -> None:
        if self.summary_only:
            return
        self.count += 1
        failed = record.status in (Status.INVALID, Status.ERROR) and not record.warned
        ok = "not ok" if failed else "ok"
        # '#' starts a TAP directive: keep it out of the description.
        head = f"{ok} {self.count} - {location(record)} {record.title}".replace("#", "\\#")
        if record.status is Status.SKIPPED:
            head += f" # SKIP {record.reason}"
        self.write(head)
        block: list[str] = []
        if record.status is Status.ERROR:
            block.append(f"message: {json.dumps(record.reason, ensure_ascii=not self.utf8)}")
        if record.warned:
            block.append("severity: warning")
        if record.errors:
            block.append("errors:")
            for err in record.errors:
                fields = {"type": err.type, "field": err.field, "line": err.line, "message": err.message}
                block.append(f"- {json.dumps(fields, ensure_ascii=not self.utf8)}")
        if record.warnings:
            block.append(f"warnings: {json.dumps(list(record.warnings), ensure_ascii=not self.utf8)}")
        if record.notes:
            block.append(f"notes: {json.dumps(list(record.notes), ensure_ascii=not self.utf8)}")
        if block:
            self.write("\n".join(["  ---", *("  " + b for b in block), "  ..."]))

    def finish(self, summary: Summary, exit_code: int) -> None:
        self.write(f"1..{self.count}")
        self.write(f"# {summary_text(summary)}")


class _Formats(Mapping[str, type[Reporter]]):
    """The reporters by format name. JSON, SARIF and JUnit are imported when one is chosen:
    with orjson and their encoders they are 2 ms of every start-up that a text run never uses."""

    _HERE: t.Final = {r.name: r for r in (TextReporter, GithubReporter, TapReporter)}
    _DATA: t.Final = {"json": "JsonReporter", "junit": "JunitReporter", "sarif": "SarifReporter"}

    def __getitem__(self, name: str) -> type[Reporter]:
        if name in self._DATA:
            from webhook.cli import reporters_data

            return t.cast(type[Reporter], getattr(reporters_data, self._DATA[name]))
        return self._HERE[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._HERE, *self._DATA])

    def __len__(self) -> int:
        return len(self._HERE) + len(self._DATA)


REPORTERS: t.Final[Mapping[str, type[Reporter]]] = _Formats()
