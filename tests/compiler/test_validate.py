"""``Builder.validate``: behaviour-table rows 1–29, plus the allow-list and path rules of docs/design.md §6.6.

Each row's id is ``row-N:`` and the name of the upstream ``validate_test.go`` case it corresponds
to (component-helpers ``1961876b9c57``; row 29 is ``builder_test.go``'s). Every row asserts on
``(cause type, field path)`` pairs. Wording is asserted only where
the spec makes it contract (the basic+all message and the allow-list literals).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

import pytest

from tests.builders import (
    Recorder,
    at,
    basic,
    cgang,
    child,
    claim,
    composite,
    composite_input,
    config,
    gang,
    leaf,
    leaf_input,
    mode,
    options,
    topology,
)
from webhook.compiler import Block, Builder, BuildOptions, WorkloadInput, WorkloadItem

INVALID = "FieldValueInvalid"
INTERNAL = "InternalError"
FORBIDDEN = "FieldValueForbidden"
TOO_MANY = "FieldValueTooMany"
REQUIRED = "FieldValueRequired"

POLICY = "spec.scheduling.schedulingPolicy"
DISRUPTION = "spec.scheduling.disruptionMode"

EXISTING_WORKLOAD: dict[str, t.Any] = {
    "apiVersion": "scheduling.k8s.io/v1beta1",
    "kind": "Workload",
    "metadata": {"name": "wl", "namespace": "ns"},
    "spec": {"podGroupTemplates": [{"name": "pgt-0", "schedulingPolicy": {"basic": {}}}]},
}


@dataclass(frozen=True)
class Case:
    id: str
    root: WorkloadItem | None
    expected: list[tuple[str, str]]
    opts: BuildOptions = field(default_factory=options)
    old: WorkloadItem | None = None
    existing: dict[str, t.Any] | None = None  # build the builder from this Workload instead


def _gang_tree(*, child_policy: object = None, root_policy: object = None) -> WorkloadItem:
    """A composite gang(2) root over a gang(2) leaf (valid under a {Gang}-only allow-list)."""
    return composite(
        "root",
        leaf("a", path=child(0), policy=child_policy if child_policy is not None else gang(2)),
        policy=root_policy if root_policy is not None else cgang(2),
    )


def _ratchet_tree(bad_child_policy: object) -> WorkloadItem:
    return composite("root", leaf("a", path=child(0), policy=bad_child_policy), policy=cgang(1))


CASES = [
    # ---------------------------------------------------------------- behaviour table
    Case("row-1: nil tree fails to compile", None, [(INVALID, "")]),
    Case("row-2: basic allowed", leaf(policy=basic()), []),
    Case(
        "row-3: empty item name is rejected",
        leaf(""),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "row-4: basic forbidden when not allow-listed",
        leaf(policy=basic()),
        [(FORBIDDEN, POLICY)],
        options(policies=("gang",)),
    ),
    Case(
        "row-5: gang allowed",
        leaf(policy=gang(2)),
        [],
        options(policies=("gang",)),
    ),
    Case(
        "row-6: gang forbidden when not allow-listed",
        leaf(policy=gang(2)),
        [(FORBIDDEN, POLICY)],
        options(policies=("basic",)),
    ),
    Case(
        "row-7: single disruption allowed",
        leaf(policy=gang(2), disruption=mode("single")),
        [],
        options(modes=("single",)),
    ),
    Case(
        "row-8: all disruption forbidden when not allow-listed",
        leaf(policy=gang(2), disruption=mode("all")),
        [(FORBIDDEN, DISRUPTION)],
        options(modes=("single",)),
    ),
    Case(
        "row-9: basic with all disruption is rejected by cross-field rule",
        leaf(policy=basic(), disruption=mode("all")),
        [(INVALID, DISRUPTION)],
    ),
    Case("row-10: gang with all disruption is valid", leaf(policy=gang(2), disruption=mode("all")), []),
    Case(
        "row-11: gang minCount below minimum fails declarative validation at injected path",
        leaf(policy=gang(0)),
        [(INVALID, "spec.scheduling.schedulingPolicy.gang.minCount")],
    ),
    Case(
        "row-12: nil item Path reports building-block errors without a root prefix",
        leaf(path=None, policy=gang(0)),
        [(INVALID, "schedulingPolicy.gang.minCount")],
    ),
    Case(
        "row-13: declarative validation is skipped when disabled",
        leaf(policy=gang(0)),
        [],
        options(dv=False),
    ),
    Case(
        "row-14: disruptionMode with single and all fails union declarative validation",
        leaf(disruption=mode("single", "all")),
        [(INVALID, DISRUPTION)],
    ),
    Case(
        "row-15: too many topology constraints fails declarative validation",
        leaf(constraints=topology("zone", "rack")),
        [(TOO_MANY, "spec.scheduling.schedulingConstraints.topology")],
    ),
    Case(
        "row-16: resourceClaim with no source fails union declarative validation at indexed path",
        leaf(claims=[claim("gpus")]),
        [(INVALID, "spec.scheduling.resourceClaims[0]")],
    ),
    Case(
        "row-17: composite gang allowed",
        _gang_tree(),
        [],
        options(policies=("gang",)),
    ),
    Case(
        "row-18: composite basic forbidden when not allow-listed",
        _gang_tree(root_policy=basic()),
        [(FORBIDDEN, POLICY)],
        options(policies=("gang",)),
    ),
    Case(
        "row-19: composite gang minGroupCount below minimum fails declarative validation at injected path",
        _gang_tree(root_policy=cgang(0)),
        [(INVALID, "spec.scheduling.schedulingPolicy.gang.minGroupCount")],
    ),
    Case(
        "row-20: composite policy with basic and gang fails union declarative validation",
        _gang_tree(root_policy={"basic": {}, "gang": {"minGroupCount": 2}}),
        [(INVALID, POLICY)],
    ),
    Case(
        "row-21: composite policy set with a leaf policy fails the input union",
        composite(
            "root", leaf("a", path=child(0)), input=composite_input(policy=cgang(2), leaf_policy=gang(2))
        ),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "row-21: composite policy set with a leaf disruptionMode fails the input union",
        composite(
            "root",
            leaf("a", path=child(0)),
            input=composite_input(policy=cgang(2), leaf_disruption=mode("all")),
        ),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "row-22: input union is enforced even when declarative validation is disabled",
        composite(
            "root", leaf("a", path=child(0)), input=composite_input(policy=cgang(2), leaf_policy=gang(2))
        ),
        [(INTERNAL, "spec.scheduling")],
        options(dv=False),
    ),
    Case(
        "row-23: invalid leaf child in a composite tree is validated recursively",
        _gang_tree(child_policy=gang(0)),
        [(INVALID, "spec.scheduling.children[0].schedulingPolicy.gang.minCount")],
    ),
    Case(
        "row-24: update with matching root name is accepted",
        leaf(policy=gang(2)),
        [],
        old=leaf(policy=gang(3)),
    ),
    Case(
        "row-25: update with mismatched root name is an internal error",
        leaf("new", policy=gang(2)),
        [(INTERNAL, "spec.scheduling")],
        old=leaf("old", policy=gang(2)),
    ),
    Case(
        "row-26: update clearing policy skips declarative validation for the new nil policy",
        leaf(),
        [],
        old=leaf(policy=gang(2)),
    ),
    Case(
        "row-26: update clearing constraints skips declarative validation for the new nil constraints",
        leaf(policy=gang(2)),
        [],
        old=leaf(policy=gang(2), constraints=topology("zone")),
    ),
    Case(
        "row-26: update clearing disruptionMode skips declarative validation for the new nil disruptionMode",
        leaf(policy=gang(2)),
        [],
        old=leaf(policy=gang(2), disruption=mode("all")),
    ),
    Case(
        "row-27: update of an unchanged child at the same position is ratcheted",
        _ratchet_tree(gang(0)),
        [],
        old=_ratchet_tree(gang(0)),
    ),
    Case(
        "row-28: update of a child that changed position is validated as an addition",
        composite(
            "root",
            composite("mid", leaf("x", path=child(0, 0)), path=child(0)),
            leaf("a", path=child(1), policy=gang(0)),
        ),
        [(INVALID, "spec.scheduling.children[1].schedulingPolicy.gang.minCount")],
        old=composite(
            "root",
            composite(
                "mid", leaf("x", path=child(0, 0)), leaf("a", path=child(0, 1), policy=gang(0)), path=child(0)
            ),
        ),
    ),
    Case(
        "row-29: Validate is refused in existing mode",
        None,
        [(INTERNAL, "")],
        existing=EXISTING_WORKLOAD,
    ),
    # ---------------------------------------------------------------- allow-lists (docs/design.md §6.6, pitfall 2)
    Case(
        "allow-lists deny by default: empty options reject an unwritten (resolved Basic) policy",
        leaf(),
        [(FORBIDDEN, POLICY)],
        options(policies=(), modes=()),
    ),
    Case(
        "allow-lists deny by default: empty options reject a Basic that came only from DefaultConfig",
        leaf(default=config("basic")),
        [(FORBIDDEN, POLICY)],
        options(policies=(), modes=()),
    ),
    Case(
        "allow-lists deny by default: an empty mode list rejects single at the disruption path",
        leaf(policy=gang(2), disruption=mode("single")),
        [(FORBIDDEN, DISRUPTION)],
        options(modes=()),
    ),
    Case(
        "allow-lists deny by default: a defaulted disruption mode is checked at the disruption path",
        leaf(policy=gang(2), default=config(disruption="single")),
        [(FORBIDDEN, DISRUPTION)],
        options(modes=("all",)),
    ),
    Case(
        "allow-lists see the resolved config: a callback that turns basic into gang is checked as gang",
        leaf(policy=basic(), callbacks=[lambda cfg: setattr(cfg, "policy", config("gang", 3).policy)]),
        [(FORBIDDEN, POLICY)],
        options(policies=("basic",)),
    ),
    Case(
        "allow-lists see the resolved config: a default gang overridden by a user basic is checked as basic",
        leaf(policy=basic(), default=config("gang", 4)),
        [(FORBIDDEN, POLICY)],
        options(policies=("gang",)),
    ),
    Case(
        "allow-list and basic+all both fire, policy error first",
        leaf(policy=basic(), disruption=mode("all")),
        [(FORBIDDEN, POLICY), (FORBIDDEN, DISRUPTION), (INVALID, DISRUPTION)],
        options(policies=("gang",), modes=("single",)),
    ),
    # ---------------------------------------------------------------- basic+all cross-field rule
    Case(
        "basic+all fires when the policy is omitted (the Basic default)",
        leaf(disruption=mode("all")),
        [(INVALID, DISRUPTION)],
    ),
    Case(
        "basic+all fires with declarative validation disabled",
        leaf(disruption=mode("all")),
        [(INVALID, DISRUPTION)],
        options(dv=False),
    ),
    Case(
        "basic+all fires when both come from DefaultConfig",
        leaf(default=config("basic", disruption="all")),
        [(INVALID, DISRUPTION)],
    ),
    Case(
        "basic+all applies to composite nodes too",
        composite("root", leaf("a", path=child(0), policy=gang(2)), disruption=mode("all")),
        [(INVALID, DISRUPTION)],
    ),
    # ---------------------------------------------------------------- declarative layer off (pitfall 3)
    Case(
        "with declarative validation disabled an empty policy quietly resolves to Basic",
        leaf(policy={}),
        [],
        options(dv=False),
    ),
    Case(
        "with declarative validation disabled an empty policy is still checked as Basic by the allow-list",
        leaf(policy={}),
        [(FORBIDDEN, POLICY)],
        options(policies=("gang",), dv=False),
    ),
    Case(
        "with declarative validation disabled empty unions and bad claims are accepted",
        leaf(policy=gang(2), disruption={}, constraints=topology("a", "b"), claims=[claim("")]),
        [],
        options(dv=False),
    ),
    Case(
        "a nil root on update is still one Invalid at the empty path",
        None,
        [(INVALID, "")],
        old=leaf(),
    ),
    Case(
        "an existing-workload builder is one InternalError even on update",
        None,
        [(INTERNAL, "")],
        old=leaf(),
        existing=EXISTING_WORKLOAD,
    ),
    # ---------------------------------------------------------------- paths and order
    Case(
        "a nil Path gives relative paths for allow-list errors too",
        leaf(path=None, policy=gang(2), disruption=mode("all")),
        [(FORBIDDEN, "schedulingPolicy"), (FORBIDDEN, "disruptionMode")],
        options(policies=("basic",), modes=("single",)),
    ),
    Case(
        "custom path elements place errors under the caller's own field names",
        leaf(
            path=at("spec.groups[2]"),
            input=WorkloadInput(policy=Block(("policy",), leaf=gang(0))),
        ),
        [(INVALID, "spec.groups[2].policy.gang.minCount")],
    ),
    Case(
        "errors come in pre-order: the parent's before its children's",
        composite(
            "root",
            leaf("a", path=child(0), policy=gang(0)),
            composite("b", leaf("c", path=child(1, 0), policy=gang(-1)), path=child(1), policy=cgang(0)),
            policy=cgang(0),
        ),
        [
            (INVALID, "spec.scheduling.schedulingPolicy.gang.minGroupCount"),
            (INVALID, "spec.scheduling.children[0].schedulingPolicy.gang.minCount"),
            (INVALID, "spec.scheduling.children[1].schedulingPolicy.gang.minGroupCount"),
            (INVALID, "spec.scheduling.children[1].children[0].schedulingPolicy.gang.minCount"),
        ],
    ),
    Case(
        "every block is validated and every error collected",
        leaf(
            policy={"basic": {}, "gang": {}},
            constraints=topology(""),
            disruption={},
            claims=[claim("Bad_Name", ref="c")],
        ),
        [
            (INVALID, POLICY),
            (REQUIRED, "spec.scheduling.schedulingConstraints.topology[0].key"),
            (INVALID, DISRUPTION),
            (INVALID, "spec.scheduling.resourceClaims[0].name"),
        ],
    ),
    # ---------------------------------------------------------------- tree check (step 4)
    Case(
        "a name used twice at different levels is one InternalError at the root path",
        composite(
            "root", composite("mid", leaf("dup", path=child(0, 0)), path=child(0)), leaf("dup", path=child(1))
        ),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "a child named like the root is one InternalError at the root path",
        composite("root", leaf("root", path=child(0))),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "a nil child is one InternalError at the root path",
        composite("root", leaf("a", path=child(0)), None),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "an empty child name is one InternalError at the root path, even with declarative validation off",
        composite("root", leaf("", path=child(0), policy=gang(0))),
        [(INTERNAL, "spec.scheduling")],
        options(dv=False),
    ),
    Case(
        "a leaf that fills a composite slot is one InternalError at the root path",
        leaf(input=leaf_input(policy=gang(2), composite_policy=cgang(2))),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "a composite node that fills the leaf claims slot is one InternalError at the root path",
        composite("root", leaf("a", path=child(0)), input=composite_input(leaf_claims=[claim("c", ref="x")])),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "the tree check stops validation: a tree problem hides every block error",
        composite(
            "root", leaf("a", path=child(0), policy=gang(0)), leaf("a", path=child(1)), policy=cgang(0)
        ),
        [(INTERNAL, "spec.scheduling")],
    ),
    Case(
        "the tree check with a nil Path reports at the empty path",
        leaf("", path=None),
        [(INTERNAL, "")],
    ),
    # ---------------------------------------------------------------- update and ratcheting
    Case(
        "an update that changes an invalid gang 0 to gang -1 is reported again",
        _ratchet_tree(gang(-1)),
        [(INVALID, "spec.scheduling.children[0].schedulingPolicy.gang.minCount")],
        old=_ratchet_tree(gang(0)),
    ),
    Case(
        "an update that renames a gang 0 child validates it as new",
        composite("root", leaf("b", path=child(0), policy=gang(0)), policy=cgang(1)),
        [(INVALID, "spec.scheduling.children[0].schedulingPolicy.gang.minCount")],
        old=_ratchet_tree(gang(0)),
    ),
    Case(
        "an update adds an invalid block that the old node did not have: validated",
        leaf(policy=gang(2), constraints=topology("a", "b")),
        [(TOO_MANY, "spec.scheduling.schedulingConstraints.topology")],
        old=leaf(policy=gang(2)),
    ),
    Case(
        "ratcheting pairs claims by name, not position: an unchanged sourceless claim that moved is allowed",
        leaf(claims=[claim("b", ref="rb"), claim("a")]),
        [],
        old=leaf(claims=[claim("a"), claim("b", ref="rb")]),
    ),
    Case(
        "a new sourceless claim is validated as an addition",
        leaf(claims=[claim("a"), claim("new")]),
        [(INVALID, "spec.scheduling.resourceClaims[1]")],
        old=leaf(claims=[claim("a")]),
    ),
    Case(
        "ratcheting does not hide the allow-lists: an unchanged forbidden policy is reported again",
        leaf(policy=basic()),
        [(FORBIDDEN, POLICY)],
        options(policies=("gang",)),
        old=leaf(policy=basic()),
    ),
    Case(
        "ratcheting does not hide the cross-field rule: an unchanged basic+all is reported again",
        leaf(disruption=mode("all")),
        [(INVALID, DISRUPTION)],
        old=leaf(disruption=mode("all")),
    ),
    Case(
        "the old tree's Path, defaults and callbacks are ignored",
        leaf(policy=gang(2)),
        [],
        old=leaf(
            path=None, policy=gang(2), default=config("basic", disruption="all"), callbacks=[Recorder()]
        ),
    ),
]


def _builder(case: Case) -> Builder:
    if case.existing is not None:
        return Builder.from_existing_workload(case.existing, case.opts)
    return Builder(case.root, case.opts)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_validate(case: Case) -> None:
    errors = _builder(case).validate(case.old)
    assert [e.key() for e in errors] == case.expected


# --------------------------------------------------------------------------- contract wording


@dataclass(frozen=True)
class MessageCase:
    id: str
    root: WorkloadItem
    opts: BuildOptions
    rendered: str


MESSAGE_CASES = [
    MessageCase(
        "basic+all renders exactly as apimachinery does",
        leaf(disruption=mode("all")),
        options(),
        'spec.scheduling.disruptionMode: Invalid value: "": '
        "the disruptionMode `all` is not supported with the Basic scheduling policy",
    ),
    MessageCase(
        "the basic allow-list literal",
        leaf(policy=basic()),
        options(policies=("gang",)),
        "spec.scheduling.schedulingPolicy: Forbidden: "
        "basic scheduling policy is not supported by this controller",
    ),
    MessageCase(
        "the gang allow-list literal",
        leaf(policy=gang(2)),
        options(policies=("basic",)),
        "spec.scheduling.schedulingPolicy: Forbidden: "
        "gang scheduling policy is not supported by this controller",
    ),
    MessageCase(
        "the single allow-list literal",
        leaf(policy=gang(2), disruption=mode("single")),
        options(modes=("all",)),
        "spec.scheduling.disruptionMode: Forbidden: "
        "the disruptionMode `single` is not supported by this controller",
    ),
    MessageCase(
        "the all allow-list literal",
        leaf(policy=gang(2), disruption=mode("all")),
        options(modes=("single",)),
        "spec.scheduling.disruptionMode: Forbidden: "
        "the disruptionMode `all` is not supported by this controller",
    ),
]


@pytest.mark.parametrize("case", MESSAGE_CASES, ids=[c.id for c in MESSAGE_CASES])
def test_contract_messages(case: MessageCase) -> None:
    errors = Builder(case.root, case.opts).validate()
    assert [e.error() for e in errors] == [case.rendered]


def test_validate_rejects_an_empty_name_before_any_callback_runs() -> None:
    """An empty name is rejected before any callback runs (docs/design.md §6.7), in Validate as in Build."""
    recorder = Recorder()
    errors = Builder(leaf("", callbacks=[recorder]), options()).validate()
    assert [e.key() for e in errors] == [(INTERNAL, "spec.scheduling")]
    assert recorder.calls == 0


def test_validate_runs_callbacks_on_the_resolved_config() -> None:
    """Validate resolves each node like BuildWorkload does, callbacks included (docs/design.md §6.4)."""
    recorder = Recorder()
    assert Builder(leaf(policy=gang(2), callbacks=[None, recorder]), options()).validate() == []
    assert recorder.calls == 1
