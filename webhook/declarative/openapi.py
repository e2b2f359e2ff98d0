"""JSON Schema -> the OpenAPI v3 *structural schema* a CustomResourceDefinition accepts. Pure.

CRD authors embed wasp's building blocks in their own ``openAPIV3Schema``; the apiserver
only takes a subset of JSON Schema there, so :func:`to_structural` rewrites the building-block
schema (``webhook.declarative.schema``) into that subset:

* ``$ref`` is inlined (keywords beside a ``$ref`` win); ``$schema``, ``$id``, ``$defs`` and
  ``$comment`` are dropped, and so are the declaration-only keywords (``x-k8s-*`` markers,
  ``x-wasp-internal``) should a schema still carry them.
* ``additionalProperties: false`` is dropped: a structural schema may not set it next to
  ``properties``, and pruning already removes unknown fields. Empty ``properties`` go too
  (a marker object such as ``basic: {}`` is then just ``type: object``).
* ``oneOf`` of ``required`` lists (the unions) stays: CRD value validation allows it.
* ``x-kubernetes-list-type``/``-list-map-keys``, ``maxItems``, ``minimum``... stay.
* ``format`` values the apiserver knows stay; the Kubernetes name formats (``k8s-*``) become
  ``maxLength`` plus ``x-kubernetes-validations`` CEL rules with the same regular expressions
  as apimachinery. Unknown formats raise ``ValueError`` rather than vanish silently.
"""

from __future__ import annotations

import copy
import typing as t

from webhook.declarative.document import declaration_only

__all__ = ["CRD_FORMATS", "K8S_FORMAT_RULES", "to_structural"]

Schema = dict[str, t.Any]

# Formats apiextensions-apiserver validates (k8s.io/kube-openapi/pkg/validation/strfmt, plus
# the integer/number ones); anything else is rejected or ignored by the apiserver.
CRD_FORMATS: t.Final = frozenset(
    {
        "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3",
        "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor",
        "byte", "password", "date", "duration", "datetime", "date-time",
        "int32", "int64", "float", "double",
    }
)  # fmt: skip

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = f"{_LABEL}([.]{_LABEL})*"
# Anchored with ^...$: CEL ``matches`` is RE2 (no trailing-newline quirk) and unanchored otherwise.


class _Rule(t.NamedTuple):
    max_length: int
    rules: tuple[tuple[str, str], ...]  # (CEL rule, message)


K8S_FORMAT_RULES: t.Final[dict[str, _Rule]] = {
    "k8s-short-name": _Rule(
        63,
        ((f"self.matches('^{_LABEL}$')", f"must be a lowercase RFC 1123 label (regex '{_LABEL}')"),),
    ),
    "k8s-long-name": _Rule(
        253,
        (
            (
                f"self.matches('^{_SUBDOMAIN}$')",
                f"must be a lowercase RFC 1123 subdomain (regex '{_SUBDOMAIN}')",
            ),
        ),
    ),
    # An optional DNS-subdomain prefix (at most 253 characters) and '/', then a name of at most
    # 63 characters: 253 + 1 + 63 = 317.
    "k8s-label-key": _Rule(
        317,
        (
            (
                f"self.matches('^({_SUBDOMAIN}/)?([A-Za-z0-9][-A-Za-z0-9_.]{{0,61}})?[A-Za-z0-9]$')",
                "must be a qualified name (at most 63 characters: alphanumerics, '-', '_' or '.', starting "
                "and ending with an alphanumeric) with an optional DNS subdomain prefix and '/'",
            ),
            (
                "!self.contains('/') || self.matches('^[^/]{1,253}/')",
                "prefix part must be no more than 253 characters",
            ),
        ),
    ),
    "k8s-path-segment-name": _Rule(
        -1,
        (
            (
                "self != '.' && self != '..' && !self.matches('[/%]')",
                "may not be '.' or '..' and may not contain '/' or '%'",
            ),
        ),
    ),
}

_DROPPED: t.Final = frozenset({"$schema", "$id", "$defs", "$comment"})
_SCHEMA_LISTS: t.Final = frozenset({"oneOf", "anyOf", "allOf"})


def _resolve(ref: str, defs: t.Mapping[str, t.Any]) -> t.Mapping[str, t.Any]:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in defs:
        raise ValueError(f"cannot inline $ref {ref!r}: only local #/$defs/<name> references are supported")
    target = defs[ref[len(prefix) :]]
    if not isinstance(target, t.Mapping):
        raise ValueError(f"$ref {ref!r} does not point to a schema object")
    return target


def _convert(node: t.Mapping[str, t.Any], defs: t.Mapping[str, t.Any], depth: int) -> Schema:
    if depth > 64:
        raise ValueError("schema nesting deeper than 64: a recursive $ref cannot be inlined into a CRD")
    if "$ref" in node:
        merged = {**_resolve(node["$ref"], defs), **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs, depth + 1)
    out: Schema = {}
    rules: list[dict[str, str]] = []
    for key, value in node.items():
        if key in _DROPPED or declaration_only(key):
            continue  # declaration-only keywords (x-k8s-* markers) are not CRD schema
        if key == "additionalProperties":
            if isinstance(value, t.Mapping):
                out[key] = _convert(value, defs, depth + 1)
            # false: pruning does the job; true: not allowed without preserve-unknown-fields.
        elif key == "properties":
            if value:
                out[key] = {name: _convert(sub, defs, depth + 1) for name, sub in value.items()}
        elif key == "items" and isinstance(value, t.Mapping):
            out[key] = _convert(value, defs, depth + 1)
        elif key in _SCHEMA_LISTS:
            out[key] = [_convert(sub, defs, depth + 1) for sub in value]
        elif key == "not":
            out[key] = _convert(value, defs, depth + 1)
        elif key == "format":
            if value in CRD_FORMATS:
                out[key] = value
            elif value in K8S_FORMAT_RULES:
                rule = K8S_FORMAT_RULES[value]
                if rule.max_length >= 0:
                    out["maxLength"] = min(node.get("maxLength", rule.max_length), rule.max_length)
                rules.extend({"rule": r, "message": m} for r, m in rule.rules)
            else:
                raise ValueError(f"format {value!r} has no CRD equivalent")
        elif key == "x-kubernetes-validations":
            rules[:0] = copy.deepcopy(list(value))
        elif key == "maxLength" and "maxLength" in out:
            out[key] = min(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    if rules:
        out["x-kubernetes-validations"] = rules
    return out


def to_structural(schema: t.Mapping[str, t.Any], defs: t.Mapping[str, t.Any] | None = None) -> Schema:
    """The structural-schema form of ``schema``; ``defs`` resolves ``#/$defs/`` references
    (default: the schema's own ``$defs``). The input is not modified.

    Raises ``ValueError`` for what a CRD cannot express (non-local or recursive ``$ref``, a
    ``format`` with no CRD equivalent).
    """
    return _convert(schema, defs if defs is not None else schema.get("$defs", {}), 0)
