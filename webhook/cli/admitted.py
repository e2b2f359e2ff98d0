"""A manifest as the validating webhook would receive it: ``generateName`` already made a name.

The apiserver generates the name (``generateName`` cut to 58 characters, then 5 random
characters) before validating admission runs, so the webhook always judges a named object. The
offline commands judge a manifest that has only ``generateName`` the same way, with
:data:`SUFFIX` standing for the random characters (5 of the generator's own alphabet, so every
length and format rule sees what a real name would give).
"""

from __future__ import annotations

import typing as t

__all__ = ["SUFFIX", "as_admitted", "generated_name"]

SUFFIX: t.Final = "xxxxx"
_BASE_MAX: t.Final = 58  # 63 - len(SUFFIX): the apiserver's name generator keeps names <= 63


def generated_name(obj: object) -> str | None:
    """The name the apiserver would generate for ``obj`` (with :data:`SUFFIX`), or ``None`` when
    the manifest has a name, or no string ``generateName`` to make one from."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or meta.get("name"):
        return None
    base = meta.get("generateName")
    if not isinstance(base, str) or not base:
        return None
    return base[:_BASE_MAX] + SUFFIX


def as_admitted(obj: object) -> object:
    """``obj`` with its generated name filled in (a copy), or ``obj`` itself when it needs none."""
    name = generated_name(obj)
    if name is None:
        return obj
    assert isinstance(obj, dict)
    return {**obj, "metadata": {**obj["metadata"], "name": name}}
