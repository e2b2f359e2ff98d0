"""YAML documents to Python values: PyYAML's ``safe_load`` semantics, faster, duplicates refused.

:class:`YamlLoader` is PyYAML's ``CSafeLoader`` (libyaml) with two changes:

* a memoised implicit-tag resolver (keys such as ``apiVersion`` repeat in every document);
* :meth:`YamlLoader.construct` builds plain mappings, sequences and strings directly instead
  of through PyYAML's generator machinery. Anything unusual (merge keys, recursive aliases,
  non-core tags, unhashable keys) is handed to PyYAML's own ``construct_document``, so values
  and error messages stay PyYAML's. Null, boolean and number scalars are built once per
  distinct text and shared (they are immutable).

Why it exists beside PyYAML: construction is most of what a CI run of ``wasp validate`` does,
and with PyYAML's own constructor the run takes about twice the CPU, which puts it behind
kubeconform on the same manifests (the figures are in benchmarks/README.md). It stays only
while it builds exactly what PyYAML builds: ``safe_load_all`` is its oracle in
``tests/cli/test_cli_yaml_oracle.py`` (random documents) and ``tests/cli/test_cli_loader.py``
(tables, and both constructors over the same nodes).

Both refuse a key repeated in one mapping (:class:`DuplicateKeyError`), as kubectl's strict
field validation does: the fast path compares the constructed keys (``yes`` and ``true``
are the same key), the PyYAML path the resolved (tag, text) of scalar keys, before merging.
"""

from __future__ import annotations

import functools
import operator
import typing as t

import yaml
import yaml.resolver
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["DuplicateKeyError", "YamlLoader"]

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Tags whose PyYAML constructors return plain immutable values from a scalar node.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")
)
# Scalars whose values are immutable and always equal for the same text: shared, not rebuilt
# (binary and timestamp scalars are rare and are built each time).
_SHARED_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float"))
_SCALAR_CACHE: dict[tuple[str, str], object] = {}
_MISSING: t.Final = object()
_ACTIVE: t.Final = object()  # in the memo while a collection is being built
# Mapping keys that PyYAML's flatten_mapping rewrites; a mapping holding one takes PyYAML's path.
_SPECIAL_KEYS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})
# Keys and common values repeat in every manifest and stay hot; names and numbers do not, and a
# bounded cache keeps memory flat in the number of manifests.
_RESOLVE_CACHE_LIMIT = 8192


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping key given twice; ``problem_mark`` is the duplicate, ``first_line`` 1-based."""

    def __init__(self, key: str, duplicate: Node, first: Node) -> None:
        self.first_line = first.start_mark.line + 1
        super().__init__(
            problem=f'duplicate key "{key}" (first set at line {self.first_line})',
            problem_mark=duplicate.start_mark,
        )


class _Fallback(Exception):
    """The fast constructor met something only PyYAML's own constructor handles."""


def _first_duplicate(node: MappingNode) -> tuple[Node, Node] | None:
    """(duplicate, first) scalar key nodes of ``node`` by resolved tag and text; merge keys excluded."""
    seen: dict[tuple[str, str], Node] = {}
    for key_node, _ in node.value:
        if isinstance(key_node, ScalarNode) and key_node.tag not in _SPECIAL_KEYS:
            ident = (key_node.tag, key_node.value)
            if ident in seen:
                return key_node, seen[ident]
            seen[ident] = key_node
    return None


def _check_duplicates(node: Node, visited: set[int]) -> None:
    """Raise :class:`DuplicateKeyError` for the first repeated key anywhere under ``node``."""
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, MappingNode):
        found = _first_duplicate(node)
        if found is not None:
            raise DuplicateKeyError(str(found[0].value), *found)
        for key_node, value_node in node.value:
            _check_duplicates(key_node, visited)
            _check_duplicates(value_node, visited)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _check_duplicates(item, visited)


_RESOLVER: t.Final = yaml.resolver.Resolver()


@functools.lru_cache(maxsize=_RESOLVE_CACHE_LIMIT)
def _resolve(kind: type[Node], value: str, implicit: tuple[bool, bool]) -> str:
    return t.cast(str, _RESOLVER.resolve(kind, value, implicit))  # type: ignore[no-untyped-call]


