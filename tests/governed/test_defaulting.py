"""Policy defaults (``webhook.governed.defaulting``) through ``mutate_object``: rules, CEL, validity, patches."""

from __future__ import annotations

import copy
import dataclasses
import typing as t
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from patch_oracle import check_patch

from webhook.governed.defaulting import default_object
from webhook.governed.mutation import mutate_object
from webhook.governed.validation import validate_object
from webhook.policy import PolicySet, load_policy_file
from webhook.policy.schedulability import Schedulability
from webhook.vocab.gates import FeatureGates

Json = dict[str, t.Any]
REPO = Path(__file__).resolve().parents[2]
BATCH_JOB = REPO / "policies" / "batch-job.yaml"
ROLEBASED = REPO / "examples" / "rolebased" / "policy.yaml"
GPU = "nvidia.com/gpu"


# ------------------------------------------------------------------------------- makers


def job(
    *,
    name: str = "train",
    parallelism: int | None = 4,
    completions: int | None = None,
    mode: str = "NonIndexed",
    scheduling: Json | None = None,
    gpu: bool = False,
    template_group: bool = False,
) -> Json:
    """A Job as the webhook sees it (after the apiserver's own defaulting of completionMode)."""
    container: Json = {"name": "main", "image": "busybox"}
    if gpu:
        container["resources"] = {"limits": {GPU: "8"}}
    pod_spec: Json = {"restartPolicy": "Never", "containers": [container]}
    if template_group:
        pod_spec["schedulingGroup"] = {"podGroupName": "mine"}
    spec: Json = {"completionMode": mode, "template": {"spec": pod_spec}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": spec,
    }


def rule(
    name: str,
    *,
    when: str | None = None,
    node: str | None = None,
    materialize: bool = False,
    **blocks: Json | list[Json],
) -> Json:
    out: Json = {"name": name, "set": dict(blocks)}
    if when is not None:
        out["when"] = when
    if node is not None:
        out["node"] = node
    if materialize:
        out["materializeMinCount"] = True
    return out


def with_defaults(base: Path, rules: list[Json], tmp: Path) -> Path:
    """``base`` (a policy file) with ``spec.defaults`` replaced by ``rules``, written under ``tmp``."""
    doc = yaml.safe_load(base.read_text())
    doc["spec"]["defaults"] = rules
    out = tmp / f"{doc['metadata']['name']}-{abs(hash(repr(rules)))}.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


def job_policies(rules: list[Json], tmp: Path, *, gates: FeatureGates | None = None) -> PolicySet:
    # Same metadata.name as the built-in, so the rules replace it (PolicySet docs).
    ps = PolicySet.load([with_defaults(BATCH_JOB, rules, tmp)])
    return ps if gates is None else PolicySet(ps.policies, gates=gates)


GANG: Json = {"gang": {}}
BASIC: Json = {"basic": {}}
ALL: Json = {"all": {}}
RACK: Json = {"topology": [{"key": "topology.kubernetes.io/rack"}]}
INDEXED = "object.spec.completionMode == 'Indexed'"


# ------------------------------------------------------------------------------- the rule table


@dataclass(frozen=True)
class Case:
    id: str
    rules: list[Json]
    obj: Json
    expected: Json | None  # spec.scheduling after defaulting (None: absent)
    warned: tuple[str, ...] = ()  # rule names the warnings must name
    gates: FeatureGates | None = None


