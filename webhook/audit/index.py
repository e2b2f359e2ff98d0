"""One namespace's scheduling objects for ``wasp audit``, kept on disk rather than in memory.

A namespace may hold tens of thousands of Workloads and groups, and every governed object's
plan needs some of them; holding them all would make the audit's memory grow with the
largest namespace. So they go, slimmed (:func:`slim`), into a private temporary SQLite
database (``sqlite3.connect("")``: a file SQLite deletes when the connection closes; only
its page cache, 1 MiB, is in memory), one row each with the keys discovery looks up:

* ``ref``: what the object points at: a Workload's ``spec.controllerRef.name``, a group's
  ``spec.workloadRef.workloadName``;
* ``(kind, name)``: unique (``by_name``, ``PodGroupNotFound``).

Beside them: the count of pods without a ``schedulingGroup`` per controller UID, and the
UIDs of the governed objects judged (for ``Orphaned``).

Discovery itself is not written again here: for a page of governed objects,
:meth:`NamespaceIndex.world_for` loads the rows any of them could match (Workloads whose
``ref`` is one of the page's objects or their controllers, then the groups whose ``ref`` is
one of those Workloads) into a fresh reconciler :class:`~webhook.reconciler.world.World`,
whose own :meth:`~webhook.reconciler.world.World.observe` then picks each object's
Workloads and groups by its rules. Only ``by_name`` (any object of a kind by name) reads
the store directly. So the plan is asked the same question, with the same answer, and at
most one page's candidates are in memory.
"""

from __future__ import annotations

import sqlite3
import typing as t
from dataclasses import replace

import orjson

from webhook.governed.ownership import controller_of
from webhook.governed.reconcile import Observed
from webhook.governed.reconcile_model import Kind
from webhook.reconciler.world import World, slim_pod

__all__ = ["NamespaceIndex", "slim"]

Json = dict[str, t.Any]

_META: t.Final = ("name", "namespace", "uid", "resourceVersion", "labels", "ownerReferences")
# A group's plan reads only these; a Workload's whole spec is kept (a delegated child's
# PodGroup is built from its parent's templates).
_GROUP_SPEC: t.Final = ("workloadRef", "schedulingPolicy", "parentCompositePodGroupName")

_SCHEMA: t.Final = """
CREATE TABLE objects (kind TEXT NOT NULL, name TEXT NOT NULL, ref TEXT NOT NULL, body BLOB NOT NULL,
                      UNIQUE (kind, name));
CREATE INDEX objects_ref ON objects (ref, kind);
CREATE TABLE governed (uid TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE unstamped (uid TEXT PRIMARY KEY, pods INTEGER NOT NULL) WITHOUT ROWID;
"""


def slim(obj: Json) -> Json:
    """What discovery and the plan read of a scheduling object (no status, annotations or
    managedFields)."""
    m = obj.get("metadata") or {}
    spec = obj.get("spec")
    if obj.get("kind") != "Workload" and isinstance(spec, dict):
        spec = {k: spec[k] for k in _GROUP_SPEC if k in spec}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "metadata": {k: m[k] for k in _META if k in m}, "spec": spec}  # fmt: skip


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _ref(kind: Kind, obj: Json) -> str:
    """The name a Workload's controllerRef or a group's workloadRef points at (the key the
    reconciler's World indexes it by)."""
    field, key = ("controllerRef", "name") if kind == "Workload" else ("workloadRef", "workloadName")
    spec = obj.get("spec")
    ref = spec.get(field) if isinstance(spec, dict) else None
    return _text(ref.get(key)) if isinstance(ref, dict) else ""


