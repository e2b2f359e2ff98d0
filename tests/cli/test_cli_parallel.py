"""The shared scheduler of ``wasp validate``: this process and forked workers take tasks in
turn, and the records come out as a serial run gives them; a worker that fails is an
internal error (exit 2), never a verdict."""

from __future__ import annotations

import multiprocessing
import os
import time
import typing as t
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import Run, dump, job

from webhook.cli import parallel

Runner = t.Callable[..., Run]
Writer = t.Callable[..., Path]


@pytest.fixture
def small_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks of about 1 KB, so that a test-sized input is many tasks (256 KB by default)."""
    monkeypatch.setattr(parallel, "SPAN_BYTES", 4096)


def _many_files(write: Writer, tmp_path: Path) -> list[Path]:
    for i in range(16):
        write(
            f"many/f{i:02d}.yaml",
            *(job(f"j{i}-{d}", min_count=9 if (i + d) % 4 == 0 else 4) for d in range(4)),
        )
    return [tmp_path / "many"]


def _one_large_file(write: Writer, tmp_path: Path) -> list[Path]:
    docs = [job(f"j{d}", min_count=9 if d % 5 == 0 else 4) for d in range(60)]
    return [write("big.yaml", text=dump(*docs[:30]) + "---\n---\nnot: [closed\n---\n" + dump(*docs[30:]))]


def _files_and_stdin(write: Writer, tmp_path: Path) -> list[Path | str]:
    first, last = _many_files(write, tmp_path), write("last.yaml", job("last", min_count=9))
    return [*first, "-", last]


LAYOUTS = [
    pytest.param(_many_files, 2, id="16 files, this process and one worker"),
    pytest.param(_many_files, 3, id="16 files, this process and two workers"),
    pytest.param(_one_large_file, 2, id="one file cut into spans, a parse error in the middle"),
    pytest.param(_files_and_stdin, 3, id="files with stdin between them"),
]


@pytest.mark.parametrize(("layout", "jobs"), LAYOUTS)
def test_shared_tasks_give_the_records_of_a_serial_run(
    layout: t.Callable[[Writer, Path], list[Path | str]],
    jobs: int,
    small_tasks: None,
    run: Runner,
    write: Writer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = layout(write, tmp_path)
    stdin = dump(job("from-stdin", min_count=9))
    serial = run("validate", "-o", "json", "-j", "1", *paths, input=stdin)
    log = tmp_path / "pids"
    judge = parallel._judge_task

    def slow_judge(task: parallel.Task) -> list[t.Any]:
        # Slow enough that every process takes some of the tasks, whatever the load.
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(0.02)
        return judge(task)

    monkeypatch.setattr(parallel, "_judge_task", slow_judge)
    shared = run("validate", "-o", "json", "-j", jobs, *paths, input=stdin)
    assert (shared.code, shared.json()) == (serial.code, serial.json())
    assert serial.code in (1, 2) and len(serial.json()["results"]) > 10
    assert len(set(log.read_text().split())) == jobs  # this process and every worker judged


def _raise(task: parallel.Task) -> list[t.Any]:
    raise ValueError("boom")


def _die(task: parallel.Task) -> list[t.Any]:
    os._exit(9)


FAILURES = [
    pytest.param(_raise, "worker failed: ValueError: boom", id="an exception in a worker"),
    pytest.param(_die, "a worker stopped before sending task", id="a worker that dies without answering"),
]


@pytest.mark.parametrize(("failure", "message"), FAILURES)
def test_a_failing_worker_is_an_internal_error(
    failure: t.Callable[[parallel.Task], list[t.Any]],
    message: str,
    small_tasks: None,
    run: Runner,
    write: Writer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parent = os.getpid()
    judge = parallel._judge_task

    def judge_or_fail(task: parallel.Task) -> list[t.Any]:
        if os.getpid() != parent:
            return failure(task)
        time.sleep(0.02)  # leave the worker time to take a task
        return judge(task)

    monkeypatch.setattr(parallel, "_judge_task", judge_or_fail)
    result = run("validate", "-j", "2", *_many_files(write, tmp_path))
    assert result.code == 2
    assert "wasp: internal error: RuntimeError" in result.stderr and message in result.stderr
    assert multiprocessing.active_children() == []


def test_exit_on_error_stops_the_workers(
    small_tasks: None, run: Runner, write: Writer, tmp_path: Path
) -> None:
    result = run("validate", "-o", "json", "--exit-on-error", "-j", "2", *_many_files(write, tmp_path))
    assert result.code == 1
    assert [r["status"] for r in result.json()["results"]] == ["invalid"]
    assert multiprocessing.active_children() == []


def test_plan_cuts_a_test_sized_input_into_many_tasks(
    small_tasks: None, write: Writer, tmp_path: Path
) -> None:
    files = sorted(str(p) for p in (_many_files(write, tmp_path)[0]).iterdir())
    tasks = parallel.plan(files, 2)
    assert len(tasks) >= 8
    assert [source for task in tasks for source, _ in task] == files  # every file once, in order


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["one process", "with a worker"])
def test_the_console_script_ends_at_once_with_every_output_written(
    jobs: str, run_wasp: Runner, write: Writer, tmp_path: Path
) -> None:
    """``wasp`` ends with ``os._exit`` (no interpreter teardown): stdout, larger than a pipe's
    buffer, and the files of ``-o FORMAT=FILE`` must all be complete."""
    for i in range(8):
        write(f"many/f{i}.yaml", *(job(f"j{i}-{d}", min_count=9 if d == 0 else 4) for d in range(40)))
    junit, text = tmp_path / "report.xml", tmp_path / "report.txt"
    result = run_wasp(
        "validate", "-j", jobs, "-o", "json", "-o", f"junit={junit}", "-o", f"text={text}", tmp_path / "many"
    )
    assert result.code == 1
    assert len(result.stdout) > 65536 and len(result.json()["results"]) == 320
    assert len(ET.parse(junit).getroot().findall(".//testcase")) == 320
    assert text.read_text(encoding="utf-8").rstrip().endswith("0 warnings")
