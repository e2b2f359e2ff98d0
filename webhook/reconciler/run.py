"""Assemble and run the reconciler: connect, check the APIs, elect, reconcile, serve probes."""

from __future__ import annotations

import gc
import logging
import signal
import threading
import typing as t
from dataclasses import dataclass
from pathlib import Path

from webhook.governed.reconcile import reconciled_policies
from webhook.kube.api import Api, connect
from webhook.policy import PolicySet
from webhook.reconciler.controller import Options, Reconciler, governed_resources
from webhook.reconciler.leader import Elector, Fence
from webhook.reconciler.probes import ProbeServer
from webhook.reconciler.startup import missing_apis, needed, scheduling_apis
from webhook.vocab.errors import ConfigError

__all__ = ["Settings", "run"]

log = logging.getLogger("wasp.reconciler")
_YOUNG_COLLECTION: t.Final = 50_000  # allocations between two collections of the young generation


@dataclass(frozen=True)
class Settings:
    kubeconfig: Path | None
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str = "wasp-reconciler"
    lease_duration: int = 15
    renew_deadline: int = 10
    retry_period: int = 2
    probe_address: tuple[str, int] = ("0.0.0.0", 8081)
    options: Options = Options()


def run(settings: Settings, policies: PolicySet, stop: threading.Event | None = None) -> None:
    """Run until SIGTERM/SIGINT (or ``stop``); raises :class:`ConfigError` when it cannot start."""
    stop = stop or threading.Event()
    if not reconciled_policies(policies):
        raise ConfigError(
            "no policy governs a kind whose scheduling objects wasp creates (Jobs are the Job controller's); add --policies"
        )
    try:
        api = Api(connect(settings.kubeconfig))
    except Exception as exc:  # noqa: BLE001 - the client raises many types for a bad config
        raise ConfigError(f"cannot load the Kubernetes client configuration: {exc}") from None
    composite = (
        any(p.root.composite for p in reconciled_policies(policies)) and "CompositePodGroup" in policies.gates
    )
    wanted = needed(policies, governed_resources(policies), composite=composite, leases=settings.leader_elect)
    try:
        scheduling, problems = scheduling_apis(api, composite=composite)
        problems += missing_apis(api, wanted)
    except Exception as exc:  # noqa: BLE001 - unreachable server, TLS, auth
        raise ConfigError(f"cannot reach the API server: {exc}") from None
    if problems:
        raise ConfigError("\n".join(problems))
    # Every object the caches hold is acyclic JSON, freed by reference counting; the cyclic
    # collector's default pace (a young collection per 700 allocations, the old generations
    # rescanned as the caches grow) spent ~10% of the CPU of a cold start over 10,000 objects.
    gc.set_threshold(_YOUNG_COLLECTION, 50, 100)
    fence = Fence(always_open=not settings.leader_elect, renew_deadline=settings.renew_deadline)
    reconciler = Reconciler(api, policies, fence, settings.options, scheduling=scheduling).start()
    elector = None
    if settings.leader_elect:
        elector = Elector(
            api.client, fence, namespace=settings.lease_namespace, name=settings.lease_name,
            identity=settings.options.identity, lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline, retry_period=settings.retry_period,
        ).start()  # fmt: skip
    probes = ProbeServer(settings.probe_address, reconciler.healthy, lambda: reconciler.synced).start()
    log.info("reconciling %s; probes on http://%s:%d", ", ".join(map(str, governed_resources(policies))),
             *probes.server_address[:2])  # fmt: skip

    def on_signal(signum: int, frame: t.Any) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    stop.wait()
    # Writes stop first (the fence), then the loop; the Lease simply expires.
    if elector is not None:
        elector.close()
    reconciler.stop()
    probes.close()
