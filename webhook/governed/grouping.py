"""All or nothing: whether the pods of a governed object may be stamped now, from what the
cluster holds (decision 21, docs/decisions.md §30).

A gang is half-grouped when some of its pods run outside its PodGroup (created before wasp
governed the kind, while its webhook was down under ``failurePolicy: Ignore``, or before the
``GenericWorkload`` gate was on) and others are stamped into it: the stamped ones wait for a
quorum that can never form, and a pod's ``schedulingGroup`` is immutable. So stamping asks this
module first, for the workload's root object (the pod's or child's controller, or the member
label's object):

* a pod or child of the workload that wasp would stamp but that has no group (an *outsider*)
  exists: nothing more is stamped; the workload runs with default scheduling, all of it;
* a Workload names the object (``spec.controllerRef``), is controlled by it (an ownerReference
  with its UID, as a controller sets on what it makes) and was not created by wasp (no
  ``app.kubernetes.io/managed-by: wasp``): the object's own controller manages WAS natively
  (or someone made it so, decision 21): wasp stamps nothing and creates nothing. Without the
  ownerReference it is bring-your-own, which the Job controller ignores (spec row 61), and so
  does wasp;
* the kind is managed natively (its served CRD carries the policy's ``spec.native`` field):
  likewise, for every object of the kind.

:class:`GroupingCache` holds these facts, fed by list+watch of Workloads, Pods, the child kinds
and the CRDs (the webhook's edge, :mod:`webhook.watches.grouping`; the transforms here turn
each object into the little the cache keeps). A review only reads memory. Without a cache
(``wasp validate``, the reconciler's own plans) nothing is held back.
"""

from __future__ import annotations

import threading
import typing as t
from collections import defaultdict

from webhook.compiler.builder import parse_group
from webhook.governed.membership import IdentityUnavailable
from webhook.governed.ownership import controller_of
from webhook.governed.reconcile_model import controls, counts
from webhook.governed.workloads import MANAGED_BY_LABELS
from webhook.policy import Policy, PolicySet
from webhook.policy.native import object_native

__all__ = [
    "GroupingCache",
    "GroupingUnavailable",
    "RootKey",
    "held_back",
    "missing_template",
    "native_reason",
    "root_of",
    "slim_workload",
    "wasp_made",
    "wasp_managed",
]

Json = dict[str, t.Any]
Obj = t.Mapping[str, t.Any]
RootKey = tuple[str, str, str, str]  # namespace, API group, kind, name: what a controllerRef names
_MANAGED_BY: t.Final = next(iter(MANAGED_BY_LABELS.items()))
# The Workload API the grouping cache watches (group, version, plural, kind).
WORKLOADS: t.Final = ("scheduling.k8s.io", "v1beta1", "workloads", "Workload")


class GroupingUnavailable(IdentityUnavailable):
    """The webhook has not listed the workloads' pods and Workloads yet: retry the request."""


def _meta(obj: Obj) -> Obj:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


def wasp_made(obj: Obj) -> bool:
    """``obj`` carries wasp's managed-by label (docs/decisions.md §23)."""
    labels = _meta(obj).get("labels")
    return isinstance(labels, dict) and labels.get(_MANAGED_BY[0]) == _MANAGED_BY[1]


def root_of(namespace: str, ref: Obj) -> RootKey:
    """The root key of the object an ownerReference-shaped ``ref`` names, in ``namespace``."""
    api_version, kind, name = ref.get("apiVersion"), ref.get("kind"), ref.get("name")
    group = parse_group(api_version) if isinstance(api_version, str) else ""
    # Only strings: anything else is a client's garbage (stamping refuses it on its own).
    return namespace, group, kind if isinstance(kind, str) else "", name if isinstance(name, str) else ""


def slim_workload(obj: Json) -> Json:
    """What the cache keeps of a Workload: the object its ``controllerRef`` names, and whether
    wasp made it."""
    meta = _meta(obj)
    spec = obj.get("spec")
    ref = spec.get("controllerRef") if isinstance(spec, dict) else None
    ref = ref if isinstance(ref, dict) else {}
    root = [meta.get("namespace", ""), ref.get("apiGroup", ""), ref.get("kind", ""), ref.get("name", "")]
    keep = {k: meta[k] for k in ("name", "namespace", "resourceVersion") if k in meta}
    owner = controller_of(obj)
    uid = owner.get("uid") if owner is not None else None
    return {"metadata": keep, "root": root if ref.get("kind") else None, "wasp": wasp_made(obj),
            "owner": uid if isinstance(uid, str) else "", "templates": sorted(counts(obj))}  # fmt: skip


