"""``--integrations NAME[,NAME...]``: the one definition every command that loads policies uses.

The names are resolved to the shipped policy files while the flags are parsed, so a wrong
name is a usage error (exit 2) that lists the known ones, before anything starts.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import click

from webhook.policy.integrations import KNOWN_INTEGRATIONS, integration_paths, parse_integrations
from webhook.vocab.errors import PolicyError

__all__ = ["integrations_option"]


def _resolve(ctx: click.Context, param: click.Parameter, value: t.Sequence[str] | None) -> tuple[Path, ...]:
    try:
        return integration_paths(parse_integrations(value or ()))
    except PolicyError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


def integrations_option(**kwargs: t.Any) -> t.Callable[[t.Callable[..., t.Any]], t.Callable[..., t.Any]]:
    """The option; the command receives ``integrations``: the policy files, in the order given.
    ``help`` replaces the text after the list of names."""
    what = kwargs.pop("help", "Loaded after the built-in policies, before --policies.")
    return click.option(
        "--integrations",
        "integrations",
        multiple=True,
        callback=_resolve,
        metavar="NAME[,NAME...]",
        help=f"Shipped integration policies to load ({', '.join(KNOWN_INTEGRATIONS)}); repeatable. {what}",
        **kwargs,
    )
