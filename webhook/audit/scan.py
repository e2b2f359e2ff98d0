"""``wasp audit``'s I/O: the cluster read page by page and fed to the pure judgements
(:mod:`webhook.governed.drift`, :mod:`webhook.governed.foreign_gangs`). Read-only.

Memory: the audit goes namespace by namespace (every join is within a namespace). In each,
the Workloads, PodGroups and CompositePodGroups are read page by page into an on-disk index
(:class:`webhook.audit.index.NamespaceIndex`), slimmed to what discovery reads; pods are
read page by page and only counted (pods without a ``schedulingGroup`` per controller,
members per foreign gang); then governed objects are read page by page, and for each page
the reconciler's own index (:class:`webhook.reconciler.world.World`) is filled with just the
scheduling objects that page's objects could match, and each object is judged from it. What
is held is one page and its candidates, plus the namespace's foreign-gang counters; it does
not grow with the number of namespaces, governed objects, scheduling objects or pods.
"""

from __future__ import annotations

import os
import sys
import typing as t

from webhook.audit.index import NamespaceIndex
from webhook.audit.output import AuditReporter, Summary
from webhook.cli.cluster import Cluster
from webhook.explain.cluster import Reader
from webhook.explain.diagnose import summary_line
from webhook.explain.runtime import Runtime
from webhook.governed import foreign_gangs
from webhook.governed.apis import GROUP, PLURALS, choose
from webhook.governed.drift import (
    KINDS,
    Finding,
    judge,
    judge_orphan,
    judge_pod,
    judge_scheduling_object,
    object_ref,
)
from webhook.governed.grouping import GroupingCache
from webhook.governed.modes import kind_modes
from webhook.governed.outsiders import CRDS as CRD_RESOURCE
from webhook.governed.outsiders import slim_crd
from webhook.kube.api import PODS, ApiException, Resource
from webhook.policy import PolicySet

__all__ = ["Audit", "Progress", "namespaces"]

Json = dict[str, t.Any]
NAMESPACES: t.Final = Resource("", "v1", "namespaces", "Namespace")
CRDS: t.Final = Resource(*CRD_RESOURCE)
# (system, gang name) -> [the ForeignGang, member pods, members that also name a native PodGroup]
Tally = dict[tuple[str, str], list[t.Any]]


