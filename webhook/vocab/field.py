"""Field paths and field errors, rendered exactly as apimachinery renders them.

Every rule wasp enforces reports a :class:`FieldError` at a :class:`FieldPath` in the
user's own API (``spec.scheduling.resourceClaims[0].name``). The rendering of
:meth:`FieldError.error` and :func:`aggregate` reproduces ``field.Error.Error()`` and
``utilerrors.NewAggregate(errs).Error()`` from k8s.io/apimachinery, because that is the
text kubectl users read in a denial.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import typing as t
from dataclasses import dataclass

from webhook.vocab.sentinel import Sentinel

__all__ = [
    "Segment",
    "ErrorType",
    "FieldError",
    "FieldPath",
    "Key",
    "OMIT",
    "aggregate",
    "duplicate",
    "forbidden",
    "internal_error",
    "invalid",
    "not_supported",
    "required",
    "too_many",
    "type_invalid",
]


@dataclass(frozen=True, slots=True)
class Key:
    """A map key in a path; renders as ``[key]`` like apimachinery's ``Path.Key``."""

    name: str


Segment = str | int | Key


@dataclass(frozen=True, slots=True)
class FieldPath:
    """An immutable field path. ``FieldPath()`` is the empty path (renders as "")."""

    segments: tuple[Segment, ...] = ()

    @classmethod
    def of(cls, *segments: Segment) -> FieldPath:
        return cls(tuple(segments))

    @classmethod
    def parse(cls, dotted: str) -> FieldPath:
        """Parse the rendered form (``spec.x[0].y``) back into a path.

        Bracketed integers become list indices; other bracketed text becomes a map key.
        Raises ``ValueError`` on malformed input (empty segment, unbalanced bracket).
        """
        segments: list[Segment] = []
        i, n = 0, len(dotted)
        if not dotted:
            return cls()
        expect_name = True
        while i < n:
            ch = dotted[i]
            if ch == "[":
                end = dotted.find("]", i)
                if end < 0:
                    raise ValueError(f"unbalanced '[' in path {dotted!r}")
                inner = dotted[i + 1 : end]
                if inner == "":
                    raise ValueError(f"empty [] in path {dotted!r}")
                segments.append(int(inner) if inner.isdigit() else Key(inner))
                i = end + 1
                expect_name = False
            elif ch == ".":
                if expect_name:
                    raise ValueError(f"empty segment in path {dotted!r}")
                i += 1
                expect_name = True
            else:
                j = i
                while j < n and dotted[j] not in ".[":
                    if dotted[j] == "]":
                        raise ValueError(f"unbalanced ']' in path {dotted!r}")
                    j += 1
                if not expect_name:
                    raise ValueError(f"missing '.' before {dotted[i:j]!r} in path {dotted!r}")
                segments.append(dotted[i:j])
                i = j
                expect_name = False
        if expect_name:
            raise ValueError(f"path {dotted!r} ends with '.'")
        return cls(tuple(segments))

    def child(self, *names: Segment) -> FieldPath:
        """Append names (or indices/keys); ``child()`` with no names returns self."""
        return FieldPath(self.segments + names) if names else self

    def index(self, i: int) -> FieldPath:
        return FieldPath((*self.segments, i))

    def key(self, k: str) -> FieldPath:
        return FieldPath((*self.segments, Key(k)))

    def __truediv__(self, other: FieldPath | t.Iterable[Segment]) -> FieldPath:
        if isinstance(other, FieldPath):
            # Paths are immutable, so joining with an empty path can return the other side.
            if not self.segments:
                return other
            if not other.segments:
                return self
            return FieldPath(self.segments + other.segments)
        return FieldPath(self.segments + tuple(other))

    def __str__(self) -> str:
        out: list[str] = []
        for seg in self.segments:
            if isinstance(seg, int):
                out.append(f"[{seg}]")
            elif isinstance(seg, Key):
                out.append(f"[{seg.name}]")
            else:
                out.append(f".{seg}" if out else seg)
        return "".join(out)

    def __bool__(self) -> bool:
        return bool(self.segments)

    def json_pointer(self) -> str:
        """RFC 6901 pointer for this path (map keys and names escaped alike)."""
        parts = []
        for seg in self.segments:
            text = seg.name if isinstance(seg, Key) else str(seg)
            parts.append(text.replace("~", "~0").replace("/", "~1"))
        return "".join("/" + p for p in parts)


