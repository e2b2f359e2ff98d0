"""The core is sans-io: nothing but the HTTP edge may import Flask or gunicorn.

The import-linter contracts in pyproject.toml check the import graph; this checks what
importing a module really loads at run time, lazy imports included.

Checked in a fresh interpreter, so modules imported by other tests cannot hide a leak.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CORE_MODULES = [
    "webhook.vocab.field",
    "webhook.vocab.equality",
    "webhook.certs",
    "webhook.declarative",
    "webhook.declarative.openapi",
    "webhook.compiler",
    "webhook.scheduling_objects",
    "webhook.policy",
    "webhook.governed.validation",
    "webhook.governed.mutation",
    "webhook.governed.workloads",
    "webhook.admission.handler",
    "webhook.manifests.loader",
    "webhook.manifests.old_pairing",
    "webhook.manifests.paths",
    # The CLI imports the HTTP stack only inside `wasp serve` (import-linter cannot tell a
    # lazy import from a module-level one, so this checks what an import really loads).
    "webhook.cli.main",
    "webhook.cli.validate",
    "webhook.cli.compile",
    "webhook.cli.schema",
    "webhook.cli.certs",
    "webhook.cli.policy",
]
EDGE_ONLY = ("flask", "werkzeug", "gunicorn")


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_module_does_not_import_the_http_stack(module: str) -> None:
    code = f"import importlib, json, sys; importlib.import_module({module!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    leaked = sorted({name.split(".")[0] for name in json.loads(out)} & set(EDGE_ONLY))
    assert leaked == [], f"{module} pulls in {leaked}"
