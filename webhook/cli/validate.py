"""``wasp validate``: the webhook's verdict, offline, for CI and pre-commit.

Exit codes (docs/cli.md): 0 every object valid or skipped; 1 an object is invalid; the
``--warning-exit-code`` (0, or 1 with ``--strict``) when the worst is a warning (an object a
policy in warn mode finds invalid is one, unless ``--enforcement deny``); 2 usage or
configuration error, input that cannot be judged (unreadable, unparsable, not a Kubernetes
object), nothing found with ``--fail-on-empty``, or an internal error (one line on stderr).
"""

from __future__ import annotations

import gc
import operator
import os
import sys
import typing as t
from pathlib import Path

import click

from webhook.cli import checker, parallel
from webhook.cli.enforcement_flag import enforcement_option
from webhook.cli.integration_flag import integrations_option
from webhook.cli.main import QuickExit
from webhook.cli.outputs import Outputs, parse_outputs
from webhook.cli.reporters import REPORTERS
from webhook.cli.schedulers_flag import schedulers_option
from webhook.manifests import old_pairing
from webhook.manifests.loader import STDIN
from webhook.manifests.paths import expand_paths, in_order
from webhook.policy import PolicySet
from webhook.vocab.errors import WaspError
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

if t.TYPE_CHECKING:
    from webhook.policy.model import Enforcement

__all__ = ["load_policy_set", "parse_gates", "use_color", "validate"]

_STATUS_STOPS: t.Final = ("invalid", "error")
_SIGPIPE_EXIT: t.Final = 128 + 13  # what a shell reports for a writer killed by SIGPIPE


def parse_gates(ctx: click.Context, param: click.Parameter, value: str | None) -> FeatureGates:
    if not value:
        return DEFAULT_GATES
    try:
        return FeatureGates.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


def load_policy_set(
    policies: t.Sequence[Path], policy_only: bool, gates: FeatureGates, integrations: t.Sequence[Path] = ()
) -> PolicySet:
    """The policies as the webhook would load them (built-ins, the ``--integrations`` files,
    then ``--policies``); exits 2 with the file and key on error."""
    if policy_only and not policies and not integrations:
        raise click.UsageError("--policy-only needs at least one --policies location or --integrations name")
    try:
        policy_set = PolicySet.load([*integrations, *policies], builtin=not policy_only, gates=gates)
    except WaspError as exc:
        checker.stderr_line(f"wasp: {exc}")
        sys.exit(exc.exit_code)
    for note in policy_set.notes:
        checker.stderr_line(f"wasp: note: {note}")
    for warning in policy_set.warnings:
        checker.stderr_line(f"wasp: warning: {warning}")
    return policy_set


