"""Kubernetes name formats (apimachinery ``pkg/api/validate/content`` / ``util/validation``).

Each checker returns the list of problems (empty when the value is valid), worded as
apimachinery words them, so callers can join them into an ``Invalid`` detail.

Two upstream packages implement these rules with one difference in wording: the length
message. ``content`` (behind the declarative ``k8s-*`` formats) says "bytes",
``util/validation`` (behind the hand-written ``ValidateObjectMeta`` name checks) says
"characters". Both measure UTF-8 bytes. The DNS checkers take the package they mirror as
``wording``; :data:`FORMAT_CHECKERS` binds the declarative one.
"""

from __future__ import annotations

import enum
import functools
import re
import typing as t

__all__ = [
    "Wording",
    "dns_label",
    "dns_subdomain",
    "label_key",
    "path_segment_name",
    "FORMAT_CHECKERS",
]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(_LABEL_FMT)
_SUBDOMAIN_RE = re.compile(f"{_LABEL_FMT}(\\.{_LABEL_FMT})*")
_QUALIFIED_NAME_RE = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")

_QUALIFIED_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


class Wording(enum.Enum):
    """The apimachinery package whose messages a caller mirrors; the value is its length unit."""

    CONTENT = "bytes"  # pkg/api/validate/content.MaxLenError
    UTIL_VALIDATION = "characters"  # pkg/util/validation.MaxLenError


def _too_long(value: str, limit: int, wording: Wording) -> list[str]:
    # Go's len() counts UTF-8 bytes whichever unit the message names. A lone surrogate (JSON
    # allows one) becomes U+FFFD in Go, 3 bytes, as surrogatepass encodes it here.
    if len(value.encode("utf-8", "surrogatepass")) > limit:
        return [f"must be no more than {limit} {wording.value}"]
    return []


def dns_label(value: str, *, wording: Wording = Wording.UTIL_VALIDATION) -> list[str]:
    """RFC 1123 label (``k8s-short-name``), ``IsDNS1123Label`` of the package ``wording`` names."""
    errs = _too_long(value, DNS1123_LABEL_MAX, wording)
    if _LABEL_RE.fullmatch(value):
        return errs
    if _SUBDOMAIN_RE.fullmatch(value):
        # A valid subdomain that is no label: the length was reported above, so it is the dots.
        return [*errs, "must not contain dots"]
    return [
        *errs,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    ]


def dns_subdomain(value: str, *, wording: Wording = Wording.UTIL_VALIDATION) -> list[str]:
    """RFC 1123 subdomain (``k8s-long-name``), ``IsDNS1123Subdomain`` of the package ``wording`` names."""
    errs = _too_long(value, DNS1123_SUBDOMAIN_MAX, wording)
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
            "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return errs


def label_key(value: str) -> list[str]:
    """Qualified name with an optional DNS-subdomain prefix (``k8s-label-key``).

    ``content.IsLabelKey`` only: ``util/validation.IsQualifiedName`` is an alias of it, so
    hand-written callers get the same ("bytes") wording.
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in dns_subdomain(prefix, wording=Wording.CONTENT))
    else:
        return [
            f"a valid label key {_QUALIFIED_NAME_RULE} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    else:
        errs.extend("name part " + msg for msg in _too_long(name, QUALIFIED_NAME_MAX, Wording.CONTENT))
    # Upstream runs the pattern on an empty name too, so "" draws both messages.
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(f"name part {_QUALIFIED_NAME_RULE}")
    return errs


def path_segment_name(value: str) -> list[str]:
    """``k8s-path-segment-name``: not ``.``/``..`` and free of ``/`` and ``%``."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    errs = []
    for bad in ("/", "%"):
        if bad in value:
            errs.append(f"may not contain '{bad}'")
    return errs


# Format names used in the building-block JSON Schema and in declarative-validation origins;
# pkg/api/validate/strfmt.go backs them with the content package, hence its wording.
FORMAT_CHECKERS: t.Final[dict[str, t.Callable[[str], list[str]]]] = {
    "k8s-short-name": functools.partial(dns_label, wording=Wording.CONTENT),
    "k8s-long-name": functools.partial(dns_subdomain, wording=Wording.CONTENT),
    "k8s-label-key": label_key,
    "k8s-path-segment-name": path_segment_name,
}
