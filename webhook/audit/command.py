"""``wasp audit``: what is in the cluster now, judged as the webhook and the reconciler would.

The command only: :mod:`webhook.audit.scan` reads the cluster (read-only, namespace by
namespace, a page at a time) and feeds the pure judgements; :mod:`webhook.audit.output`
writes the report.

Exit codes: 0 no error finding (warnings too with ``--strict``), 1 findings, 2 the cluster
cannot be read (configuration, connection, permissions, a bad selector).
"""

from __future__ import annotations

import sys
import typing as t
from pathlib import Path

import click

from webhook.audit.output import FORMATS, Summary
from webhook.audit.scan import Audit, Progress, namespaces
from webhook.cli.cluster import Cluster, Unusable, default_namespace, open_cluster, unusable
from webhook.cli.kubeconfig_flag import kubeconfig_option
from webhook.cli.validate import load_policy_set, with_policy_options
from webhook.policy import PolicySet

__all__ = ["audit", "policies_from"]


def policies_from(options: dict[str, t.Any]) -> PolicySet:
    """The policy set of the shared policy options (webhook/cli/validate.py's)."""
    return load_policy_set(
        options["policies"], options["policy_only"], options["feature_gates"], options.get("integrations", ())
    )


@click.command()
@kubeconfig_option
@click.option(
    "-n", "--namespace", default=None, help="Namespace to audit.  [default: the context's, else default]"
)
@click.option("-A", "--all-namespaces", is_flag=True, help="Audit every namespace.")
@click.option(
    "-l", "--selector", default="", help="Label selector for governed objects and foreign PodGroups."
)
@click.option("-o", "--output", type=click.Choice(sorted(FORMATS)), default="text", show_default=True)
@with_policy_options
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@click.option(
    "--chunk-size",
    type=click.IntRange(1, 10_000),
    default=500,
    show_default=True,
    help="Objects per list page: the most of one kind held at a time.",
)
@click.option(
    "--runtime/--no-runtime",
    default=True,
    show_default=True,
    help="A runtime summary line per governed object (wasp explain's verdict and finding codes).",
)
@click.option("--progress/--no-progress", default=None,
              help="A progress line on stderr.  [default: on a terminal, not in CI]")  # fmt: skip
def audit(kubeconfig: Path | None, namespace: str | None, all_namespaces: bool, selector: str, output: str,
          strict: bool, chunk_size: int, runtime: bool, progress: bool | None, **policy_options: t.Any,
          ) -> None:  # fmt: skip
    """Audit what is in the cluster: governed objects, their scheduling objects, foreign gangs.

    Every governed object is validated as the webhook would admit it (as a CREATE), and its
    Workload, PodGroups and CompositePodGroups are compared with what wasp would compile
    (missing, extra, minCount drift, owned by someone else, several matches); pods naming a
    PodGroup that does not exist are listed; Volcano, scheduler-plugins and Kueue gangs are
    listed with their native equivalent. Read-only.

    Exit codes: 0 no error finding, 1 findings (warnings too with --strict), 2 the cluster
    cannot be read.
    """
    if namespace and all_namespaces:
        raise click.UsageError("give either -n/--namespace or -A/--all-namespaces")
    policy_set = policies_from(policy_options)
    reporter = FORMATS[output](sys.stdout)
    meter = Progress(progress)
    summary = Summary()
    cluster: Cluster | None = None
    try:
        cluster = open_cluster(kubeconfig, chunk_size)
        run = Audit(cluster, policy_set, reporter, selector, meter, runtime)
        summary = run.summary
        reporter.start()
        # -A: the names first (one string each), so the progress line knows the total.
        names = list(namespaces(cluster)) if all_namespaces else [namespace or default_namespace(kubeconfig)]
        for i, ns in enumerate(names, 1):
            run.namespace(ns, i, len(names))
    except Exception as exc:  # the cluster failed (or wasp did): a reason to stop, never a finding
        meter.done()
        reason = exc.message if isinstance(exc, Unusable) else unusable(exc)
        summary.inconsistent_lists = cluster.inconsistent if cluster is not None else 0
        # The outputs stay closed (docs/audit.md): a pipeline that saved them can still parse them.
        reporter.fail(summary, reason)
        raise Unusable(reason) from None
    meter.done()
    summary.inconsistent_lists = cluster.inconsistent
    code = summary.exit_code(strict)
    reporter.finish(summary, code)
    sys.exit(code)
