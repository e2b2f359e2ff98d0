"""Judging loaded documents: ``validate_object`` over every object, paired with ``--old``.

The checker is the middle of the CLI pipeline (loader -> checker -> records -> reporter).
It calls exactly the function the webhook calls, with the same :class:`PolicySet`, so the
CLI verdict is the admission verdict. Each object becomes a :class:`Record`: plain,
picklable data that worker processes send back and reporters render.

Large inputs are spread over worker processes (``fork``: the policies, the ``--old`` index
and every import are inherited, nothing is re-loaded). Files are the unit of work, so the
per-file document order and error isolation are those of a serial run.
"""

from __future__ import annotations

import enum
import multiprocessing
import os
import sys
import typing as t
from dataclasses import dataclass

from webhook.cli.loader import STDIN, Document, LoadError, load_source, locate
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet
from webhook.vocab.field import OMIT, FieldError

__all__ = [
    "Check",
    "ErrorRecord",
    "ExitCode",
    "Identity",
    "Record",
    "Summary",
    "check_source",
    "identity",
    "index_old",
    "run",
    "stderr_line",
]

# Below this many input bytes a second process costs more than it saves (fork, pickling the
# records back). Measured on 2 CPUs with the benchmark's 1.2 KB Jobs: break-even between 200
# and 400 manifests (0.25-0.5 MB); from 800 on, two processes win clearly.
PARALLEL_MIN_BYTES: t.Final = 256 * 1024

Identity = tuple[str, str, str, str]  # (API group, kind, namespace, name)


class ExitCode(enum.IntEnum):
    OK = 0
    INVALID = 1  # an object is invalid (or, with --strict, has warnings)
    INPUT = 2  # usage error, or input that cannot be judged (unreadable, unparsable, not an object)


@dataclass(frozen=True, slots=True)
class ErrorRecord:
    """One field error. ``bad_value`` is the raw value (``None`` when apimachinery omits it)."""

    type: str
    field: str
    bad_value: object
    detail: str
    message: str
    line: int | None

    @classmethod
    def of(cls, err: FieldError, doc: Document) -> ErrorRecord:
        bad = None if err.bad_value is OMIT else err.bad_value
        return cls(err.type.value, str(err.field), bad, err.detail, err.error(), locate(doc.node, err.field))


@dataclass(frozen=True, slots=True)
class Record:
    """The verdict on one object (or one source that could not be read or parsed).

    ``document`` is ``None`` when the whole source failed (unreadable); ``item`` is the
    index inside a ``*List`` document. ``reason`` explains an ``error`` or ``skipped`` status.
    ``updated`` is true when an ``--old`` object was paired with this one.
    """

    file: str
    document: int | None
    line: int | None
    item: int | None
    api_version: str | None
    kind: str | None
    namespace: str | None
    name: str | None
    status: Status
    errors: tuple[ErrorRecord, ...] = ()
    warnings: tuple[str, ...] = ()
    reason: str = ""
    updated: bool = False
    input_error: bool = False  # the source could not be read or parsed (also said on stderr)

    @property
    def title(self) -> str:
        """``Kind ns/name`` as kubectl prints an object."""
        name = self.name or "<unnamed>"
        ref = f"{self.namespace}/{name}" if self.namespace else name
        return f"{self.kind} {ref}" if self.kind else ref


@dataclass(slots=True)
class Summary:
    valid: int = 0
    invalid: int = 0
    skipped: int = 0
    errors: int = 0
    warnings: int = 0

    def add(self, record: Record) -> None:
        setattr(self, _COUNTER[record.status], getattr(self, _COUNTER[record.status]) + 1)
        self.warnings += len(record.warnings)

    @property
    def objects(self) -> int:
        return self.valid + self.invalid + self.skipped + self.errors

    def exit_code(self, *, strict: bool) -> ExitCode:
        if self.errors:
            return ExitCode.INPUT
        if self.invalid or (strict and self.warnings):
            return ExitCode.INVALID
        return ExitCode.OK


