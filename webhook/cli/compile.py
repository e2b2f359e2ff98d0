"""``wasp compile``: the Workload, CompositePodGroups and PodGroups objects compile to.

Like ``gator expand``: nothing is sent anywhere, names are deterministic (they hash the
object's UID, so the UID must be known; a placeholder is marked in the output). Objects are
validated first with the same ``validate_object`` as ``wasp validate``; invalid ones are
reported on stderr and not compiled.

Jobs follow the 1.37 Job controller (docs/decisions.md §9, docs/design.md §7.1): a standalone Job
gets one Workload and one PodGroup, with a Basic template when it has no
``spec.scheduling``; a Job whose pods join a user-managed PodGroup, or that any controller
owns (a CronJob included, docs/decisions.md §4), gets none.
"""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import click
import yaml

from webhook import scheduling_objects
from webhook.cli.admitted import SUFFIX, as_admitted, generated_name
from webhook.cli.checker import ExitCode, stderr_line
from webhook.cli.enforcement_flag import enforcement_option
from webhook.cli.validate import load_policy_set, with_policy_options
from webhook.governed.delegation import delegated_templates
from webhook.governed.reconcile_model import workload_owner
from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.governed.workloads import compile_object, workload_refusal
from webhook.manifests.loader import STDIN, Document, LoadError, load_source, locate
from webhook.manifests.paths import expand_paths
from webhook.policy import Policy, PolicySet
from webhook.policy.model import Enforcement
from webhook.vocab.errors import BuildError
from webhook.vocab.gates import FeatureGates

__all__ = [
    "PLACEHOLDER_UID",
    "as_its_creator_makes_them",
    "compile_command",
    "compile_document",
    "not_compiled_reason",
]

PLACEHOLDER_UID: t.Final = "00000000-0000-0000-0000-000000000000"
_UID_NOTE: t.Final = f"metadata.uid missing; names use placeholder UID {PLACEHOLDER_UID}; pass --uid"


