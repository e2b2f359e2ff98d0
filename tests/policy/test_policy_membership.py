"""``spec.stamping.membership``: loaded into the policy, and every mistake a load error naming the file and the key."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
import yaml

from webhook.policy import load_policy_file
from webhook.policy.model import Membership
from webhook.vocab.errors import PolicyError

Json = dict[str, t.Any]


def policy(stamping: Json, root: Json | None = None) -> Json:
    return {"apiVersion": "wasp.dev/v1alpha1", "kind": "SchedulingIntegration", "metadata": {"name": "thing"},
            "spec": {"target": {"group": "example.com", "versions": ["v1"], "kind": "Thing", "resource": "things"},
                     "allowedPolicies": ["gang"], "allowedDisruptionModes": ["all"], "stamping": stamping,
                     "root": root or {"type": "leaf", "path": "spec.scheduling", "templateName": "all", "minCountDefault": "none"}}}  # fmt: skip


def load(tmp_path: Path, doc: Json) -> t.Any:
    path = tmp_path / "thing.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_policy_file(path)


def test_membership_is_loaded(tmp_path: Path) -> None:
    loaded = load(tmp_path, policy({"membership": {"label": "example.com/thing-name"}}))
    assert (loaded.membership, loaded.stamp_pods) == (Membership("example.com/thing-name"), False)


TWO_PLAIN_CHILDREN: t.Final = {"type": "composite", "path": "spec.scheduling", "templateName": "all", "children": [
    {"id": "a", "type": "leaf", "path": "spec.a.scheduling", "templateName": "a", "minCountDefault": "none"},
    {"id": "b", "type": "leaf", "path": "spec.b.scheduling", "templateName": "b", "minCountDefault": "none"}]}  # fmt: skip


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(
            policy({"membership": {}}),
            r"thing\.yaml: spec\.stamping\.membership: 'label' is a required",
            id="no label",
        ),  # fmt: skip
        pytest.param(
            policy({"membership": {"label": "bad key!"}}),
            r"thing\.yaml: spec\.stamping\.membership\.label: 'bad key!' is not a label key",
            id="a label key no pod can carry",
        ),  # fmt: skip
        pytest.param(
            policy({"membership": {"label": "x", "value": "y"}}),
            r"thing\.yaml: spec\.stamping\.membership: unknown key 'value'",
            id="an unknown key",
        ),  # fmt: skip
        pytest.param(
            policy({"membership": {"label": "x"}}, TWO_PLAIN_CHILDREN),
            r"thing\.yaml: spec\.stamping: node 'root': children 'a', 'b' have no podLabel",
            id="member pods could not be placed in the tree by their labels",
        ),  # fmt: skip
    ],
)
def test_membership_mistakes_are_load_errors(tmp_path: Path, doc: Json, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        load(tmp_path, doc)
