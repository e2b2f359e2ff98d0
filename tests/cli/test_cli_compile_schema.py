"""``wasp compile`` and ``wasp schema`` (including the CRD acceptance test)."""

from __future__ import annotations

import copy
import typing as t
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from conftest import EXAMPLES, Json, Run, job

from tests.compiler.test_conformance import LLM_SCHEDULING, compile_job
from webhook.declarative.openapi import K8S_FORMAT_RULES, to_structural
from webhook.vocab.formats import FORMAT_CHECKERS

Runner = t.Callable[..., Run]
Writer = t.Callable[..., Path]


def kinds(run_result: Run) -> list[str]:
    return [d["kind"] for d in yaml.safe_load_all(run_result.stdout) if d]


COMPILE_CASES = [
    ("a gang Job compiles to one Workload and one PodGroup", job(), ["Workload", "PodGroup"]),
    (
        "a Job without spec.scheduling still gets a Workload and a PodGroup",
        job(scheduling={}),
        ["Workload", "PodGroup"],
    ),
]


@pytest.mark.parametrize(
    ("obj", "expected"), [c[1:] for c in COMPILE_CASES], ids=[c[0] for c in COMPILE_CASES]
)
def test_compile_jobs(obj: Json, expected: list[str], run: Runner, write: Writer) -> None:
    result = run("compile", "--uid", "u-1", write("job.yaml", obj))
    assert result.code == 0, result.stderr
    assert kinds(result) == expected


def test_job_without_scheduling_gets_a_basic_template(run: Runner, write: Writer) -> None:
    workload, _ = yaml.safe_load_all(run("compile", "--uid", "u", write("j.yaml", job(scheduling={}))).stdout)
    assert workload["spec"]["podGroupTemplates"] == [
        {"name": "train-pgt-0", "schedulingPolicy": {"basic": {}}}
    ]


def test_names_are_deterministic_and_follow_the_uid(run: Runner, write: Writer) -> None:
    path = write("j.yaml", job())
    first, again = run("compile", "--uid", "a", path).stdout, run("compile", "--uid", "a", path).stdout
    assert first == again
    assert first != run("compile", "--uid", "b", path).stdout
    with_uid = job()
    with_uid["metadata"]["uid"] = "a"
    assert [
        d["metadata"]["name"] for d in yaml.safe_load_all(run("compile", write("k.yaml", with_uid)).stdout)
    ] == [d["metadata"]["name"] for d in yaml.safe_load_all(first)]


def test_missing_uid_is_marked(run: Runner, write: Writer) -> None:
    result = run("compile", write("j.yaml", job()))
    assert (
        "# wasp: metadata.uid missing; names use placeholder UID 00000000-0000-0000-0000-000000000000"
        in result.stdout
    )
    assert "--uid" in result.stderr


def test_invalid_objects_are_reported_and_not_compiled(run: Runner, write: Writer) -> None:
    result = run("compile", "--uid", "u", write("j.yaml", job("ok"), job("bad", min_count=9)))
    assert result.code == 1
    assert "gang.minCount" in result.stderr
    assert [d["metadata"]["ownerReferences"][0]["name"] for d in yaml.safe_load_all(result.stdout)] == [
        "ok",
        "ok",
    ]


def test_not_compiled_cases_say_why(run: Runner, write: Writer) -> None:
    owned = job("owned")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1", "kind": "JobSet", "name": "js", "uid": "1", "controller": True}
    ]
    byo = job("byo", scheduling={})
    byo["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    result = run("compile", "--uid", "u", write("j.yaml", owned, byo))
    assert result.code == 0
    assert result.stdout == ""
    assert "owned: not compiled: controlled by JobSet" in result.stderr
    assert "byo: not compiled:" in result.stderr


def test_composite_tree_compiles_to_composite_pod_groups(run: Runner) -> None:
    result = run(
        "compile",
        "--uid",
        "u",
        "--feature-gates",
        "CompositePodGroup=true",
        "--policies",
        EXAMPLES / "rolebased" / "policy.yaml",
        EXAMPLES / "rolebased" / "inferenceservice.yaml",
    )
    assert result.code == 0, result.stderr
    assert kinds(result)[:2] == ["Workload", "CompositePodGroup"]
    assert "PodGroup" in kinds(result)


def _worked_example(
    name: str, uid: str, namespace: str, scheduling: Json, parallelism: int, **spec: t.Any
) -> Json:
    pod: Json = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}], **spec}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"parallelism": parallelism, "scheduling": scheduling, "template": {"spec": pod}},
    }