class YamlLoader(yaml.CSafeLoader):
    """``CSafeLoader`` with a memoised resolver and a flat constructor (same values).

    libyaml's composer calls back into Python to ``resolve`` every node and to
    ``descend_resolver`` / ``ascend_resolver`` around it. Implicit tags depend only on (kind,
    value, implicit) because the safe loader registers no path resolvers, so ``resolve`` can be
    a C-level LRU cache and the two path hooks C no-ops that take the same arguments (their
    results are ignored): the same tags, without a Python call per node.
    """

    resolve = staticmethod(_resolve)
    descend_resolver = staticmethod(operator.is_)  # type: ignore[assignment]  # (node, index) -> ignored
    ascend_resolver = staticmethod(tuple)  # type: ignore[assignment]  # () -> ignored

    def construct(self, node: Node) -> object:
        """One document's value, as ``construct_document`` builds it; raises on a duplicate key."""
        try:
            return self._build(node, {})
        except _Fallback:
            return self.construct_pyyaml(node)

    def construct_pyyaml(self, node: Node) -> object:
        """PyYAML's own construction, with the duplicate-key check (the fallback of :meth:`construct`)."""
        _check_duplicates(node, set())
        return self.construct_document(node)

    def _scalar(self, node: Node) -> object:
        """PyYAML's value of a null, bool, int or float scalar, shared between equal scalars
        (``4``, ``true``: immutable values, a dict lookup instead of PyYAML's Python parsing)."""
        key = (node.tag, node.value)
        value = _SCALAR_CACHE.get(key, _MISSING)
        if value is _MISSING:
            value = self.yaml_constructors[node.tag](self, node)
            if node.tag in _SHARED_TAGS:
                if len(_SCALAR_CACHE) >= _RESOLVE_CACHE_LIMIT:
                    _SCALAR_CACHE.clear()
                _SCALAR_CACHE[key] = value
        return value

    def _same_key(self, node: Node, key: object) -> bool:
        built = self._build(node, {})
        return type(built) is type(key) and built == key

    def _build(self, node: Node, memo: dict[int, object]) -> object:
        """``memo`` holds every collection built so far by node identity (``_ACTIVE`` while it
        is being built): an alias gets the very same object, as from PyYAML."""
        cls = node.__class__
        if cls is ScalarNode:
            if node.tag == _STR:
                return node.value
            if node.tag in _SCALAR_TAGS:
                return self._scalar(node)
            raise _Fallback
        ident = id(node)
        done = memo.get(ident, _MISSING)
        if done is not _MISSING:
            if done is _ACTIVE:  # a recursive alias: PyYAML's two-step construction handles it
                raise _Fallback
            return done
        memo[ident] = _ACTIVE
        if cls is MappingNode and node.tag == _MAP:
            mapping: dict[object, object] = {}
            for key_node, value_node in node.value:
                # Plain strings, most of a manifest, are taken inline (no call per node).
                if key_node.tag == _STR and key_node.__class__ is ScalarNode:
                    key = key_node.value
                elif key_node.tag in _SPECIAL_KEYS:
                    raise _Fallback
                else:
                    key = self._build(key_node, memo)
                try:
                    if key in mapping and any(type(k) is type(key) and k == key for k in mapping):
                        # Python's 1 == True is not a duplicate: the typed key must repeat.
                        first = next(k for k, _ in node.value if self._same_key(k, key))
                        raise DuplicateKeyError(str(key_node.value), key_node, first)
                    if value_node.tag == _STR and value_node.__class__ is ScalarNode:
                        mapping[key] = value_node.value
                    else:
                        mapping[key] = self._build(value_node, memo)
                except TypeError:  # an unhashable key: let PyYAML raise its ConstructorError
                    raise _Fallback from None
            result: object = mapping
        elif cls is SequenceNode and node.tag == _SEQ:
            result = [
                item.value if item.tag == _STR and item.__class__ is ScalarNode else self._build(item, memo)
                for item in node.value
            ]
        else:
            raise _Fallback
        memo[ident] = result
        return result
