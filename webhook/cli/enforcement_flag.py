"""``--enforcement deny|warn``: the one definition ``wasp serve``, ``wasp validate`` and ``wasp compile`` share.

Given, it replaces every policy's ``spec.enforcement``
(:meth:`webhook.policy.PolicySet.with_enforcement`): the chart runs the webhook with
``--enforcement warn`` to try a policy out, and CI runs ``wasp validate --enforcement deny``
to fail on what a warn-mode policy only warns about. Not given, each policy's own applies.
Kept free of the policy modules, so ``wasp --help`` imports none of them.
"""

from __future__ import annotations

import typing as t

import click

__all__ = ["ENFORCEMENT_CHOICES", "enforcement_option"]

# webhook.policy.model.Enforcement's values (a test holds the two together).
ENFORCEMENT_CHOICES: t.Final = ("deny", "warn")


def enforcement_option(**kwargs: t.Any) -> t.Callable[[t.Callable[..., t.Any]], t.Callable[..., t.Any]]:
    """The option; the command receives ``enforcement``: ``"deny"``, ``"warn"`` or ``None``."""
    return click.option(
        "--enforcement",
        "enforcement",
        type=click.Choice(ENFORCEMENT_CHOICES),
        default=None,
        help="Override every policy's spec.enforcement: deny rejects an invalid object, warn admits "
        "it with the denial's errors as warnings.  [default: each policy's own, deny unless set]",
        **kwargs,
    )