JOB_CONTROLLER_CASES = [
    pytest.param(
        _worked_example("trainer", "job-uid", "default", {"schedulingPolicy": {"gang": {}}}, 4),
        ("trainer", "job-uid", "default", {"schedulingPolicy": {"gang": {}}}),
        {"parallelism": 4},
        id="the worked example: Job trainer, gang {}, parallelism 4",
    ),
    pytest.param(
        _worked_example("llm-train", "llm-uid", "ml", LLM_SCHEDULING, 8, priorityClassName="training-high"),
        ("llm-train", "llm-uid", "ml", LLM_SCHEDULING),
        {"parallelism": 8, "priority_class_name": "training-high"},
        id="gang 8, topology, disruption all, a claim and a priority class",
    ),
]


@pytest.mark.parametrize(("manifest", "model", "options"), JOB_CONTROLLER_CASES)
def test_a_job_compiles_to_what_the_job_controller_creates(
    manifest: Json, model: tuple[str, str, str, Json], options: Json, run: Runner, write: Writer
) -> None:
    """docs/decisions.md §9: the Job controller's objects exactly (no managed-by label: wasp does
    not create them), the root PodGroup with its second, non-controller reference to the
    Workload, whose uid only the apiserver knows."""
    result = run("compile", "-o", "json", write("job.yaml", manifest))
    assert result.code == 0, result.stderr
    workload, pod_group = compile_job(*model, **options)
    pod_group["metadata"]["ownerReferences"][1]["uid"] = ""
    assert result.json()["items"] == [workload, pod_group]


GATED = [
    pytest.param("TopologyAwareWorkloadScheduling=false", "schedulingConstraints", id="topology gate off"),
    pytest.param("DRAWorkloadResourceClaims=false", "resourceClaims", id="claims gate off"),
]


@pytest.mark.parametrize(("gates", "field"), GATED)
def test_a_field_of_a_disabled_gate_is_not_in_what_is_compiled(
    gates: str, field: str, run: Runner, write: Writer
) -> None:
    """The apiserver drops it on create (PrepareForCreate): neither the Job's template nor the
    objects carry it; the other fields stay."""
    manifest = _worked_example("llm-train", "llm-uid", "ml", LLM_SCHEDULING, 8)
    result = run("compile", "-o", "json", "--feature-gates", gates, write("job.yaml", manifest))
    assert result.code == 0, result.stderr
    workload, pod_group = result.json()["items"]
    template = workload["spec"]["podGroupTemplates"][0]
    assert field not in template and field not in pod_group["spec"]
    assert template["disruptionMode"] == pod_group["spec"]["disruptionMode"] == {"all": {}}
    assert f"{field} is dropped" in result.stderr


NOT_NEW = [
    pytest.param({"startTime": "2026-12-01T10:00:00Z"}, "status.startTime is set", id="started"),
    pytest.param({"succeeded": 2}, "status.succeeded is 2", id="pods succeeded"),
    pytest.param({"failed": 1}, "status.failed is 1", id="a pod failed"),
    pytest.param(
        {"conditions": [{"type": "Suspended", "status": "False"}]},
        "it has a Suspended condition",
        id="was suspended",
    ),
]


@pytest.mark.parametrize(("status", "why"), NOT_NEW)
def test_a_job_that_is_not_new_is_not_compiled(status: Json, why: str, run: Runner, write: Writer) -> None:
    """docs/design.md §7.2: the Job controller creates objects only for a new Job."""
    obj = job()
    obj["status"] = status
    result = run("compile", "--uid", "u", write("job.yaml", obj))
    assert (result.code, kinds(result)) == (0, [])
    assert f"not compiled: the Job is not new ({why})" in result.stderr


def test_an_object_a_policy_only_warns_about_is_compiled(run: Runner, write: Writer) -> None:
    """Admitted under warn, its pods are stamped: wasp reconcile gives it its groups, so compile shows them."""
    path = write("job.yaml", job(min_count=9))
    denied = run("compile", "--uid", "u", path)
    assert (denied.code, kinds(denied)) == (1, [])
    warned = run("compile", "--uid", "u", "--enforcement", "warn", path)
    assert (warned.code, kinds(warned)) == (0, ["Workload", "PodGroup"]), warned.stderr
    assert "warning: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9" in warned.stderr


def test_objects_wasp_creates_carry_its_label_and_the_workload_reference(run: Runner, write: Writer) -> None:
    result = run(
        "compile",
        "-o",
        "json",
        "--policies",
        EXAMPLES / "trainer" / "policy.yaml",
        EXAMPLES / "trainer" / "trainer.yaml",
    )
    assert result.code == 0, result.stderr
    workload, *groups = result.json()["items"]
    assert all(
        o["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "wasp"} for o in [workload, *groups]
    )
    assert [
        [(r["kind"], r["name"], r.get("controller", False)) for r in g["metadata"]["ownerReferences"]]
        for g in groups
    ] == [[("Trainer", "resnet", True), ("Workload", workload["metadata"]["name"], False)] for _ in groups]


def test_compile_json_is_a_v1_list(run: Runner, write: Writer) -> None:
    result = run("compile", "-o", "json", "--uid", "u", write("j.yaml", job()))
    doc = result.json()
    assert (doc["kind"], [i["kind"] for i in doc["items"]]) == ("List", ["Workload", "PodGroup"])


def test_compile_unparsable_exits_2(run: Runner, write: Writer) -> None:
    assert run("compile", write("j.yaml", text="a: [\n")).code == 2


# --------------------------------------------------------------------------- schema


def crd(scheduling: Json) -> Json:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "trainers.ml.example.com"},
        "spec": {
            "group": "ml.example.com",
            "names": {
                "kind": "Trainer",
                "plural": "trainers",
                "singular": "trainer",
                "listKind": "TrainerList",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "properties": {"scheduling": scheduling}}
                            },
                        }
                    },
                }
            ],
        },
    }


