"""The CEL binding (``common-expression-language``) without the command-line tool it ships.

The package's ``__init__`` imports its interactive REPL (``cel.cli``: prompt_toolkit, rich,
pygments...) before the Rust extension that does the work: 230 ms of every ``wasp validate``
whose policies hold an expression (all the integrations' pod counts), and of ``wasp serve``'s
start. wasp uses only the extension (``compile``, ``Program``, ``Context``), so
:func:`binding` loads that module from the installed package's directory without running the
package's ``__init__``. It is registered as ``cel.cel``, so a later ``import cel`` elsewhere
reuses it (a PyO3 extension may be initialised once per process).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import types

__all__ = ["binding"]

_NAME = "cel.cel"
_LOCK = threading.Lock()


def binding() -> types.ModuleType:
    """The ``cel`` extension module (``compile``, ``Context``), loaded on first use."""
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    with _LOCK:  # two threads must not initialise the extension twice
        loaded = sys.modules.get(_NAME)
        if loaded is not None:
            return loaded
        package = importlib.util.find_spec("cel")  # finds the package; does not run it
        locations = list(package.submodule_search_locations or []) if package is not None else []
        spec = importlib.machinery.PathFinder.find_spec(_NAME, locations) if locations else None
        if spec is None or spec.loader is None:
            raise ImportError("the CEL binding (common-expression-language) is not installed")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[_NAME] = module
        return module
