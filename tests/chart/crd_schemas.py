"""Closed JSON Schemas for the custom-resource kinds the chart can render.

kubernetes-validate knows only the built-in kinds, so the cert-manager and Prometheus-operator
objects are checked against these instead: each covers the fields the chart writes, taken
from the CRDs' published OpenAPI (cert-manager.io/v1, monitoring.coreos.com/v1), and is
closed, so a misspelt or misplaced key fails as kubernetes-validate --strict would.
"""

from __future__ import annotations

import typing as t

Json = dict[str, t.Any]


def _obj(properties: Json, required: t.Sequence[str] = ()) -> Json:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": list(required),
    }


_STR: t.Final = {"type": "string"}
_STRS: t.Final = {"type": "array", "items": _STR}
_MAP: t.Final = {"type": "object", "additionalProperties": _STR}
_META: t.Final = _obj(
    {"name": _STR, "namespace": _STR, "labels": _MAP, "annotations": _MAP}, required=["name"]
)
_ISSUER_REF: t.Final = _obj(
    {"name": _STR, "kind": {"enum": ["Issuer", "ClusterIssuer"]}, "group": _STR}, ["name"]
)
_LABEL_SELECTOR: t.Final = _obj({"matchLabels": _MAP, "matchExpressions": {"type": "array"}})


def _kind(api_version: str, kind: str, spec: Json) -> Json:
    return _obj(
        {"apiVersion": {"const": api_version}, "kind": {"const": kind}, "metadata": _META, "spec": spec},
        required=["apiVersion", "kind", "metadata", "spec"],
    )


CERTIFICATE: t.Final = _kind(
    "cert-manager.io/v1",
    "Certificate",
    _obj(
        {
            "secretName": _STR,
            "commonName": {"type": "string", "maxLength": 64},
            "dnsNames": _STRS,
            "isCA": {"type": "boolean"},
            "duration": {"type": "string", "pattern": "^[0-9]+h$"},
            "renewBefore": {"type": "string", "pattern": "^[0-9]+h$"},
            "usages": {
                "type": "array",
                "items": {
                    "enum": [
                        "server auth",
                        "client auth",
                        "digital signature",
                        "key encipherment",
                        "cert sign",
                    ]
                },
            },  # fmt: skip
            "privateKey": _obj(
                {
                    "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                    "size": {"type": "integer"},
                    "rotationPolicy": {"enum": ["Never", "Always"]},
                }
            ),
            "issuerRef": _ISSUER_REF,
        },
        required=["secretName", "issuerRef"],
    ),
)

ISSUER: t.Final = _kind(
    "cert-manager.io/v1",
    "Issuer",
    {
        "oneOf": [
            _obj({"selfSigned": _obj({})}, ["selfSigned"]),
            _obj({"ca": _obj({"secretName": _STR}, ["secretName"])}, ["ca"]),
        ]
    },
)

SERVICE_MONITOR: t.Final = _kind(
    "monitoring.coreos.com/v1",
    "ServiceMonitor",
    _obj(
        {
            "selector": _LABEL_SELECTOR,
            "namespaceSelector": _obj({"matchNames": _STRS, "any": {"type": "boolean"}}),
            "endpoints": {
                "type": "array",
                "items": _obj(
                    {"port": _STR, "path": _STR, "interval": {"type": "string", "pattern": "^[0-9]+[smh]$"}}
                ),
            },
        },
        required=["selector", "endpoints"],
    ),
)

_RULE: t.Final = _obj(
    {
        "alert": _STR,
        "expr": _STR,
        "for": {"type": "string", "pattern": "^[0-9]+[smh]$"},
        "labels": _MAP,
        "annotations": _MAP,
    },
    required=["alert", "expr"],
)

PROMETHEUS_RULE: t.Final = _kind(
    "monitoring.coreos.com/v1",
    "PrometheusRule",
    _obj(
        {
            "groups": {
                "type": "array",
                "items": _obj({"name": _STR, "rules": {"type": "array", "items": _RULE}}, ["name", "rules"]),
            }
        },  # fmt: skip
        ["groups"],
    ),
)

BY_KIND: t.Final = {
    ("cert-manager.io/v1", "Certificate"): CERTIFICATE,
    ("cert-manager.io/v1", "Issuer"): ISSUER,
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
}
