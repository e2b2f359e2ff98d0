"""Where results go: ``-o FORMAT[=FILE]`` (repeatable).

Every output gets every record as it arrives. At most one output goes to stdout; files are
written UTF-8 whatever the locale, and are complete when the run ends.
"""

from __future__ import annotations

import os
import sys
import typing as t
from dataclasses import dataclass
from types import TracebackType

import click

from webhook.cli.checker import Record, Summary
from webhook.cli.reporters import REPORTERS, Reporter

__all__ = ["OutputSpec", "Outputs", "parse_outputs"]


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One ``-o``: the format and the file (``None``: stdout)."""

    format: str
    path: str | None


def parse_outputs(values: t.Sequence[str]) -> list[OutputSpec]:
    """``-o`` values, checked: a known format, and stdout used at most once (default ``text``)."""
    specs = []
    for value in values or ("text",):
        fmt, sep, path = value.partition("=")
        if fmt not in REPORTERS:
            raise click.BadParameter(
                f"{fmt!r} is not one of {', '.join(sorted(REPORTERS))}", param_hint="'-o' / '--output'"
            )
        if sep and not path:
            raise click.BadParameter(f"{value!r}: no file after '='", param_hint="'-o' / '--output'")
        specs.append(OutputSpec(fmt, path or None))
    if sum(1 for s in specs if s.path is None) > 1:
        raise click.UsageError(
            "only one -o can write to stdout; give the others a file (-o junit=report.xml)"
        )
    # The same file twice (also spelled differently): each writer would truncate the other's.
    files = [os.path.realpath(s.path) for s in specs if s.path is not None]
    twice = sorted({f for f in files if files.count(f) > 1})
    if twice:
        raise click.UsageError(f"two -o write to one file ({', '.join(twice)}); give each its own file")
    return specs


class Outputs:
    """The reporters of a run, their files opened on entry and closed on exit."""

    def __init__(
        self,
        specs: t.Sequence[OutputSpec],
        *,
        color: str,
        summary_only: bool,
        verbose: bool,
        use_color: t.Callable[[str, t.TextIO], bool],
    ) -> None:
        self._files: list[t.TextIO] = []
        self.reporters: list[Reporter] = []
        for spec in specs:
            if spec.path is None:
                stream: t.TextIO = sys.stdout
            else:
                try:
                    stream = open(spec.path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115
                except OSError as exc:
                    self.close()
                    raise click.UsageError(f"cannot write {spec.path}: {exc.strerror or exc}") from exc
                self._files.append(stream)
            self.reporters.append(
                REPORTERS[spec.format](
                    stream, color=use_color(color, stream), summary_only=summary_only, verbose=verbose
                )
            )

    def __enter__(self) -> Outputs:
        for reporter in self.reporters:
            reporter.start()
        return self

    def record(self, record: Record) -> None:
        for reporter in self.reporters:
            reporter.record(record)

    def finish(self, summary: Summary, exit_code: int) -> None:
        for reporter in self.reporters:
            reporter.finish(summary, exit_code)

    def close(self) -> None:
        for stream in self._files:
            stream.close()
        sys.stdout.flush()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
