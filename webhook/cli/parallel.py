"""Spreading the judging over processes, with the records of a serial run, in the same order.

Why it exists: a CI run over a repository's manifests is bound by one core's parsing; spread
over the CPUs it finishes in about two thirds of the time on two cores, which keeps
``wasp validate`` ahead of kubeconform on the same files (benchmarks/README.md). The records,
their order and numbering are those of a serial run (``tests/cli/test_cli_parallel.py``), and
the spans a large file is cut into hold the documents ``yaml.safe_load_all`` reads from the
whole (``tests/cli/test_cli_yaml_oracle.py``).

Workers are forked after the policies and the ``--old`` index are loaded, so they inherit
them (and every import) instead of loading them again, and this process judges beside them
(:func:`_shared`): with N processes, N - 1 are forked. The unit of work is a *task*: a
batch of small files, or a span of whole documents of one large file (one file never
keeps the second core idle). Spans are cut at document markers (``---`` at the start of a
line, which ends any YAML scalar), and a span's records are renumbered and its lines are
the file's own (:class:`~webhook.cli.checker.Span`). A document that does not parse ends
only itself, as in a serial run, where reading resumes at the same ``---`` lines; a file
answered whole by one record (unreadable, a Helm chart template) drops its later spans.
"""

from __future__ import annotations

import mmap
import os
import struct
import typing as t
from dataclasses import replace

from webhook.cli.checker import Check, Checked, Record, Span, check_source
from webhook.manifests.loader import STDIN, LoadError, read_source

__all__ = ["PARALLEL_MIN_BYTES", "plan", "run"]

# Below this many input bytes a second process costs more than it saves (the fork, the records
# sent back): a pre-commit hook's few files stay in one process (benchmarks/README.md).
PARALLEL_MIN_BYTES: t.Final = 256 * 1024
# A file this large is cut into spans; smaller files are batched up to about this size.
SPAN_BYTES: t.Final = 128 * 1024
Task = list[tuple[str, Span | None]]  # (file, span or None: the whole file)

# Finished tasks this process may hold beyond the next one to give (memory bound).
_AHEAD: t.Final = 8

# Set before forking; every process (this one too) reads it instead of unpickling policies.
_WORKER_CHECK: Check | None = None


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _size(source: str) -> int:
    try:
        return os.path.getsize(source)
    except OSError:
        return 0


def _uncuttable(text: str) -> bool:
    """Directives such as ``%YAML`` bind to the next document, and a line break other than
    ``\\n`` (YAML 1.1 also counts a bare CR, NEL, LS and PS) would shift a span's lines."""
    if text.startswith("%") or "\n%" in text:
        return True
    if any(ch in text for ch in ("\x85", "\u2028", "\u2029")):
        return True
    return "\r" in text and text.count("\r") != text.count("\r\n")


def _marker_after(text: str, pos: int) -> int:
    """Offset of the first ``---`` document marker that starts a line after ``pos``, or -1."""
    while True:
        found = text.find("\n---", pos)
        if found < 0:
            return -1
        after = text[found + 4 : found + 5]
        if after in ("", " ", "\t", "\r", "\n"):
            return found + 1
        pos = found + 4


def spans(text: str, target: int) -> list[Span] | None:
    """``text`` cut at document markers into runs of about ``target`` characters; ``None``
    when it cannot be cut safely (:func:`_uncuttable`) or is not long enough to cut."""
    if _uncuttable(text):
        return None
    cuts = [0]
    while True:
        cut = _marker_after(text, cuts[-1] + target)
        if cut < 0:
            break
        cuts.append(cut)
    if len(cuts) < 2:
        return None
    cuts.append(len(text))
    out, line = [], 0
    for start, end in zip(cuts, cuts[1:], strict=False):
        out.append(Span(start, end, line))
        line += text.count("\n", start, end)
    return out


