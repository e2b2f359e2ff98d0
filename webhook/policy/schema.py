"""JSON Schema of wasp policy files (``apiVersion: wasp.dev/v1alpha1, kind: SchedulingIntegration``).

Kept as data so the loader, the docs and the Helm chart's values schema agree: the chart's
``values.schema.json`` embeds :func:`policy_file_schema` (generated, never copied; see
tests/chart/values_schema.py). Every object is closed (``additionalProperties: false``): an
unknown key is an error that names the file and the key, never a silently ignored typo.
"""

from __future__ import annotations

import copy
import re
import typing as t

from webhook.policy.schedulability import SCHEDULABILITY_SCHEMA

__all__ = ["POLICY_API_VERSION", "POLICY_KIND", "POLICY_SCHEMA", "TEMPLATE_PLACEHOLDERS", "policy_file_schema",
           "template_name_pattern"]  # fmt: skip

POLICY_API_VERSION: t.Final = "wasp.dev/v1alpha1"
POLICY_KIND: t.Final = "SchedulingIntegration"
# The fields a node's templateName may name ({name} object name, {key} element key, {index}
# element index). The loader checks them (with the node's context); the pattern below is the
# context-free part, for schema-only readers such as helm.
TEMPLATE_PLACEHOLDERS: t.Final = ("name", "key", "index")

_PATH = {"type": "string", "minLength": 1, "description": "A field path in the object, e.g. spec.scheduling"}

_BLOCKS = {
    "type": "object",
    "additionalProperties": False,
    "description": "Building-block values, in the shape the object embeds them.",
    "properties": {
        "schedulingPolicy": {"type": "object"},
        "schedulingConstraints": {"type": "object"},
        "disruptionMode": {"type": "object"},
        "resourceClaims": {"type": "array"},
    },
}

_TEMPLATE_MAPPING: dict[str, t.Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["path", "node"],
    "properties": {
        "path": {
            **_PATH,
            "description": "The pod template, relative to the child (or to each forEach element).",
        },
        "node": {"type": "string", "minLength": 1, "description": "The id of the leaf its pods join."},
        "forEach": {**_PATH, "description": "A list in the child: one pod template per element."},
        "itemKey": {
            **_PATH,
            "description": "The field of each element that is its key (a keyed leaf's {key}).",
        },
        "only": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"type": "string", "minLength": 1},
            "description": "The element keys mapped; the other elements stay out of the parent's groups.",
        },
    },
}

_NODE: dict[str, t.Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "path", "templateName"],
    "properties": {
        "id": {
            "type": "string",
            "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            "description": "Names the node for defaults and stamping; the root is 'root'.",
        },
        "type": {"enum": ["leaf", "composite"]},
        "path": {**_PATH, "description": "Where the node's scheduling block sits, relative to its context."},
        "forEach": {
            **_PATH,
            "description": "A list field (relative to the parent's context): one node per element.",
        },
        "encoding": {
            "enum": ["object", "json"],
            "description": "How path holds the blocks: an object (default), or a JSON string, e.g. an "
            "annotation (metadata.annotations[scheduling.wasp.dev/blocks]), which CRD pruning keeps "
            "where a CRD has no field for the blocks.",
        },
        "forEachOver": {
            "enum": ["list", "map"],
            "description": "What forEach names: a list (default), or a map whose entries are the "
            "elements, each keyed ({key}) by its map key (MPIJob mpiReplicaSpecs, PyTorchJob).",
        },
        "itemKey": {**_PATH, "description": "The field of each forEach element that identifies it ({key})."},
        "templateName": {
            "type": "string",
            "minLength": 1,
            "description": "Template name pattern: {name} object name, {key} element key, {index} element index.",
        },
        "podCount": {
            "type": "object",
            "additionalProperties": False,
            "description": "The leaf's pod count: a field (path), or a CEL expression over the node's "
            "context as `self` (expression), for products and clamps such as replicas x parallelism.",
            "oneOf": [{"required": ["path"]}, {"required": ["expression"]}],
            "properties": {
                "path": _PATH,
                "expression": {"type": "string", "minLength": 1},
                "default": {"type": "integer", "minimum": 0},
                "description": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 200,
                    "description": "How the expression counts, in words: messages quote it instead of the CEL.",
                },
            },
        },
        "minCountDefault": {"enum": ["podCount", "none"]},
        "minGroupCountDefault": {"enum": ["children", "none"]},
        "priorityClassNameFrom": _PATH,
        "exclusiveWith": {"type": "array", "items": _PATH},
        "podLabel": {
            "type": "object",
            "additionalProperties": False,
            "required": ["key"],
            "description": "Pods carrying this label with the element's key belong to this node; "
            "with value (a node without forEach), pods whose label has exactly that value.",
            "properties": {"key": {"type": "string", "minLength": 1}, "value": {"type": "string"}},
        },
        "groups": {
            "type": "object",
            "additionalProperties": False,
            "required": ["indexLabel"],
            "description": "A leaf instantiated several times (repeated groups, e.g. one gang per "
            "LeaderWorkerSet replica): one template, a runtime PodGroup per index 0..N-1. N is a field "
            "(path) or a CEL expression over the node's context as `self` (expression).",
            "oneOf": [{"required": ["path"]}, {"required": ["expression"]}],
            "properties": {
                "path": _PATH,
                "expression": {"type": "string", "minLength": 1},
                "default": {"type": "integer", "minimum": 0},
                "indexLabel": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The pod label holding each pod's group index (stamping).",
                },
                "countLabel": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Optional pod label holding N, so that stamping leaves a pod "
                    "whose index is N or more alone.",
                },
            },
        },
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
    },
}

