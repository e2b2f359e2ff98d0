"""``wasp validate``: the webhook's verdict, offline, for CI and pre-commit.

Exit codes (docs/cli.md): 0 every object valid or skipped; 1 an object is invalid (or has
warnings, with ``--strict``); 2 usage or configuration error, or input that cannot be
judged: unreadable, unparsable, or a document that is not a Kubernetes object.
"""

from __future__ import annotations

import gc
import os
import sys
import typing as t
from pathlib import Path

import click

from webhook.cli import checker
from webhook.cli.loader import STDIN, expand_paths
from webhook.cli.reporters import REPORTERS
from webhook.policy import PolicySet
from webhook.vocab.errors import WaspError
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

__all__ = ["load_policy_set", "parse_gates", "use_color", "validate"]


def parse_gates(ctx: click.Context, param: click.Parameter, value: str | None) -> FeatureGates:
    if not value:
        return DEFAULT_GATES
    try:
        return FeatureGates.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc


def load_policy_set(policies: t.Sequence[Path], policy_only: bool, gates: FeatureGates) -> PolicySet:
    """The policies as the webhook would load them; exits 2 with the file and key on error."""
    if policy_only and not policies:
        raise click.UsageError("--policy-only needs at least one --policies location")
    try:
        policy_set = PolicySet.load(policies, builtin=not policy_only, gates=gates)
    except WaspError as exc:
        checker.stderr_line(f"wasp: {exc}")
        sys.exit(exc.exit_code)
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


policy_options = [
    click.option(
        "--policies",
        "policies",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Policy file or directory of policies, added to the built-in ones (repeatable).",
    ),
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


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@with_policy_options
@click.option(
    "--old",
    "old",
    multiple=True,
    metavar="PATH",
    help="Previous versions of the objects (file, directory or '-'): objects with the same group, "
    "kind, namespace and name are checked as updates (repeatable).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(sorted(REPORTERS)),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("--strict", is_flag=True, help="Also fail (exit 1) on warnings.")
@click.option("--summary", "summary_only", is_flag=True, help="Print only the summary.")
@click.option(
    "--skip-non-kubernetes",
    is_flag=True,
    help="Skip documents that are not Kubernetes objects (no apiVersion/kind) instead of failing with exit 2.",
)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Text output: also list valid and skipped objects.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: by input size and CPUs).",
)
def validate(
    paths: tuple[str, ...],
    policies: tuple[Path, ...],
    policy_only: bool,
    feature_gates: FeatureGates,
    old: tuple[str, ...],
    output: str,
    strict: bool,
    summary_only: bool,
    skip_non_kubernetes: bool,
    color: str,
    verbose: bool,
    jobs: int | None,
) -> None:
    """Validate manifests exactly as the wasp admission webhook would.

    PATH is a file, a directory (searched recursively for *.yaml, *.yml, *.json) or '-'
    for stdin (the default when no PATH is given). Multi-document YAML and *List kinds are
    expanded. No network and no cluster are used.

    \b
    Check a change against the base branch (stdin as the old version):
      git show main:deploy/job.yaml | wasp validate --old - deploy/job.yaml

    Exit codes: 0 valid (or skipped), 1 invalid, 2 usage error or input that cannot be
    judged (unreadable, unparsable, not a Kubernetes object).
    """
    sources = list(paths) or [STDIN]
    _stdin_uses(sources, old)
    policy_set = load_policy_set(policies, policy_only, feature_gates)
    stdin = sys.stdin.buffer
    old_index, old_problems = checker.index_old(expand_paths(old), stdin)
    for problem in old_problems:
        checker.stderr_line(f"wasp: --old: {problem}")
    if old_problems:
        sys.exit(checker.ExitCode.INPUT)
    # The objects built while loading live until exit and hold no cycles: keep the cyclic
    # collector from rescanning them (it costs ~30% of parsing time on large inputs).
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    check = checker.Check(policy_set, old_index, skip_non_kubernetes=skip_non_kubernetes)
    summary = checker.Summary()
    records = []
    for record in checker.run(check, expand_paths(sources), stdin=stdin, jobs=jobs):
        summary.add(record)
        records.append(record)
        if record.input_error:
            checker.stderr_line(f"wasp: {record.reason}")
    stdout = sys.stdout
    reporter = REPORTERS[output](
        stdout, color=use_color(color, stdout), summary_only=summary_only, verbose=verbose
    )
    reporter.report(records, summary)
    stdout.flush()
    sys.exit(summary.exit_code(strict=strict))
