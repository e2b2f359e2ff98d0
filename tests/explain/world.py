"""Where a scenario's objects go: the STAND-IN API server (tests/standin), or a dump file.

A scenario writes objects through a :class:`Sink`; the stand-in assigns UIDs (as
kube-apiserver does) and drops gated fields, the dump sink assigns ``uid-<name>`` and drops
the same fields with the stand-in's own gate rules, then writes one ``List`` document as
``kubectl get -o yaml`` does. The governed object's UID names its Workload and groups, so
a scenario compiles them from the object as stored (:func:`compiled`).
"""

from __future__ import annotations

import copy
import typing as t
from pathlib import Path

import yaml

from tests.reconciler.worlds import EXAMPLES
from tests.standin import StandIn, gates
from webhook.governed.workloads import Compiled, compile_object
from webhook.policy import PolicySet
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
ROOT: t.Final = Path(__file__).resolve().parents[2]
JOBSET_POLICY: t.Final = ROOT / "webhook/policies/integrations/jobset.yaml"
CRDS: t.Final = (
    "ml.example.com/v1/trainers/Trainer",
    "serving.example.com/v1/inferenceservices/InferenceService",
    "jobset.x-k8s.io/v1alpha2/jobsets/JobSet",
)
GATES: t.Final = "CompositePodGroup=true"
POLICY_ARGS: t.Final = (*(x for p in [*EXAMPLES, JOBSET_POLICY] for x in ("--policies", str(p))),
                        "--feature-gates", GATES)  # fmt: skip

_PLURALS: t.Final = {"Trainer": "trainers", "InferenceService": "inferenceservices", "JobSet": "jobsets", "Workload": "workloads", "PodGroup": "podgroups",
                     "CompositePodGroup": "compositepodgroups", "Pod": "pods", "Event": "events", "Node": "nodes",
                     "Job": "jobs"}  # fmt: skip


def policies() -> PolicySet:
    return PolicySet.load([*EXAMPLES, JOBSET_POLICY], gates=FeatureGates.parse(GATES))


def compiled(obj: Json) -> Compiled:
    policy = policies().for_object(obj)
    assert policy is not None
    return copy.deepcopy(compile_object(policy, obj, uid=obj["metadata"]["uid"]))


def path_of(obj: Json) -> str:
    api_version, kind = obj["apiVersion"], obj["kind"]
    base = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
    ns = obj["metadata"].get("namespace")
    if kind == "Node":
        return f"{base}/nodes"
    return f"{base}/namespaces/{ns}/{_PLURALS[kind]}"


class Sink(t.Protocol):
    def create(self, obj: Json) -> Json: ...


class StandinSink:
    def __init__(self, standin: StandIn) -> None:
        self.standin = standin

    def create(self, obj: Json) -> Json:
        return self.standin.create(path_of(obj), obj)


class DumpSink:
    """Objects as the stand-in would store them, with UIDs that do not change between runs."""

    def __init__(self, off: frozenset[str] = frozenset()) -> None:
        self.objects: list[Json] = []
        self.off = off

    def create(self, obj: Json) -> Json:
        stored = copy.deepcopy(obj)
        gates.drop_disabled(stored["kind"], stored, self.off)
        meta = stored["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta["resourceVersion"] = str(len(self.objects) + 1)
        self.objects.append(stored)
        return stored

    def write(self, path: Path) -> Path:
        items = list(self.objects)
        if "GenericWorkload" in self.off:
            # What `kubectl get --raw /apis` shows of such a cluster: no scheduling.k8s.io/v1beta1.
            items.append({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "scheduling.k8s.io", "versions": [{"groupVersion": "scheduling.k8s.io/v1alpha3",
                                                             "version": "v1alpha3"}]}]})  # fmt: skip
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, sort_keys=False))
        return path
