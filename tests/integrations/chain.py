"""Replay a controller's object chain through wasp's webhooks, and check where every pod lands.

A test builds the objects a controller builds, in its order, with the owners, labels and
annotations that controller sets (../shared/notes/ecosystem-crds.md), and passes each to
:meth:`Chain.create`: the mutating webhook's function runs on it (CREATE), the validating
one must not deny it, and the stored object (given a UID, as the apiserver does) comes back,
so that the next object is built from what was really stored. Pods are built from pod
templates as controllers build them (:meth:`Chain.pod`), or as the Job controller builds a
Job's pods (:meth:`Chain.job_pods`, which also stamps them as the 1.37 Job controller does
for a delegated Job).

:meth:`Chain.check` then proves that every pod either points at a PodGroup of the desired
state or is left alone for a reason the test names: no pod ever points at a name nobody
creates. The desired state is what the reconciler's pure plan creates for every object it
plans, run from nothing until it creates nothing more, plus the PodGroups the 1.37 Job
controller creates for delegated Jobs (docs/design.md §7.5): one per Job carrying
``scheduling.k8s.io/group-template-name`` whose controller owns a Workload with that template.

    chain = Chain(policies)
    jobset = chain.create(manifest)                          # the user's object
    job = chain.create(job_body, by=jobset)                  # its controller owner is set from ``by``
    pods = chain.job_pods(job, 2)                            # the Job controller's pods
    chain.check(left_alone={"submitter": "outside the gang"})  # pod-name prefix -> the reason
"""

from __future__ import annotations

import copy
import itertools
import typing as t
from dataclasses import dataclass

from webhook.compiler.annotations import GROUP_TEMPLATE_NAME
from webhook.compiler.names import generate_pod_group_name
from webhook.governed.desired_groups import converge
from webhook.governed.grouping import GroupingCache, slim_workload
from webhook.governed.membership import membership_policy
from webhook.governed.mutation import mutate_object
from webhook.governed.outsiders import slim_member
from webhook.governed.ownership import controller_of
from webhook.governed.reconcile import Mode, management_mode
from webhook.governed.reconcile_model import controller_ref_names, counts
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet

__all__ = ["Chain", "Landing", "owner_ref"]

Json = dict[str, t.Any]


def owner_ref(obj: Json) -> Json:
    """The controller ownerReference a controller sets on what it creates from ``obj``."""
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


@dataclass(frozen=True)
class Landing:
    """Where one pod ended: its PodGroup name, or ``None`` and the warnings it was given."""

    pod: str
    group: str | None
    warnings: tuple[str, ...]