CASES = [
    Case(
        "an unconditional rule fills an absent spec.scheduling",
        [rule("r", schedulingPolicy=GANG)],
        job(),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "a rule whose condition is true applies",
        [rule("r", when=INDEXED, schedulingPolicy=GANG)],
        job(mode="Indexed"),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "a rule whose condition is false does not apply",
        [rule("r", when=INDEXED, schedulingPolicy=GANG)],
        job(),
        None,
    ),
    Case(
        "the first matching rule wins",
        [
            rule("first", schedulingPolicy=GANG),
            rule("second", schedulingPolicy=BASIC, disruptionMode={"single": {}}),
        ],
        job(),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "a later rule applies when the earlier conditions are false",
        [rule("first", when=INDEXED, schedulingPolicy=GANG), rule("second", schedulingPolicy=BASIC)],
        job(),
        {"schedulingPolicy": BASIC},
    ),
    Case(
        "a CEL error skips the rule with a warning and the next rule applies",
        [
            rule("broken", when="object.spec.completions > 1", schedulingPolicy=GANG),
            rule("fallback", schedulingPolicy=BASIC),
        ],
        job(completions=None),
        {"schedulingPolicy": BASIC},
        warned=("broken",),
    ),
    Case(
        "a CEL type error skips the rule with a warning",
        [rule("typo", when="object.spec.parallelism > 'four'", schedulingPolicy=GANG)],
        job(),
        None,
        warned=("typo",),
    ),
    Case(
        "a non-bool condition skips the rule with a warning",
        [rule("int", when="object.spec.parallelism", schedulingPolicy=GANG)],
        job(),
        None,
        warned=("int",),
    ),
    Case(
        "a user's schedulingPolicy is kept and the blocks they left unset are filled",
        [rule("r", schedulingPolicy=GANG, schedulingConstraints=RACK)],
        job(scheduling={"schedulingPolicy": BASIC}),
        {"schedulingPolicy": BASIC, "schedulingConstraints": RACK},
    ),
    Case(
        "nothing is merged inside a block: a user's gang without minCount keeps its shape",
        [rule("r", schedulingPolicy={"gang": {"minCount": 2}})],
        job(scheduling={"schedulingPolicy": GANG}),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "a null block counts as unset",
        [rule("r", schedulingPolicy=GANG)],
        job(scheduling={"schedulingPolicy": None}),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "gang.minCount is not materialised by default",
        [rule("r", schedulingPolicy=GANG)],
        job(parallelism=6),
        {"schedulingPolicy": GANG},
    ),
    Case(
        "materializeMinCount writes the resolved max(1, parallelism)",
        [rule("r", materialize=True, schedulingPolicy=GANG)],
        job(parallelism=6),
        {"schedulingPolicy": {"gang": {"minCount": 6}}},
    ),
    Case(
        "materializeMinCount writes 1 for an unset parallelism",
        [rule("r", materialize=True, schedulingPolicy=GANG)],
        job(parallelism=None),
        {"schedulingPolicy": {"gang": {"minCount": 1}}},
    ),
    Case(
        "materializeMinCount writes 1 for a paused Job",
        [rule("r", materialize=True, schedulingPolicy=GANG)],
        job(parallelism=0),
        {"schedulingPolicy": {"gang": {"minCount": 1}}},
    ),
    Case(
        "materializeMinCount leaves a rule's explicit minCount alone",
        [rule("r", materialize=True, schedulingPolicy={"gang": {"minCount": 2}})],
        job(parallelism=6),
        {"schedulingPolicy": {"gang": {"minCount": 2}}},
    ),
    Case(
        "disruptionMode all next to a user's Basic policy is skipped with a warning",
        [rule("all", disruptionMode=ALL)],
        job(scheduling={"schedulingPolicy": BASIC}),
        {"schedulingPolicy": BASIC},
        warned=("all",),
    ),
    Case(
        "disruptionMode all on a Job with no policy (Basic) is skipped with a warning",
        [rule("all", disruptionMode=ALL)],
        job(),
        None,
        warned=("all",),
    ),
    Case(
        "a gang minCount above parallelism is skipped with a warning and the next rule applies",
        [rule("big", schedulingPolicy={"gang": {"minCount": 8}}), rule("plain", schedulingPolicy=GANG)],
        job(parallelism=4),
        {"schedulingPolicy": GANG},
        warned=("big",),
    ),
    Case(
        "a block next to a user-managed schedulingGroup is skipped with a warning",
        [rule("r", schedulingPolicy=GANG)],
        job(template_group=True),
        None,
        warned=("r",),
    ),
    Case(
        "a matching rule with nothing left to fill still wins",
        [rule("first", schedulingPolicy=GANG), rule("second", disruptionMode={"single": {}})],
        job(scheduling={"schedulingPolicy": BASIC}),
        {"schedulingPolicy": BASIC},
    ),
    Case(
        "a rule whose condition stops matching once it applied lets the next rule fill the rest",
        [
            rule("fresh", when="!has(object.spec.scheduling)", schedulingPolicy=GANG),
            rule("then", disruptionMode={"single": {}}),
        ],
        job(),
        {"schedulingPolicy": GANG, "disruptionMode": {"single": {}}},
    ),
    Case(
        "a rule skipped as invalid fills its other blocks once another rule made them valid",
        [
            rule("big", schedulingPolicy={"gang": {"minCount": 3}}, disruptionMode={"single": {}}),
            rule("basic", schedulingPolicy=BASIC),
        ],
        job(parallelism=1),
        {"schedulingPolicy": BASIC, "disruptionMode": {"single": {}}},
        warned=("big",),
    ),
    Case(
        "schedulingConstraints is not written when TopologyAwareWorkloadScheduling is off",
        [rule("rack", schedulingPolicy=GANG, schedulingConstraints=RACK)],
        job(),
        {"schedulingPolicy": GANG},
        warned=("rack",),
        gates=FeatureGates(frozenset({"GenericWorkload", "WorkloadWithJob"})),
    ),
    Case(
        "no default is applied when the policy's feature gate is off",
        [rule("r", schedulingPolicy=GANG)],
        job(),
        None,
        warned=("batch-job",),
        gates=FeatureGates(frozenset({"GenericWorkload"})),
    ),
    Case(
        "a malformed object gets no defaults and a warning",
        [rule("r", schedulingPolicy=GANG)],
        {**job(), "spec": {**job()["spec"], "parallelism": "four"}},
        None,
        warned=("batch-job",),
    ),
]


