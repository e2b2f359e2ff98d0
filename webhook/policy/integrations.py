"""The integrations shipped with wasp: ready policies for ecosystem CRDs, enabled by name.

They live in ``webhook/policies/integrations/<name>.yaml`` and are never loaded by default
(``--integrations jobset,mpijob`` on ``wasp validate``, ``compile``, ``serve`` and
``reconcile``). Names are resolved to files here and only here, so every command accepts the
same names and says the same thing about a wrong one.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from webhook.policy.model import BUILTIN_POLICY_DIR
from webhook.vocab.errors import PolicyError

__all__ = ["INTEGRATION_DIR", "KNOWN_INTEGRATIONS", "integration_paths", "parse_integrations"]

INTEGRATION_DIR: t.Final = BUILTIN_POLICY_DIR / "integrations"
# The names issue 15 ships; a name is its file's stem.
KNOWN_INTEGRATIONS: t.Final = (
    "jobset", "leaderworkerset", "mpijob", "raycluster", "rayjob", "trainjob", "volcano-job",
)  # fmt: skip


def parse_integrations(values: t.Iterable[str]) -> tuple[str, ...]:
    """The names in ``values`` (each ``NAME[,NAME...]``), in order, once each."""
    names = (name.strip() for value in values for name in value.split(","))
    return tuple(dict.fromkeys(name for name in names if name))


def integration_paths(names: t.Iterable[str]) -> tuple[Path, ...]:
    """The policy file of each integration; raises :class:`PolicyError` for an unknown name
    (listing the known ones) and for a known one whose file is not shipped."""
    paths = []
    for name in names:
        if name not in KNOWN_INTEGRATIONS:
            raise PolicyError(f"unknown integration {name!r} (known: {', '.join(KNOWN_INTEGRATIONS)})")
        path = INTEGRATION_DIR / f"{name}.yaml"
        if not path.is_file():
            raise PolicyError(
                f"integration {name!r} is not shipped in this build of wasp ({path} is missing)"
            )
        paths.append(path)
    return tuple(paths)