POLICY_SCHEMA: t.Final[dict[str, t.Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "$defs": {"node": _NODE},
    "properties": {
        "apiVersion": {"const": POLICY_API_VERSION},
        "kind": {"const": POLICY_KIND},
        "metadata": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                "description": {"type": "string"},
            },
        },
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["target", "allowedPolicies", "allowedDisruptionModes", "root"],
            "properties": {
                "target": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["group", "versions", "kind", "resource"],
                    "properties": {
                        "group": {"type": "string"},
                        "versions": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "string", "minLength": 1},
                        },
                        "kind": {"type": "string", "minLength": 1},
                        "resource": {"type": "string", "minLength": 1},
                    },
                },
                "featureGate": {"type": "string", "minLength": 1},
                "refusedFields": {
                    "type": "array",
                    "description": "Fields the object must not set because wasp would not read them "
                    "(blocks written where this policy does not look): each set one is Forbidden at its "
                    "own path, with the message; on update an unchanged value is let through.",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["path", "message"],
                        "properties": {
                            "forEach": {
                                **_PATH,
                                "description": "A list of the object: the path is refused in every element.",
                            },
                            "path": {
                                **_PATH,
                                "description": "The field, relative to the object or to each element.",
                            },
                            "message": {"type": "string", "minLength": 1, "maxLength": 200},
                        },
                    },
                },
                "notice": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 300,
                    "description": "A warning given for every object of this kind that carries "
                    "blocks, e.g. why its pods are not stamped.",
                },
                "declarativeValidation": {"type": "boolean"},
                "enforcement": {
                    "enum": ["deny", "warn"],
                    "description": "What an object this policy finds invalid gets: deny (default) "
                    "rejects it; warn admits it with the denial's field errors as warnings.",
                },
                "allowedPolicies": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {"enum": ["basic", "gang"]},
                },
                "allowedDisruptionModes": {
                    "type": "array",
                    "uniqueItems": True,
                    "items": {"enum": ["single", "all"]},
                },
                "updateRules": {"enum": ["elastic", "immutable", "none"]},
                "root": {"$ref": "#/$defs/node"},
                "schedulability": SCHEDULABILITY_SCHEMA,
                "defaults": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name", "set"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "when": {"type": "string", "minLength": 1},
                            "node": {"type": "string", "minLength": 1},
                            "set": _BLOCKS,
                            "materializeMinCount": {"type": "boolean"},
                        },
                    },
                },
                # --- coexistence with native controllers (docs/policy-format.md, spec.native) ---
                "native": {
                    "type": "object",
                    "additionalProperties": False,
                    "description": "How to recognise a controller that manages WAS itself: then wasp "
                    "creates and stamps nothing for the kind (crdFields) or the object (objectFields, "
                    "annotations) and only validates. A Workload naming the object that wasp did not "
                    "create always counts.",
                    "properties": {
                        "crdFields": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "description": "Dotted field paths; the kind is native when its served CRD "
                            "schema has one of them.",
                        },
                        "objectFields": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "description": "Dotted field paths; an object that sets one is native.",
                        },
                        "annotations": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "description": "Annotation keys; an object that carries one is native.",
                        },
                        "note": {"type": "string", "description": "Where the marker comes from (free text)."},
                    },
                },
                "stamping": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "pods": {
                            "type": "boolean",
                            "description": "Stamp pods whose controller is the object.",
                        },
                        "membership": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["label"],
                            "description": "Stamp pods that carry a label naming the object, whatever "
                            "their owners (LeaderWorkerSet: leaderworkerset.sigs.k8s.io/name); the "
                            "webhook then watches the kind for the UIDs that PodGroup names hash.",
                            "properties": {
                                "label": {
                                    "type": "string",
                                    "minLength": 1,
                                    "description": "The pod label whose value is the object's name.",
                                },
                            },
                        },
                        "childTemplates": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["apiVersion", "kind"],
                                "oneOf": [{"required": ["templatePath"]}, {"required": ["templates"]}],
                                "properties": {
                                    "apiVersion": {"type": "string", "minLength": 1},
                                    "kind": {"type": "string", "minLength": 1},
                                    "templatePath": {
                                        **_PATH,
                                        "description": "The child's one pod template; the leaf is chosen "
                                        "by the child's and the template's labels (podLabel).",
                                    },
                                    "templates": {
                                        "type": "array",
                                        "minItems": 1,
                                        "description": "The child's pod templates, each mapped to a leaf of "
                                        "this policy's tree (RayJob -> RayCluster head and worker groups).",
                                        "items": _TEMPLATE_MAPPING,
                                    },
                                    "mode": {
                                        "enum": ["stamp", "delegate"],
                                        "description": "stamp (default): wasp stamps the pod templates and "
                                        "creates every PodGroup; delegate (batch/v1 Jobs only): wasp sets "
                                        "scheduling.k8s.io/group-template-name on the Job and the 1.37 Job "
                                        "controller creates its PodGroup.",
                                    },
                                    "children": {
                                        "type": "object",
                                        "additionalProperties": False,
                                        "required": ["path"],
                                        "description": "delegate: how many child Jobs one element of the "
                                        "mapped leaf makes (a field of its context, e.g. replicas).",
                                        "properties": {
                                            "path": _PATH,
                                            "default": {"type": "integer", "minimum": 0},
                                        },
                                    },
                                    "resource": {
                                        "type": "string",
                                        "minLength": 1,
                                        "description": "The kind's plural resource name, for the "
                                        "Helm chart's webhook rule (e.g. jobs).",
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def template_name_pattern() -> str:
    """A regular expression (RE2 and Python alike) of the templateName patterns whose fields are
    all :data:`TEMPLATE_PLACEHOLDERS` (with an optional conversion and format spec, as
    :class:`string.Formatter` reads them); ``{{`` and ``}}`` are literal braces."""
    names = "|".join(map(re.escape, TEMPLATE_PLACEHOLDERS))
    return rf"^([^{{}}]|\{{\{{|\}}\}}|\{{({names})(![rsa])?(:[^{{}}]*)?\}})*$"


def policy_file_schema(defs: str = "#/$defs/") -> dict[str, t.Any]:
    """:data:`POLICY_SCHEMA` for readers that have only a schema (an editor, helm): the node
    definitions stay under ``$defs`` of the result, referenced through ``defs`` (the pointer
    prefix where the embedding document puts them), and templateName carries
    :func:`template_name_pattern`."""
    schema = copy.deepcopy(POLICY_SCHEMA)
    schema["$defs"]["node"]["properties"]["templateName"]["pattern"] = template_name_pattern()

    def rewrite(node: t.Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node["$ref"] = defs + ref.removeprefix("#/$defs/")
            for value in node.values():
                rewrite(value)
        elif isinstance(node, list):
            for value in node:
                rewrite(value)

    rewrite(schema)
    return schema