def walk(node: object, inside_logic: bool = False) -> t.Iterator[tuple[Json, bool]]:
    if isinstance(node, dict):
        yield node, inside_logic
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    yield from walk(sub, inside_logic)
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                yield from walk(value, inside_logic or key == "not")
            elif key in ("oneOf", "anyOf", "allOf"):
                for sub in value:
                    yield from walk(sub, True)


@pytest.mark.parametrize("block", ["SchedulingConfiguration", "CompositeSchedulingConfiguration"])
def test_a_crd_built_from_the_openapi_schema_passes_kubernetes_validate(block: str, run: Runner) -> None:
    result = run("schema", "--format", "openapi", "--block", block, "-o", "json")
    assert result.code == 0
    scheduling = result.json()
    kubernetes_validate.validate(crd(scheduling), "1.37.0", strict=True)
    # What kubernetes-validate does not check, structural-schema rules do:
    for node, inside_logic in walk(scheduling):
        assert not {"$ref", "$schema", "$defs", "$id"} & node.keys()
        assert node.get("additionalProperties") is not False
        assert inside_logic or "type" in node
        if inside_logic:
            assert not {"type", "properties", "items", "description"} & node.keys()
        assert node.get("format", "int32") in ("int32", "int64")
        if node.get("x-kubernetes-list-type") == "map":
            assert set(node["x-kubernetes-list-map-keys"]) <= set(node["items"]["required"])
    # The negative control: strict kubernetes-validate rejects an unknown schema keyword.
    broken = copy.deepcopy(scheduling)
    broken["notAKeyword"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(crd(broken), "1.37.0", strict=True)


SAMPLES = {
    "k8s-short-name": ["a", "my-claim", "a" * 63, "a" * 64, "-a", "A", "a.b", "", "abc\n"],
    "k8s-long-name": ["a.b-c", "x" * 253, "x" * 254, "a..b", "A.b", "a_b"],
    "k8s-label-key": [
        "topology.kubernetes.io/rack",
        "rack",
        "a/b/c",
        "/x",
        "x/",
        "Example.com/x",
        "x" * 63,
        "x" * 64,
        "a" * 253 + "/x",
        "a" * 254 + "/x",
        "_x",
        "x.y_z-1",
    ],
    "k8s-path-segment-name": ["ok", ".", "..", "a/b", "50%", "..."],
}


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_cel_rules_agree_with_the_format_checkers(fmt: str) -> None:
    cel = pytest.importorskip("cel")
    rule = K8S_FORMAT_RULES[fmt]
    for value in SAMPLES[fmt]:
        by_cel = all(cel.evaluate(r, {"self": value}) for r, _ in rule.rules) and (
            rule.max_length < 0 or len(value) <= rule.max_length
        )
        # Go's "$" does not match before a trailing newline; compare on newline-free values only.
        if "\n" in value:
            assert not by_cel
            continue
        assert by_cel == (not FORMAT_CHECKERS[fmt](value)), (fmt, value)


def test_jsonschema_output_is_the_document_or_one_block(run: Runner) -> None:
    whole = run("schema").json()
    assert "$defs" in whole and "SchedulingConfiguration" in whole["$defs"]
    block = run("schema", "--block", "composite-scheduling").json()
    assert "$defs" not in block and "$ref" not in str(block)
    assert set(block["properties"]) == {"schedulingPolicy", "schedulingConstraints", "disruptionMode"}
    assert run("schema", "--block", "nope").code == 2


def test_openapi_default_is_yaml_of_the_leaf_block(run: Runner) -> None:
    doc = yaml.safe_load(run("schema", "--format", "openapi").stdout)
    assert "resourceClaims" in doc["properties"]


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"$ref": "http://x/y"}, "only local"),
        ({"type": "string", "format": "email-ish"}, "no CRD equivalent"),
    ],
    ids=["a remote $ref cannot be inlined", "an unknown format is refused, not dropped"],
)
def test_to_structural_refuses_what_a_crd_cannot_express(schema: Json, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        to_structural(schema)
