"""``diff``: jsonpatch's own patch, with the subtrees a mutation shares left out of the walk."""

from __future__ import annotations

import typing as t

import jsonpatch
import pytest

from webhook.governed.patch import assoc, diff
from webhook.vocab.field import FieldPath

Json = dict[str, t.Any]


def _deep(depth: int) -> Json:
    value: Json = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def _job() -> Json:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"a": "b"}},
            "spec": {"parallelism": 4, "scheduling": {"schedulingPolicy": {"gang": {}}},
                     "template": {"spec": {"containers": [{"name": "c"}, {"name": "d"}]}}}}  # fmt: skip


CASES = [
    pytest.param("spec.scheduling.schedulingPolicy.gang.minCount", 4, id="a default set inside a block"),
    pytest.param("spec.template.spec.schedulingGroup", {"podGroupName": "g"}, id="a member added"),
    pytest.param("metadata.labels.a", "c", id="a value replaced"),
    pytest.param("spec.parallelism", None, id="a value set to null"),
]


@pytest.mark.parametrize(("path", "value"), CASES)
def test_the_patch_is_jsonpatchs_own(path: str, value: object) -> None:
    original = _job()
    mutated = assoc(original, FieldPath.parse(path), value)
    assert diff(original, mutated) == list(jsonpatch.make_patch(original, mutated))


@pytest.mark.parametrize(("path", "value"), CASES)
def test_an_untouched_deep_value_is_never_walked(path: str, value: object) -> None:
    original = {**_job(), "extra": _deep(3_000)}  # far past the interpreter's recursion limit
    mutated = assoc(original, FieldPath.parse(path), value)
    patch = diff(original, mutated)
    assert patch == list(jsonpatch.make_patch(_job(), assoc(_job(), FieldPath.parse(path), value)))


def test_no_change_no_patch() -> None:
    original = {**_job(), "extra": _deep(3_000)}
    assert diff(original, dict(original)) == []
