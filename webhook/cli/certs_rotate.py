"""``wasp certs rotate``: one renewal check of the self-managed certificates (the chart's CronJob).

The decision is :func:`webhook.certs.rotation.plan_rotation`, a pure function of the Secret
and the clock; this module only does the I/O, with the official Kubernetes client (imported
when the command runs, so the rest of the CLI never needs it):

1. read the Secret (the source of truth);
2. plan the step at ``now``;
3. patch ``caBundle`` of every entry of both webhook configurations to the new bundle —
   *before* the Secret changes, so the apiserver trusts a new serving certificate before any
   pod can load it;
4. write the Secret with its ``resourceVersion`` (a concurrent writer makes this run fail
   and the next one start over), which the kubelet then syncs into the pods; the server
   reloads the files by itself.

Exit codes: 0 done (changed or not), 1 an API call failed, 2 usage errors.
"""

from __future__ import annotations

import base64
import functools
import os
import typing as t
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import click

from webhook.certs.generate import service_dns_names
from webhook.certs.rotation import Material, RotationPolicy, plan_rotation
from webhook.cli.extras import require

__all__ = ["Cluster", "bundle_patch", "rotate", "rotate_once"]

_option = functools.partial(click.option, show_envvar=True)


class Cluster(t.Protocol):
    """The four API calls rotation makes (KubernetesCluster; tests pass a fake)."""

    def read_secret(self) -> tuple[dict[str, bytes], str]: ...  # data, resourceVersion

    def write_secret(self, data: dict[str, bytes], resource_version: str) -> None: ...

    def read_webhooks(self, kind: str) -> list[dict[str, t.Any]]: ...  # the entries, as JSON

    def patch_webhooks(self, kind: str, patch: list[dict[str, t.Any]]) -> None: ...


KINDS: t.Final = ("validating", "mutating")


def bundle_patch(entries: list[dict[str, t.Any]], bundle: bytes) -> list[dict[str, t.Any]]:
    """A JSON Patch setting ``caBundle`` of every entry that differs; each change is guarded
    by a ``test`` of the entry's name, so a concurrent reordering fails instead of
    patching the wrong entry."""
    encoded = base64.b64encode(bundle).decode()
    ops: list[dict[str, t.Any]] = []
    for i, entry in enumerate(entries):
        if (entry.get("clientConfig") or {}).get("caBundle") != encoded:
            ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": entry["name"]})
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": encoded})
    return ops


def rotate_once(
    cluster: Cluster, *, now: datetime, policy: RotationPolicy, hostnames: list[str], ca_name: str
) -> list[str]:
    """One check: plan, patch both webhook configurations, then write the Secret. Returns
    what was done, one line per change."""
    data, resource_version = cluster.read_secret()
    rotation = plan_rotation(
        Material.from_secret(data), now=now, policy=policy, hostnames=hostnames, ca_name=ca_name
    )
    done = [message for _, message in rotation.actions]
    for kind in KINDS:
        patch = bundle_patch(cluster.read_webhooks(kind), rotation.material.bundle)
        if patch:
            cluster.patch_webhooks(kind, patch)
            done.append(f"updated caBundle of {len(patch) // 2} {kind} webhook entr(y/ies)")
    if rotation.changed:
        cluster.write_secret(rotation.material.to_secret(), resource_version)
    return done