def use_color(mode: str, stream: t.TextIO) -> bool:
    """``auto``: only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    if mode != "auto":
        return mode == "always"
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _stdin_uses(paths: t.Sequence[str], old: t.Sequence[str]) -> None:
    if list(paths).count(STDIN) + list(old).count(STDIN) > 1:
        raise click.UsageError("stdin ('-') can be read only once: give it either as a PATH or as --old")


policy_options: list[t.Callable[[t.Callable[..., t.Any]], t.Callable[..., t.Any]]] = [
    click.option(
        "--policies",
        "policies",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Policy file or directory of policies, added to the built-in ones (repeatable).",
    ),
    integrations_option(),
    click.option("--policy-only", is_flag=True, help="Use only the --policies given, not the built-in ones."),
    click.option(
        "--feature-gates",
        callback=parse_gates,
        metavar="GATE=BOOL,...",
        help="Feature gates the cluster runs with, over the defaults (apiserver syntax).",
    ),
]


def with_policy_options(f: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    for option in reversed(policy_options):
        f = option(f)
    return f


def _kinds(values: t.Sequence[str]) -> frozenset[str]:
    return frozenset(k.strip() for v in values for k in v.split(",") if k.strip())


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@with_policy_options
@click.option(
    "--old",
    "old",
    multiple=True,
    metavar="PATH",
    help="Previous versions (file, directory or '-'; repeatable). Objects of files with the same "
    "group, kind, namespace and name are checked as updates; a directory is paired file by file, "
    "by the file's path from the working directory, from the top of its checkout, or from its "
    "PATH directory. An object without a previous version gets a note.",
)
@click.option(
    "-o",
    "--output",
    "outputs",
    multiple=True,
    metavar="FORMAT[=FILE]",
    help=f"Output format ({', '.join(sorted(REPORTERS))}; default text), to FILE or stdout. "
    "Repeatable: -o junit=report.xml -o text.",
)
@click.option("--strict", is_flag=True, help="Exit 1 on warnings (as --warning-exit-code 1).")
@click.option(
    "--warning-exit-code",
    type=click.IntRange(0, 255),
    default=None,
    help="Exit code when the worst finding is a warning (default 0).",
)
@enforcement_option()
@schedulers_option()
@click.option("--summary", "summary_only", is_flag=True, help="Print only the summary.")
@click.option(
    "--skip-non-kubernetes",
    is_flag=True,
    help="Skip files that do not parse and documents that are not Kubernetes objects (templates, CI "
    "configuration...) instead of failing with exit 2; -v lists them.",
)
@click.option(
    "--skip", "skip", multiple=True, metavar="KIND,...", help="Kinds (Kind or apiVersion/Kind) to skip."
)
@click.option(
    "--reject",
    "reject",
    multiple=True,
    metavar="KIND,...",
    help="Kinds (Kind or apiVersion/Kind) that are invalid.",
)
@click.option(
    "--reject-ungoverned",
    is_flag=True,
    help="Objects no loaded policy governs are invalid (as kubeconform fails a kind it has no "
    "schema for), instead of skipped; combine with --skip for kinds that need no policy.",
)
@click.option("--include", multiple=True, metavar="GLOB", help="Only check files matching GLOB (repeatable).")
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Do not check files matching GLOB (repeatable)."
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    default="",
    help="The path stdin's manifests come from: named so in every output (SARIF locations, "
    "annotations), read as JSON when it ends in .json, paired with --old directories by it.",
)
@click.option("--fail-on-empty", is_flag=True, help="Exit 2 when no object was found.")
@click.option("--exit-on-error", is_flag=True, help="Stop at the first invalid object or input error.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Text output: also list valid and skipped objects.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: by input size and CPUs).",
)
def validate(paths: tuple[str, ...], old: tuple[str, ...], **options: t.Any) -> None:
    """Validate manifests exactly as the wasp admission webhook would.

    PATH is a file, a directory (searched recursively for *.yaml, *.yml, *.json) or '-'
    for stdin (the default when no PATH is given). Multi-document YAML and *List kinds are
    expanded. No network and no cluster are used.

    \b
    Check a change against the base branch (stdin as the old version, or a whole tree):
      git show main:deploy/job.yaml | wasp validate --old - deploy/job.yaml
      git worktree add --detach /tmp/base main && wasp validate --old /tmp/base deploy/

    Exit codes: 0 valid (or skipped), 1 invalid, --warning-exit-code when the worst is a
    warning, 2 usage error or input that cannot be judged (unreadable, unparsable, not a
    Kubernetes object), nothing found with --fail-on-empty, or an internal error.
    """
    for stream in (sys.stdout, sys.stderr):  # a result must never fail on the terminal's encoding
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        _validate(list(paths), list(old), **options)
    except (click.exceptions.ClickException, click.exceptions.Exit):
        raise
    except BrokenPipeError:
        # The reader left (`wasp validate ... | head`): stop quietly, as Unix tools do, and
        # keep Python from complaining when it flushes the closed stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(_SIGPIPE_EXIT)
    except Exception as exc:  # a crash is not a verdict: exit 2 with one line, never 1
        checker.stderr_line(f"wasp: internal error: {type(exc).__name__}: {exc}")
        sys.exit(checker.ExitCode.INPUT)


def _validate(
    paths: list[str],
    old: list[str],
    *,
    policies: tuple[Path, ...],
    integrations: tuple[Path, ...],
    policy_only: bool,
    feature_gates: FeatureGates,
    outputs: tuple[str, ...],
    strict: bool,
    warning_exit_code: int | None,
    enforcement: Enforcement | None,
    was_schedulers: frozenset[str] | None,
    summary_only: bool,
    skip_non_kubernetes: bool,
    skip: tuple[str, ...],
    reject: tuple[str, ...],
    reject_ungoverned: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    stdin_filename: str,
    fail_on_empty: bool,
    exit_on_error: bool,
    color: str,
    verbose: bool,
    jobs: int | None,
) -> None:
    sources = paths or [STDIN]
    _stdin_uses(sources, old)
    if stdin_filename and STDIN not in sources:
        raise click.UsageError("--stdin-filename names stdin, which is not read: give '-' as a PATH")
    specs = parse_outputs(outputs)
    loaded = load_policy_set(policies, policy_only, feature_gates, integrations)
    policy_set = loaded.with_enforcement(enforcement).with_schedulers(was_schedulers)
    stdin = sys.stdin.buffer
    old_dirs = [o for o in old if o != STDIN and os.path.isdir(o)]
    old_found = expand_paths([o for o in old if o not in old_dirs])
    old_index, old_problems = old_pairing.index_old(old_found.files, stdin)
    for problem in [*old_found.problems, *old_problems]:
        checker.stderr_line(f"wasp: --old: {problem}")
    if old_found.problems or old_problems:
        sys.exit(checker.ExitCode.INPUT)
    found = expand_paths(sources, include=include, exclude=exclude)
    # Parsed documents, nodes and records hold no reference cycles, so the cyclic collector
    # only rescans live objects (30% of parsing time on large inputs): off for the run, in
    # the workers too. Memory is freed by reference counting as records stream out.
    collecting = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        old_files = old_pairing.pair_old_files(
            [stdin_filename if f == STDIN and stdin_filename else f for f in found.files], sources, old_dirs
        )
        check = checker.Check(
            policy_set,
            old_pairing.Old(old_index, old_files, tuple(old)),
            skip_non_kubernetes=skip_non_kubernetes,
            skip=_kinds(skip),
            reject=_kinds(reject),
            stdin_name=stdin_filename,
            reject_ungoverned=reject_ungoverned,
        )
        summary = checker.Summary(sources=len(found.files) + len(found.problems))
        warning_code = warning_exit_code if warning_exit_code is not None else int(strict)
        with Outputs(
            specs, color=color, summary_only=summary_only, verbose=verbose, use_color=use_color
        ) as out:
            records = parallel.run(check, found.files, stdin=stdin, jobs=jobs)
            read: set[str] = set()
            try:
                for record in in_order(
                    found, records, checker.failed, operator.attrgetter("file"), check.name
                ):
                    summary.add(record)
                    read.add(record.file)
                    out.record(record)
                    if exit_on_error and record.verdict in _STATUS_STOPS:  # a warned object goes on
                        # The summary covers what was checked: the files read up to here.
                        summary.sources = len(read)
                        break
            finally:
                records.close()  # --exit-on-error: stop the workers now
            code = summary.exit_code(warning_code=warning_code, fail_on_empty=fail_on_empty)
            out.finish(summary, code)
    finally:  # in process (tests, embedding), leave the collector as it was
        gc.unfreeze()
        if collecting:
            gc.enable()
    raise QuickExit(code)  # outputs are written and closed: the process may end at once
