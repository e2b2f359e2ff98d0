"""``--kubeconfig PATH``: the one definition the commands that talk to a cluster share
(``wasp reconcile``, ``wasp audit``, ``wasp doctor``); :func:`webhook.kube.api.connect`
reads it. Kept free of the Kubernetes client, so ``wasp --help`` imports none of it."""

from __future__ import annotations

import typing as t
from pathlib import Path

import click

__all__ = ["kubeconfig_option"]


def kubeconfig_option(func: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    """The option; the command receives ``kubeconfig``: a path, or ``None``."""
    return click.option(
        "--kubeconfig",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        help="Kubeconfig file. Default: in-cluster configuration, then $KUBECONFIG (or ~/.kube/config).",
    )(func)
