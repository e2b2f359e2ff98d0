"""``wasp doctor``: is this cluster ready for WAS and for wasp? A checklist with fixes.

The command only: the facts are gathered by :mod:`webhook.doctor.cluster` and judged by
:func:`webhook.doctor.checks.checks`. Nothing is written: the gate probes are ``dryRun=All``
creates.

Exit codes: 0 every required check passes, 1 one fails, 2 the cluster cannot be read.
"""

from __future__ import annotations

import sys
import typing as t
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from webhook.cli.cluster import Unusable, open_cluster, unusable
from webhook.cli.kubeconfig_flag import kubeconfig_option
from webhook.cli.reporters_data import dumps
from webhook.doctor.checks import Check, Expected, checks, exit_code
from webhook.doctor.cluster import gather, modes, release_lease

__all__ = ["doctor"]

Json = dict[str, t.Any]
_MARKS: t.Final = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}


def _text(found: t.Sequence[Check], code: int) -> str:
    lines = []
    for c in found:
        optional = "" if c.required else " (optional)"
        lines.append(f"[{_MARKS[c.verdict]}] {c.title}{optional}: {c.detail}")
        if c.fix and c.verdict != "pass":
            lines.append(f"       fix: {c.fix}")
    counts = {v: sum(c.verdict == v for c in found) for v in _MARKS}
    verdict = "ready" if code == 0 else "NOT ready: a required check fails"
    lines.append(f"wasp doctor: {len(found)} checks: {counts['pass']} pass, {counts['warn']} warn, "
                 f"{counts['fail']} fail: {verdict}")  # fmt: skip
    return "\n".join(lines)


@click.command()
@kubeconfig_option
@click.option(
    "-n",
    "--namespace",
    default="wasp-system",
    show_default=True,
    help="The namespace wasp is installed in (README and docs/install.md install into wasp-system).",
)
@click.option(
    "--release",
    default="wasp",
    show_default=True,
    help="The chart's full name (its webhook configurations are RELEASE-validating and RELEASE-mutating).",
)
@click.option(
    "--probe-namespace",
    default="default",
    show_default=True,
    help="Namespace of the dry-run creates that tell which feature gates are on.",
)
@click.option(
    "--lease-name",
    default=None,
    help="The reconciler's Lease.  [default: the one the release's wasp.dev/install annotation names, "
    "else RELEASE-reconciler]",
)
@click.option(
    "--expiry-margin",
    type=click.IntRange(0),
    default=30,
    show_default=True,
    help="Days: a certificate expiring sooner fails.",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def doctor(kubeconfig: Path | None, namespace: str, release: str, probe_namespace: str, lease_name: str | None,
           expiry_margin: int, output: str) -> None:  # fmt: skip
    """Check that the cluster is ready for Workload-Aware Scheduling and for wasp.

    One line per check (server version, WAS APIs, feature gates, wasp's webhook configurations
    and their certificates, the Service's endpoints, the reconciler's Lease), each with a
    verdict and, when it fails, the fix. Read-only: gates are probed with dry-run creates.

    Exit codes: 0 every required check passes, 1 one fails, 2 the cluster cannot be read.
    """
    expected = Expected(expiry_margin=timedelta(days=expiry_margin))
    try:
        cluster = open_cluster(kubeconfig)
        facts = gather(cluster, namespace=namespace, release=release, probe_namespace=probe_namespace,
                       lease=lease_name, now=datetime.now(UTC))  # fmt: skip
        expected = replace(expected, lease_name=lease_name or release_lease(facts.validating, release))
    except Exception as exc:
        reason = exc.message if isinstance(exc, Unusable) else unusable(exc)
        if output == "json":  # closed, as on success: a pipeline that saved it can still parse it
            doc = {"checks": [], "ready": False, "exitCode": 2, "error": reason}
            sys.stdout.write(dumps(doc, utf8=True) + "\n")
        raise Unusable(reason) from None
    found = checks(facts, expected) + modes(cluster)
    code = exit_code(found)
    if output == "json":
        doc = {"checks": [c.to_json() for c in found], "ready": code == 0, "exitCode": code}
        sys.stdout.write(dumps(doc, utf8=True) + "\n")
    else:
        sys.stdout.write(_text(found, code) + "\n")
    sys.exit(code)
