"""Lines of JSON fields: a position tree beside :func:`json.loads`, built only when asked.

Values come from :mod:`json` (what the apiserver decodes); this module only finds where a
field is written, for error lines and GitHub/SARIF annotations, and the line of a repeated
key. It is built lazily, so valid files pay nothing.
"""

from __future__ import annotations

import bisect
import json
import re
import typing as t
from dataclasses import dataclass, field

__all__ = ["JsonItem", "JsonPos", "JsonText", "duplicate_key"]

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


@dataclass(slots=True)
class JsonPos:
    """Where a value starts (``offset``) and, for containers, where its members are.

    ``members`` maps an object's keys to (offset of the key, the value's position) in text
    order (a repeated key keeps every occurrence), or lists an array's items.
    """

    offset: int
    members: list[tuple[str, int, JsonPos]] | list[JsonPos] | None = None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text

    def ws(self, i: int) -> int:
        match = _WS.match(self.text, i)
        return match.end() if match else i

    def value(self, i: int) -> tuple[JsonPos, int]:
        i = self.ws(i)
        ch = self.text[i : i + 1]
        if ch == "{":
            return self.obj(i)
        if ch == "[":
            return self.array(i)
        if ch == '"':
            return JsonPos(i), json.decoder.scanstring(self.text, i + 1)[1]  # type: ignore[attr-defined]
        for literal in _LITERALS:
            if self.text.startswith(literal, i):
                return JsonPos(i), i + len(literal)
        match = _NUMBER.match(self.text, i)
        if match is None:
            raise ValueError(f"unexpected character at {i}")
        return JsonPos(i), match.end()

    def obj(self, start: int) -> tuple[JsonPos, int]:
        members: list[tuple[str, int, JsonPos]] = []
        i = self.ws(start + 1)
        if self.text.startswith("}", i):
            return JsonPos(start, members), i + 1
        while True:
            key_at = self.ws(i)
            key, end = json.decoder.scanstring(self.text, key_at + 1)  # type: ignore[attr-defined]
            pos, i = self.value(self.ws(end) + 1)  # past the colon
            members.append((key, key_at, pos))
            i = self.ws(i)
            if self.text.startswith(",", i):
                i += 1
                continue
            return JsonPos(start, members), i + 1

    def array(self, start: int) -> tuple[JsonPos, int]:
        items: list[JsonPos] = []
        i = self.ws(start + 1)
        if self.text.startswith("]", i):
            return JsonPos(start, items), i + 1
        while True:
            pos, i = self.value(i)
            items.append(pos)
            i = self.ws(i)
            if self.text.startswith(",", i):
                i += 1
                continue
            return JsonPos(start, items), i + 1


@dataclass
class JsonText:
    """A JSON source whose positions are computed on first use (``None``: it could not be scanned)."""

    text: str
    _root: JsonPos | None = field(default=None, init=False, repr=False)
    _lines: list[int] | None = field(default=None, init=False, repr=False)
    _scanned: bool = field(default=False, init=False, repr=False)

    def root(self) -> JsonPos | None:
        if not self._scanned:
            self._scanned = True
            try:
                self._root = _Scanner(self.text).value(0)[0]
            except (ValueError, IndexError, RecursionError):
                self._root = None
        return self._root

    def line(self, offset: int) -> int:
        """1-based line of ``offset``."""
        if self._lines is None:
            self._lines = [m.end() for m in re.finditer("\n", self.text)]
        return bisect.bisect_right(self._lines, offset) + 1

    def child(self, pos: JsonPos, segment: str | int) -> tuple[JsonPos, int] | None:
        """The member at ``segment`` and the offset that declares it (the last duplicate wins)."""
        members = pos.members
        if isinstance(segment, int):
            if isinstance(members, list) and 0 <= segment < len(members):
                item = members[segment]
                if isinstance(item, JsonPos):
                    return item, item.offset
            return None
        for member in reversed(members or []):
            if isinstance(member, tuple) and member[0] == segment:
                return member[2], member[1]
        return None


class JsonItem(JsonText):
    """An item of a JSON ``*List``: the same text, positions rooted at the item."""

    def __init__(self, text: str, pos: JsonPos) -> None:
        super().__init__(text)
        self._item = pos

    def root(self) -> JsonPos | None:
        return self._item


def duplicate_key(doc: JsonText) -> tuple[str, int, int] | None:
    """The first key repeated in one object: (key, its 1-based line, the first one's line)."""
    root = doc.root()
    stack = [root] if root is not None else []
    while stack:
        pos = stack.pop()
        seen: dict[str, int] = {}
        for member in t.cast(list[t.Any], pos.members or []):
            if isinstance(member, JsonPos):
                stack.append(member)
                continue
            key, offset, child = member
            if key in seen:
                return key, doc.line(offset), doc.line(seen[key])
            seen[key] = offset
            stack.append(child)
    return None
