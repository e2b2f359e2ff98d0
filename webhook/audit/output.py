"""``wasp audit``'s outputs: text, JSON (a public contract, docs/audit.md) and JUnit XML.

Each streams: a finding is written when it is found; JUnit writes one ``<testsuite>`` per
namespace when the namespace is done (its cases are the objects audited there), so the
output holds no more than one namespace's findings.
"""

from __future__ import annotations

import shutil
import tempfile
import typing as t
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

from webhook.cli.reporters_data import dumps
from webhook.governed.drift import Finding

__all__ = ["FORMATS", "AuditReporter", "Summary"]

Json = dict[str, t.Any]


@dataclass
class Summary:
    namespaces: int = 0
    objects: int = 0  # governed objects judged
    scheduling_objects: int = 0
    pods: int = 0
    foreign_gangs: int = 0
    findings: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0, "info": 0})
    not_served: list[str] = field(default_factory=list)  # resources audit would read but the cluster lacks
    inconsistent_lists: int = 0
    modes: list[str] = field(default_factory=list)  # each governed kind's mode (docs/coexistence.md)

    def exit_code(self, strict: bool) -> int:
        return int(bool(self.findings["error"] or (strict and self.findings["warning"])))

    def text(self) -> str:
        f = self.findings
        line = (f"wasp audit: {self.objects} governed objects, {self.scheduling_objects} scheduling objects, "
                f"{self.pods} pods in {self.namespaces} namespaces: {f['error']} errors, {f['warning']} warnings, "
                f"{self.foreign_gangs} foreign gangs")  # fmt: skip
        if self.not_served:
            line += f"; not served: {', '.join(self.not_served)}"
        if self.inconsistent_lists:
            line += f"; {self.inconsistent_lists} lists continued after 410 Expired (not one snapshot)"
        if self.modes:
            line += f"; modes: {', '.join(self.modes)}"
        return line

    def to_json(self) -> Json:
        return {"namespaces": self.namespaces, "objects": self.objects, "schedulingObjects": self.scheduling_objects,
                "pods": self.pods, "foreignGangs": self.foreign_gangs, "findings": dict(self.findings),
                "notServed": list(self.not_served), "inconsistentLists": self.inconsistent_lists,
                "modes": list(self.modes)}  # fmt: skip


def _title(ref: t.Mapping[str, t.Any]) -> str:
    where = f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("namespace") else str(ref.get("name"))
    return f"{ref.get('kind')} {where}"


class AuditReporter:
    name: t.ClassVar[str]

    def __init__(self, stream: t.TextIO) -> None:
        self.stream = stream
        self.started = False

    def start(self) -> None:
        self.started = True

    def object(self, ref: Json, found: t.Sequence[Finding]) -> None:
        """One audited object (governed, scheduling, pod, foreign gang) and its findings."""

    def namespace_done(self, namespace: str) -> None:
        pass

    def finish(self, summary: Summary, code: int) -> None:
        raise NotImplementedError

    def fail(self, summary: Summary, reason: str) -> None:
        """The audit stopped (exit 2) for ``reason``, maybe before :meth:`start`: close the output."""
        if not self.started:
            self.start()
        self.finish(summary, 2)


class TextAudit(AuditReporter):
    """``Kind ns/name: severity: Type at path: message`` per finding, then the summary."""

    name = "text"

    def object(self, ref: Json, found: t.Sequence[Finding]) -> None:
        for f in found:
            at = f" at {f.path}" if f.path else ""
            owner = f" (owner {_title(f.owner)})" if f.owner else ""
            self.stream.write(f"{_title(f.object)}: {f.severity}: {f.type}{at}: {f.message}{owner}\n")

    def finish(self, summary: Summary, code: int) -> None:
        self.stream.write(summary.text() + "\n")

    def fail(self, summary: Summary, reason: str) -> None:
        if self.started:  # what was audited before the stop; the reason is the stderr line
            self.finish(summary, 2)