def _scheduling(obj: Json) -> Json | None:
    return t.cast(Json | None, obj.get("spec", {}).get("scheduling"))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_default_rules(case: Case, tmp_path: Path) -> None:
    policies = job_policies(case.rules, tmp_path, gates=case.gates)
    original = copy.deepcopy(case.obj)
    result = mutate_object(case.obj, policies, operation="CREATE")
    assert case.obj == original, "the input must not be modified"
    expected_scheduling = case.expected if case.expected is not None else original["spec"].get("scheduling")
    assert _scheduling(result.object) == expected_scheduling
    check_patch(original, result.object, result.patch)
    for name in case.warned:
        assert any(repr(name) in w for w in result.warnings), (name, result.warnings)
    if not case.warned:
        assert result.warnings == ()
    if not result.patch:
        assert result.object is case.obj
    # reinvocationPolicy IfNeeded: defaulting its own output changes nothing.
    again = mutate_object(result.object, policies, operation="CREATE")
    assert again.patch == []
    assert again.object is result.object
    # The validator accepts what the mutator produced whenever it accepted the input.
    if validate_object(original, policies=policies).allowed:
        assert validate_object(result.object, policies=policies).errors == ()


def test_defaults_apply_on_create_only(tmp_path: Path) -> None:
    policies = job_policies([rule("r", schedulingPolicy=GANG, disruptionMode=ALL)], tmp_path)
    old = job()
    result = mutate_object(job(parallelism=5), policies, operation="UPDATE", old_obj=old)
    assert result.patch == [] and result.warnings == ()
    assert default_object(job(), policies, operation="UPDATE", old_obj=old).roots == ()


def test_objects_no_policy_governs_are_left_alone(tmp_path: Path) -> None:
    policies = job_policies([rule("r", schedulingPolicy=GANG)], tmp_path)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}}
    result = mutate_object(deployment, policies, operation="CREATE")
    assert result.patch == [] and result.object is deployment


def test_the_patch_adds_the_whole_embedding_when_it_is_absent(tmp_path: Path) -> None:
    policies = job_policies([rule("r", schedulingPolicy=GANG)], tmp_path)
    result = mutate_object(job(), policies, operation="CREATE")
    assert result.patch == [{"op": "add", "path": "/spec/scheduling", "value": {"schedulingPolicy": GANG}}]


# ------------------------------------------------------------------------------- CEL binding


from webhook.policy.celbinding import binding  # noqa: E402 - only this section needs the binding itself

_REAL_CONTEXT = binding().Context


class CountingContext:
    """Stands in for ``cel.Context`` (a Rust class ``execute`` insists on) to count binds:
    each context wasp creates is bound to the object once."""

    binds = 0

    def __new__(cls) -> t.Any:
        cls.binds += 1
        return _REAL_CONTEXT()