class _Uids:
    """The governed UIDs seen so far, as a container ``judge_orphan`` can ask."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __contains__(self, uid: object) -> bool:
        return self.db.execute("SELECT 1 FROM governed WHERE uid = ?", (uid,)).fetchone() is not None


class NamespaceIndex:
    """The scheduling objects, pod counts and governed UIDs of one namespace (see the module
    docstring)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")
        # A scratch file: nothing survives the process, so no journal and no fsync.
        self.db.executescript(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1024;"
        )
        self.db.executescript(_SCHEMA)
        self.governed = _Uids(self.db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> NamespaceIndex:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- filling ----------------------------------------------------------------------------------

    def add_scheduling(self, kind: Kind, page: t.Iterable[Json]) -> None:
        rows = []
        for obj in page:
            small = slim(obj)
            rows.append((kind, _text(small["metadata"].get("name")), _ref(kind, small), orjson.dumps(small)))
        with self.db:  # a later page may show an object again (as it is now): the last copy wins
            self.db.executemany("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)", rows)

    def add_pods(self, page: t.Iterable[Json]) -> None:
        """Count the page's pods without a ``schedulingGroup`` per controller, by the
        reconciler's own rule (:meth:`World.pod_changed`)."""
        counts = World()
        for pod in page:
            counts.pod_changed(None, slim_pod(pod))
        with self.db:
            self.db.executemany(
                "INSERT INTO unstamped VALUES (?, ?) ON CONFLICT (uid) DO UPDATE SET pods = pods + excluded.pods",
                [(uid, n) for uid, n in counts.unstamped.items() if n],
            )

    def add_governed(self, uids: t.Iterable[str]) -> None:
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO governed VALUES (?)", [(u,) for u in uids])

    # -- reading ----------------------------------------------------------------------------------

    def has(self, kind: Kind, name: str) -> bool:
        query = "SELECT 1 FROM objects WHERE kind = ? AND name = ?"
        return self.db.execute(query, (kind, name)).fetchone() is not None

    def by_name(self, kind: Kind, name: str) -> Json | None:
        row = self.db.execute("SELECT body FROM objects WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        return t.cast(Json, orjson.loads(row[0])) if row is not None else None

    def objects(self) -> t.Iterator[Json]:
        """Every scheduling object, one at a time, in the order they were listed."""
        for (body,) in self.db.execute("SELECT body FROM objects ORDER BY rowid"):
            yield orjson.loads(body)

    def _rows(self, kinds: str, refs: t.Iterable[str]) -> list[tuple[Kind, Json]]:
        query = f"SELECT kind, body FROM objects WHERE ref IN (SELECT value FROM json_each(?)) AND {kinds}"
        cursor = self.db.execute(query, (orjson.dumps(sorted(set(refs))).decode(),))
        return [(t.cast(Kind, kind), orjson.loads(body)) for kind, body in cursor]

    def world_for(self, page: t.Sequence[Json]) -> World:
        """A reconciler World holding every scheduling object the page's objects could match
        (a superset: ``World.observe`` applies discovery's rules), and their pod counts."""
        names = []
        for obj in page:
            names.append(_text((obj.get("metadata") or {}).get("name")))
            owner = controller_of(obj)
            if owner is not None:  # a delegated child's parent Workload names its controller
                names.append(_text(owner.get("name")))
        workloads = self._rows("kind = 'Workload'", names)
        groups = self._rows("kind != 'Workload'", (_text(w["metadata"].get("name")) for _, w in workloads))
        world = World()
        for kind, obj in (*workloads, *groups):
            world.scheduling_changed(kind, None, obj)
        uids = [_text((obj.get("metadata") or {}).get("uid")) for obj in page]
        query = "SELECT uid, pods FROM unstamped WHERE uid IN (SELECT value FROM json_each(?))"
        for uid, pods in self.db.execute(query, (orjson.dumps(uids).decode(),)):
            world.unstamped[uid] = pods
        return world

    def observe(self, world: World, obj: Json) -> Observed:
        """The reconciler's Observed for ``obj`` from the page's ``world``; a lookup by name
        reaches every object of the namespace, as the reconciler's does."""
        return replace(world.observe(obj), by_name=self.by_name)