class Progress:
    """A one-line counter on stderr, only on a terminal and never in CI."""

    def __init__(self, enabled: bool | None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty() and not os.environ.get("CI")
        self.enabled = enabled

    def show(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{text}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


class Audit:
    def __init__(self, cluster: Cluster, policies: PolicySet, reporter: AuditReporter, selector: str,
                 progress: Progress, runtime: bool = True) -> None:  # fmt: skip
        self.cluster, self.policies, self.reporter = cluster, policies, reporter
        self.selector, self.progress = selector, progress
        self.summary = Summary()
        # The scheduling versions the cluster serves and wasp has a schema for (never guessed).
        chosen = choose(cluster.api.group_versions(GROUP), write=False)
        self.kinds = [
            (k, Resource(GROUP, chosen.versions[k], PLURALS[k], k)) for k in KINDS if k in chosen.versions
        ]
        self.was = {k for k, _ in self.kinds} >= {"Workload", "PodGroup"}
        self.summary.not_served += [chosen.missing[k] for k in KINDS if k in chosen.missing]
        self.foreign: list[tuple[foreign_gangs.System, Resource]] = []
        for system, spec in foreign_gangs.SYSTEMS.items():
            if spec is not None and cluster.serves(Resource(*spec)):
                self.foreign.append((system, Resource(*spec)))
        self.policies = policies = _with_modes(cluster, policies, self.summary)
        self.governed: list[Resource] = []
        for policy in policies.policies:
            resource = Resource(policy.group, policy.versions[0], policy.resource, policy.kind)
            if cluster.serves(resource):
                self.governed.append(resource)
            else:
                self.summary.not_served.append(str(resource))
        # wasp explain's verdict per governed object, through its functions (docs/explain.md).
        self.runtime = (
            Runtime(Reader(cluster.api, cluster.page_size), policies) if runtime and self.was else None
        )

    def emit(self, ref: Json, found: t.Sequence[Finding]) -> None:
        for f in found:
            self.summary.findings[f.severity] += 1
        self.reporter.object(ref, found)

    def namespace(self, ns: str, index: int, total: int) -> None:
        with NamespaceIndex() as store:
            self._namespace(ns, index, total, store)

    def _namespace(self, ns: str, index: int, total: int, store: NamespaceIndex) -> None:
        s = self.summary

        def tick(what: str) -> None:
            done = int(20 * (index - 1) / total)  # by namespace: the only total known before listing
            bar = "#" * done + "." * (20 - done)
            self.progress.show(
                f"[{bar}] wasp audit: namespace {ns} ({index}/{total}): {what}; {s.objects} governed objects"
            )

        for kind, resource in self.kinds:
            for page in self.cluster.pages(resource, ns):
                for obj in page:
                    s.scheduling_objects += 1
                    self.emit(object_ref(obj), judge_scheduling_object(obj, self.policies))
                store.add_scheduling(kind, page)
                tick(f"{s.scheduling_objects} scheduling objects")
        gangs: Tally = {}
        for system, resource in self.foreign:
            for page in self.cluster.pages(resource, ns, selector=self.selector):
                for obj in page:
                    gang = foreign_gangs.from_pod_group(system, obj)
                    gangs[(system, gang.name)] = [gang, 0, 0]

        def pod_group_exists(namespace: str, name: str) -> bool:
            return namespace == ns and store.has("PodGroup", name)

        for page in self.cluster.pages(PODS, ns):
            store.add_pods(page)
            for pod in page:
                s.pods += 1
                found = judge_pod(pod, pod_group_exists)
                if found:
                    self.emit(object_ref(pod), found)
                self._count_members(pod, ns, gangs)
            tick(f"{s.pods} pods")
        for gang, members, native in gangs.values():
            self._foreign(gang, members, native)
        for resource in self.governed:
            for page in self.cluster.pages(resource, ns, selector=self.selector):
                # The governed uids of the namespace, for the orphans.
                store.add_governed(str((obj.get("metadata") or {}).get("uid", "")) for obj in page)
                world = store.world_for(page)  # what this page's plans can match, and no more
                if self.runtime is not None:
                    self.runtime.page(ns, page)  # the page's objects' pods, for the runtime line
                for obj in page:
                    s.objects += 1
                    observed = store.observe(world, obj)
                    found = judge(obj, self.policies, observed, groups=self.was)
                    if self.runtime is not None:
                        answer = self.runtime.summary(
                            obj, observed.workloads, observed.groups, self.was, found
                        )
                        found.append(Finding("Runtime", "info", object_ref(obj), "", summary_line(answer),
                                             detail={"verdict": answer.verdict,
                                                     "codes": [f.code for f in answer.findings]}))  # fmt: skip
                    self.emit(object_ref(obj), found)
                tick(f"{resource.plural}")
        if not self.selector:  # with a selector, unselected owners would look like none
            for obj in store.objects():
                if found := judge_orphan(obj, store.governed):
                    self.emit(object_ref(obj), found)
        s.namespaces += 1
        self.reporter.namespace_done(ns)

    @staticmethod
    def _count_members(pod: Json, ns: str, gangs: Tally) -> None:
        spec = pod.get("spec") or {}
        stamped = bool(isinstance(spec, dict) and spec.get("schedulingGroup"))
        for system, name in foreign_gangs.memberships(pod):
            entry = gangs.get((system, name))
            if entry is None and system == "kueue":
                annotations = (pod.get("metadata") or {}).get("annotations") or {}
                total = annotations.get(foreign_gangs.KUEUE_TOTAL_COUNT)
                entry = gangs[(system, name)] = [foreign_gangs.from_kueue(ns, name, total), 0, 0]
            if (
                entry is not None
            ):  # a member of a Volcano/coscheduling group with no object: nothing to translate
                entry[1] += 1
                entry[2] += stamped

    def _foreign(self, gang: foreign_gangs.ForeignGang, members: int, native: int) -> None:
        self.summary.foreign_gangs += 1
        kind = "PodGroup" if gang.system != "kueue" else "KueuePodGroup"
        api_version = gang.source.split()[0] if gang.system != "kueue" else "kueue.x-k8s.io"
        ref = {"apiVersion": api_version, "kind": kind, "namespace": gang.namespace, "name": gang.name}
        policy = gang.native["schedulingPolicy"]
        equivalent = f"gang.minCount {policy['gang']['minCount']}" if "gang" in policy else "basic (no gang)"
        message = f"{gang.system} gang of {members} pods; native equivalent: schedulingPolicy {equivalent}"
        if gang.untranslated:
            message += f"; no native equivalent for {', '.join(sorted(gang.untranslated))}"
        detail = {**gang.to_json(), "pods": members, "podsInNativeGroups": native}
        found = [Finding("ForeignGang", "info", ref, "", message, detail=detail)]
        if native:
            found.append(Finding("BothGangs", "warning", ref, "",
                                 f"{native} of its {members} pods also name a native PodGroup (spec.schedulingGroup): "
                                 f"both gangs apply to them; keep one", detail={"pods": members, "podsInNativeGroups": native}))  # fmt: skip
        self.emit(ref, found)


def _with_modes(cluster: Cluster, policies: PolicySet, summary: Summary) -> PolicySet:
    """Each governed kind's mode into the summary, and the native kinds into the policies (so a
    native kind's objects are judged as the reconciler plans them: ``ManagedNatively``)."""
    crds = {f"{p.resource}.{p.group}": _crd(cluster, f"{p.resource}.{p.group}")
            for p in policies.policies if p.group and cluster.serves(CRDS)}  # fmt: skip
    summary.modes = [m.text() for m in kind_modes(policies, crds)]
    cache = GroupingCache()
    for crd in crds.values():
        if crd is not None:
            cache.crd_changed(None, slim_crd(policies)(crd))
    return policies.with_grouping(cache)


def _crd(cluster: Cluster, name: str) -> Json | None:
    try:
        return cluster.get(CRDS, None, name)
    except ApiException as exc:
        if exc.status in (401, 403):
            return None  # not allowed to read CRDs: the kind's mode is judged without its schema
        raise


def namespaces(cluster: Cluster) -> t.Iterator[str]:
    for page in cluster.pages(NAMESPACES):
        for ns in page:
            yield str((ns.get("metadata") or {}).get("name", ""))
