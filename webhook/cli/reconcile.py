"""``wasp reconcile``: create and keep the Workload and groups of every governed object.

The ``kubernetes`` client is imported only once the command runs, so the other commands
never load it. Exit codes: 0 after SIGTERM/SIGINT, 2 when it cannot start (bad flags or
policies, unreachable API server, or an API it needs is not served: one line each).
"""

from __future__ import annotations

import logging
import os
import socket
import typing as t
from pathlib import Path

import click

from webhook.cli.kubeconfig_flag import kubeconfig_option
from webhook.cli.validate import load_policy_set, with_policy_options
from webhook.vocab.errors import ConfigError
from webhook.vocab.gates import FeatureGates

__all__ = ["reconcile"]

_IN_CLUSTER_NAMESPACE: t.Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class CannotStart(click.ClickException):
    exit_code = 2


def _default_namespace() -> str:
    try:
        return _IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


@click.command()
@kubeconfig_option
@with_policy_options
@click.option(
    "--leader-elect/--no-leader-elect",
    default=True,
    show_default=True,
    help="Hold a coordination.k8s.io Lease so only one replica writes.",
)
@click.option(
    "--lease-namespace",
    default=None,
    help="Namespace of the Lease.  [default: the pod's namespace, else default]",
)
@click.option("--lease-name", default="wasp-reconciler", show_default=True)
@click.option("--lease-duration", type=click.IntRange(3), default=15, show_default=True, help="Seconds.")
@click.option("--renew-deadline", type=click.IntRange(2), default=10, show_default=True, help="Seconds.")
@click.option("--retry-period", type=click.IntRange(1), default=2, show_default=True, help="Seconds.")
@click.option("--identity", default=None, help="This replica's name in the Lease.  [default: hostname_pid]")
@click.option("--workers", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option(
    "--resync-period",
    type=click.FloatRange(1),
    default=300.0,
    show_default=True,
    help="Seconds between re-checks of every governed object (writes nothing when nothing changed).",
)
@click.option(
    "--watch-timeout",
    type=click.IntRange(1),
    default=300,
    show_default=True,
    help="Seconds a watch stays open before it is resumed.",
)
@click.option(
    "--event-qps", type=click.FloatRange(0.1), default=50.0, show_default=True,
    help="Events per second at most; Events beyond a 1000-Event buffer are dropped (and counted).",
)  # fmt: skip
@click.option("--event-burst", type=click.IntRange(1), default=200, show_default=True)
@click.option(
    "--probe-address",
    default="0.0.0.0:8081",
    show_default=True,
    help="host:port for /healthz, /readyz and /metrics (plain HTTP).",
)
@click.option(
    "--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True
)
def reconcile(kubeconfig: Path | None, policies: tuple[Path, ...], integrations: tuple[Path, ...],
              policy_only: bool, feature_gates: FeatureGates,
              leader_elect: bool, lease_namespace: str | None, lease_name: str, lease_duration: int,
              renew_deadline: int, retry_period: int, identity: str | None, workers: int, resync_period: float,
              watch_timeout: int, event_qps: float, event_burst: int, probe_address: str,
              log_level: str) -> None:  # fmt: skip
    """Create and keep the Workload, CompositePodGroups and PodGroups of governed objects.

    For every kind a policy governs whose controller does not create them itself (not
    batch Jobs: the 1.37 Job controller does), wasp creates the objects kube-scheduler
    reads, with the names the webhook stamps on pods, resizes gangs in place, and never
    deletes anything (owner references let the garbage collector do it).

    \b
    In a cluster:  wasp reconcile --policies /policies
    Locally:       wasp reconcile --kubeconfig ~/.kube/config --no-leader-elect --policies examples/trainer
    """
    if not lease_duration > renew_deadline > 1.2 * retry_period:
        raise click.UsageError("need --lease-duration > --renew-deadline > 1.2 × --retry-period")
    host, sep, port = probe_address.rpartition(":")
    if not sep or not port.isdigit():
        raise click.BadParameter("expected host:port", param_hint="--probe-address")
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level != "debug":
        # The client's election logs every renewal at INFO; wasp logs leading and losing itself.
        logging.getLogger("leaderelection").setLevel(logging.WARNING)
    policy_set = load_policy_set(policies, policy_only, feature_gates, integrations)
    from webhook.reconciler.controller import Options
    from webhook.reconciler.run import Settings, run

    name = identity or f"{socket.gethostname()}_{os.getpid()}"
    settings = Settings(
        kubeconfig=kubeconfig, leader_elect=leader_elect, lease_namespace=lease_namespace or _default_namespace(),
        lease_name=lease_name, lease_duration=lease_duration, renew_deadline=renew_deadline,
        retry_period=retry_period, probe_address=(host or "0.0.0.0", int(port)),
        options=Options(workers=workers, resync_period=resync_period, watch_timeout=watch_timeout, identity=name,
                        event_qps=event_qps, event_burst=event_burst),
    )  # fmt: skip
    try:
        run(settings, policy_set)
    except ConfigError as exc:
        raise CannotStart(str(exc)) from None
