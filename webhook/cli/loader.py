"""Reading manifests: files, directories and stdin into documents with positions.

YAML is parsed with PyYAML's libyaml loader through the *compose loop* (one composed node
per document, then construction), so every document knows its index and start line and
field errors can be mapped back to the line of the offending node. YAML 1.1 semantics are
exactly PyYAML's ``safe_load``: :class:`_Loader` only memoises the implicit-tag resolver and
builds plain mappings, sequences and strings without PyYAML's generator machinery; anything
unusual (merge keys, aliases that recurse, non-core tags, unhashable keys) is handed to the
stock constructor, so results and error messages stay PyYAML's own.

``.json`` files are decoded with :mod:`json` (what the apiserver does with JSON).
"""

from __future__ import annotations

import json
import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from webhook.vocab.field import FieldPath, Key

__all__ = [
    "STDIN",
    "Document",
    "LoadError",
    "expand_paths",
    "load_source",
    "locate",
    "parse_text",
    "read_source",
]

STDIN: t.Final = "-"
SUFFIXES: t.Final = (".yaml", ".yml", ".json")

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Tags whose PyYAML constructors return plain immutable values from a scalar node.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")
)
# Mapping keys that PyYAML's flatten_mapping rewrites; a mapping holding one takes the slow path.
_SPECIAL_KEYS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})
_RESOLVE_CACHE_LIMIT = 50_000


class _Fallback(Exception):
    """The fast constructor met something only PyYAML's own constructor handles."""


class _Loader(yaml.CSafeLoader):
    """``CSafeLoader`` with a memoised resolver and a flat constructor (same results)."""

    # Implicit tags depend only on (value, implicit) because SafeLoader has no path
    # resolvers; keys such as "apiVersion" repeat in every document, so caching pays.
    _resolved: t.ClassVar[dict[tuple[str, tuple[bool, bool]], str]] = {}

    def resolve(self, kind: type[Node], value: str, implicit: tuple[bool, bool]) -> str:
        if kind is not ScalarNode:
            return t.cast(str, super().resolve(kind, value, implicit))  # type: ignore[no-untyped-call]
        key = (value, implicit)
        tag = self._resolved.get(key)
        if tag is None:
            if len(self._resolved) > _RESOLVE_CACHE_LIMIT:
                self._resolved.clear()
            tag = self._resolved[key] = super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]
        return tag

    def descend_resolver(self, current_node: object, current_index: object) -> None:
        return None  # no path resolvers are registered on the safe loader

    def ascend_resolver(self) -> None:
        return None

    def construct_fast(self, node: Node) -> object:
        """Construct one document; identical to ``construct_document`` for safe-loader input."""
        try:
            return self._build(node, {}, set())
        except _Fallback:
            return self.construct_document(node)

    def _build(self, node: Node, memo: dict[int, object], active: set[int]) -> object:
        cls = node.__class__
        if cls is ScalarNode:
            if node.tag == _STR:
                return node.value
            if node.tag in _SCALAR_TAGS:
                return self.yaml_constructors[node.tag](self, node)
            raise _Fallback
        ident = id(node)
        if ident in memo:  # an alias: PyYAML returns the very same object
            return memo[ident]
        if ident in active:  # a recursive alias: PyYAML's two-step construction handles it
            raise _Fallback
        active.add(ident)
        if cls is MappingNode and node.tag == _MAP:
            mapping: dict[object, object] = {}
            for key_node, value_node in node.value:
                if key_node.tag in _SPECIAL_KEYS:
                    raise _Fallback
                key = self._build(key_node, memo, active)
                try:
                    mapping[key] = self._build(value_node, memo, active)
                except TypeError:  # an unhashable key: let PyYAML raise its ConstructorError
                    raise _Fallback from None
            result: object = mapping
        elif cls is SequenceNode and node.tag == _SEQ:
            result = [self._build(item, memo, active) for item in node.value]
        else:
            raise _Fallback
        active.discard(ident)
        memo[ident] = result
        return result


class LoadError(Exception):
    """A source that cannot be read or parsed. ``line``/``column`` are 1-based (0: unknown)."""

    def __init__(
        self, source: str, message: str, line: int = 0, column: int = 0, *, document: int | None = None
    ) -> None:
        super().__init__(message)
        self.source = source
        self.document = document  # index of the document that failed; None: the whole source
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}:{self.column}" if self.line else self.source
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Document:
    """One object to judge.

    ``index`` is the 0-based document index in the source, ``line`` the 1-based line where
    the document's content starts, ``item`` the index inside a ``*List`` document (``None``
    when the document is the object itself). ``node`` is the composed YAML node of the
    object, used to find field lines; ``None`` for JSON sources.
    """

    source: str
    index: int
    line: int
    item: int | None
    obj: object
    node: Node | None


