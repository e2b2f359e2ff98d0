"""Reading manifests: files, directories and stdin into documents with positions.

YAML is parsed with PyYAML's libyaml loader through the *compose loop* (one composed node
per document, then construction by :class:`~webhook.manifests.constructor.YamlLoader`), so every
document knows its index and start line and field errors can be mapped back to the line of
the offending node. YAML 1.1 semantics are exactly PyYAML's ``safe_load`` (``yes`` is a
boolean, ``017`` is 15, merge keys), except that a key repeated in a mapping is refused, as
kubectl's strict field validation refuses it.

``.json`` files are decoded with :mod:`json` (what the apiserver does with JSON); their field
lines come from :mod:`webhook.manifests.jsonpos`, computed only when an error needs one.
"""

from __future__ import annotations

import json
import typing as t
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from webhook.manifests.constructor import DuplicateKeyError, YamlLoader
from webhook.vocab.field import FieldPath, Key

if t.TYPE_CHECKING:  # JSON positions are imported only when a JSON source is read
    from webhook.manifests.jsonpos import JsonPos, JsonText

    _Located = tuple[Node, int] | tuple[JsonPos, int]

__all__ = [
    "MAX_DEPTH",
    "RECURSION_LIMIT",
    "STDIN",
    "SUFFIXES",
    "Document",
    "LoadError",
    "ParseState",
    "display_name",
    "load_source",
    "locate",
    "parse_text",
    "read_source",
]

STDIN: t.Final = "-"
SUFFIXES: t.Final = (".yaml", ".yml", ".json")
# libyaml refuses documents nested deeper than this ("exceeded maximum nesting depth"); JSON
# sources get the same bound, so that both formats accept the same documents and the Python
# code that walks a document (construction, validation, reporters) never runs out of stack.
MAX_DEPTH: t.Final = 1000
# Frames that walking a MAX_DEPTH document may take (a few per level), over Python's 1,000.
RECURSION_LIMIT: t.Final = 5 * MAX_DEPTH
_TAB_HINT: t.Final = " (a tab: YAML indentation must use spaces)"


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
        where = self.source
        if self.line:
            where += f":{self.line}:{self.column}" if self.column else f":{self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Document:
    """One object to judge.

    ``index`` is the 0-based document index in the source, ``line`` the 1-based line where
    the document's content starts, ``item`` the index inside a ``*List`` document (``None``
    when the document is the object itself). ``node`` finds field lines: the composed YAML
    node, or the :class:`JsonText` of a JSON source. ``problem`` is set (and ``obj`` is
    ``None``) when the document parsed but cannot be used as written (a repeated key).
    """

    source: str
    index: int
    line: int
    item: int | None
    obj: object
    node: Node | JsonText | None
    problem: LoadError | None = None


@dataclass(slots=True)
class ParseState:
    """Filled in while parsing: ``documents`` read so far, empty ones included."""

    documents: int = 0


