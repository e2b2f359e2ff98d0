"""docs/decisions.md §4: the newest 1.37 Job controller gives a Job with any controller owner, a
CronJob included, no Workload or PodGroup (without the delegation annotation); the installed
``wasp compile`` prints none for it and says why, and none for a CronJob."""

from __future__ import annotations

import typing as t

import pytest
import yaml
from conftest import Run, job

pytestmark = pytest.mark.slow
Json = dict[str, t.Any]
RunWasp = t.Callable[..., Run]


def owned_by(kind: str, api_version: str) -> Json:
    obj = job("nightly-29000000", min_count=4)
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": "nightly", "uid": "1", "controller": True}
    ]
    return obj


def cronjob() -> Json:
    template = job("x", min_count=4)
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": template["spec"]}}}  # fmt: skip


CASES: t.Final = [
    ("a Job a CronJob owns", owned_by("CronJob", "batch/v1"), "controlled by CronJob nightly"),
    ("a CronJob", cronjob(), "nor do the Jobs it creates"),
    ("a Job another controller owns", owned_by("JobSet", "jobset.x-k8s.io/v1alpha2"), "controlled by JobSet"),
]


@pytest.mark.parametrize(("case", "obj", "why"), CASES, ids=[c[0] for c in CASES])
def test_compile_prints_no_objects_for_a_controlled_job(run_wasp: RunWasp, tmp_path, case: str, obj: Json,
                                                        why: str) -> None:  # fmt: skip
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(obj))
    result = run_wasp("compile", "--uid", "u", path)
    assert (result.code, result.stdout) == (0, "")
    assert "not compiled: " in result.stderr and why in result.stderr


def test_a_standalone_job_still_compiles(run_wasp: RunWasp, tmp_path) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(job("standalone", min_count=4)))
    result = run_wasp("compile", "--uid", "u", path)
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout) if d]
    assert (result.code, kinds) == (0, ["Workload", "PodGroup"])
