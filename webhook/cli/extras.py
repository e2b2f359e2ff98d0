"""The optional dependencies (pyproject.toml's extras) a command needs.

A plain ``pip install wasp`` is enough for ``validate``, ``compile``, ``schema`` and ``policy``
(what CI runs); the other commands, when their extra is missing, say which one to install in
one line (exit 2) instead of failing on an import.
"""

from __future__ import annotations

import typing as t
from importlib.util import find_spec

import click

__all__ = ["MissingExtras", "missing_extras", "placeholder", "require"]

EXTRAS: t.Final = {
    "server": ("flask", "gunicorn", "prometheus_client", "cryptography"),
    "cluster": ("kubernetes", "prometheus_client", "cryptography"),
}
# Per command of webhook/cli/main.py; `certs rotate` also needs "cluster" (it checks itself).
NEEDS: t.Final = {
    "serve": ("server",),
    "certs": ("server",),
    "reconcile": ("cluster",),
    "audit": ("cluster",),
    "doctor": ("cluster",),
}


class MissingExtras(click.ClickException):
    exit_code = 2

    def __init__(self, command: str, extras: t.Sequence[str]) -> None:
        spec = ",".join(extras)
        super().__init__(
            f"wasp {command} needs the optional dependencies of wasp[{spec}]: pip install 'wasp[{spec}]'"
        )


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or blocked installation: not usable either
        return False


def _missing(extras: t.Iterable[str]) -> list[str]:
    return [extra for extra in extras if not all(map(_installed, EXTRAS[extra]))]


def missing_extras(command: str) -> list[str]:
    """The extras ``command`` needs whose modules are not installed."""
    return _missing(NEEDS.get(command, ()))


def require(command: str, *extras: str) -> None:
    """Exit 2 with one line naming the extra when one of ``extras`` is not installed."""
    if missing := _missing(extras):
        raise MissingExtras(command, missing)


def placeholder(command: str, missing: t.Sequence[str]) -> click.Command:
    """A command that only says what to install (listed in ``wasp --help`` as such)."""

    def refuse() -> None:
        raise MissingExtras(command, missing)

    spec = ",".join(missing)
    return click.Command(
        command,
        callback=refuse,
        help=f"(needs wasp[{spec}]: pip install 'wasp[{spec}]')",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )
