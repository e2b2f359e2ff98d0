"""``Builder.build_workload``: behaviour-table rows 30–47, the merge order of docs/design.md §6.4, the
compilation rules of docs/design.md §6.7, and a property test over random trees.

A case that corresponds to one of upstream's ``builder_test.go`` (component-helpers ``1961876b9c57``)
carries its name as the id, after the behaviour-table row where there is one.
"""

from __future__ import annotations

import copy
import typing as t
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    JOB_OWNER,
    Recorder,
    basic,
    cgang,
    child,
    claim,
    composite,
    composite_input,
    config,
    default_min_count,
    gang,
    leaf,
    leaf_input,
    mode,
    options,
    scale_min_count,
    topology,
)
from webhook.compiler import (
    Builder,
    BuildOptions,
    GangPolicy,
    ResourceClaim,
    SchedulingConfig,
    SchedulingPolicy,
    WorkloadItem,
)
from webhook.compiler.types import DisruptionMode
from webhook.vocab.errors import BuildError
from webhook.vocab.field import FieldError

Json = dict[str, t.Any]

JOB_REF = {"apiGroup": "batch", "kind": "Job", "name": "my-job"}
GANG_LITERAL = "gang scheduling requires minCount to be set after resolution"
COMPOSITE_GANG_LITERAL = "composite gang scheduling requires minGroupCount to be set after resolution"


def leaf_spec(template: Json) -> Json:
    return {"controllerRef": JOB_REF, "podGroupTemplates": [template]}


def composite_spec(template: Json) -> Json:
    return {"controllerRef": JOB_REF, "compositePodGroupTemplates": [template]}


def tpl(name: str = "pgt", policy: Json | None = None, **fields: t.Any) -> Json:
    return {"name": name, "schedulingPolicy": policy if policy is not None else basic(), **fields}


# --------------------------------------------------------------------------- successful builds


@dataclass(frozen=True)
class BuildCase:
    id: str
    root: WorkloadItem
    spec: Json


BUILD_CASES = [
    BuildCase("row-30: basic policy", leaf(default=config("basic")), leaf_spec(tpl())),
    BuildCase(
        "row-31: gang policy from default",
        leaf(default=config("gang", 4)),
        leaf_spec(tpl(policy=gang(4))),
    ),
    BuildCase(
        "row-32: gang minCount defaulted by callback",
        leaf(policy=gang(), callbacks=[default_min_count(8)]),
        leaf_spec(tpl(policy=gang(8))),
    ),
    BuildCase(
        "row-33: user gang overrides default basic",
        leaf(policy=gang(2), default=config("basic")),
        leaf_spec(tpl(policy=gang(2))),
    ),
    BuildCase(
        "row-34: field-by-field merge of default and user config",
        leaf(constraints=topology("zone"), default=config("basic", disruption="single")),
        leaf_spec(tpl(schedulingConstraints=topology("zone"), disruptionMode=mode("single"))),
    ),
    BuildCase(
        "row-35: disruption mode all",
        leaf(disruption=mode("all"), default=config("basic")),
        leaf_spec(tpl(disruptionMode=mode("all"))),
    ),
    BuildCase(
        "row-36: priorityClassName propagates to template",
        leaf(default=config("basic", priority_class_name="high")),
        leaf_spec(tpl(priorityClassName="high")),
    ),
    BuildCase("row-39: nil configs default to basic", leaf(), leaf_spec(tpl())),
    BuildCase(
        "row-40: callback performs arbitrary adjustment",
        leaf(default=config("gang", 4), callbacks=[scale_min_count(3)]),
        leaf_spec(tpl(policy=gang(12))),
    ),
    BuildCase(
        "row-42: composite root compiles into a composite template with leaf children",
        composite(
            "root", leaf("a", path=child(0), policy=gang(4)), leaf("b", path=child(1)), policy=cgang(2)
        ),
        composite_spec(
            tpl("root", cgang(2), podGroupTemplates=[tpl("a", gang(4)), tpl("b")]),
        ),
    ),
    BuildCase(
        "row-43: nested composite compiles recursively",
        composite(
            "outer",
            leaf("a", path=child(0)),
            composite("inner", leaf("c", path=child(1, 0), policy=gang(3)), path=child(1), policy=cgang(1)),
        ),
        composite_spec(
            tpl(
                "outer",
                podGroupTemplates=[tpl("a")],
                compositePodGroupTemplates=[tpl("inner", cgang(1), podGroupTemplates=[tpl("c", gang(3))])],
            )
        ),
    ),
    # upstream builder_test.go cases without a row of their own
    BuildCase(
        "topology constraints",
        leaf(constraints=topology("topology.kubernetes.io/zone"), default=config("basic")),
        leaf_spec(tpl(schedulingConstraints=topology("topology.kubernetes.io/zone"))),
    ),
    BuildCase(
        "resource claims",
        leaf(claims=[claim("gpu", ref="my-claim")], default=config("basic")),
        leaf_spec(tpl(resourceClaims=[claim("gpu", ref="my-claim")])),
    ),
    BuildCase(
        "composite gang minGroupCount from user input",
        composite("cpg-root", leaf("workers", path=child(0), default=config("basic")), policy=cgang(3)),
        composite_spec(tpl("cpg-root", cgang(3), podGroupTemplates=[tpl("workers")])),
    ),
    BuildCase(
        "composite constraints and disruption mode compile onto the composite template",
        composite(
            "cpg-root",
            leaf("workers", path=child(0), default=config("basic")),
            constraints=topology("topology.kubernetes.io/zone"),
            disruption=mode("all"),
            default=config("basic"),
        ),
        composite_spec(
            tpl(
                "cpg-root",
                schedulingConstraints=topology("topology.kubernetes.io/zone"),
                disruptionMode=mode("all"),
                podGroupTemplates=[tpl("workers")],
            )
        ),
    ),
    BuildCase(
        "composite defaults to basic policy",
        composite("cpg-root", leaf("workers", path=child(0), default=config("basic"))),
        composite_spec(tpl("cpg-root", podGroupTemplates=[tpl("workers")])),
    ),
    # ---------------------------------------------------------------- merge order (docs/design.md §6.4)
    BuildCase(
        "a user gang{} replaces a default gang 4 entirely, so a callback must fill minCount",
        leaf(policy=gang(), default=config("gang", 4), callbacks=[default_min_count(7)]),
        leaf_spec(tpl(policy=gang(7))),
    ),
    BuildCase(
        "user claims replace default claims as a whole",
        leaf(claims=[claim("u", ref="uc")], default=config(claims=[ResourceClaim("d", "dc")])),
        leaf_spec(tpl(resourceClaims=[claim("u", ref="uc")])),
    ),
    BuildCase(
        "an empty user claims list keeps the default claims",
        leaf(claims=[], default=config(claims=[ResourceClaim("d", resource_claim_template_name="dt")])),
        leaf_spec(tpl(resourceClaims=[claim("d", template="dt")])),
    ),
    BuildCase(
        "callbacks run in order and nil callbacks are skipped",
        leaf(default=config("gang", 2), callbacks=[None, scale_min_count(3), None, scale_min_count(5)]),
        leaf_spec(tpl(policy=gang(30))),
    ),
    BuildCase(
        "a child inherits nothing from its parent",
        composite(
            "root",
            leaf("a", path=child(0)),
            default=config("gang", 2, disruption="all", topology=["zone"], priority_class_name="high"),
        ),
        composite_spec(
            tpl(
                "root",
                cgang(2),
                schedulingConstraints=topology("zone"),
                disruptionMode=mode("all"),
                priorityClassName="high",
                podGroupTemplates=[tpl("a")],
            )
        ),
    ),
    # ---------------------------------------------------------------- compilation (docs/design.md §6.7)
    BuildCase(
        "a leaf with every block set compiles every field, priority and preemptionPolicy never",
        leaf(
            policy=gang(4),
            constraints=topology("topology.kubernetes.io/zone"),
            disruption=mode("all"),
            claims=[claim("gpus", template="gpu-tpl"), claim("nic", ref="nic-claim")],
            default=config(priority_class_name="training-high"),
        ),
        leaf_spec(
            tpl(
                policy=gang(4),
                schedulingConstraints=topology("topology.kubernetes.io/zone"),
                disruptionMode=mode("all"),
                resourceClaims=[claim("gpus", template="gpu-tpl"), claim("nic", ref="nic-claim")],
                priorityClassName="training-high",
            )
        ),
    ),
    BuildCase(
        "gang minCount 0 compiles: the compiler has no >= 1 check",
        leaf(policy=gang(0)),
        leaf_spec(tpl(policy=gang(0))),
    ),
    BuildCase(
        "an empty user policy maps to unset and compiles as the default",
        leaf(policy={}, default=config("gang", 5)),
        leaf_spec(tpl(policy=gang(5))),
    ),
    BuildCase(
        "an empty default policy (neither member) compiles to basic",
        leaf(default=SchedulingConfig(policy=SchedulingPolicy())),
        leaf_spec(tpl()),
    ),
    BuildCase(
        "a default policy with basic and gang compiles to basic",
        leaf(default=SchedulingConfig(policy=SchedulingPolicy(basic=True, gang=GangPolicy(3)))),
        leaf_spec(tpl()),
    ),
    BuildCase(
        "a default disruption mode with single and all compiles to all",
        leaf(default=SchedulingConfig(disruption_mode=DisruptionMode(single=True, all=True))),
        leaf_spec(tpl(disruptionMode=mode("all"))),
    ),
    BuildCase(
        "a default disruption mode with no member set is omitted",
        leaf(default=SchedulingConfig(disruption_mode=DisruptionMode())),
        leaf_spec(tpl()),
    ),
    BuildCase(
        "an input policy with basic and gang maps to basic",
        leaf(policy={"basic": {}, "gang": {"minCount": 3}}),
        leaf_spec(tpl()),
    ),
    BuildCase(
        "an input disruption mode with single and all maps to single",
        leaf(policy=gang(1), disruption=mode("single", "all")),
        leaf_spec(tpl(policy=gang(1), disruptionMode=mode("single"))),
    ),
    BuildCase(
        "a composite with every block set compiles its policy, constraints, disruption and priority class",
        composite(
            "root",
            leaf("a", path=child(0), policy=gang(2)),
            policy=cgang(3),
            constraints=topology("rack"),
            disruption=mode("all"),
            default=config(priority_class_name="high"),
        ),
        composite_spec(
            tpl(
                "root",
                cgang(3),
                schedulingConstraints=topology("rack"),
                disruptionMode=mode("all"),
                priorityClassName="high",
                podGroupTemplates=[tpl("a", gang(2))],
            )
        ),
    ),
    BuildCase(
        "a composite's callback fills minGroupCount",
        composite("root", leaf("a", path=child(0)), policy=cgang(), callbacks=[default_min_count(6)]),
        composite_spec(tpl("root", cgang(6), podGroupTemplates=[tpl("a")])),
    ),
    BuildCase(
        "template names are the item names, untransformed and unvalidated",
        leaf("Not_A_DNS_Label." + "x" * 70),
        leaf_spec(tpl("Not_A_DNS_Label." + "x" * 70)),
    ),
]


