"""Reading a cluster for ``wasp audit`` and ``wasp doctor``: paginated lists, discovery, errors.

The connection is the reconciler's (:func:`webhook.kube.api.connect`: the kubeconfig
given, else in-cluster, else ``$KUBECONFIG``). Lists are read one page at a time (``limit``
and ``continue``), so no caller holds more than a page of a kind; a ``410 Expired`` token
goes on with the token the apiserver sends back, and the list is counted as inconsistent.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import click
import orjson
import urllib3

from webhook.kube.api import Api, ApiException, Resource, connect

__all__ = ["Cluster", "Unusable", "default_namespace", "describe", "open_cluster", "unusable"]

Json = dict[str, t.Any]


class Unusable(click.ClickException):
    """The cluster cannot be read (exit 2)."""

    exit_code = 2

    def format_message(self) -> str:
        return self.message


def _reason(exc: ApiException) -> str:
    try:
        return str(orjson.loads(exc.body or b"{}").get("message") or exc.reason)
    except (orjson.JSONDecodeError, AttributeError):
        return str(exc.reason)


def describe(exc: Exception) -> str:
    if isinstance(exc, ApiException):
        return f"{exc.status} {_reason(exc)}"
    return f"{type(exc).__name__}: {exc}"


def unusable(exc: Exception) -> str:
    """The one line for a failure while reading: the cluster's (API, connection) or wasp's own."""
    if isinstance(exc, ApiException | urllib3.exceptions.HTTPError | OSError):
        return f"wasp: cannot read the cluster: {describe(exc)}"
    return f"wasp: internal error: {describe(exc)}"


class Cluster:
    def __init__(self, api: Api, page_size: int = 500) -> None:
        self.api = api
        self.page_size = page_size
        self.inconsistent = 0  # lists continued after a 410: not one snapshot
        self._served: dict[str, frozenset[str] | None] = {}

    def served(self, group: str, version: str) -> frozenset[str] | None:
        """The resources ``group/version`` serves (None: the group/version is not served)."""
        key = f"{group}/{version}" if group else version
        if key not in self._served:
            found = self.api.discover(group, version)
            self._served[key] = frozenset(found) if found is not None else None
        return self._served[key]

    def serves(self, resource: Resource) -> bool:
        return resource.plural in (self.served(resource.group, resource.version) or ())

    def pages(
        self, resource: Resource, namespace: str | None = None, *, selector: str = ""
    ) -> t.Iterator[list[Json]]:
        """The items of a list, a page at a time."""
        token = ""
        while True:
            query: list[tuple[str, t.Any]] = [("limit", self.page_size)]
            if token:
                query.append(("continue", token))
            if selector:
                query.append(("labelSelector", selector))
            try:
                doc = self.api.call("GET", resource.path(namespace), query=query)
            except ApiException as exc:
                fresh = _continue_token(exc) if token and exc.status == 410 else ""
                if not fresh:
                    raise
                self.inconsistent += 1
                token = fresh
                continue
            items = doc.get("items")
            yield items if isinstance(items, list) else []
            token = str((doc.get("metadata") or {}).get("continue") or "")
            if not token:
                return

    def get(self, resource: Resource, namespace: str | None, name: str) -> Json | None:
        """The object, or None if it does not exist."""
        try:
            return t.cast(Json, self.api.call("GET", resource.path(namespace, name)))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise


def _continue_token(exc: ApiException) -> str:
    try:
        doc = orjson.loads(exc.body or b"{}")
    except orjson.JSONDecodeError:
        return ""
    return str(((doc.get("metadata") or {}) if isinstance(doc, dict) else {}).get("continue") or "")


def open_cluster(kubeconfig: Path | None, page_size: int = 500) -> Cluster:
    """A :class:`Cluster` for the kubeconfig (exit 2 with one line when it cannot be loaded)."""
    try:
        return Cluster(Api(connect(kubeconfig)), page_size)
    except Exception as exc:  # the client raises ConfigException, OSError, yaml errors...
        raise Unusable(f"wasp: cannot load the cluster configuration: {describe(exc)}") from None


def default_namespace(kubeconfig: Path | None) -> str:
    """The current context's namespace (as kubectl picks it), else ``default``."""
    from kubernetes import config

    try:
        _, active = t.cast(t.Any, config).list_kube_config_contexts(str(kubeconfig) if kubeconfig else None)
    except Exception:  # no kubeconfig (in-cluster) or an unreadable one: connect() reports it
        return "default"
    namespace = (active or {}).get("context", {}).get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"
