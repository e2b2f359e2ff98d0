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
import sys
import time
import typing as t
from dataclasses import dataclass, field, replace

from webhook.cli import ungoverned
from webhook.cli.admitted import as_admitted
from webhook.governed.result import Result, Status
from webhook.governed.validation import validate_object
from webhook.manifests.loader import (
    STDIN,
    Document,
    LoadError,
    ParseState,
    display_name,
    from_next_document,
    locate,
    parse_text,
    read_source,
)
from webhook.manifests.old_pairing import Identity, Old, SourceOld, identity
from webhook.manifests.paths import helm_template
from webhook.policy import PolicySet
from webhook.vocab.field import OMIT, FieldError, FieldPath, forbidden

__all__ = [
    "Check",
    "Checked",
    "ErrorRecord",
    "ExitCode",
    "Identity",
    "Record",
    "Span",
    "Summary",
    "check_source",
    "failed",
    "kind_matches",
    "identity",
    "stderr_line",
]


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
        # The value is reported exactly when apimachinery renders it: the body differs from
        # the body of the same error with the value omitted (Forbidden, Required... never do).
        shown = err.bad_value is not OMIT and err.body() != replace(err, bad_value=OMIT).body()
        bad = err.bad_value if shown else None
        return cls(err.type.value, str(err.field), bad, err.detail, err.error(), locate(doc.node, err.field))


@dataclass(frozen=True, slots=True)
class Record:
    """The verdict on one object (or one source that could not be read or parsed).

    ``document`` is ``None`` when the whole source failed (unreadable); ``item`` is the
    index inside a ``*List`` document. ``reason`` explains an ``error`` or ``skipped`` status.
    ``updated`` is true when an ``--old`` object was paired with this one. ``warned``: the
    object is invalid under a policy in warn mode, so the webhook admits it and its
    ``errors`` are warnings (status ``warning`` in the outputs).
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
    seconds: float = 0.0  # time spent judging (JUnit ``time``)
    warned: bool = False
    notes: tuple[str, ...] = ()  # what was not checked and is no finding (a file new to --old)

    @property
    def unreadable(self) -> bool:
        """The whole source could not be read (missing, a directory that cannot be listed...):
        no document, so not counted as an object."""
        return self.document is None and self.status is Status.ERROR

    @property
    def operation(self) -> str | None:
        """``CREATE`` or ``UPDATE`` (an ``--old`` version was paired); ``None`` when not judged."""
        if self.status in (Status.VALID, Status.INVALID):
            return "UPDATE" if self.updated else "CREATE"
        return None

    @property
    def verdict(self) -> str:
        """The status the outputs show: the status's word, or ``warning`` for a warned object."""
        return "warning" if self.warned else self.status.value

    @property
    def title(self) -> str:
        """``Kind ns/name`` as kubectl prints an object."""
        name = self.name or "<unnamed>"
        ref = f"{self.namespace}/{name}" if self.namespace else name
        return f"{self.kind} {ref}" if self.kind else ref


@dataclass(slots=True)
class Summary:
    """Counts per status over the objects (documents); ``unreadable`` counts sources instead.
    A warned object's field errors count as warnings, so ``--strict`` applies to them."""

    valid: int = 0
    invalid: int = 0
    warned: int = 0
    skipped: int = 0
    errors: int = 0
    warnings: int = 0
    unreadable: int = 0
    sources: int = 0  # files (and stdin) given or found, read or not; set by the caller

    def add(self, record: Record) -> None:
        if record.unreadable:
            self.unreadable += 1
            return
        if record.warned:
            self.warned += 1
            self.warnings += len(record.errors) + len(record.warnings)
            return
        setattr(self, _COUNTER[record.status], getattr(self, _COUNTER[record.status]) + 1)
        self.warnings += len(record.warnings)

    @property
    def objects(self) -> int:
        return self.valid + self.invalid + self.warned + self.skipped + self.errors

    @property
    def files(self) -> int:
        """Sources that were read."""
        return max(self.sources - self.unreadable, 0)

    def exit_code(self, *, warning_code: int = 0, fail_on_empty: bool = False) -> int:
        """2 beats 1 beats the warnings' code (0 unless ``--warning-exit-code``/``--strict``)."""
        if self.errors or self.unreadable or (fail_on_empty and not self.objects):
            return ExitCode.INPUT
        if self.invalid:
            return ExitCode.INVALID
        return warning_code if self.warnings else ExitCode.OK