_COUNTER: t.Final = {
    Status.VALID: "valid",
    Status.INVALID: "invalid",
    Status.SKIPPED: "skipped",
    Status.ERROR: "errors",
}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def identity(obj: object) -> Identity | None:
    """How an object is matched with its previous version: group, kind, namespace, name.

    The API *group* rather than the full apiVersion: the apiserver compares an update with
    the stored object whatever version either is written in. ``None`` when unnamed.
    """
    if not isinstance(obj, dict):
        return None
    api_version, kind, metadata = obj.get("apiVersion"), obj.get("kind"), obj.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(metadata, dict):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    return (api_version.rpartition("/")[0], kind, _str(metadata.get("namespace")) or "", name)


@dataclass(frozen=True, slots=True)
class Check:
    """Everything a (possibly forked) worker needs to judge a source."""

    policies: PolicySet
    old: t.Mapping[Identity, object]
    skip_non_kubernetes: bool = False


def _judge(check: Check, doc: Document) -> Record:
    obj = doc.obj
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    key = identity(obj)
    old = check.old.get(key) if key is not None else None
    result = validate_object(obj, old, policies=check.policies)
    status, reason = result.status, result.reason
    if status is Status.ERROR and check.skip_non_kubernetes:
        status, reason = Status.SKIPPED, f"ignored: {reason}"
    return Record(
        file=doc.source,
        document=doc.index,
        line=doc.line,
        item=doc.item,
        api_version=_str(obj.get("apiVersion")) if isinstance(obj, dict) else None,
        kind=_str(obj.get("kind")) if isinstance(obj, dict) else None,
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        status=status,
        errors=tuple(ErrorRecord.of(e, doc) for e in result.errors),
        warnings=result.warnings,
        reason=reason,
        updated=old is not None,
    )


def _failed(error: LoadError) -> Record:
    return Record(
        error.source,
        error.document,
        error.line or None,
        None,
        None,
        None,
        None,
        None,
        Status.ERROR,
        reason=str(error),
        input_error=True,
    )


def check_source(check: Check, source: str, stdin: t.BinaryIO | None = None) -> list[Record]:
    """Records for every object of one source; a parse error ends the source with an error record."""
    records: list[Record] = []
    try:
        for doc in load_source(source, stdin):
            records.append(_judge(check, doc))
    except LoadError as exc:
        records.append(_failed(exc))
    return records


def index_old(
    sources: t.Sequence[str], stdin: t.BinaryIO | None
) -> tuple[dict[Identity, object], list[LoadError]]:
    """The ``--old`` objects by identity (a later duplicate wins), plus sources that failed."""
    index: dict[Identity, object] = {}
    problems: list[LoadError] = []
    for source in sources:
        try:
            for doc in load_source(source, stdin):
                key = identity(doc.obj)
                if key is not None:
                    index[key] = doc.obj
        except LoadError as exc:
            problems.append(exc)
    return index, problems


# Set in the parent before forking; workers read it instead of unpickling policies per task.
_WORKER_CHECK: Check | None = None


def _worker(source: str) -> list[Record]:
    assert _WORKER_CHECK is not None
    return check_source(_WORKER_CHECK, source)


def _workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _input_bytes(sources: t.Sequence[str]) -> int:
    total = 0
    for source in sources:
        try:
            total += os.path.getsize(source)
        except OSError:
            pass
    return total


def run(
    check: Check, sources: t.Sequence[str], *, stdin: t.BinaryIO | None = None, jobs: int | None = None
) -> t.Iterator[Record]:
    """Records for all sources, in source order; parallel when the input is large enough.

    ``jobs`` forces the number of processes (1: serial); ``None`` decides from the input size.
    """
    global _WORKER_CHECK
    files = [s for s in sources if s != STDIN]
    processes = jobs if jobs is not None else _workers()
    if jobs is None and _input_bytes(files) < PARALLEL_MIN_BYTES:
        processes = 1
    processes = min(processes, len(files))
    if processes < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for source in sources:
            yield from check_source(check, source, stdin)
        return
    _WORKER_CHECK = check
    # Policies, old objects and imports are shared copy-on-write with the children.
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes) as pool:
        parallel = pool.imap(_worker, files, chunksize=1)
        for source in sources:
            if source == STDIN:
                yield from check_source(check, source, stdin)
            else:
                yield from next(parallel)
    _WORKER_CHECK = None


def stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
