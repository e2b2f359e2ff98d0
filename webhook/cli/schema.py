"""``wasp schema``: the building-block schema, as JSON Schema or as a CRD structural schema."""

from __future__ import annotations

import json
import sys
import typing as t

import click

__all__ = ["block_names", "render_schema", "schema"]

_JSON_SCHEMA_DIALECT: t.Final = "https://json-schema.org/draft/2020-12/schema"


def block_names() -> list[str]:
    """Accepted ``--block`` values: the ``$defs`` names, e.g. ``SchedulingConfiguration``."""
    from webhook.declarative import BlockType

    return [b.value for b in BlockType]


def _block(name: str) -> t.Any:
    from webhook.declarative import BlockType

    for block in BlockType:
        # The $defs name, or the enum name in any case with - or _ (``composite-scheduling``).
        if name in (block.value, block.name) or name.lower().replace("-", "_") == block.name.lower():
            return block
    raise click.BadParameter(
        f"unknown block {name!r}; known: {', '.join(block_names())}", param_hint="--block"
    )


def render_schema(fmt: str, block_name: str | None) -> dict[str, t.Any]:
    """The schema ``wasp schema`` prints (see its help)."""
    from webhook.declarative import block_schema, schema_document
    from webhook.declarative.openapi import to_structural

    if fmt == "jsonschema":
        if block_name is None:
            return schema_document()
        return {"$schema": _JSON_SCHEMA_DIALECT, **block_schema(_block(block_name))}
    block = _block(block_name or "SchedulingConfiguration")
    return to_structural(block_schema(block))


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonschema", "openapi"]),
    default="jsonschema",
    show_default=True,
    help="jsonschema: JSON Schema 2020-12; openapi: the structural schema a CRD embeds.",
)
@click.option(
    "--block",
    "block_name",
    metavar="NAME",
    help="One block, e.g. SchedulingConfiguration (leaf embedding) or CompositeSchedulingConfiguration "
    "(composite embedding). Default: the whole document (jsonschema), SchedulingConfiguration (openapi).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["json", "yaml"]),
    default=None,
    help="Default: json for jsonschema, yaml for openapi (CRDs are usually YAML).",
)
def schema(fmt: str, block_name: str | None, output: str | None) -> None:
    """Print the scheduling building-block schema.

    \b
    Embed in a CRD under the field that holds the scheduling block, e.g.:
      wasp schema --format openapi > scheduling.schema.yaml
    """
    doc = render_schema(fmt, block_name)
    if (output or ("yaml" if fmt == "openapi" else "json")) == "yaml":
        import yaml

        text = yaml.dump(
            doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, width=120
        )
    else:
        text = json.dumps(doc, indent=2) + "\n"
    sys.stdout.write(text)