class Chain:
    """``down``: the indices (in creation order, from 0) of the creates during which wasp's
    webhooks are down under ``failurePolicy: Ignore`` (stored as created); ``foreign``:
    Workloads someone other than wasp made. Every admission sees the grouping cache as a fresh list of what is stored (what the
    webhook's watch holds, docs/decisions.md §30)."""

    def __init__(self, policies: PolicySet) -> None:
        self.policies = policies
        self.objects: list[Json] = []
        self.warnings: dict[str, tuple[str, ...]] = {}
        self.down: t.Container[int] = ()
        self.patched: dict[str, bool] = {}  # Kind/name -> wasp's mutating webhook changed it
        self.admitted: dict[str, Json] = {}  # Kind/name -> the object as its controller sent it
        self.created = 0
        self.foreign: list[Json] = []
        self.natives: dict[tuple[str, str], str] = {}  # (group, kind) -> why, from the served CRDs
        self._uids = itertools.count(1)

    def grouping(self) -> GroupingCache:
        """The webhook's grouping cache after a list of everything stored."""
        cache = GroupingCache()
        member = slim_member(self.policies)
        for obj in self.objects:
            cache.member_changed(None, member(obj))
        for workload in self.foreign:
            cache.workload_changed(None, slim_workload(workload))
        for (group, kind), why in self.natives.items():
            cache.set_native(group, kind, why)
        return cache

    def create(self, obj: Json, *, by: Json | None = None) -> Json:
        """``obj`` admitted as the apiserver would store it: its controller owner set from
        ``by``, mutated, judged (a denial fails the test) and given a UID."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if by is not None:
            meta["ownerReferences"] = [owner_ref(by)]
        index, self.created = self.created, self.created + 1
        if index in self.down:
            stored = obj
            stored["metadata"].setdefault("uid", f"uid-{meta.get('name', 'x')}-{next(self._uids)}")
            self.objects.append(stored)
            self.warnings[f"{obj['kind']}/{meta.get('name')}"] = ("wasp was down",)
            return stored
        self.admitted[f"{obj['kind']}/{meta.get('name')}"] = copy.deepcopy(obj)
        policies = self.policies.with_grouping(self.grouping())
        mutation = mutate_object(obj, policies, operation="CREATE")
        stored = copy.deepcopy(mutation.object)
        verdict = validate_object(stored, policies=self.policies)
        assert verdict.allowed, (
            f"{obj['kind']} {meta.get('name')} denied: {[e.error() for e in verdict.errors]}"
        )
        stored["metadata"].setdefault("uid", f"uid-{meta.get('name', 'x')}-{next(self._uids)}")
        self.objects.append(stored)
        self.warnings[f"{obj['kind']}/{meta.get('name')}"] = mutation.warnings
        self.patched[f"{obj['kind']}/{meta.get('name')}"] = bool(mutation.patch)
        return stored

    def pod(self, template: Json, *, name: str, by: Json, labels: Json | None = None,
            annotations: Json | None = None) -> Json:  # fmt: skip
        """A pod built from ``template`` as controllers build one (template metadata and spec,
        the controller's labels and annotations over the template's), then created."""
        meta = copy.deepcopy(template.get("metadata") or {})
        meta["name"] = name
        meta["namespace"] = by["metadata"].get("namespace", "default")
        meta["labels"] = {**(meta.get("labels") or {}), **(labels or {})}
        meta["annotations"] = {**(meta.get("annotations") or {}), **(annotations or {})}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        return self.create(body, by=by)

    def job_pods(self, job: Json, count: int) -> list[Json]:
        """``count`` pods of ``job`` as the Job controller makes them (Job labels, completion
        index); a delegated Job's pods get the PodGroup the Job controller creates for it."""
        template = copy.deepcopy(job["spec"]["template"])
        delegated = self.delegated_group(job)
        if delegated is not None:
            template.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": delegated}
        meta = job["metadata"]
        labels = {"batch.kubernetes.io/controller-uid": meta["uid"], "batch.kubernetes.io/job-name": meta["name"],
                  "controller-uid": meta["uid"], "job-name": meta["name"]}  # fmt: skip
        return [
            self.pod(
                template,
                name=f"{meta['name']}-{i}",
                by=job,
                labels=labels,
                annotations={"batch.kubernetes.io/job-completion-index": str(i)},
            )  # fmt: skip
            for i in range(count)
        ]

    # --- the desired state -------------------------------------------------------------------

    def _planned(self) -> tuple[list[Json], dict[str, Json]]:
        """Workloads and groups (by name) the reconciler creates for every planned object."""
        workloads: list[Json] = []
        groups: dict[str, Json] = {}
        for obj in self.objects:
            if obj["kind"] == "Pod" or management_mode(obj, self.policies) is not Mode.BOTH:
                continue
            for body in converge(obj, self.policies, list(groups.values())):
                if body["kind"] == "Workload":
                    workloads.append(body)
                else:
                    groups[body["metadata"]["name"]] = body
        return workloads, groups

    def delegated_group(self, job: Json) -> str | None:
        """The PodGroup the 1.37 Job controller creates for a delegated ``job`` (§7.5), or ``None``."""
        annotations = job["metadata"].get("annotations") or {}
        ref = controller_of(job)
        if ref is None or GROUP_TEMPLATE_NAME not in annotations:
            return None
        workloads, _ = self._planned()
        parents = [
            w for w in workloads if controller_ref_names(w, ref["apiVersion"], ref["kind"], ref["name"])
        ]
        if len(parents) != 1:
            return None  # no parent Workload: the Job controller waits (decision 22)
        templates = counts(parents[0])
        template = annotations[GROUP_TEMPLATE_NAME] or next(
            (n for n, tpl in templates.items() if tpl.count_field == "minCount"), ""
        )
        if template not in templates:
            return None  # a missing template: the Job is skipped
        return generate_pod_group_name(parents[0]["metadata"]["name"], template)

    def desired(self) -> set[str]:
        """Every PodGroup name the reconciler or the Job controller creates."""
        _, groups = self._planned()
        names = {n for n, g in groups.items() if g["kind"] == "PodGroup"}
        jobs = (o for o in self.objects if o["kind"] == "Job" and o["apiVersion"] == "batch/v1")
        return names | {n for n in map(self.delegated_group, jobs) if n is not None}

    # --- the verdict ---------------------------------------------------------------------------

    def landings(self) -> list[Landing]:
        out = []
        for obj in self.objects:
            if obj["kind"] != "Pod":
                continue
            group = (obj.get("spec") or {}).get("schedulingGroup") or {}
            name = obj["metadata"]["name"]
            out.append(Landing(name, group.get("podGroupName"), self.warnings[f"Pod/{name}"]))
        return out

    def root(self, pod: Json) -> str:
        """``Kind/name`` of the outermost governed object the pod belongs to (its member
        label's object, or the top of its owner chain among the stored objects)."""
        member = membership_policy(pod, self.policies)
        if member is not None:
            return f"{member[0].kind}/{member[1]}"
        by_uid = {o["metadata"]["uid"]: o for o in self.objects}
        current, top = pod, pod
        while (ref := controller_of(current)) is not None and ref.get("uid") in by_uid:
            current = by_uid[ref["uid"]]
            if self.policies.for_object(current) is not None:
                top = current
        return f"{top['kind']}/{top['metadata']['name']}"

    def half_grouped(self, exempt: t.Iterable[str] = ()) -> dict[str, tuple[list[str], list[str]]]:
        """Roots with pods in a group and pods of the same workload outside any (pods whose
        name starts with a prefix in ``exempt`` are outside its gang on purpose): ``{root:
        (grouped pods, ungrouped pods)}``; empty when every workload is all or nothing."""
        exempt = tuple(exempt)
        by_root: dict[str, tuple[list[str], list[str]]] = {}
        pods = {o["metadata"]["name"]: o for o in self.objects if o["kind"] == "Pod"}
        for landing in self.landings():
            if landing.pod.startswith(exempt) if exempt else False:
                continue
            grouped, ungrouped = by_root.setdefault(self.root(pods[landing.pod]), ([], []))
            (grouped if landing.group is not None else ungrouped).append(landing.pod)
        return {root: both for root, both in by_root.items() if both[0] and both[1]}

    def check(self, left_alone: t.Mapping[str, str] | None = None) -> list[Landing]:
        """Assert that every pod points at a desired PodGroup, or is left alone and its name
        starts with a key of ``left_alone`` (whose value says why, for the reader); a pod so
        named must not be stamped. Returns the landings."""
        left_alone = left_alone or {}
        desired = self.desired()
        landings = self.landings()
        assert landings, "the chain made no pods"
        for landing in landings:
            expected = [why for prefix, why in left_alone.items() if landing.pod.startswith(prefix)]
            if landing.group is None:
                assert expected, f"pod {landing.pod} was left alone unexpectedly: {landing.warnings}"
            else:
                assert not expected, (
                    f"pod {landing.pod} should be left alone ({expected[0]}), got {landing.group}"
                )
                assert landing.group in desired, (
                    f"pod {landing.pod} points at {landing.group}, which nobody creates"
                )
        return landings

    def formable(self) -> dict[str, tuple[int, int]]:
        """Assert that every gang PodGroup wasp creates can form from the pods made so far (a
        test makes the pods that exist before anything waits: docs/schedulability.md): its
        ``minCount`` is at most the pods that landed in it. Returns ``{group: (landed, minCount)}``."""
        _, groups = self._planned()
        landed: dict[str, int] = {}
        for landing in self.landings():
            if landing.group is not None:
                landed[landing.group] = landed.get(landing.group, 0) + 1
        out = {}
        for name, body in groups.items():
            gang = ((body.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
            if body["kind"] != "PodGroup" or gang is None:
                continue
            out[name] = (landed.get(name, 0), gang["minCount"])
            assert out[name][0] >= out[name][1], (
                f"gang {name} waits for {gang['minCount']} pods; {out[name][0]} exist"
            )
        return out


# --- controllers, as they build their children --------------------------------------------


def jobset_jobs(chain: Chain, jobset: Json) -> list[Json]:
    """The Jobs the JobSet controller creates for ``jobset`` (jobset ``jobset_controller.go``):
    ``<jobset>-<rjob>-<i>`` per replica, metadata cloned from the replicated job's template,
    spec deep-copied, and the JobSet keys written as labels and annotations on the Job and its
    pod template alike."""
    meta = jobset["metadata"]
    rjobs = jobset["spec"]["replicatedJobs"]
    total = sum(r.get("replicas", 1) for r in rjobs)
    jobs, global_index = [], 0
    for rjob in rjobs:
        replicas = rjob.get("replicas", 1)
        for i in range(replicas):
            keys = {
                "jobset.sigs.k8s.io/jobset-name": meta["name"],
                "jobset.sigs.k8s.io/jobset-uid": meta["uid"],
                "jobset.sigs.k8s.io/replicatedjob-name": rjob["name"],
                "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
                "jobset.sigs.k8s.io/global-replicas": str(total),
                "jobset.sigs.k8s.io/job-index": str(i),
                "jobset.sigs.k8s.io/job-global-index": str(global_index),
                "jobset.sigs.k8s.io/group-name": rjob.get("groupName", "default"),
            }
            global_index += 1
            template = copy.deepcopy(rjob["template"])
            job_meta = template.get("metadata") or {}
            spec = template["spec"]
            spec.setdefault("completionMode", "Indexed")  # the JobSet webhook's default
            pod_meta = spec["template"].setdefault("metadata", {})
            for target in (job_meta, pod_meta):
                target["labels"] = {**(target.get("labels") or {}), **keys}
                target["annotations"] = {**(target.get("annotations") or {}), **keys}
            job_meta.update(
                name=f"{meta['name']}-{rjob['name']}-{i}", namespace=meta.get("namespace", "default")
            )
            body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": spec}
            jobs.append(chain.create(body, by=jobset))
    return jobs


def running_pods(job: Json) -> int:
    """The pods a Job runs at once: min(parallelism, completions), parallelism defaulting to 1."""
    spec = job["spec"]
    parallelism = spec.get("parallelism", 1)
    return min(parallelism, spec.get("completions", parallelism))
