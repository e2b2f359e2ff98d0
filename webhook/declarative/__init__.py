"""The declarative (structural) layer: the building blocks' own rules, as the apiserver enforces them.

Upstream generates these checks from markers on the ``scheduling.k8s.io/v1alpha3`` types and
keeps them outside workloadbuilder, which calls them; wasp keeps them as schema data and runs
them here:

* :mod:`.document`: the JSON Schema document and the schemas derived from it;
* :mod:`.decode`: Go-decoder semantics on decoded JSON;
* :mod:`.engines`: the fast verdict engine and the reference engine;
* :mod:`.translate`: reference errors → apiserver field errors, short-circuits, order;
* :mod:`.ratchet`: which errors an update skips;
* :mod:`.validate`: :func:`validate_block`, the entry point;
* :mod:`.openapi`: the schema rewritten as a CRD structural schema.
"""

from __future__ import annotations

from webhook.declarative.document import BlockType as BlockType
from webhook.declarative.document import block_schema as block_schema
from webhook.declarative.document import declared_struct as declared_struct
from webhook.declarative.document import schema_document as schema_document
from webhook.declarative.engines import compiled_schema as compiled_schema
from webhook.declarative.engines import fast_validator as fast_validator
from webhook.declarative.engines import reference_validator as reference_validator
from webhook.declarative.validate import NO_OLD as NO_OLD
from webhook.declarative.validate import reference_engine_only as reference_engine_only
from webhook.declarative.validate import validate_block as validate_block
from webhook.declarative.validate import verdicts as verdicts