class GroupingCache:
    """The facts stamping needs about workloads, thread-safe (the watch threads write, request
    threads read). Not synced until each of its watches has listed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # root -> {Workload name: (made by wasp, the UID of its controller owner)}
        self._workloads: defaultdict[RootKey, dict[str, tuple[bool, str]]] = defaultdict(dict)
        # (namespace, Workload name) -> its template names, for wasp's own Workloads
        self._templates: dict[tuple[str, str], frozenset[str]] = {}
        # root -> {(kind, name) of each outsider}
        self._outside: defaultdict[RootKey, set[tuple[str, str]]] = defaultdict(set)
        # (namespace, kind, name) of each outsider: a child object that is itself a root (a
        # TrainJob's JobSet) must not stamp what it makes either
        self._outsiders: defaultdict[tuple[str, str, str], int] = defaultdict(int)
        # (group, kind) -> why the kind is managed natively (its CRD's field)
        self._native: dict[tuple[str, str], str] = {}
        # One per watch feeding the cache, set once it has listed (the informers' own events).
        self.listed: list[threading.Event] = []

    @property
    def synced(self) -> bool:
        return all(event.is_set() for event in self.listed)

    # -- writes (the watches) ------------------------------------------------------------------

    def workload_changed(self, old: Obj | None, new: Obj | None) -> None:
        """A slim Workload (:func:`slim_workload`) was added, changed or deleted."""
        with self._lock:
            for obj, key, present in _rooted(old, new):
                name = str(_meta(obj).get("name", ""))
                if present:
                    self._workloads[key][name] = (bool(obj.get("wasp")), str(obj.get("owner") or ""))
                    self._templates[key[0], name] = frozenset(obj.get("templates") or ())
                else:
                    self._workloads[key].pop(name, None)
                    self._templates.pop((key[0], name), None)
                    if not self._workloads[key]:
                        del self._workloads[key]

    def member_changed(self, old: Obj | None, new: Obj | None) -> None:
        """A slim pod or child (``{"metadata", "kind", "root"}``, root ``None`` unless it is an
        outsider: see :mod:`webhook.governed.outsiders`) was added, changed or deleted."""
        with self._lock:
            for obj, key, present in _rooted(old, new):
                member = (str(obj.get("kind", "")), str(_meta(obj).get("name", "")))
                if present:
                    self._outside[key].add(member)
                    self._outsiders[key[0], *member] += 1
                else:
                    self._outside[key].discard(member)
                    if not self._outside[key]:
                        del self._outside[key]
                    self._outsiders[key[0], *member] -= 1
                    if self._outsiders[key[0], *member] <= 0:
                        del self._outsiders[key[0], *member]

    def crd_changed(self, old: Obj | None, new: Obj | None) -> None:
        """A slim CRD (:func:`webhook.governed.outsiders.slim_crd`) was added, changed or deleted."""
        for group, kind, _ in (old or {}).get("natives", ()):
            self.set_native(group, kind, None)
        for group, kind, why in (new or {}).get("natives", ()):
            self.set_native(group, kind, why)

    def set_native(self, group: str, kind: str, why: str | None) -> None:
        """The kind's served CRD says its controller manages WAS natively (``why``), or no
        longer does (``None``)."""
        with self._lock:
            if why is None:
                self._native.pop((group, kind), None)
            else:
                self._native[group, kind] = why

    # -- reads (reviews, doctor) ---------------------------------------------------------------

    def native(self, group: str, kind: str) -> str | None:
        with self._lock:
            return self._native.get((group, kind))

    def templates(self, root: RootKey, uid: str) -> tuple[str, frozenset[str]] | None:
        """wasp's one Workload of the object (its name and template names), or ``None``."""
        with self._lock:
            ours = [n for n, (mine, owner) in self._workloads.get(root, {}).items() if mine and owner == uid]
            return (ours[0], self._templates.get((root[0], ours[0]), frozenset())) if len(ours) == 1 else None

    def held(self, root: RootKey, uid: str) -> str | None:
        """Why the pods of ``root`` (whose UID is ``uid``) must not be stamped now, or ``None``
        (stamp them); raises :class:`GroupingUnavailable` before the first list."""
        if not self.synced:
            raise GroupingUnavailable("the wasp webhook has not listed the workloads' pods and Workloads yet")
        namespace, group, kind, name = root
        with self._lock:
            native = self._native.get((group, kind))
            # Controlled by the object (as its controller makes one) and not wasp's: a Workload
            # without that ownerReference is bring-your-own, ignored as the Job controller does.
            foreign = sorted(
                n for n, (ours, owner) in self._workloads.get(root, {}).items() if not ours and owner == uid
            )
            ours = sorted(
                n for n, (mine, owner) in self._workloads.get(root, {}).items() if mine and owner == uid
            )
            outside = sorted(self._outside.get(root, ()))
            inner = (namespace, kind, name) in self._outsiders
        if inner:
            return f"{kind} {namespace}/{name} is itself outside its owner's group (made while wasp was down)"
        if native is not None and not ours:
            # An object wasp already manages (its Workload exists) stays so until it is done:
            # stopping halfway would half-group it.
            return f"{kind} is managed natively ({native}): its controller groups its pods itself"
        if foreign:
            return (
                f"Workload {', '.join(foreign)} names {kind} {name} and was not created by wasp: its controller "
                "(or someone) manages its scheduling objects, which wasp leaves alone"
            )
        if len(ours) > 1:
            return (
                f"{len(ours)} Workloads of wasp's name {kind} {name} ({', '.join(ours)}): the reconciler uses none "
                "(SeveralWorkloads), so no pod is stamped for a group nobody keeps"
            )
        if outside:
            shown = ", ".join(f"{k} {n}" for k, n in outside[:3]) + (" ..." if len(outside) > 3 else "")
            return (
                f"{len(outside)} of its pods or children run outside a group ({shown}): made before wasp governed "
                f"{kind} {namespace}/{name}, or while its webhook was down; no new pod is stamped, so the "
                "workload runs without a gang rather than half-grouped (recreate it to gang-schedule it)"
            )
        return None


