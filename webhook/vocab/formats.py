"""Kubernetes name formats (apimachinery ``pkg/api/validate`` / ``util/validation``).

Each checker returns the list of problems (empty when the value is valid), worded as
apimachinery words them, so callers can join them into an ``Invalid`` detail.
"""

from __future__ import annotations

import re

__all__ = [
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


def _max_len_msg(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns_label(value: str) -> list[str]:
    """RFC 1123 label (``k8s-short-name``)."""
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len_msg(DNS1123_LABEL_MAX))
    if not _LABEL_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return errs


def dns_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain (``k8s-long-name``)."""
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len_msg(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
            "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return errs


def label_key(value: str) -> list[str]:
    """Qualified name with an optional DNS-subdomain prefix (``k8s-label-key``)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in dns_subdomain(prefix))
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
            "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len_msg(QUALIFIED_NAME_MAX))
    if name and not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
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


# Format names used in the building-block JSON Schema and in declarative-validation origins.
FORMAT_CHECKERS = {
    "k8s-short-name": dns_label,
    "k8s-long-name": dns_subdomain,
    "k8s-label-key": label_key,
    "k8s-path-segment-name": path_segment_name,
}