def display_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def read_source(source: str, stdin: t.BinaryIO | None = None) -> str:
    """The text of ``source`` (``-``: ``stdin``); raises :class:`LoadError`."""
    try:
        if source == STDIN:
            data = stdin.read() if stdin is not None else b""
        else:
            with open(source, "rb", buffering=0) as file:  # one read of the whole file
                data = file.read()
    except OSError as exc:
        raise LoadError(display_name(source), f"cannot read: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise LoadError(display_name(source), f"not UTF-8: {exc.reason}", line) from exc


def _expand(
    source: str, index: int, line: int, obj: object, node: Node | JsonText | None
) -> t.Iterator[Document]:
    """The document itself, or the items of a ``*List`` (kind ending in ``List`` with ``items``)."""
    if isinstance(obj, dict):
        kind, items = obj.get("kind"), obj.get("items")
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
            items_entry = _entry(node, "items", node)
            for i, item in enumerate(items):
                entry = _entry(items_entry[0], i, node) if items_entry is not None else None
                item_node = _rebase(node, entry[0]) if entry is not None else None
                yield Document(source, index, entry[1] + 1 if entry else line, i, item, item_node)
            return
    yield Document(source, index, line, None, obj, node)


def _rebase(root: Node | JsonText | None, child: Node | JsonPos) -> Node | JsonText | None:
    if isinstance(child, Node):
        return child
    from webhook.manifests.jsonpos import JsonItem, JsonText

    assert isinstance(root, JsonText)
    return JsonItem(root.text, child)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _JsonDuplicate
    return obj


class _JsonDuplicate(Exception):
    pass


def _depth(obj: object) -> int:
    """Nesting levels of containers in ``obj`` (a scalar: 0), without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, level + 1) for child in children)
    return deepest


def _parse_json(source: str, text: str) -> t.Iterator[Document]:
    from webhook.manifests.jsonpos import JsonText, duplicate_key

    if not text.strip():
        return
    doc = JsonText(text)
    line = text[: len(text) - len(text.lstrip())].count("\n") + 1
    too_deep = LoadError(source, f"invalid JSON: nested deeper than {MAX_DEPTH} levels", line, document=0)
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        raise LoadError(source, f"invalid JSON: {exc.msg}", exc.lineno, exc.colno, document=0) from exc
    except RecursionError:  # deeper than the interpreter's limit, far beyond MAX_DEPTH
        raise too_deep from None
    except _JsonDuplicate:
        found = duplicate_key(doc)
        key, at, first = found if found is not None else ("?", line, line)
        problem = LoadError(source, f'duplicate key "{key}" (first set at line {first})', at, document=0)
        yield Document(source, 0, line, None, None, doc, problem)
        return
    if text.count("{") + text.count("[") > MAX_DEPTH and _depth(obj) > MAX_DEPTH:
        raise too_deep
    yield from _expand(source, 0, line, obj, doc)


def _mark_error(source: str, text: str, exc: yaml.YAMLError, document: int) -> LoadError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    message = " ".join(p for p in (context, problem) if p) or str(exc)
    prefix = "" if isinstance(exc, DuplicateKeyError) else "invalid YAML: "
    if mark is None:
        return LoadError(source, prefix + message, document=document)
    if text[mark.index : mark.index + 1] == "\t" and "cannot start any token" in message:
        message += _TAB_HINT
    return LoadError(source, prefix + message, mark.line + 1, mark.column + 1, document=document)


def parse_text(
    source: str, text: str, *, json_format: bool = False, state: ParseState | None = None
) -> t.Iterator[Document]:
    """Documents of ``text`` in order, lazily; raises :class:`LoadError` where parsing stops.

    Documents before a syntax error are still yielded (libyaml cannot resume after one: the
    caller goes on from :func:`from_next_document`).
    Empty documents (``---`` with nothing, or only comments) yield nothing. A document with
    a repeated key is yielded with its ``problem`` and parsing goes on.
    """
    name = display_name(source)
    state = state if state is not None else ParseState()
    if json_format:
        state.documents = 1
        yield from _parse_json(name, text)
        return
    loader = YamlLoader(text)
    index = 0
    try:
        while True:
            try:
                if not loader.check_node():
                    return
                node = loader.get_node()
            except yaml.YAMLError as exc:
                raise _mark_error(name, text, exc, index) from exc
            assert node is not None  # check_node() said there is one
            try:
                obj = loader.construct(node)
            except DuplicateKeyError as exc:
                state.documents = index + 1
                yield Document(
                    name,
                    index,
                    node.start_mark.line + 1,
                    None,
                    None,
                    node,
                    _mark_error(name, text, exc, index),
                )
                index += 1
                continue
            except yaml.YAMLError as exc:
                raise _mark_error(name, text, exc, index) from exc
            state.documents = index + 1
            if obj is not None:
                yield from _expand(name, index, node.start_mark.line + 1, obj, node)
            index += 1
    finally:
        loader.dispose()


def load_source(source: str, stdin: t.BinaryIO | None = None) -> t.Iterator[Document]:
    """Read and parse one source; ``.json`` files as JSON, everything else as YAML."""
    text = read_source(source, stdin)
    return parse_text(source, text, json_format=source.endswith(".json"))


def _entry(
    node: Node | JsonPos | JsonText | None, segment: str | int | Key, root: Node | JsonText | None
) -> _Located | None:
    """The child at ``segment`` and the 0-based line that declares it (a key's line for a field)."""
    if isinstance(segment, Key):
        segment = segment.name
    if node is None or isinstance(node, Node):  # YAML
        if isinstance(segment, int):
            if isinstance(node, SequenceNode) and 0 <= segment < len(node.value):
                item = t.cast(Node, node.value[segment])
                return item, item.start_mark.line
            return None
        if isinstance(node, MappingNode):
            for key_node, value_node in reversed(node.value):  # the last duplicate wins, as in loading
                if isinstance(key_node, ScalarNode) and key_node.value == segment:
                    return t.cast(Node, value_node), key_node.start_mark.line
        return None
    from webhook.manifests.jsonpos import JsonText

    if isinstance(node, JsonText):
        top = node.root()
        return _entry(top, segment, node) if top is not None else None
    assert isinstance(root, JsonText)
    found = root.child(node, segment)
    return (found[0], root.line(found[1]) - 1) if found is not None else None


def locate(node: Node | JsonText | None, path: FieldPath) -> int | None:
    """1-based line of ``path`` under ``node``: the line declaring the deepest existing field.

    A missing field (a Required error) maps to its parent's line. ``None`` without a node.
    """
    if node is None:
        return None
    current: Node | JsonPos | None
    if isinstance(node, Node):
        current, line = node, t.cast(int, node.start_mark.line)
    else:  # a JSON source
        current = node.root()
        if current is None:
            return None
        line = node.line(current.offset) - 1
    for segment in path.segments:
        entry = _entry(current, segment, node)
        if entry is None:
            break
        current, line = entry
    return line + 1


def _marker(line: str) -> bool:
    """A ``---`` document marker (followed by nothing, a space, a tab or the line's end)."""
    return line.startswith("---") and line[3:4] in ("", " ", "\n", "\r", "\t")


def from_next_document(text: str, line: int, column: int = 0, after: int = 0) -> tuple[str, int] | None:
    """``text`` from the document after the one that failed at 1-based ``line``/``column``
    (earlier lines blank, so line numbers stay right) and the 0-based line it starts on, or
    ``None`` when no document starts after 0-based line ``after`` (where reading last began).

    libyaml stops at a ``---`` line whatever it is reading (an open flow mapping, a quoted
    scalar): an error at the first column of such a line is that marker starting the next
    document, so reading resumes on that very line; any other error resumes at the first
    marker after the error's line.
    """
    lines = text.splitlines(keepends=True)
    start = line - 1 if column == 1 and 0 < line <= len(lines) and _marker(lines[line - 1]) else line
    for i in range(max(start, after + 1), len(lines)):
        if _marker(lines[i]):
            return "\n" * i + "".join(lines[i:]), i
    return None