@pytest.mark.parametrize("case", BUILD_CASES, ids=[c.id for c in BUILD_CASES])
def test_build_workload(case: BuildCase) -> None:
    workload = Builder(case.root, options()).build_workload()
    assert workload["spec"] == case.spec


# --------------------------------------------------------------------------- failing builds


@dataclass(frozen=True)
class FailCase:
    id: str
    root: WorkloadItem | None
    opts: BuildOptions = field(default_factory=options)
    message: str | None = None  # asserted only where the spec quotes it (the compile-error literals)


FAIL_CASES = [
    FailCase(
        "row-38: empty leaf name fails before resolution and callbacks",
        leaf("", callbacks=[default_min_count(1)]),
    ),
    FailCase(
        "row-41: gang missing minCount fails",
        leaf(policy=gang()),
        message=GANG_LITERAL,
    ),
    FailCase(
        "row-41: a default gang without minCount and no callback is the compile error",
        leaf(default=config("gang")),
        message=GANG_LITERAL,
    ),
    FailCase(
        "row-44: composite gang missing minGroupCount fails",
        composite("root", leaf("a", path=child(0)), policy=cgang()),
        message=COMPOSITE_GANG_LITERAL,
    ),
    FailCase(
        "row-44: a gang leaf without minCount under a composite is the compile error",
        composite("root", leaf("a", path=child(0), policy=gang())),
        message=GANG_LITERAL,
    ),
    FailCase("row-45: composite with a nil child fails", composite("root", leaf("a", path=child(0)), None)),
    FailCase("row-45: composite child with empty name fails", composite("root", leaf("", path=child(0)))),
    FailCase(
        "row-45: duplicate template names across the tree fail",
        composite(
            "root", composite("mid", leaf("x", path=child(0, 0)), path=child(0)), leaf("x", path=child(1))
        ),
    ),
    FailCase("row-45: nil root fails", None),
    FailCase(
        "row-45: composite policy set together with a leaf building block fails the input union",
        composite(
            "root",
            leaf("a", path=child(0)),
            input=composite_input(policy=cgang(2), leaf_disruption=mode("single")),
        ),
    ),
    FailCase(
        "row-45: a leaf that fills a composite slot is an error",
        leaf(input=leaf_input(composite_disruption=mode("all"))),
    ),
    FailCase("row-46: missing owner returns error", leaf(), options(owner=None)),
    FailCase(
        "row-46: owner apiVersion that fails to parse returns error",
        leaf(),
        options(owner={**JOB_OWNER, "apiVersion": "batch/v1/extra"}),
    ),
]


