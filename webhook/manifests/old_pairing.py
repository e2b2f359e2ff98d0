"""``--old`` pairing: how a file finds its previous version in an ``--old`` directory, how an
object is matched with its previous version, the index of the ``--old`` objects by it, and
what to say of an object that has none."""

from __future__ import annotations

import functools
import os
import typing as t
from dataclasses import dataclass, field

from webhook.manifests.loader import STDIN, LoadError, load_source

__all__ = [
    "Identity",
    "Old",
    "OldFiles",
    "SourceOld",
    "identity",
    "index_old",
    "old_objects",
    "pair_old_files",
]

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


@dataclass(frozen=True, slots=True)
class OldFiles:
    """The previous version of each file found in an ``--old`` directory (``pairs``), and,
    for a file without one, the paths looked at (``tried``), which its objects' notes name."""

    pairs: t.Mapping[str, str] = field(default_factory=dict)
    tried: t.Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _under(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory


@functools.lru_cache(maxsize=256)
def _checkout_root(directory: str) -> str | None:
    """The nearest directory at or above ``directory`` holding ``.git`` (a clone or a worktree)."""
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _names(file: str, roots: t.Sequence[str], checkout_first: bool) -> list[str]:
    """The relative paths ``file`` may have in an ``--old`` directory, the likeliest first.

    * Its path from the working directory, when it lies under it, however it was spelled
      (``deploy/job.yaml``, ``$PWD/deploy/job.yaml``, ``./deploy/../deploy/job.yaml``): the
      base branch checked out whole, the command run at the top of the clone.
    * Its path from the top of its checkout (the nearest directory holding ``.git``): the
      same, run from inside ``deploy/`` or from elsewhere. First when the ``--old``
      directory is itself a checkout (``checkout_first``: ``git worktree add``), where a
      path from ``deploy/`` would name another file.
    * Its path from the PATH directory it was found under: ``--old base/deploy deploy/``.
    """
    absolute = os.path.abspath(file)
    real = os.path.realpath(file)
    names: list[str] = []
    cwd = os.getcwd()
    for path, here in ((absolute, os.path.abspath(cwd)), (real, os.path.realpath(cwd))):
        if _under(path, here):
            names.append(os.path.relpath(path, here))
            break
    top = _checkout_root(os.path.dirname(real))
    if top is not None:
        names.insert(0 if checkout_first else len(names), os.path.relpath(real, top))
    for root in roots:
        root_abs = os.path.abspath(root)
        if _under(absolute, root_abs):
            names.append(os.path.relpath(absolute, root_abs))
    return list(dict.fromkeys(n for n in names if n != os.curdir and not n.startswith(os.pardir)))


def pair_old_files(files: t.Sequence[str], paths: t.Sequence[str], old_dirs: t.Sequence[str]) -> OldFiles:
    """The previous version of each file in an ``--old`` directory ``D``: the first of
    ``D/NAME`` that is a file, for each directory in order and each NAME of :func:`_names`.
    A file with none is checked as created, and ``tried`` keeps what was looked for."""
    pairs: dict[str, str] = {}
    tried: dict[str, tuple[str, ...]] = {}
    if not old_dirs:
        return OldFiles(pairs, tried)
    roots = [p for p in paths if p != STDIN and os.path.isdir(p)]
    checkouts = {d: os.path.exists(os.path.join(d, ".git")) for d in old_dirs}
    for file in files:
        if file == STDIN:
            continue
        looked = [os.path.join(d, name) for d in old_dirs for name in _names(file, roots, checkouts[d])]
        found = next((path for path in looked if os.path.isfile(path)), None)
        if found is not None:
            pairs[file] = found
        else:
            tried[file] = tuple(looked)
    return OldFiles(pairs, tried)


@dataclass(frozen=True, slots=True)
class SourceOld:
    """What ``--old`` gives the objects of one source: the objects of its paired file first,
    then the ``--old`` files'; ``unparsable`` when the paired file does not parse (its
    objects are then checked as created); ``missing``, what to say of an object that has no
    previous version (empty when no ``--old`` was given)."""

    local: t.Mapping[Identity, object]
    index: t.Mapping[Identity, object]
    unparsable: str = ""
    missing: str = ""

    def get(self, key: Identity) -> object:
        return self.local.get(key, self.index.get(key))


@dataclass(frozen=True, slots=True)
class Old:
    """Everything ``--old`` gave: the objects of its files by identity (``index``), the files
    paired from its directories (``files``) and the arguments themselves (``given``)."""

    index: t.Mapping[Identity, object] = field(default_factory=dict)
    files: OldFiles = field(default_factory=OldFiles)
    given: tuple[str, ...] = ()

    def for_source(self, name: str) -> SourceOld:
        """The previous versions for the objects of the source called ``name``."""
        if not self.given:
            return SourceOld({}, self.index)
        paired = self.files.pairs.get(name)
        if paired is None:
            tried = self.files.tried.get(name)
            where = f"looked for {', '.join(tried)}" if tried else f"--old {', '.join(self.given)}"
            return SourceOld({}, self.index, missing=f"no previous version ({where}): checked as created")
        missing = f"no previous version in {paired} or the --old files: checked as created"
        try:
            return SourceOld(old_objects(paired), self.index, missing=missing)
        except LoadError as exc:
            # The base version does not parse (a Helm template, or the very file this change
            # fixes): this file's objects are judged as created, which a pull request can pass.
            where = f"{exc.source}:{exc.line}" if exc.line else exc.source
            said = f"--old {where} does not parse ({exc.message}): checked as created"
            return SourceOld({}, self.index, unparsable=said)
