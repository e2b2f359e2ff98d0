"""The ``--old`` objects: how an object is matched with its previous version, and the index by it."""

from __future__ import annotations

import typing as t

from webhook.cli.loader import LoadError, load_source

__all__ = ["Identity", "identity", "index_old", "old_objects"]

Identity = tuple[str, str, str, str]  # (API group, kind, namespace, name)


def identity(obj: object) -> Identity | None:
    """How an object is matched with its previous version: group, kind, namespace, name.

    The API *group* rather than the full apiVersion: the apiserver compares an update with
    the stored object whatever version either is written in. ``None`` when unnamed.
    """
    if not isinstance(obj, dict):
        return None
    api_version, kind, metadata = obj.get("apiVersion"), obj.get("kind"), obj.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(metadata, dict):
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = metadata.get("namespace")
    return (api_version.rpartition("/")[0], kind, namespace if isinstance(namespace, str) else "", name)


def index_old(
    sources: t.Sequence[str], stdin: t.BinaryIO | None
) -> tuple[dict[Identity, object], list[LoadError]]:
    """The ``--old`` objects by identity (a later duplicate wins), plus sources that failed."""
    index: dict[Identity, object] = {}
    problems: list[LoadError] = []
    for source in sources:
        try:
            for doc in load_source(source, stdin):
                key = identity(doc.obj)
                if key is not None:
                    index[key] = doc.obj
        except LoadError as exc:
            problems.append(exc)
    return index, problems


def old_objects(source: str) -> dict[Identity, object]:
    """The objects of one ``--old`` source by identity; raises :class:`LoadError`."""
    index, problems = index_old([source], None)
    if problems:
        raise problems[0]
    return index