@dataclass
class KubernetesCluster:
    """:class:`Cluster` over the official client, in-cluster credentials first."""

    namespace: str
    secret: str
    webhooks: dict[str, str]  # kind -> configuration name

    def __post_init__(self) -> None:
        from kubernetes import client, config

        # A configuration of our own, not the client's process-wide default; KUBECONFIG is
        # read now (the client reads it once, at import).
        settings = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=settings)  # type: ignore[no-untyped-call]
        except config.ConfigException:
            kubeconfig = os.environ.get("KUBECONFIG")
            config.load_kube_config(config_file=kubeconfig, client_configuration=settings)  # type: ignore[no-untyped-call]
        self.api = client.ApiClient(settings)
        self.core = client.CoreV1Api(self.api)
        self.admission = client.AdmissionregistrationV1Api(self.api)

    def read_secret(self) -> tuple[dict[str, bytes], str]:
        self._secret = self.core.read_namespaced_secret(self.secret, self.namespace)
        assert self._secret.metadata is not None  # the apiserver always sends metadata
        data = {k: base64.b64decode(v) for k, v in (self._secret.data or {}).items()}
        return data, str(self._secret.metadata.resource_version)

    def write_secret(self, data: dict[str, bytes], resource_version: str) -> None:
        # The object as read, so its resourceVersion goes back: a concurrent change gets 409.
        secret = self._secret
        assert secret.metadata is not None and secret.metadata.resource_version == resource_version
        secret.data = {k: base64.b64encode(v).decode() for k, v in data.items()}
        self.core.replace_namespaced_secret(self.secret, self.namespace, secret)

    def read_webhooks(self, kind: str) -> list[dict[str, t.Any]]:
        read = getattr(self.admission, f"read_{kind}_webhook_configuration")
        config = self.api.sanitize_for_serialization(read(self.webhooks[kind]))  # type: ignore[no-untyped-call]
        return list(config.get("webhooks") or [])

    def patch_webhooks(self, kind: str, patch: list[dict[str, t.Any]]) -> None:
        patch_config = getattr(self.admission, f"patch_{kind}_webhook_configuration")
        patch_config(self.webhooks[kind], patch, _content_type="application/json-patch+json")


@click.command()
@_option("--namespace", required=True, help="Namespace of the Secret and the Service.")
@_option("--secret", required=True, help="The Secret holding the CA, the serving pair and the bundle.")
@_option("--service", required=True, help="The webhook's Service (the certificate covers its names).")
@_option("--validating-webhook", required=True, help="ValidatingWebhookConfiguration whose caBundle to keep.")
@_option("--mutating-webhook", required=True, help="MutatingWebhookConfiguration whose caBundle to keep.")
@_option("--cluster-domain", default="cluster.local", show_default=True, help="The cluster's DNS domain.")
@_option("--ca-validity-days", type=click.IntRange(min=2), default=3650, show_default=True)
@_option("--serving-validity-days", type=click.IntRange(min=1, max=365), default=365, show_default=True)
@_option("--renew-before-days", type=click.IntRange(min=1), default=90, show_default=True)
@_option("--overlap-hours", type=click.IntRange(min=1), default=24, show_default=True,
         help="How long a new CA is trusted before it signs, and an old one after.")  # fmt: skip
def rotate(
    namespace: str,
    secret: str,
    service: str,
    validating_webhook: str,
    mutating_webhook: str,
    cluster_domain: str,
    ca_validity_days: int,
    serving_validity_days: int,
    renew_before_days: int,
    overlap_hours: int,
) -> None:
    """Renew the serving certificate before expiry and rotate the CA with an overlap window.

    Safe to run at any time and repeatedly: without anything due it changes nothing.
    """
    require("certs rotate", "cluster")
    policy = RotationPolicy(
        ca_validity=timedelta(days=ca_validity_days), serving_validity=timedelta(days=serving_validity_days),
        renew_before=timedelta(days=renew_before_days), overlap=timedelta(hours=overlap_hours),
    )  # fmt: skip
    hostnames = service_dns_names(service, namespace, cluster_domain=cluster_domain)
    hostnames.insert(0, hostnames.pop(2))  # <svc>.<ns>.svc first: it becomes the CN
    webhooks = {"validating": validating_webhook, "mutating": mutating_webhook}
    try:
        cluster = KubernetesCluster(namespace, secret, webhooks)
        done = rotate_once(cluster, now=datetime.now(UTC), policy=policy, hostnames=hostnames,
                           ca_name=f"{service}.{namespace} webhook CA")  # fmt: skip
    except Exception as exc:  # the client's ApiException, config and network errors alike
        raise click.ClickException(f"rotation failed: {exc}") from None
    for line in done or ["nothing to do: the certificates are valid and the caBundles current"]:
        click.echo(line)
