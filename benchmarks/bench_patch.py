"""The JSON Patch of a mutation: ``jsonpatch.make_patch`` on the whole object, and the mutation it is part of.

Run: ``python benchmarks/bench_patch.py``. Prints the median per call (µs) of the diff and of
its encoding for the two mutations the webhook makes, a Job default and a Pod stamp (a 2.7 KB
Job, a 2.4 KB Pod), then the whole mutating path (``mutate_object``) on the same objects and the
load average, so the diff's share of a mutating review can be read off.
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit
import typing as t
from functools import partial
from pathlib import Path

import jsonpatch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from webhook.governed.patch import assoc, encode_patch  # noqa: E402
from webhook.vocab.field import FieldPath  # noqa: E402

Json = dict[str, t.Any]


def pod_spec() -> Json:
    return {
        "priorityClassName": "training-high",
        "restartPolicy": "Never",
        "serviceAccountName": "trainer",
        "nodeSelector": {"cloud.example.com/accelerator": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        ],
        "containers": [
            {
                "name": "trainer",
                "image": "registry.example/llm-trainer:1.0",
                "command": ["torchrun"],
                "args": ["--nnodes=8", "--nproc-per-node=8", "train.py", "--config=/etc/cfg/llm.yaml"],
                "env": [
                    {"name": "NCCL_DEBUG", "value": "INFO"},
                    {"name": "MASTER_PORT", "value": "29500"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
                "resources": {
                    "requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
                    "limits": {"memory": "256Gi", "nvidia.com/gpu": "8"},
                },
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "shm", "mountPath": "/dev/shm"},
                ],
                "ports": [{"containerPort": 29500, "name": "rdzv"}],
            }
        ],
    }


def job() -> Json:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "llm-train",
            "namespace": "ml",
            "uid": "0f6d2b8e-7f3c-4d59-9a51-1c3f0b8b7e21",
            "labels": {"app": "llm", "team": "research", "kueue.x-k8s.io/queue-name": "gpu"},
            "annotations": {
                "example.com/description": "nightly pre-training run of the 70B model on rack-local GPUs"
            },
        },
        "spec": {
            "parallelism": 8,
            "completions": 8,
            "completionMode": "Indexed",
            "backoffLimit": 6,
            "suspend": False,
            "template": {"metadata": {"labels": {"app": "llm"}}, "spec": pod_spec()},
        },
    }


def pod() -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "llm-train-0-abcde",
            "namespace": "ml",
            "labels": {"app": "llm", "batch.kubernetes.io/job-completion-index": "0"},
            "ownerReferences": [
                {
                    "apiVersion": "ml.example.com/v1",
                    "kind": "Trainer",
                    "name": "llm-train",
                    "uid": "0f6d2b8e-7f3c-4d59-9a51-1c3f0b8b7e21",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pod_spec(),
    }


SCHEDULING = FieldPath.of("spec", "scheduling")
GROUP = FieldPath.of("spec", "schedulingGroup")
CASES = [
    (
        "Job + spec.scheduling (gang + topology)",
        job(),
        SCHEDULING,
        {
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/rack"}]},
        },
    ),
    ("Pod + spec.schedulingGroup", pod(), GROUP, {"podGroupName": "llm-train-pgzbk-llm-train-workers-x8f2q"}),
]


def median_us(fn: t.Callable[[], object], number: int) -> float:
    runs = timeit.repeat(fn, number=number, repeat=7)
    return statistics.median(runs) / number * 1e6


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':42} {'diff µs':>9} {'encode µs':>10} {'ops':>4}")
    for label, original, root, value in CASES:
        mutated = assoc(original, root, value)
        ops = list(jsonpatch.make_patch(original, mutated))
        assert jsonpatch.apply_patch(original, ops) == mutated
        diff = median_us(partial(jsonpatch.make_patch, original, mutated), 500)
        enc = median_us(partial(encode_patch, ops), 20000)
        print(f"{label:42} {diff:9.1f} {enc:10.2f} {len(ops):4}")

    # The whole mutating path (copy-on-write, defaults with CEL and the validity re-check, or
    # the stamp, plus the diff) on the same objects.
    from webhook.governed.mutation import mutate_object
    from webhook.policy import PolicySet

    repo = Path(__file__).resolve().parent.parent
    policies = PolicySet.load([repo / "examples" / "policies" / "batch-job-implicit-gang.yaml"])
    pods = PolicySet.load([repo / "examples" / "trainer" / "policy.yaml"])  # stamping.pods: true
    for label, obj, ps in (
        ("mutate_object: Job, implicit-gang default", job(), policies),
        ("mutate_object: Pod stamp", pod(), pods),
    ):
        result = mutate_object(obj, ps, operation="CREATE")
        assert result.patch, label
        print(f"{label:42} {median_us(partial(mutate_object, obj, ps, operation='CREATE'), 500):9.1f}")


if __name__ == "__main__":
    main()
