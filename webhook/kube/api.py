"""The reconciler's only contact with the ``kubernetes`` client: typed calls on JSON dicts.

Every resource (governed CRDs, scheduling objects, Pods, Events) goes through the client's
generic ``CustomObjectsApi``-style paths, so objects stay plain JSON, exactly what the pure
decisions read, and no model class is deserialised on the hot path.
"""

from __future__ import annotations

import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

import orjson
from kubernetes import client, config
from kubernetes.client import rest
from kubernetes.client.exceptions import ApiException

__all__ = ["Api", "ApiException", "Resource", "connect", "retry_after"]

Json = dict[str, t.Any]
# Seconds: connecting, then reading one answer; watches pass their own, longer read timeout.
REQUEST_TIMEOUT: t.Final = (5.0, 30.0)
# The longest Retry-After honoured: a server asking for more is waited for this long, then asked
# again (a minute is far beyond what the apiserver's throttling filters ask for).
MAX_RETRY_AFTER: t.Final = 60.0


def retry_after(exc: BaseException) -> float:
    """The seconds a failed call's answer asks the client to wait before trying again (0: none).

    As client-go's rest client reads it: a ``Retry-After`` header on a 429 or a 5xx, in its
    seconds form (an HTTP date is not honoured); capped at :data:`MAX_RETRY_AFTER`.
    """
    if not isinstance(exc, ApiException) or not (exc.status == 429 or (exc.status or 0) >= 500):
        return 0.0
    value = (exc.headers or {}).get("Retry-After")
    try:
        seconds = int(str(value).strip())
    except ValueError:
        return 0.0
    return min(float(max(seconds, 0)), MAX_RETRY_AFTER)


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return base + (f"/{name}" if name is not None else "")

    def __str__(self) -> str:
        return f"{self.api_version}/{self.plural}"


WORKLOADS: t.Final = Resource("scheduling.k8s.io", "v1beta1", "workloads", "Workload")
POD_GROUPS: t.Final = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
COMPOSITE_POD_GROUPS: t.Final = Resource(
    "scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup"
)
PODS: t.Final = Resource("", "v1", "pods", "Pod")
EVENTS: t.Final = Resource("", "v1", "events", "Event")
BY_KIND: t.Final = {r.kind: r for r in (WORKLOADS, POD_GROUPS, COMPOSITE_POD_GROUPS)}


def connect(kubeconfig: Path | None) -> t.Any:
    """An ``ApiClient``: the kubeconfig given; else in-cluster; else ``$KUBECONFIG`` (or ~/.kube/config)."""
    if kubeconfig is not None:
        return config.new_client_from_config(str(kubeconfig))
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)
        return client.ApiClient(configuration)
    return config.new_client_from_config()


class Api:
    """JSON in, JSON out; raises :class:`ApiException` with the HTTP status on failure."""

    def __init__(self, api_client: t.Any) -> None:
        self.client = api_client
        configuration = api_client.configuration
        # Workers, the Event sender and the watches share one pool: the default (5 per CPU)
        # makes them wait for, and churn, connections. The pool is built with the client.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
        api_client.rest_client = rest.RESTClientObject(configuration)

    def call(self, method: str, path: str, *, body: object = None, query: list[tuple[str, t.Any]] | None = None,
             content_type: str = "application/json", stream: bool = False,
             timeout: tuple[float, float] = REQUEST_TIMEOUT) -> t.Any:  # fmt: skip
        headers = {"Accept": "application/json", "Content-Type": content_type}
        # The client builds the URL, headers and credentials; the body is handed to its REST
        # layer as it is: it is plain JSON already, and the client's generic model walk over it
        # (sanitize_for_serialization) was a sixth of the CPU of every write.
        method, url, headers, _, _ = self.client.param_serialize(
            method, path, query_params=query or [], header_params=headers, auth_settings=["BearerToken"]
        )
        response = self.client.call_api(method, url, headers, body, _request_timeout=timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        if stream:
            return response.response  # the urllib3 response, read line by line
        response.read()
        return orjson.loads(response.data or b"null")

    def list(self, resource: Resource) -> Json:
        return t.cast(Json, self.call("GET", resource.path()))

    def get(self, resource: Resource, namespace: str, name: str) -> Json:
        return t.cast(Json, self.call("GET", resource.path(namespace, name)))

    def create(self, resource: Resource, namespace: str, body: Json) -> Json:
        return t.cast(Json, self.call("POST", resource.path(namespace), body=body))

    def json_patch(self, resource: Resource, namespace: str, name: str, ops: t.Sequence[Json]) -> Json:
        path = resource.path(namespace, name)
        return t.cast(
            Json, self.call("PATCH", path, body=list(ops), content_type="application/json-patch+json")
        )

    def watch(self, resource: Resource, resource_version: str, timeout_seconds: int) -> t.Any:
        """The raw streaming response of a watch from ``resource_version``, with bookmarks."""
        query = [("watch", "true"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", timeout_seconds)]  # fmt: skip
        # The read timeout outlives the server's timeoutSeconds: a silent, dead connection is
        # noticed, a quiet healthy one (bookmarks arrive) is not cut.
        return self.call(
            "GET", resource.path(), query=query, stream=True, timeout=(5.0, timeout_seconds + 30.0)
        )

    def discover(self, group: str, version: str) -> set[str] | None:
        """The resource names ``group/version`` serves, or ``None`` if it serves none."""
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            doc = self.call("GET", path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return {r.get("name", "") for r in doc.get("resources", []) if isinstance(r, dict)}

    def group_versions(self, group: str) -> dict[str, set[str] | None]:
        """Every version of API ``group`` discovery lists, with the resources each serves
        (``{}`` when the group is not served)."""
        try:
            doc = self.call("GET", f"/apis/{group}")
        except ApiException as exc:
            if exc.status == 404:
                return {}
            raise
        versions = [v.get("version", "") for v in doc.get("versions", []) if isinstance(v, dict)]
        return {v: self.discover(group, v) for v in versions if v}
