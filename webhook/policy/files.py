"""Policy files and directories: YAML read strictly (no duplicate keys), one policy per file; in
a directory, documents that are not policies (the CRD, sample manifests) are skipped with a note.
Each policy document is checked by :func:`webhook.policy.loading.parse_policy`.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import yaml

from webhook.policy.loading import parse_policy
from webhook.policy.model import Policy
from webhook.policy.schema import POLICY_API_VERSION, POLICY_KIND
from webhook.vocab.errors import PolicyError

__all__ = ["load_policies", "load_policy_file"]


class _StrictLoader(yaml.CSafeLoader):
    """The safe loader (libyaml's, as for manifests) that rejects duplicate mapping keys: in a
    policy a repeated key would silently win over the first, hiding a mistake. Policies load
    in every ``wasp validate`` run, the built-in ones included: PyYAML's pure-Python parser
    took 3.7 ms of a one-manifest run's start, libyaml 0.9 ms."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[t.Hashable, t.Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_policy_file(path: Path) -> Policy:
    """Load and check one policy file; raises :class:`PolicyError` naming the file and key."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PolicyError(f"{source}: cannot read policy file: {exc.strerror or exc}") from exc
    try:
        doc = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise PolicyError(f"{source}: not valid YAML: {exc}") from exc
    return parse_policy(source, doc)


def _is_policy(doc: object) -> bool:
    """Whether ``doc`` says it is a policy (then it must be a valid one); a CRD or a sample
    manifest beside the policies says otherwise."""
    if not isinstance(doc, dict):
        return False
    api_version = doc.get("apiVersion")
    return (
        isinstance(api_version, str)
        and api_version.startswith("wasp.dev/")
        and doc.get("kind") == POLICY_KIND
    )


def _load_directory(directory: Path, notes: list[str] | None) -> list[Policy]:
    """The policies of a directory's ``*.yaml``/``*.yml`` files. Other documents there (the
    CRD, sample manifests) are skipped with a note; a directory with documents but no policy
    is an error (it is the wrong directory, or its policies lost their apiVersion)."""
    policies: list[Policy] = []
    skipped: list[str] = []
    for path in sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()):
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
            docs = [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]  # noqa: S506
        except OSError as exc:
            raise PolicyError(f"{source}: cannot read policy file: {exc.strerror or exc}") from exc
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise PolicyError(f"{source}: not valid YAML: {exc}") from exc
        if not docs:
            skipped.append(f"{source}: holds no document (a policy file holds one mapping): skipped")
        for i, doc in enumerate(docs):
            if _is_policy(doc):
                policies.append(parse_policy(source if len(docs) == 1 else f"{source}[{i}]", doc))
            else:
                what = (
                    f"{doc.get('apiVersion')} {doc.get('kind')}"
                    if isinstance(doc, dict)
                    else f"a {type(doc).__name__}, not a mapping"
                )
                skipped.append(f"{source}: document {i} ({what}) is not a {POLICY_KIND}: skipped")
    # An empty directory is a valid configuration (an empty ConfigMap mounted for policies); one
    # whose documents are all something else is the wrong directory.
    if not policies and skipped:
        raise PolicyError(
            f"{directory}: holds no policy (a document with apiVersion {POLICY_API_VERSION} and kind "
            f"{POLICY_KIND}){''.join(f'; {s}' for s in skipped)}"
        )
    if notes is not None:
        notes.extend(skipped)
    return policies


def load_policies(locations: t.Iterable[Path], notes: list[str] | None = None) -> list[Policy]:
    """Every policy under ``locations``: files (one policy each), or directories, whose
    ``*.yaml``/``*.yml`` documents that are not policies are skipped (appended to ``notes``)."""
    policies: list[Policy] = []
    for location in locations:
        if location.is_dir():
            policies.extend(_load_directory(location, notes))
        elif location.exists():
            policies.append(load_policy_file(location))
        else:
            raise PolicyError(f"{location}: no such policy file or directory")
    return policies