class JsonAudit(AuditReporter):
    """``{"findings": [...], "summary": {...}, "exitCode": N}``."""

    name = "json"

    def start(self) -> None:
        super().start()
        self.first = True
        self.error: str | None = None
        self.stream.write('{\n  "findings": [')

    def object(self, ref: Json, found: t.Sequence[Finding]) -> None:
        for f in found:
            self.stream.write(
                ("\n    " if self.first else ",\n    ") + dumps(f.to_json(), utf8=True, indent="    ")
            )
            self.first = False

    def finish(self, summary: Summary, code: int) -> None:
        summary_text = dumps(summary.to_json(), utf8=True, indent="  ")
        error = f',\n  "error": {dumps(self.error, utf8=True)}' if self.error is not None else ""
        self.stream.write(
            f'{"" if self.first else chr(10) + "  "}],\n  "summary": {summary_text},\n  "exitCode": {code}{error}\n}}\n'
        )

    def fail(self, summary: Summary, reason: str) -> None:
        if not self.started:
            self.start()
        self.error = reason
        self.finish(summary, 2)


class JunitAudit(AuditReporter):
    """A ``<testsuite>`` per namespace, a ``<testcase>`` per audited object; errors are
    ``<failure>``s, warnings and information go to ``<system-out>``."""

    name = "junit"

    def start(self) -> None:
        # A <testsuite> states its counts before its cases, so a namespace's cases wait in a
        # spooled temporary file (memory up to 1 MiB, then disk): the audit holds one page of
        # objects, not one namespace's worth of report lines.
        super().start()
        self.cases: t.IO[str] = tempfile.SpooledTemporaryFile(max_size=1 << 20, mode="w+", encoding="utf-8")
        self.tests = self.failures = 0
        self.stream.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="wasp audit">\n')

    def object(self, ref: Json, found: t.Sequence[Finding]) -> None:
        name = quoteattr(_title(ref))
        classname = quoteattr(f"{ref.get('apiVersion')}/{ref.get('kind')}")
        body = []
        for f in found:
            text = f"{f.type}{' at ' + f.path if f.path else ''}: {f.message}"
            if f.severity == "error":
                body.append(f"<failure type={quoteattr(f.type)} message={quoteattr(text)}/>")
            else:
                body.append(f"<system-out>{_escape(f.severity + ': ' + text)}</system-out>")
        self.tests += 1
        self.failures += any(f.severity == "error" for f in found)
        self.cases.write(f"    <testcase name={name} classname={classname}>{''.join(body)}</testcase>\n")

    def namespace_done(self, namespace: str) -> None:
        if self.tests:
            self.stream.write(f'  <testsuite name={quoteattr(namespace or "(cluster)")} tests="{self.tests}" '
                              f'failures="{self.failures}">\n')  # fmt: skip
            self.cases.seek(0)
            shutil.copyfileobj(self.cases, self.stream)
            self.stream.write("  </testsuite>\n")
        self.cases.seek(0)
        self.cases.truncate()
        self.tests = self.failures = 0

    def fail(self, summary: Summary, reason: str) -> None:
        if not self.started:
            self.start()
        # A CI system shows an <error> case: the audit did not run to its end, whatever it found.
        self.namespace_done("(cluster)")
        self.stream.write('  <testsuite name="wasp audit" tests="1" failures="0" errors="1">\n'
                          '    <testcase name="read the cluster" classname="wasp audit">'
                          f'<error type="ClusterUnreadable" message={quoteattr(reason)}/></testcase>\n'
                          '  </testsuite>\n')  # fmt: skip
        self.finish(summary, 2)

    def finish(self, summary: Summary, code: int) -> None:
        self.namespace_done("(cluster)")
        self.cases.close()
        self.stream.write(f"  <!-- {_escape(summary.text())} -->\n</testsuites>\n")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("--", "- -")


FORMATS: t.Final[dict[str, type[AuditReporter]]] = {r.name: r for r in (TextAudit, JsonAudit, JunitAudit)}