_COUNTER: t.Final = {
    Status.VALID: "valid",
    Status.INVALID: "invalid",
    Status.SKIPPED: "skipped",
    Status.ERROR: "errors",
}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def kind_matches(obj: t.Mapping[str, object], patterns: frozenset[str]) -> bool:
    """``Kind`` or ``apiVersion/Kind`` (``batch/v1/Job``, ``v1/ConfigMap``) is in ``patterns``."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    return kind in patterns or f"{api_version}/{kind}" in patterns


@dataclass(frozen=True, slots=True)
class Check:
    """Everything a (possibly forked) worker needs to judge a source.

    ``old`` is what ``--old`` gave (:class:`~webhook.manifests.old_pairing.Old`): the objects of its
    files by identity, and each file's previous version in its directories, whose objects
    are paired first. ``skip``/``reject`` are ``--skip``/``--reject`` kinds (:func:`kind_matches`).
    """

    policies: PolicySet
    old: Old = field(default_factory=Old)
    skip_non_kubernetes: bool = False
    skip: frozenset[str] = frozenset()
    reject: frozenset[str] = frozenset()
    stdin_name: str = ""  # --stdin-filename: what stdin's records are called, instead of <stdin>
    reject_ungoverned: bool = False  # --reject-ungoverned: an object no policy governs is invalid

    def name(self, source: str) -> str:
        """The file name records of ``source`` carry."""
        return self.stdin_name if source == STDIN and self.stdin_name else display_name(source)


def _judge(check: Check, doc: Document, previous: SourceOld) -> Record:
    started = time.perf_counter()
    obj = doc.obj
    # Judged and named as admitted: a generateName-only manifest is ``NAME-xxxxx``.
    admitted = as_admitted(obj)
    mapping = admitted if isinstance(admitted, dict) else {}
    meta = mapping.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    key = identity(obj)
    old = previous.get(key) if key is not None else None
    if doc.problem is not None:
        result = Result(Status.ERROR, reason=str(doc.problem))
    elif check.skip and kind_matches(mapping, check.skip):
        result = Result.skipped(f"kind {mapping.get('kind')} skipped by --skip")
    elif check.reject and kind_matches(mapping, check.reject):
        result = Result.judged("--reject", [forbidden(FieldPath.of("kind"), "rejected by --reject")], [])
    else:
        result = validate_object(admitted, old, policies=check.policies)
        if result.ungoverned:
            result = ungoverned.judged(mapping, result, check.policies, reject=check.reject_ungoverned)
    status, reason = result.status, result.reason
    if status is Status.ERROR and check.skip_non_kubernetes and doc.problem is None:
        status, reason = Status.SKIPPED, f"ignored: {reason}"
    return Record(
        file=doc.source,
        document=doc.index,
        line=doc.problem.line or doc.line if doc.problem is not None else doc.line,
        item=doc.item,
        api_version=_str(mapping.get("apiVersion")),
        kind=_str(mapping.get("kind")),
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        status=status,
        errors=tuple(ErrorRecord.of(e, doc) for e in result.errors),
        warnings=result.warnings,
        reason=reason,
        updated=old is not None and status in (Status.VALID, Status.INVALID),
        input_error=doc.problem is not None,
        seconds=time.perf_counter() - started,
        warned=result.warned,
    )


def _old_said(check: Check, record: Record, previous: SourceOld, doc: Document) -> Record:
    """What ``--old`` did not give, said on the record: a paired file that does not parse (a
    warning; a note under ``--skip-non-kubernetes``, whose templates often do not), or a
    named object checked as created for want of a previous version (a note: a new file in a
    pull request is fine, a silent fallback to CREATE is not; a generateName-only object is
    always created)."""
    if previous.unparsable and record.kind is not None:
        if check.skip_non_kubernetes:
            return replace(record, notes=(*record.notes, previous.unparsable))
        return replace(record, warnings=(*record.warnings, previous.unparsable))
    if previous.missing and record.operation == "CREATE" and identity(doc.obj) is not None:
        return replace(record, notes=(*record.notes, previous.missing))
    return record


def failed(error: LoadError, *, skip: bool = False) -> Record:
    """The record of a source that failed; ``skip``: skipped as not a Kubernetes manifest."""
    if skip:
        return Record(
            error.source, error.document, error.line or None, None, None, None, None, None,
            Status.SKIPPED, reason=f"not a Kubernetes manifest: {error}",
        )  # fmt: skip
    return Record(
        error.source, error.document, error.line or None, None, None, None, None, None,
        Status.ERROR, reason=str(error), input_error=True,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Span:
    """A run of whole documents inside a large file: ``text[start:end]``, whose first line is
    ``line`` (0-based), so that one file can be judged by several processes."""

    start: int
    end: int
    line: int


@dataclass(slots=True)
class Checked:
    """What judging a source (or a span of one) gave: the records, the number of documents
    read (empty ones and ones that do not parse included, to number the next span's), and
    whether the whole file was answered by one record (unreadable, a Helm chart template):
    its later spans are then dropped."""

    records: list[Record]
    documents: int = 0
    stopped: bool = False


# The text of the file whose spans this (worker) process judges: read once, not per span.
_SPAN_SOURCE: dict[str, str] = {}


def _span_source(source: str) -> str:
    text = _SPAN_SOURCE.get(source)
    if text is None:
        _SPAN_SOURCE.clear()
        text = _SPAN_SOURCE[source] = read_source(source)
    return text


def check_source(
    check: Check, source: str, stdin: t.BinaryIO | None = None, span: Span | None = None
) -> Checked:
    """Records for every object of one source; a document that does not parse gets an error record.

    A document that does not parse ends only itself: reading goes on at the next ``---``
    line, so a manifest after it is still judged. With ``skip_non_kubernetes`` such a
    document (a Helm template, a tagged CloudFormation or GitLab file, JSON with comments)
    is skipped, not an error; a source that cannot be read is an error in every mode. With ``span``, only those documents are
    read; their indices then count from 0 (the caller renumbers). A file of a Helm chart's
    ``templates/`` is skipped whole in that mode: quoted actions (``name: "{{ .Values.n }}"``)
    parse as YAML, but what they say is known only once rendered.
    """
    checked = Checked([])
    name = check.name(source)
    if check.skip_non_kubernetes and helm_template(name):
        template = LoadError(name, "a Helm chart template (render it with helm template)", document=0)
        checked.records.append(failed(template, skip=True))
        checked.stopped = True
        return checked
    previous = check.old.for_source(name)
    state = ParseState()
    try:
        if span is None:
            text = read_source(source, stdin)
        else:  # blank lines keep every line number (and libyaml's marks) right
            text = "\n" * span.line + _span_source(source)[span.start : span.end]
    except LoadError as exc:
        exc.source = name
        checked.records.append(failed(exc))
        checked.stopped = True
        return checked
    first = 0  # index of the first document of ``text`` in the source
    begins = 0  # 0-based line where ``text``'s first document begins
    while True:
        try:
            for doc in parse_text(name, text, json_format=name.endswith(".json"), state=state):
                record = _old_said(check, _judge(check, doc, previous), previous, doc)
                checked.records.append(
                    replace(record, document=(record.document or 0) + first) if first else record
                )
            break
        except LoadError as exc:
            skip = check.skip_non_kubernetes and exc.document is not None
            if exc.document is not None:
                exc.document += first
            checked.records.append(failed(exc, skip=skip))
            # A document that does not parse (a template, a tagged node, a typo) ends only
            # itself, in every mode: the documents after it are read from the next `---` line.
            rest = None
            if exc.document is not None and not name.endswith(".json"):
                rest = from_next_document(text, exc.line, exc.column, begins)
            if rest is None:
                # Nothing follows in this text; the failed document still counts, so that the
                # next span of the file (cut at that `---` line) is numbered on from it.
                first, state = (exc.document + 1 if exc.document is not None else first), ParseState()
                break
            (text, begins), first = rest, t.cast(int, exc.document) + 1
            state = ParseState()
    checked.documents = first + state.documents
    return checked


def stderr_line(text: str) -> None:
    sys.stderr.write(text + "\n")
