"""Helpers of the over-limit tables (tests/declarative/test_limits*.py)."""

from __future__ import annotations

import typing as t

import pytest

from webhook.vocab.field import FieldError


class Poison(dict[str, t.Any]):
    """A list entry that fails the test if anything reads it."""

    def _touched(self, *_: object) -> t.NoReturn:
        pytest.fail("an entry past the list's limit was read")

    __getitem__ = get = items = keys = values = __iter__ = __contains__ = __len__ = _touched


def poisoned(good: list[t.Any], extra: int = 50) -> list[t.Any]:
    """``good`` (the entries up to one past the limit) followed by entries nobody may read."""
    return [*good, *(Poison() for _ in range(extra))]


def topology(n: int, entry: object = None) -> list[object]:
    return [{"key": "rack"} if entry is None else entry for _ in range(n)]


def too_many(path: str, count: int, limit: int) -> tuple[str, str, str]:
    noun = "item" if limit == 1 else "items"
    return ("FieldValueTooMany", path, f"{path}: Too many: {count}: must have at most {limit} {noun}")


def seen(errors: t.Iterable[FieldError]) -> list[tuple[str, str, str]]:
    return [(e.type.value, str(e.field), e.error()) for e in errors]