def missing_template(policies: PolicySet, namespace: str, ref: Obj, template: str) -> str | None:
    """Why a pod of ``template`` must not be stamped after all: wasp's Workload of the object
    exists and has no such template (its structure changed under it, decision 21: the
    reconciler creates no group, ``UnsupportedWorkloadStructure``); else ``None``."""
    cache = policies.grouping
    uid = ref.get("uid")
    found = cache.templates(root_of(namespace, ref), uid if isinstance(uid, str) else "") if cache else None
    if found is None or template in found[1]:
        return None
    return (
        f"Workload {found[0]} has no template {template} (UnsupportedWorkloadStructure): the reconciler creates "
        "no group for it; delete the Workload and wasp creates one that fits"
    )


def held_back(policies: PolicySet, namespace: str, ref: Obj) -> str | None:
    """Why stamping must leave the pods of the object ``ref`` names alone (see the module
    docstring), or ``None``; may raise :class:`GroupingUnavailable`."""
    cache = policies.grouping
    if cache is None:
        return None
    uid = ref.get("uid")
    return cache.held(root_of(namespace, ref), uid if isinstance(uid, str) else "")


def wasp_managed(obj: Obj, workloads: t.Iterable[Obj]) -> bool:
    """wasp's Workload of ``obj`` is among ``workloads``: the object stays in adapter mode when
    its kind turns native (stopping halfway would half-group it)."""
    return any(controls(obj, w) and wasp_made(w) for w in workloads)


def native_reason(obj: Obj, policy: Policy, policies: PolicySet) -> str | None:
    """Why ``obj``'s controller manages its scheduling objects itself (``spec.native``: the
    kind's served CRD, as the cluster cache has read it, or the object's own field or
    annotation), or ``None``. wasp then creates nothing and stamps nothing for it."""
    kind_native = (
        policies.grouping.native(policy.group, policy.kind) if policies.grouping is not None else None
    )
    why = kind_native or object_native(policy.native, obj)
    if why is None:
        return None
    return (
        f"{policy.kind} is managed natively ({why}): its controller creates its Workload and PodGroups; wasp "
        "creates nothing and stamps nothing for it, and keeps validating it"
    )


def _rooted(old: Obj | None, new: Obj | None) -> t.Iterator[tuple[Obj, RootKey, bool]]:
    """The slim objects of a watch event that name their root: the old one to forget, then the
    new one to record (``present``)."""
    for obj, present in ((old, False), (new, True)):
        root = obj.get("root") if obj is not None else None
        if obj is not None and root:
            yield obj, (root[0], root[1], root[2], root[3]), present
