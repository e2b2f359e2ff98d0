"""Finding the files to read: directories walked, globs applied, Helm chart templates recognised.

The order is the order of the arguments, each directory's files sorted; a directory that
cannot be listed is a problem that keeps its place in that order (:attr:`Expansion.places`),
so that its error comes out where its files would have.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from webhook.manifests.loader import STDIN, SUFFIXES, LoadError

__all__ = ["Expansion", "expand_paths", "helm_template", "in_order"]


@dataclass(frozen=True, slots=True)
class Expansion:
    """The files to read, in order, and the paths that could not be searched.

    ``places[i]`` is the number of ``files`` that come before ``problems[i]``.
    """

    files: list[str]
    problems: list[LoadError]
    places: list[int]


def _matches(path: str, patterns: t.Sequence[str]) -> bool:
    """A glob with a ``/`` matches the path or any tail of it (``charts/*``), one without
    matches the file name or any directory name (``templates``, ``*.tpl.yaml``)."""
    parts = Path(path).parts
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern:
            if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, "*/" + pattern):
                return True
        elif any(fnmatch.fnmatch(part, pattern) for part in parts):
            return True
    return False


def _walk(root: str, problems: list[LoadError]) -> list[str]:
    """Files under ``root``, recursively, symbolic links to directories followed (each once)."""
    found: list[str] = []
    seen: set[str] = set()

    def onerror(exc: OSError) -> None:
        where = exc.filename if isinstance(exc.filename, str) else root
        problems.append(LoadError(where, f"cannot read directory: {exc.strerror or exc}"))

    for top, dirs, files in os.walk(root, onerror=onerror, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:  # a link back to a directory already searched: a loop
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(top, f) for f in files if f.endswith(SUFFIXES))
    return sorted(found)


def expand_paths(
    paths: t.Iterable[str], *, include: t.Sequence[str] = (), exclude: t.Sequence[str] = ()
) -> Expansion:
    """Files to read, in argument order; directories are walked recursively, sorted.

    ``-`` stays as is (stdin). Missing files are kept: reading them reports the error.
    Hidden directories (``.git``) are not entered; links to directories are followed.
    ``include``/``exclude`` are globs (:func:`_matches`) over files found and files given;
    with ``include``, a file must match one of them. A directory that cannot be listed is
    a problem (exit 2), not an empty directory.
    """
    files: list[str] = []
    problems: list[LoadError] = []
    places: list[int] = []
    for raw in paths:
        if raw == STDIN:
            files.append(raw)
            continue
        found: list[LoadError] = []
        candidates = _walk(raw, found) if os.path.isdir(raw) else [raw]
        kept = [
            f
            for f in candidates
            if not (exclude and _matches(f, exclude)) and (not include or _matches(f, include))
        ]
        for problem in found:
            # Where the directory's files would sort among the others (``a/b/`` after ``a/b-c/x``).
            places.append(len(files) + bisect.bisect_left(kept, problem.source.rstrip(os.sep) + os.sep))
            problems.append(problem)
        files.extend(kept)
    order = sorted(range(len(problems)), key=places.__getitem__)
    return Expansion(files, [problems[i] for i in order], [places[i] for i in order])


_R = t.TypeVar("_R")


def in_order(
    expansion: Expansion,
    records: t.Iterable[_R],
    problem: t.Callable[[LoadError], _R],
    file_of: t.Callable[[_R], str],
    name_of: t.Callable[[str], str],
) -> t.Iterator[_R]:
    """``records`` (of ``expansion.files``, in order) with ``problem(p)`` for each unsearchable
    directory at its place: before the records of the first file that follows it."""
    pending = list(zip(expansion.places, expansion.problems, strict=True))
    pending.reverse()
    files = expansion.files
    index = 0  # the file whose records are coming
    for record in records:
        name = file_of(record)
        while index < len(files) and name_of(files[index]) != name:
            index += 1
        while pending and pending[-1][0] <= index:
            yield problem(pending.pop()[1])
        yield record
    while pending:
        yield problem(pending.pop()[1])


@functools.lru_cache(maxsize=256)
def _chart_root(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "Chart.yaml"))


def helm_template(source: str) -> bool:
    """``source`` lies in a Helm chart's ``templates/`` directory (``Chart.yaml`` beside it):
    Go templates that only ``helm template`` turns into manifests."""
    if source == STDIN:
        return False
    parts = Path(source).parts[:-1]
    return any(
        part == "templates" and _chart_root(os.path.join(*parts[:i]) if i else os.curdir)
        for i, part in enumerate(parts)
    )
