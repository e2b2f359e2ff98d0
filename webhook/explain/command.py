"""``wasp explain TYPE/NAME``: why a gang is not running, from a cluster or from a dump.

A thin edge: :mod:`webhook.explain` reads (``cluster``, ``dump``), judges (``diagnose``) and
renders; this module parses the command line and maps failures to exit 2.

Exit codes: 0 the gang runs or can run, 1 a finding explains why it cannot, 2 the cluster or
the dump cannot be read (with ``-o json``, still a closed document with ``exitCode: 2``).
"""

from __future__ import annotations

import sys
import typing as t
from pathlib import Path

import click

from webhook.cli.kubeconfig_flag import kubeconfig_option
from webhook.cli.validate import load_policy_set, use_color, with_policy_options
from webhook.explain import render
from webhook.explain.diagnose import Explanation, Options, explain
from webhook.explain.dump import DumpError, load, snapshot
from webhook.explain.kinds import parse_type

__all__ = ["explain_command"]


def _fail(message: str, output: str) -> t.NoReturn:
    click.echo(f"wasp: {message}", err=True)
    if output == "json":
        sys.stdout.write(render.failure_json(message))
    sys.exit(2)


def _from_cluster(kubeconfig: Path | None, chunk_size: int, *args: t.Any) -> Explanation:
    # The Kubernetes client is imported only here: `wasp explain --from` runs without it.
    from webhook.cli.cluster import default_namespace, open_cluster, unusable
    from webhook.explain.cluster import NotFound, Reader, explain_in_cluster

    spec, namespace, name, policies, options, output = args
    try:
        cluster = open_cluster(kubeconfig, chunk_size)
    except click.ClickException as exc:
        _fail(exc.format_message().removeprefix("wasp: "), output)
    namespace = namespace or default_namespace(kubeconfig)
    try:
        return explain_in_cluster(Reader(cluster.api, chunk_size), spec, namespace, name, policies, options)
    except NotFound as exc:
        _fail(str(exc), output)
    except Exception as exc:  # the cluster failed (or wasp did): a reason to stop, never a finding
        _fail(unusable(exc).removeprefix("wasp: "), output)


@click.command("explain")
@click.argument("target", metavar="TYPE/NAME")
@click.option("-n", "--namespace", default=None,
              help="Namespace.  [default: the context's, else default; with --from, the object's if it is the only one of that name]")  # fmt: skip
@kubeconfig_option
@click.option(
    "--from", "dump", type=click.Path(path_type=Path), default=None,
    help="Explain from a dump instead of a cluster: a `kubectl get ... -o yaml` file, or a directory of them.",
)  # fmt: skip
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the text output (auto: on a terminal, never with NO_COLOR).")  # fmt: skip
@click.option(
    "--was-scheduler", "schedulers", multiple=True, default=("default-scheduler",), show_default=True,
    help="A scheduler name that implements workload-aware scheduling (repeatable).",
)  # fmt: skip
@click.option("--pod-selector", default="", metavar="KEY=VALUE,...",
              help="Labels of the object's pods, for a kind whose pod label wasp does not know.")  # fmt: skip
@click.option("--chunk-size", type=click.IntRange(1, 10_000), default=500, show_default=True,
              help="Objects per list page.")  # fmt: skip
@with_policy_options
def explain_command(target: str, namespace: str | None, kubeconfig: Path | None, dump: Path | None, output: str,
                    color: str, schedulers: tuple[str, ...], pod_selector: str, chunk_size: int,
                    **policy_options: t.Any) -> None:  # fmt: skip
    """Explain why a gang is not running.

    TYPE/NAME is a governed object (jobset/train), a Workload, a PodGroup or a Pod.

    Walks the object's Workload, CompositePodGroups, PodGroups and pods as wasp compiles and
    reconciles them, and prints a tree and findings, each with evidence and a fix. Read-only.

    Exit codes: 0 the gang runs or can run, 1 a finding explains why it cannot, 2 the cluster
    or the dump cannot be read.
    """
    kind_text, sep, name = target.partition("/")
    if not sep or not kind_text or not name:
        raise click.UsageError(f"TYPE/NAME expected, got {target!r}")
    o = policy_options
    policies = load_policy_set(o["policies"], o["policy_only"], o["feature_gates"], o.get("integrations", ()))
    spec = parse_type(kind_text, policies)
    if spec is None:
        raise click.UsageError(f"unknown type {kind_text!r}: a governed kind, workload, podgroup or pod")
    options = Options(frozenset(schedulers), pod_selector)
    if dump is not None:
        try:
            answer = explain(snapshot(load(dump), spec, namespace, name, policies), policies, options)
        except DumpError as exc:
            _fail(str(exc), output)
    else:
        answer = _from_cluster(kubeconfig, chunk_size, spec, namespace, name, policies, options, output)
    if output == "json":
        sys.stdout.write(render.to_json(answer))
    else:
        sys.stdout.write(render.to_text(answer, colour=use_color(color, sys.stdout)))
    sys.exit(answer.exit_code)
