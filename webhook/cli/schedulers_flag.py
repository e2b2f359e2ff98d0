"""``--was-schedulers NAME[,NAME...]``: the schedulers that implement Workload-Aware Scheduling.

Rule ``foreign-scheduler`` (docs/schedulability.md) warns about member pods placed by a scheduler
not in this list. Each policy's ``spec.schedulability.schedulers`` says it (default
``default-scheduler``); given, the flag replaces it for every policy
(:meth:`webhook.policy.PolicySet.with_schedulers`): a cluster whose kube-scheduler runs the gang
plugin in another profile names that profile once, for the webhook (chart value
``server.wasSchedulers``) and CI alike. Kept free of the policy modules, so ``wasp --help``
imports none of them.
"""

from __future__ import annotations

import typing as t

import click

__all__ = ["schedulers_option"]


def _names(_ctx: click.Context, _param: click.Parameter, values: t.Sequence[str]) -> frozenset[str] | None:
    names = frozenset(n.strip() for v in values for n in v.split(",") if n.strip())
    if values and not names:
        raise click.BadParameter("name at least one scheduler")
    return names or None


def schedulers_option(**kwargs: t.Any) -> t.Callable[[t.Callable[..., t.Any]], t.Callable[..., t.Any]]:
    """The option; the command receives ``was_schedulers``: a set of names, or ``None``."""
    return click.option(
        "--was-schedulers",
        "was_schedulers",
        multiple=True,
        metavar="NAME[,NAME...]",
        callback=_names,
        help="Scheduler names that implement Workload-Aware Scheduling (pods placed by another "
        "scheduler get a foreign-scheduler warning).  [default: each policy's own, default-scheduler]",
        **kwargs,
    )