def display_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def expand_paths(paths: t.Iterable[str]) -> list[str]:
    """Files to read, in argument order; directories are walked recursively, sorted.

    ``-`` stays as is (stdin). Missing paths are kept: reading them reports the error.
    Hidden directories (``.git``) are not entered.
    """
    out: list[str] = []
    for raw in paths:
        if raw == STDIN or not os.path.isdir(raw):
            out.append(raw)
            continue
        found: list[str] = []
        for root, dirs, files in os.walk(raw):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found.extend(os.path.join(root, f) for f in files if f.endswith(SUFFIXES))
        out.extend(sorted(found))
    return out


def read_source(source: str, stdin: t.BinaryIO | None = None) -> str:
    """The text of ``source`` (``-``: ``stdin``); raises :class:`LoadError`."""
    try:
        if source == STDIN:
            data = stdin.read() if stdin is not None else b""
        else:
            data = Path(source).read_bytes()
    except OSError as exc:
        raise LoadError(display_name(source), f"cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadError(display_name(source), f"not UTF-8: {exc.reason}", line) from exc


def _expand(source: str, index: int, line: int, obj: object, node: Node | None) -> t.Iterator[Document]:
    """The document itself, or the items of a ``*List`` (kind ending in ``List`` with ``items``)."""
    if isinstance(obj, dict):
        kind, items = obj.get("kind"), obj.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            items_node = _child(node, "items") if node is not None else None
            for i, item in enumerate(items):
                item_node = _child(items_node, i) if items_node is not None else None
                item_line = item_node.start_mark.line + 1 if item_node is not None else line
                yield Document(source, index, item_line, i, item, item_node)
            return
    yield Document(source, index, line, None, obj, node)


def _parse_json(source: str, text: str) -> t.Iterator[Document]:
    if not text.strip():
        return
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LoadError(source, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno, document=0) from exc
    line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    yield from _expand(source, 0, line, obj, None)


def _mark_error(source: str, exc: yaml.YAMLError, document: int) -> LoadError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    message = " ".join(p for p in (context, problem) if p) or str(exc)
    if mark is None:
        return LoadError(source, f"invalid YAML: {message}", document=document)
    return LoadError(source, f"invalid YAML: {message}", mark.line + 1, mark.column + 1, document=document)


def parse_text(source: str, text: str, *, json_format: bool = False) -> t.Iterator[Document]:
    """Documents of ``text`` in order, lazily; raises :class:`LoadError` where parsing stops.

    Documents before a syntax error are still yielded (libyaml cannot resume after one).
    Empty documents (``---`` with nothing, or only comments) yield nothing.
    """
    name = display_name(source)
    if json_format:
        yield from _parse_json(name, text)
        return
    loader = _Loader(text)
    index = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    return
                node = loader.get_node()
                assert node is not None  # check_node() said there is one
                obj = loader.construct_fast(node)
            except yaml.YAMLError as exc:
                raise _mark_error(name, exc, index) from exc
            if obj is not None:
                yield from _expand(name, index, node.start_mark.line + 1, obj, node)
            index += 1
    finally:
        loader.dispose()


def load_source(source: str, stdin: t.BinaryIO | None = None) -> t.Iterator[Document]:
    """Read and parse one source; ``.json`` files as JSON, everything else as YAML."""
    text = read_source(source, stdin)
    return parse_text(source, text, json_format=source.endswith(".json"))


def _entry(node: Node | None, segment: str | int | Key) -> tuple[Node, int] | None:
    """The child node at ``segment`` and the line that declares it (a key's line for a field)."""
    if isinstance(segment, int):
        if isinstance(node, SequenceNode) and 0 <= segment < len(node.value):
            item = t.cast(Node, node.value[segment])
            return item, item.start_mark.line
        return None
    name = segment.name if isinstance(segment, Key) else segment
    if isinstance(node, MappingNode):
        for key_node, value_node in reversed(node.value):  # the last duplicate wins, as in loading
            if isinstance(key_node, ScalarNode) and key_node.value == name:
                return t.cast(Node, value_node), key_node.start_mark.line
    return None


def _child(node: Node | None, segment: str | int | Key) -> Node | None:
    entry = _entry(node, segment)
    return entry[0] if entry is not None else None


def locate(node: Node | None, path: FieldPath) -> int | None:
    """1-based line of ``path`` under ``node``: the line declaring the deepest existing field.

    A missing field (a Required error) maps to its parent's line. ``None`` without a node.
    """
    if node is None:
        return None
    line = t.cast(int, node.start_mark.line)
    for segment in path.segments:
        entry = _entry(node, segment)
        if entry is None:
            break
        node, line = entry
    return line + 1
