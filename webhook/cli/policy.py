"""``wasp policy check``: a policy file checked against the CRD it governs, for CI.

Exit codes as ``wasp validate``: 0 the policy fits the CRD, 1 it has problems (one line each
on stdout, naming the policy key), 2 a file cannot be read or is not a policy or a CRD.
A shipped integration is named (``--integrations jobset``) rather than given as a file, so a
user who installed wasp checks it against the CRD of their own cluster without its path.
"""

from __future__ import annotations

import sys
import typing as t
from pathlib import Path

import click
import yaml

from webhook.cli.integration_flag import integrations_option

__all__ = ["policy"]


@click.group()
def policy() -> None:
    """Work with policy files (SchedulingIntegration)."""


@policy.command("check")
@click.argument(
    "policy_file", metavar="[POLICY]", required=False, type=click.Path(dir_okay=False, path_type=Path)
)
@integrations_option(help="Each is checked, as POLICY is, against the CRD in --crd.")
@click.option(
    "--crd",
    "crd_file",
    required=True,
    metavar="CRD.yaml",
    type=click.Path(dir_okay=False, path_type=Path),
    help=(
        "A file holding the CustomResourceDefinition the policy governs (and, to check"
        " stamping.childTemplates, the CRDs of the child kinds), among other documents."
    ),
)
def check(policy_file: Path | None, integrations: tuple[Path, ...], crd_file: Path) -> None:
    """Check every path, forEach, itemKey and pod count of POLICY (or of the shipped
    integrations named by --integrations) against the CRD's schema.

    A path the CRD does not have, a list that is a map, a pod count that is not an integer, or
    blocks at a field the CRD lacks (the apiserver would prune them) is reported with the
    policy key to fix.
    """
    if policy_file is None and not integrations:
        raise click.UsageError("give a POLICY file or --integrations NAME")
    # An integration is labelled by the name the user gave, not by where wasp is installed.
    named = [(f"integration {path.stem}", path) for path in integrations]
    if policy_file is not None:
        named.insert(0, (str(policy_file), policy_file))
    failed = False
    for label, path in named:
        failed |= _check_one(label, path, crd_file)
    if failed:
        sys.exit(1)


def _check_one(label: str, policy_file: Path, crd_file: Path) -> bool:
    """Print the problems of one policy (or that it fits); True when it has problems."""
    from webhook.policy import load_policy_file
    from webhook.policy.crdcheck import check_against_crd, check_child_templates
    from webhook.vocab.errors import PolicyError

    try:
        loaded = load_policy_file(policy_file)
    except PolicyError as exc:
        _fail(str(exc))
    crd, crds = _find_crd(crd_file, loaded.group, loaded.kind)
    # The governed kind's CRD, then the CRDs of child kinds whose pod templates it stamps.
    problems = [*check_against_crd(loaded, crd), *check_child_templates(loaded, crds)]
    for problem in problems:
        click.echo(f"{label}: {problem}")
    if not problems:
        click.echo(f"{label}: fits {crd_file} ({loaded.group}/{loaded.kind} {', '.join(loaded.versions)})")
    return bool(problems)


def _find_crd(path: Path, group: str, kind: str) -> tuple[dict[str, t.Any], list[dict[str, t.Any]]]:
    """The CRD in ``path`` for ``group``/``kind`` (or the only CRD there), and every CRD there."""
    from webhook.policy.crdcheck import crd_identity

    try:
        documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"{path}: cannot read it: {exc}")
    except yaml.YAMLError as exc:
        _fail(f"{path}: not valid YAML: {exc}")
    crds = [d for d in documents if d.get("kind") == "CustomResourceDefinition"]
    for crd in crds:
        if crd_identity(crd) == (group, kind):
            return crd, crds
    if len(crds) == 1:
        return crds[0], crds  # check_against_crd says what does not match
    _fail(f"{path}: holds no CustomResourceDefinition for {group}/{kind}")


def _fail(message: str) -> t.NoReturn:
    sys.stderr.write(message + "\n")
    sys.exit(2)