def _metadata(obj: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _where(doc: Document, obj: t.Mapping[str, t.Any], line: int | None = None) -> str:
    """``FILE:LINE: Kind ns/name`` as ``wasp validate`` prints it: ``line`` (a field's), else
    the line where the object starts (an item's own line in a ``*List``)."""
    meta = _metadata(obj)
    name, namespace = meta.get("name") or "<unnamed>", meta.get("namespace")
    ref = f"{namespace}/{name}" if namespace else name
    return f"{doc.source}:{line or doc.line}: {obj.get('kind')} {ref}"


def not_compiled_reason(policy: Policy, obj: t.Mapping[str, t.Any], gates: FeatureGates) -> str | None:
    """Why a valid governed object gets no Workload, or ``None`` when it gets one."""
    return workload_refusal(policy, obj, gates)


def compile_document(
    policy: Policy, obj: t.Mapping[str, t.Any], uid: str | None
) -> tuple[list[dict[str, t.Any]], str]:
    """The objects ``obj`` compiles to and the UID used (``metadata.uid``, ``uid``, or the placeholder)."""
    own = _metadata(obj).get("uid")
    used: str = own if isinstance(own, str) and own else uid or PLACEHOLDER_UID
    return compile_object(policy, obj, uid=used).objects(), used


def as_its_creator_makes_them(
    policy: Policy, obj: t.Mapping[str, t.Any], objects: list[dict[str, t.Any]], policies: PolicySet
) -> tuple[list[dict[str, t.Any]], list[str]]:
    """The objects as their creator makes them and the apiserver stores them, and the names of
    the delegated leaves' PodGroups.

    Every group gets the non-controller reference to its Workload that the Job controller and
    ``wasp reconcile`` add when they create it (docs/design.md §7.2); its ``uid`` is the
    Workload's, which the apiserver assigns, so it is empty here. Fields of a disabled gate are
    dropped, as the apiserver drops them on create (``wasp validate`` warns about them). A
    delegated leaf's PodGroups are left out: the Job controller creates them for each child Job,
    owned by that Job alone.
    """
    delegated = delegated_templates(policy, obj, policies.gates)
    stored = [scheduling_objects.as_created(o, policies.gates) for o in objects]
    workload, groups = stored[0], stored[1:]
    owner = workload_owner(workload)
    kept: list[dict[str, t.Any]] = [workload]
    skipped: list[str] = []
    for group in groups:
        if (
            group.get("kind") == "PodGroup"
            and group["spec"].get("workloadRef", {}).get("templateName") in delegated
        ):
            skipped.append(group["metadata"]["name"])
            continue
        group["metadata"]["ownerReferences"] = [*group["metadata"].get("ownerReferences", []), owner]
        kept.append(group)
    return kept, skipped


def _compile_all(
    policies: PolicySet, sources: list[str], uid: str | None, verbose: bool
) -> tuple[list[tuple[str, list[dict[str, t.Any]], list[str]]], ExitCode]:
    """Each compiled source: where it is, its objects, and what its names stand in for."""
    out: list[tuple[str, list[dict[str, t.Any]], list[str]]] = []
    code = ExitCode.OK
    stdin = sys.stdin.buffer
    for source in sources:
        try:
            for doc in load_source(source, stdin):
                # Judged and compiled as admitted: a generateName-only manifest gets a name.
                obj = as_admitted(doc.obj)
                result = validate_object(obj, policies=policies)
                if result.status is Status.ERROR:
                    stderr_line(f"wasp: {doc.source}:{doc.line}: error: {result.reason}")
                    code = ExitCode.INPUT
                    continue
                assert isinstance(obj, dict)
                where = _where(doc, obj)
                if result.warned:
                    # Admitted under a policy in warn mode: compiled, as wasp reconcile does.
                    for err in result.errors:
                        stderr_line(
                            f"wasp: {_where(doc, obj, locate(doc.node, err.field))}: warning: {err.error()}"
                        )
                elif result.status is Status.INVALID:
                    for err in result.errors:
                        stderr_line(f"wasp: {_where(doc, obj, locate(doc.node, err.field))}: {err.error()}")
                    code = max(code, ExitCode.INVALID)
                    continue
                for warning in result.warnings:
                    stderr_line(f"wasp: {where}: warning: {warning}")
                policy = policies.for_object(obj)
                if policy is None:  # skipped, or a scheduling object itself
                    if verbose:
                        stderr_line(f"wasp: {where}: not compiled: {result.reason or 'not a governed kind'}")
                    continue
                reason = not_compiled_reason(policy, obj, policies.gates)
                if reason is not None:
                    stderr_line(f"wasp: {where}: not compiled: {reason}")
                    continue
                try:
                    objects, used = compile_document(policy, obj, uid)
                except BuildError as exc:
                    stderr_line(f"wasp: {where}: cannot compile: {exc}")
                    code = max(code, ExitCode.INVALID)
                    continue
                objects, delegated = as_its_creator_makes_them(policy, obj, objects, policies)
                for name in delegated:
                    stderr_line(
                        f"wasp: {where}: note: PodGroup {name} is created by the Job controller for the "
                        "delegated Job (mode: delegate), owned by that Job, not by wasp reconcile: not printed"
                    )
                notes = []
                if used == PLACEHOLDER_UID:
                    notes.append(_UID_NOTE)
                if generated_name(doc.obj) is not None:
                    notes.append(
                        f"metadata.name is generated by the apiserver; names use {_metadata(obj)['name']} "
                        f"({SUFFIX} stands for its 5 random characters)"
                    )
                out.append((where, objects, notes))
        except LoadError as exc:
            stderr_line(f"wasp: {exc}")
            code = ExitCode.INPUT
    return out, code


@click.command("compile")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@with_policy_options
@enforcement_option()
@click.option("--uid", help="UID for objects without metadata.uid (names hash the UID).")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Also say on stderr which objects were not governed.")
def compile_command(
    paths: tuple[str, ...],
    policies: tuple[Path, ...],
    integrations: tuple[Path, ...],
    policy_only: bool,
    feature_gates: FeatureGates,
    enforcement: Enforcement | None,
    uid: str | None,
    output: str,
    verbose: bool,
) -> None:
    """Print the Workload, CompositePodGroup and PodGroup objects PATH compiles to.

    PATH is a file, a directory or '-' (stdin, the default). Output is multi-document YAML
    (or a JSON v1 List with -o json), in creation order. Invalid objects are reported on
    stderr and not compiled (exit 1); unparsable input exits 2.
    """
    policy_set = load_policy_set(policies, policy_only, feature_gates, integrations).with_enforcement(
        enforcement
    )
    found = expand_paths(list(paths) or [STDIN])
    for problem in found.problems:
        stderr_line(f"wasp: {problem}")
    compiled, code = _compile_all(policy_set, found.files, uid, verbose)
    if found.problems:
        code = ExitCode.INPUT
    stdout = sys.stdout
    if any(_UID_NOTE in notes for _, _, notes in compiled):
        stderr_line(
            f"wasp: metadata.uid missing: names use the placeholder UID {PLACEHOLDER_UID}; pass --uid"
        )
    if output == "json":
        items = [o for _, objects, _ in compiled for o in objects]
        stdout.write(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2) + "\n")
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        first = True
        for where, objects, notes in compiled:
            for obj in objects:
                if not first:
                    stdout.write("---\n")
                first = False
                stdout.write(f"# Source: {where}\n")
                if obj.get("kind") != "Workload":
                    stdout.write(
                        "# wasp: the Workload reference's uid is assigned when the apiserver creates it\n"
                    )
                for note in notes:
                    stdout.write(f"# wasp: {note}\n")
                stdout.write(yaml.dump(obj, Dumper=dumper, sort_keys=False, default_flow_style=False))
    stdout.flush()
    sys.exit(code)