class ErrorType(enum.Enum):
    """apimachinery ``field.ErrorType``: value is the cause type, ``.title`` the rendered form."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    TOO_FEW = "FieldValueTooFew"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.TOO_FEW: "Too few",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}

# apimachinery prints only the type (never the value) for these.
_VALUELESS = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL})


# The bad value is not rendered (apimachinery's ``omitValue``).
OMIT: t.Final = Sentinel("OMIT", __name__)


def go_quote(s: str) -> str:
    """Go's ``%q`` for a string: double-quoted, printable Unicode kept, controls escaped."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: object) -> str:
    """Go ``json.Marshal`` of a decoded JSON value: sorted keys, compact, HTML-escaped.

    A value nested deeper than Python can encode (JSON decoders allow ~1000 levels) renders
    as a placeholder: a denial must never fail on the value it quotes.
    """
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # ValueError: a circular structure
        return _TOO_DEEP
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_TOO_DEEP: t.Final = '"<nested too deeply to print>"'


def render_value(value: object) -> str:
    """Render a bad value the way ``ErrorBody`` does."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_json(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """One field-level error (apimachinery ``field.Error``).

    ``bad_value`` is the offending value as decoded JSON, or :data:`OMIT` when it is not
    rendered. ``origin`` names the rule that produced the error (``minimum``, ``union``,
    ``format=k8s-label-key``, ``immutable``, ``update``, ...) so tests and clients can tell
    rules apart without parsing text.
    """

    type: ErrorType
    field: FieldPath
    bad_value: object = ""
    detail: str = ""
    origin: str = dataclasses.field(default="", compare=False)

    @property
    def path(self) -> str:
        return str(self.field)

    def body(self) -> str:
        """``ErrorBody()``: the message without the field name."""
        if self.type in _VALUELESS or self.bad_value is OMIT:
            text = self.type.title
        else:
            text = f"{self.type.title}: {render_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def error(self) -> str:
        """``Error()``: ``<field>: <body>``."""
        return f"{self.field}: {self.body()}"

    __str__ = error

    def key(self) -> tuple[str, str]:
        """The (cause type, dotted path) pair that tests and golden files compare."""
        return (self.type.value, str(self.field))

    def with_prefix(self, prefix: FieldPath) -> FieldError:
        """The same error re-rooted under ``prefix`` (for paths reported relative to a block)."""
        return FieldError(self.type, prefix / self.field, self.bad_value, self.detail, self.origin)


def aggregate(errors: t.Sequence[FieldError]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]`` with duplicates dropped."""
    if not errors:
        return ""
    if len(errors) == 1:
        return errors[0].error()
    seen: dict[str, None] = {}
    for err in errors:
        seen.setdefault(err.error(), None)
    if len(seen) == 1:
        return next(iter(seen))
    return "[" + ", ".join(seen) + "]"


# Constructors mirroring apimachinery's helpers (same default values and details).


def required(path: FieldPath, detail: str = "", *, origin: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, path, "", detail, origin)


def invalid(path: FieldPath, value: object, detail: str, *, origin: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, path, value, detail, origin)


def type_invalid(path: FieldPath, value: object, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, path, value, detail, "type")


def forbidden(path: FieldPath, detail: str, *, origin: str = "") -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, path, "", detail, origin)


def duplicate(path: FieldPath, value: object, *, origin: str = "") -> FieldError:
    return FieldError(ErrorType.DUPLICATE, path, value, "", origin)


def not_supported(
    path: FieldPath, value: object, supported: t.Sequence[str], *, origin: str = ""
) -> FieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, path, value, detail, origin)


def too_many(path: FieldPath, actual: int, limit: int, *, origin: str = "maxItems") -> FieldError:
    if limit >= 0:
        detail = f"must have at most {limit} {'item' if limit == 1 else 'items'}"
    else:
        detail = "has too many items"
    return FieldError(ErrorType.TOO_MANY, path, actual if actual >= 0 else OMIT, detail, origin)


def internal_error(path: FieldPath, message: str) -> FieldError:
    return FieldError(ErrorType.INTERNAL, path, message, message, "internal")