@pytest.mark.parametrize("case", FAIL_CASES, ids=[c.id for c in FAIL_CASES])
def test_build_workload_fails_and_caches_nothing(case: FailCase) -> None:
    builder = Builder(case.root, case.opts)
    with pytest.raises(BuildError) as first:
        builder.build_workload()
    if case.message is not None:
        assert str(first.value) == case.message
    # Nothing was cached: a second call fails again, and there is no Workload to make groups from.
    with pytest.raises(BuildError):
        builder.build_workload()
    with pytest.raises(BuildError):
        builder.new_pod_group("pg", "pgt")


def test_row_38_an_empty_name_is_rejected_before_the_callback_runs() -> None:
    recorder = Recorder()
    with pytest.raises(BuildError):
        Builder(leaf("", callbacks=[recorder]), options()).build_workload()
    assert recorder.calls == 0


def test_row_46_a_failed_build_caches_nothing_so_a_fixed_tree_builds() -> None:
    builder = Builder(leaf(policy=gang()), options())
    with pytest.raises(BuildError):
        builder.build_workload()
    builder.root = leaf(policy=gang(2))
    assert builder.build_workload()["spec"] == leaf_spec(tpl(policy=gang(2)))


def test_row_47_build_workload_twice_returns_the_same_object() -> None:
    builder = Builder(leaf(policy=gang(2)), options())
    first = builder.build_workload()
    assert builder.build_workload() is first


def test_build_workload_is_refused_on_an_existing_workload_builder() -> None:
    existing = Builder(leaf(), options()).build_workload()
    with pytest.raises(BuildError):
        Builder.from_existing_workload(existing, options()).build_workload()


def test_row_32_the_callers_input_objects_keep_a_nil_min_count() -> None:
    policy = gang()
    default = config("gang")
    item = leaf(policy=policy, default=default, callbacks=[default_min_count(8)])
    before = copy.deepcopy((policy, default))
    workload = Builder(item, options()).build_workload()
    assert workload["spec"]["podGroupTemplates"][0]["schedulingPolicy"] == gang(8)
    assert (policy, default) == before
    assert policy == {"gang": {}}
    assert (
        default.policy is not None
        and default.policy.gang is not None
        and default.policy.gang.min_count is None
    )


def test_the_workload_shares_no_object_with_the_callers_inputs() -> None:
    owner = copy.deepcopy(JOB_OWNER)
    claims = [claim("gpus", template="t")]
    item = leaf(policy=gang(2), constraints=topology("zone"), claims=claims)
    workload = Builder(item, options(owner=owner)).build_workload()
    workload["metadata"]["ownerReferences"][0]["name"] = "changed"
    workload["spec"]["podGroupTemplates"][0]["resourceClaims"][0]["name"] = "changed"
    workload["spec"]["podGroupTemplates"][0]["schedulingConstraints"]["topology"][0]["key"] = "changed"
    assert owner == JOB_OWNER
    assert claims == [claim("gpus", template="t")]
    assert item.input.constraints.leaf == topology("zone")


