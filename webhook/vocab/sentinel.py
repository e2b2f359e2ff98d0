"""Named sentinels (``OMIT``, ``NO_OLD``, ``CREATE``): unique, readable, copy- and pickle-safe.

A sentinel must stay the *same object* through ``copy.deepcopy`` and through pickling
(``wasp validate`` sends results between worker processes), because callers test it with
``is``.
"""

from __future__ import annotations

import importlib
import typing as t

__all__ = ["Sentinel"]


def _resolve(module: str, name: str) -> object:
    return getattr(importlib.import_module(module), name)


class Sentinel:
    __slots__ = ("_module", "_name")

    def __init__(self, name: str, module: str) -> None:
        """``name`` must be the module-level name it is bound to in ``module``."""
        self._name = name
        self._module = module

    def __repr__(self) -> str:
        return self._name

    def __copy__(self) -> Sentinel:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Sentinel:
        return self

    def __reduce__(self) -> tuple[t.Callable[[str, str], object], tuple[str, str]]:
        return _resolve, (self._module, self._name)
