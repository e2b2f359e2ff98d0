"""What every reporter shares: the streaming protocol, the summary line and the JSON record.

A reporter is told ``start()``, then ``record(r)`` for each record in input order, then
``finish(summary, exit_code)``; it writes as it goes and holds no more than one file's
records (JUnit groups a file's cases), so memory stays flat in the number of manifests.
Reporters write results to the stream they are given; diagnostics never go through them.
"""

from __future__ import annotations

import re
import typing as t

from webhook.cli.checker import Record, Summary

# Every C0 control but newline and tab, DEL and the C1 controls; an SGR code is matched whole.
_CONTROL: t.Final = re.compile(r"\x1b\[[0-9;]*m|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_OWN_STYLES: t.Final = frozenset({"\033[31m", "\033[33m", "\033[32m", "\033[0m"})

__all__ = ["Reporter", "location", "plural", "record_json", "severity", "summary_json", "summary_text"]


class Reporter:
    """Base of the output formats. ``utf8``: the stream takes any character (else escape)."""

    name: t.ClassVar[str]
    # JSON formats escape controls themselves (and a backslash there would break the string).
    shows_controls: t.ClassVar[bool] = True

    def __init__(
        self, stream: t.TextIO, *, color: bool = False, summary_only: bool = False, verbose: bool = False
    ):
        self.stream = stream
        self.color = color
        self.summary_only = summary_only
        self.verbose = verbose
        encoding = (getattr(stream, "encoding", None) or "utf-8").lower().replace("-", "").replace("_", "")
        self.utf8 = encoding in ("utf8", "utf8sig")

    def start(self) -> None:
        """Called once before the first record."""

    def record(self, record: Record) -> None:
        raise NotImplementedError

    def finish(self, summary: Summary, exit_code: int) -> None:
        raise NotImplementedError

    def write(self, text: str) -> None:
        self.stream.write((_CONTROL.sub(self._visible, text) if self.shows_controls else text) + "\n")

    def _visible(self, match: re.Match[str]) -> str:
        """A control character a manifest brought (an object name, a message) as ``\\xNN``: raw, it
        would make a JUnit report ill-formed XML (XML 1.0 forbids it) or move a terminal's cursor.
        The color codes of ``--color`` are the reporters' own and stay."""
        code = match.group()
        if self.color and code in _OWN_STYLES:
            return code
        return f"\\x{ord(code):02x}" if len(code) == 1 else "\\x1b" + code[1:]


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_text(summary: Summary) -> str:
    """``wasp: 4 objects in 2 files: 1 valid, ...``; says so when nothing was checked."""
    head = f"wasp: {plural(summary.objects, 'object')} in {plural(summary.files, 'file')}"
    if not summary.objects:
        head += ": nothing checked"
    # "N warned" only when there are any: most runs use no policy in warn mode.
    warned = f"{summary.warned} warned, " if summary.warned else ""
    text = (
        f"{head}: {summary.valid} valid, {summary.invalid} invalid, {warned}{summary.skipped} skipped, "
        f"{plural(summary.errors, 'error')}, {plural(summary.warnings, 'warning')}"
    )
    if summary.unreadable:
        text += f"; {plural(summary.unreadable, 'path')} could not be read"
    return text


def location(record: Record, line: int | None = None) -> str:
    """``FILE:LINE`` (the given line, else the object's), or ``FILE`` when no line is known."""
    line = line or record.line
    return f"{record.file}:{line}" if line else record.file


def severity(record: Record) -> str:
    """How a record's field errors weigh: ``warning`` when a policy in warn mode admits it."""
    return "warning" if record.warned else "error"


def record_json(record: Record) -> dict[str, object]:
    """One ``results[]`` entry of the JSON output (docs/cli.md)."""
    weight = severity(record)
    return {
        "file": record.file,
        "document": record.document,
        "item": record.item,
        "line": record.line,
        "apiVersion": record.api_version,
        "kind": record.kind,
        "namespace": record.namespace,
        "name": record.name,
        "status": record.verdict,
        "operation": record.operation,
        "errors": [
            {
                "type": e.type,
                "field": e.field,
                "badValue": e.bad_value,
                "detail": e.detail,
                "message": e.message,
                "line": e.line,
                "severity": weight,
            }
            for e in record.errors
        ],
        "warnings": list(record.warnings),
        "notes": list(record.notes),
        "reason": record.reason,
    }


def summary_json(summary: Summary) -> dict[str, int]:
    return {
        "valid": summary.valid,
        "invalid": summary.invalid,
        "warned": summary.warned,
        "skipped": summary.skipped,
        "errors": summary.errors,
        "warnings": summary.warnings,
        "files": summary.files,
        "unreadable": summary.unreadable,
    }
