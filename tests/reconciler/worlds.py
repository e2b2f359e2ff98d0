"""Governed objects and policies the reconciler tests share (the examples' Trainer and
InferenceService), and a tiny in-memory world for the pure planner."""

from __future__ import annotations

import copy
import typing as t
from pathlib import Path

from webhook.governed.reconcile import Create, Observed, Patch, Plan
from webhook.policy import PolicySet
from webhook.vocab.gates import FeatureGates

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "examples/trainer/policy.yaml", ROOT / "examples/rolebased/policy.yaml"]
Json = dict[str, t.Any]


def policies(gates: str = "CompositePodGroup=true") -> PolicySet:
    return PolicySet.load(EXAMPLES, gates=FeatureGates.parse(gates))


def trainer(name: str = "resnet", uid: str = "uid-resnet", *, workers: int = 4, min_count: int | None = None,
            namespace: str = "ml", **metadata: t.Any) -> Json:  # fmt: skip
    gang: Json = {} if min_count is None else {"minCount": min_count}
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, **metadata},
        "spec": {
            "workers": workers,
            "scheduling": {"schedulingPolicy": {"gang": gang}},
            "template": {"spec": {"containers": [{"name": "w", "image": "x"}]}},
        },
    }


def service(name: str = "llama", uid: str = "uid-llama", *, prefill: int = 2, decode: int = 4) -> Json:
    return {
        "apiVersion": "serving.example.com/v1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "serving", "uid": uid},
        "spec": {
            "scheduling": {"schedulingPolicy": {"gang": {}}},
            "roles": [
                {"name": "prefill", "replicas": prefill, "scheduling": {"schedulingPolicy": {"gang": {}}},
                 "template": {"spec": {}}},
                {"name": "decode", "replicas": decode, "scheduling": {"schedulingPolicy": {"gang": {}}},
                 "template": {"spec": {}}},
            ],
        },
    }  # fmt: skip


class World:
    """Objects by (kind, name) in one namespace; ``apply`` executes a plan like an apiserver."""

    def __init__(self, *objects: Json, unstamped_pods: int = 0) -> None:
        self.objects: dict[tuple[str, str], Json] = {}
        self.unstamped_pods = unstamped_pods
        self.uids = 0
        for obj in objects:
            self.put(obj)

    def put(self, obj: Json) -> Json:
        obj = copy.deepcopy(obj)
        meta = obj["metadata"]
        if "uid" not in meta:
            self.uids += 1
            meta["uid"] = f"uid-{meta['name']}-{self.uids}"
        self.objects[(obj["kind"], meta["name"])] = obj
        return obj

    def of(self, kind: str) -> list[Json]:
        return [o for (k, _), o in self.objects.items() if k == kind]

    def observed(self) -> Observed:
        return Observed(
            workloads=self.of("Workload"),
            groups=[*self.of("CompositePodGroup"), *self.of("PodGroup")],
            by_name=lambda kind, name: self.objects.get((kind, name)),
            unstamped_pods=self.unstamped_pods,
        )

    def apply(self, plan: Plan) -> None:
        import jsonpatch

        for write in plan.writes:
            if isinstance(write, Create):
                assert (write.kind, write.name) not in self.objects, f"duplicate {write.kind} {write.name}"
                self.put(write.body)
            else:
                assert isinstance(write, Patch)
                key = (write.kind, write.name)
                self.objects[key] = jsonpatch.apply_patch(self.objects[key], list(write.ops))


def converge(obj: Json, world: World, policy_set: PolicySet, rounds: int = 4) -> list[Plan]:
    """Plan and apply until a plan writes nothing; the plans made."""
    from webhook.governed.reconcile import plan

    plans = []
    for _ in range(rounds):
        p = plan(obj, policy_set, world.observed())
        plans.append(p)
        if not p.writes:
            return plans
        world.apply(p)
    raise AssertionError("did not converge")