def plan(files: t.Sequence[str], processes: int, sizes: t.Sequence[int] | None = None) -> list[Task]:
    """Tasks in file order: large YAML files as spans, small files in batches (``sizes``: the
    files' sizes when the caller has them)."""
    sizes = sizes if sizes is not None else [_size(f) for f in files]
    total = sum(sizes)
    target = max(SPAN_BYTES // 4, min(SPAN_BYTES, total // (processes * 8) or 1))
    tasks: list[Task] = []
    batch: Task = []
    batch_bytes = 0
    for source, size in zip(files, sizes, strict=True):
        cut = None
        if size >= 2 * target and not source.endswith(".json"):
            try:
                cut = spans(read_source(source), target)
            except LoadError:
                cut = None  # reported when the worker reads it
        if cut is not None:
            if batch:
                tasks.append(batch)
                batch, batch_bytes = [], 0
            tasks.extend([(source, s)] for s in cut)
            continue
        batch.append((source, None))
        batch_bytes += size
        if batch_bytes >= target:
            tasks.append(batch)
            batch, batch_bytes = [], 0
    if batch:
        tasks.append(batch)
    return tasks


def _records(results: t.Iterator[Checked], units: t.Iterator[tuple[str, Span | None]]) -> t.Iterator[Record]:
    """Renumber span records, and drop the rest of a file answered whole by one record."""
    offset, stopped = 0, False
    for checked, (_, span) in zip(results, units, strict=False):
        if span is None or span.start == 0:  # a file starts
            offset, stopped = 0, False
        if not stopped:
            for record in checked.records:
                if offset and record.document is not None:
                    record = replace(record, document=record.document + offset)
                yield record
        offset += checked.documents
        stopped = stopped or checked.stopped


def run(
    check: Check, sources: t.Sequence[str], *, stdin: t.BinaryIO | None = None, jobs: int | None = None
) -> t.Generator[Record, None, None]:
    """Records for all sources, in source order; parallel when the input is large enough.

    ``jobs`` forces the number of processes (1: serial); ``None`` decides from the input size.
    """
    global _WORKER_CHECK
    files = [s for s in sources if s != STDIN]
    processes = jobs if jobs is not None else _cpus()
    sizes = [_size(f) for f in files] if processes > 1 else []
    if jobs is None and sum(sizes) < PARALLEL_MIN_BYTES:
        processes = 1
    if processes > 1 and files:
        import multiprocessing  # only a run large enough to fork pays for importing it

        if "fork" not in multiprocessing.get_all_start_methods():
            processes = 1
    if processes < 2 or not files:
        for source in sources:
            yield from check_source(check, source, stdin).records
        return
    tasks = plan(files, processes, sizes)
    _WORKER_CHECK = check
    try:
        results = _shared(tasks, min(processes, len(tasks)), multiprocessing.get_context("fork"))
        names = (unit for task in tasks for unit in task)
        if STDIN in sources:  # stdin is read here, in its place among the files
            yield from _with_stdin(check, sources, stdin, _records(results, names))
        else:
            yield from _records(results, names)
    finally:
        _WORKER_CHECK = None


_COUNTER: t.Final = struct.Struct("q")


def _claim(counter: mmap.mmap, lock: t.Any, total: int) -> int | None:
    """The next task nobody has taken (all processes take them in order); ``None``: all taken."""
    with lock:
        index = int(_COUNTER.unpack_from(counter)[0])
        if index >= total:
            return None
        _COUNTER.pack_into(counter, 0, index + 1)
    return index


def _judge_task(task: Task) -> list[Checked]:
    assert _WORKER_CHECK is not None
    return [check_source(_WORKER_CHECK, source, span=span) for source, span in task]


def _child(tasks: list[Task], counter: mmap.mmap, lock: t.Any, conn: t.Any) -> None:
    """A forked worker: claims tasks until none is left and sends back each one's results."""
    try:
        while (index := _claim(counter, lock, len(tasks))) is not None:
            conn.send((index, _judge_task(tasks[index])))
    except BaseException as exc:  # the parent raises it: a crash is an internal error, never a verdict
        conn.send((-1, f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _shared(tasks: list[Task], processes: int, ctx: t.Any) -> t.Iterator[Checked]:
    """The tasks' results in task order, judged by this process and ``processes - 1`` forked ones.

    Every process claims the next task from a counter in shared memory, so a process slowed
    by other load simply takes fewer, and this process judges too: on 2 CPUs one child and
    no pickling of half of the records, where a pool of two kept three processes busy. This
    process keeps at most ``_AHEAD`` finished tasks beyond the one it must give next, so
    memory stays flat when a child falls behind.
    """
    from multiprocessing.connection import Connection, wait

    counter = mmap.mmap(-1, _COUNTER.size)  # anonymous and shared with the forked children
    lock = ctx.Lock()
    children = []
    conns: list[Connection] = []
    for _ in range(processes - 1):
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child, args=(tasks, counter, lock, send), daemon=True)
        child.start()
        send.close()
        children.append(child)
        conns.append(receive)
    done: dict[int, list[Checked]] = {}
    try:
        for index in range(len(tasks)):
            while index not in done:
                ready = t.cast(list[Connection], wait(conns, timeout=0)) if conns else []
                if not ready and len(done) < _AHEAD:
                    mine = _claim(counter, lock, len(tasks))
                    if mine is not None:
                        done[mine] = _judge_task(tasks[mine])
                        continue
                if not ready:
                    if not conns:  # tasks are claimed in order: a worker took this one and died
                        raise RuntimeError(f"a worker stopped before sending task {index}")
                    ready = t.cast(list[Connection], wait(conns))
                for conn in ready:
                    try:
                        got, value = t.cast(tuple[int, t.Any], conn.recv())
                    except EOFError:  # that child has nothing more to send
                        conns.remove(conn)
                        continue
                    if got < 0:
                        raise RuntimeError(f"worker failed: {value}")
                    done[got] = value
            yield from done.pop(index)
    finally:
        for child in children:  # stopped early (--exit-on-error) or done: no worker outlives the run
            if child.is_alive():
                child.terminate()
            child.join()
        counter.close()


def _with_stdin(
    check: Check, sources: t.Sequence[str], stdin: t.BinaryIO | None, records: t.Iterator[Record]
) -> t.Iterator[Record]:
    pending = next(records, None)
    for source in sources:
        if source == STDIN:
            yield from check_source(check, source, stdin).records
            continue
        while pending is not None and pending.file == source:
            yield pending
            pending = next(records, None)
    if pending is not None:  # the same file given twice: the rest, in order
        yield pending
        yield from records
