"""The enums looked up on every review hash by identity (C), and still behave as keys."""

from __future__ import annotations

import pickle

import pytest

from webhook.compiler.schema import BlockType
from webhook.compiler.types import DisruptionKind, PolicyKind
from webhook.enums import IdentityEnum

ENUMS = [PolicyKind, DisruptionKind, BlockType]


@pytest.mark.parametrize("enum_type", ENUMS, ids=[e.__name__ for e in ENUMS])
def test_members_hash_by_identity_and_work_as_keys(enum_type: type[IdentityEnum]) -> None:
    members = list(enum_type)
    assert all(hash(m) == object.__hash__(m) for m in members)  # no Python-level __hash__
    table = {m: m.value for m in members}
    for m in members:
        again = pickle.loads(pickle.dumps(m))  # wasp validate's worker processes pickle results
        assert again is m
        assert again in frozenset(members)
        assert table[again] == m.value