@pytest.mark.parametrize(
    ("rules", "obj", "binds"),
    [
        ([rule("a", schedulingPolicy=GANG), rule("b", schedulingPolicy=BASIC)], job(), 0),
        (
            [rule("a", when="false", schedulingPolicy=GANG), rule("b", when="true", schedulingPolicy=BASIC)],
            job(),
            1,
        ),
        (
            [rule("a", when="true", schedulingPolicy=GANG)],
            job(
                scheduling={
                    "schedulingPolicy": BASIC,
                    "schedulingConstraints": RACK,
                    "disruptionMode": {"single": {}},
                }
            ),
            0,
        ),
    ],
    ids=[
        "rules without conditions never bind the object",
        "the object is bound once for all conditions",
        "no condition is evaluated when every block a rule could fill is set",
    ],
)
def test_the_object_is_bound_to_cel_lazily(
    rules: list[Json], obj: Json, binds: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Counted are defaulting's binds: validation's own CEL (the Job's pods-at-once limit,
    # docs/schedulability.md) is left out.
    loaded = job_policies(rules, tmp_path)
    policies = PolicySet([dataclasses.replace(p, schedulability=Schedulability()) for p in loaded.policies])
    CountingContext.binds = 0
    monkeypatch.setattr(binding(), "Context", CountingContext)
    result = mutate_object(obj, policies, operation="CREATE")
    assert result.warnings == ()
    assert CountingContext.binds == binds


# ------------------------------------------------------------------------------- composite trees


def test_rules_apply_per_node_and_to_every_element_of_a_list(tmp_path: Path) -> None:
    rules = [
        rule("service", schedulingPolicy=GANG),
        rule("gpu-roles", node="role", when="object.metadata.name.startsWith('llm')", schedulingPolicy=GANG),
        rule("other-roles", node="role", schedulingPolicy=BASIC),
    ]
    policies = PolicySet.load([with_defaults(ROLEBASED, rules, tmp_path)])
    isvc = {
        "apiVersion": "serving.example.com/v1",
        "kind": "InferenceService",
        "metadata": {"name": "llm-chat", "namespace": "ml"},
        "spec": {
            "roles": [
                {"name": "prefill", "replicas": 2},
                {"name": "decode", "replicas": 4, "scheduling": {"schedulingPolicy": BASIC}},
            ]
        },
    }
    original = copy.deepcopy(isvc)
    result = mutate_object(isvc, policies, operation="CREATE")
    assert result.warnings == ()
    assert result.object["spec"]["scheduling"] == {"schedulingPolicy": GANG}
    assert result.object["spec"]["roles"][0]["scheduling"] == {"schedulingPolicy": GANG}
    assert result.object["spec"]["roles"][1]["scheduling"] == {"schedulingPolicy": BASIC}
    check_patch(original, result.object, result.patch)
    assert validate_object(result.object, policies=policies).errors == ()
    assert mutate_object(result.object, policies, operation="CREATE").patch == []


def test_a_rule_setting_claims_on_a_composite_node_skips_them_with_a_warning(tmp_path: Path) -> None:
    rules = [rule("claims", schedulingPolicy=GANG, resourceClaims=[{"name": "c", "resourceClaimName": "c"}])]
    policies = PolicySet.load([with_defaults(ROLEBASED, rules, tmp_path)])
    isvc = {
        "apiVersion": "serving.example.com/v1",
        "kind": "InferenceService",
        "metadata": {"name": "svc"},
        "spec": {"roles": [{"name": "a"}]},
    }
    result = mutate_object(isvc, policies, operation="CREATE")
    assert result.object["spec"]["scheduling"] == {"schedulingPolicy": GANG}
    assert any("'claims'" in w for w in result.warnings)


# ------------------------------------------------------------------------------- example policies

EXAMPLES = REPO / "examples" / "policies"


@pytest.mark.parametrize(
    ("policy_file", "obj", "expected"),
    [
        (
            "batch-job-implicit-gang.yaml",
            job(mode="Indexed", parallelism=8, completions=8),
            {"schedulingPolicy": GANG},
        ),
        ("batch-job-implicit-gang.yaml", job(mode="Indexed", parallelism=8, completions=16), None),
        ("batch-job-implicit-gang.yaml", job(mode="Indexed", parallelism=1, completions=1), None),
        ("batch-job-implicit-gang.yaml", job(mode="NonIndexed", parallelism=8, completions=8), None),
        ("batch-job-implicit-gang.yaml", job(mode="Indexed", parallelism=8, completions=None), None),
        (
            "batch-job-implicit-gang.yaml",
            job(mode="Indexed", parallelism=8, completions=8, template_group=True),
            None,
        ),
        (
            "batch-job-implicit-gang.yaml",
            job(mode="Indexed", parallelism=8, completions=8, scheduling={"schedulingPolicy": BASIC}),
            {"schedulingPolicy": BASIC},
        ),
        ("batch-job-gpu-rack.yaml", job(gpu=True), {"schedulingConstraints": RACK}),
        ("batch-job-gpu-rack.yaml", job(gpu=False), None),
        (
            "batch-job-gpu-rack.yaml",
            job(gpu=True, scheduling={"schedulingPolicy": GANG}),
            {"schedulingPolicy": GANG, "schedulingConstraints": RACK},
        ),
        (
            "batch-job-gpu-rack.yaml",
            job(gpu=True, scheduling={"schedulingConstraints": {"topology": [{"key": "zone"}]}}),
            {"schedulingConstraints": {"topology": [{"key": "zone"}]}},
        ),
    ],
    ids=[
        "implicit gang: an Indexed Job with completions == parallelism > 1 becomes a gang",
        "implicit gang: completions above parallelism stays Basic",
        "implicit gang: parallelism 1 stays Basic",
        "implicit gang: a NonIndexed Job stays Basic",
        "implicit gang: unset completions stays Basic without a warning",
        "implicit gang: a user-managed schedulingGroup is left alone without a warning",
        "implicit gang: a user's Basic is kept",
        "gpu rack: a GPU Job gets the rack constraint",
        "gpu rack: a Job without GPUs is left alone",
        "gpu rack: a user's gang is kept and the constraint is added beside it",
        "gpu rack: a user's own topology is kept",
    ],
)
def test_example_policies(policy_file: str, obj: Json, expected: Json | None) -> None:
    policies = PolicySet.load([EXAMPLES / policy_file])
    assert load_policy_file(EXAMPLES / policy_file).name == "batch-job"  # replaces the built-in
    result = mutate_object(obj, policies, operation="CREATE")
    assert result.warnings == ()
    assert _scheduling(result.object) == (expected if expected is not None else obj["spec"].get("scheduling"))
    check_patch(obj, result.object, result.patch)
    assert validate_object(result.object, policies=policies).errors == ()


# ------------------------------------------------------------------------------- property: always valid

_POLICIES = st.sampled_from(
    [None, BASIC, GANG, {"gang": {"minCount": 1}}, {"gang": {"minCount": 3}}, {"gang": {"minCount": 9}}]
)
_MODES: st.SearchStrategy[Json | None] = st.sampled_from([None, {"single": {}}, ALL])
_CONSTRAINTS = st.sampled_from([None, RACK])
_CLAIMS = st.sampled_from([None, [{"name": "gpus", "resourceClaimTemplateName": "t"}]])


@st.composite
def blocks(draw: st.DrawFn) -> Json:
    values = {
        "schedulingPolicy": draw(_POLICIES),
        "disruptionMode": draw(_MODES),
        "schedulingConstraints": draw(_CONSTRAINTS),
        "resourceClaims": draw(_CLAIMS),
    }
    return {k: v for k, v in values.items() if v is not None}


@st.composite
def jobs(draw: st.DrawFn) -> Json:
    scheduling = draw(st.one_of(st.none(), blocks()))
    return job(
        parallelism=draw(st.one_of(st.none(), st.integers(0, 10))),
        completions=draw(st.one_of(st.none(), st.integers(1, 10))),
        mode=draw(st.sampled_from(["Indexed", "NonIndexed"])),
        scheduling=scheduling,
        gpu=draw(st.booleans()),
        template_group=draw(st.booleans()),
    )


_CONDITIONS = st.sampled_from(
    [
        None,
        "true",
        "false",
        INDEXED,
        "object.spec.parallelism > 2",
        "object.spec.completions == object.spec.parallelism",
        "1",
    ]
)


@st.composite
def rule_lists(draw: st.DrawFn) -> list[Json]:
    out = []
    for i in range(draw(st.integers(1, 3))):
        values = draw(blocks())
        out.append(rule(f"r{i}", when=draw(_CONDITIONS), materialize=draw(st.booleans()), **values))
    return out


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Module-scoped: hypothesis runs the property many times in one test function.
    return tmp_path_factory.mktemp("policies")


_POLICY_CACHE: dict[str, PolicySet] = {}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=jobs(), rules=rule_lists())
def test_defaulting_never_makes_a_valid_job_invalid(obj: Json, rules: list[Json], policy_dir: Path) -> None:
    key = repr(rules)
    if key not in _POLICY_CACHE:
        _POLICY_CACHE[key] = job_policies(rules, policy_dir)
    policies = _POLICY_CACHE[key]
    original = copy.deepcopy(obj)
    result = mutate_object(obj, policies, operation="CREATE")
    assert obj == original
    check_patch(original, result.object, result.patch)
    if validate_object(original, policies=policies).errors == ():
        assert validate_object(result.object, policies=policies).errors == ()
    assert mutate_object(result.object, policies, operation="CREATE").patch == []