# --------------------------------------------------------------------------- metadata and owner


@dataclass(frozen=True)
class OwnerCase:
    id: str
    opts: BuildOptions
    metadata: Json
    controller_ref: Json


OWNER_CASES = [
    OwnerCase(
        "row-37: owner reference and controllerRef parse APIGroup",
        options(),
        {"name": "wl", "namespace": "ns", "ownerReferences": [JOB_OWNER]},
        JOB_REF,
    ),
    OwnerCase(
        "a core v1 owner gives a controllerRef without apiGroup",
        options(owner={"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u"}),
        {
            "name": "wl",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u"}
            ],
        },
        {"kind": "ReplicationController", "name": "rc"},
    ),
    OwnerCase(
        "a dotted group is parsed from the owner apiVersion",
        options(owner={"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u"}),
        {
            "name": "wl",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "u"}
            ],
        },
        {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "js"},
    ),
    OwnerCase(
        "the Workload carries the options' name and namespace and no labels or annotations",
        options(name="trainer-7dccc85c97", namespace="ml"),
        {"name": "trainer-7dccc85c97", "namespace": "ml", "ownerReferences": [JOB_OWNER]},
        JOB_REF,
    ),
]


@pytest.mark.parametrize("case", OWNER_CASES, ids=[c.id for c in OWNER_CASES])
def test_workload_metadata_and_controller_ref(case: OwnerCase) -> None:
    workload = Builder(leaf(), case.opts).build_workload()
    assert workload["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert workload["kind"] == "Workload"
    assert workload["metadata"] == case.metadata
    assert workload["spec"]["controllerRef"] == case.controller_ref


# --------------------------------------------------------------------------- property test

_KEYS = st.sampled_from(
    [
        "basic",
        "gang",
        "minCount",
        "minGroupCount",
        "single",
        "all",
        "topology",
        "key",
        "name",
        "resourceClaimName",
        "resourceClaimTemplateName",
        "x",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**40) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_COUNT = st.none() | st.integers(-2, 6)
_POLICY = st.one_of(
    st.none(),
    st.just({}),
    st.builds(basic),
    st.builds(gang, _COUNT),
    st.builds(cgang, _COUNT),
    st.just({"basic": {}, "gang": {"minCount": 1}}),
    _JSON,
)
_DISRUPTION = st.one_of(
    st.none(),
    st.just({}),
    st.builds(mode, st.sampled_from(["single", "all"])),
    st.just(mode("single", "all")),
    _JSON,
)
_CONSTRAINTS = st.one_of(
    st.none(),
    st.just({"topology": []}),
    st.builds(topology, st.sampled_from(["zone", "", "Bad Key!"])),
    st.just(topology("a", "b")),
    _JSON,
)
_CLAIMS = st.one_of(
    st.none(),
    st.just([]),
    st.lists(
        st.one_of(
            st.builds(
                claim,
                st.sampled_from(["a", "b", "", "../x"]),
                ref=st.none() | st.just("r"),
                template=st.none() | st.just("t"),
            ),
            _JSON,
        ),
        max_size=5,
    ),
    _JSON,
)
_DEFAULT = st.one_of(
    st.none(),
    st.builds(
        config,
        st.sampled_from([None, "basic", "gang"]),
        _COUNT,
        disruption=st.sampled_from([None, "single", "all"]),
        topology=st.lists(st.sampled_from(["zone", "rack"]), max_size=2),
        priority_class_name=st.sampled_from(["", "high"]),
    ),
)
_CALLBACKS = st.lists(st.one_of(st.none(), st.builds(default_min_count, st.integers(0, 4))), max_size=2)
# Mostly distinct names, so that some trees pass the tree check; "" and repeats still occur.
_NAMES = st.sampled_from([*"abcdefghijklmnop", ""])


@st.composite
def _leaf(draw: st.DrawFn) -> WorkloadItem:
    wrong = draw(st.booleans()) and draw(st.booleans())  # fill a composite slot now and then
    return leaf(
        draw(_NAMES),
        path=draw(st.sampled_from([None, child(0), child(1, 2)])),
        input=leaf_input(
            policy=draw(_POLICY),
            constraints=draw(_CONSTRAINTS),
            disruption=draw(_DISRUPTION),
            claims=draw(_CLAIMS),
            composite_policy=draw(_POLICY) if wrong else None,
        ),
        default=draw(_DEFAULT),
        callbacks=draw(_CALLBACKS),
    )


def _composite(children: st.SearchStrategy[list[WorkloadItem | None]]) -> st.SearchStrategy[WorkloadItem]:
    @st.composite
    def make(draw: st.DrawFn) -> WorkloadItem:
        wrong = draw(st.booleans()) and draw(st.booleans())
        return composite(
            draw(_NAMES),
            *draw(children),
            path=draw(st.sampled_from([None, child(0)])),
            input=composite_input(
                policy=draw(_POLICY),
                constraints=draw(_CONSTRAINTS),
                disruption=draw(_DISRUPTION),
                leaf_claims=draw(_CLAIMS) if wrong else None,
            ),
            default=draw(_DEFAULT),
            callbacks=draw(_CALLBACKS),
        )

    return make()


_TREES = st.recursive(
    _leaf(),
    lambda inner: _composite(st.lists(st.one_of(inner, inner, inner, st.none()), min_size=1, max_size=3)),
    max_leaves=5,
)
_OWNERS = st.sampled_from(
    [
        JOB_OWNER,
        JOB_OWNER,
        JOB_OWNER,
        None,
        {**JOB_OWNER, "apiVersion": "batch/v1/extra"},
        {**JOB_OWNER, "apiVersion": "v1"},
        {"kind": "Job", "name": "x"},
        {**JOB_OWNER, "apiVersion": 5},
    ]
)
_OPTIONS = st.builds(
    options,
    policies=st.sets(st.sampled_from(["basic", "gang"])),
    modes=st.sets(st.sampled_from(["single", "all"])),
    dv=st.booleans(),
    owner=_OWNERS,
)


def _inputs(item: WorkloadItem | None) -> list[object]:
    """Everything the caller owns in a tree: every block value and every default config."""
    if item is None:
        return [None]
    values: list[object] = [item.name, item.default_config]
    for block in item.input:  # its four slots
        values += [block.path_elements, block.leaf, block.composite]
    for c in item.children:
        values += _inputs(c)
    return values


@settings(max_examples=150, deadline=None)
@given(root=st.none() | _TREES, old=st.none() | _TREES, opts=_OPTIONS)
def test_property_validate_never_raises_build_raises_only_build_error_inputs_untouched(
    root: WorkloadItem | None, old: WorkloadItem | None, opts: BuildOptions
) -> None:
    before = copy.deepcopy((_inputs(root), _inputs(old), opts.owner))
    builder = Builder(root, opts)
    errors = builder.validate(old)
    assert isinstance(errors, list)
    assert all(isinstance(e, FieldError) for e in errors)
    try:
        workload = builder.build_workload()
    except BuildError:
        pass
    else:
        assert isinstance(workload, dict)
        assert builder.build_workload() is workload
    assert (_inputs(root), _inputs(old), opts.owner) == before


def test_config_copy_is_deep_and_equal() -> None:
    """``SchedulingConfig.copy`` replaces ``copy.deepcopy`` on the hot path; it must stay deep."""
    import copy

    from webhook.compiler.types import (
        DisruptionMode,
        ResourceClaim,
        SchedulingConfig,
        SchedulingConstraints,
        SchedulingPolicy,
        TopologyConstraint,
    )

    original = SchedulingConfig(
        policy=SchedulingPolicy(basic=True, gang=None),
        constraints=SchedulingConstraints([TopologyConstraint("rack")]),
        disruption_mode=DisruptionMode(all=True),
        resource_claims=[ResourceClaim("gpus", None, "tpl")],
        priority_class_name="high",
    )
    clone = original.copy()
    assert clone == copy.deepcopy(original)
    assert clone.constraints is not original.constraints
    assert clone.resource_claims[0] is not original.resource_claims[0]
    gang = SchedulingConfig(policy=SchedulingPolicy(gang=GangPolicy(3)))
    gang_clone = gang.copy()
    assert gang_clone.policy is not None and gang_clone.policy.gang is not None
    gang_clone.policy.gang.min_count = 9
    assert gang.policy is not None and gang.policy.gang is not None and gang.policy.gang.min_count == 3
