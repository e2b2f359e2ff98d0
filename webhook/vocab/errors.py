"""wasp's exception roots. Each class carries the CLI exit code and HTTP status it maps to.

User mistakes in *objects* are never exceptions: validators return :class:`FieldError`
lists. Exceptions are for contract errors (a builder used wrongly), configuration errors
(a bad policy file) and malformed requests.
"""

from __future__ import annotations

import typing as t

__all__ = ["BuildError", "ConfigError", "PolicyError", "WaspError"]


class WaspError(Exception):
    """Root of wasp's exceptions."""

    exit_code: t.ClassVar[int] = 2
    http_status: t.ClassVar[int] = 500


class BuildError(WaspError):
    """The compiler could not produce an object (upstream returns an ``error``)."""

    exit_code = 1


class ConfigError(WaspError):
    """Bad configuration given at start-up (flags, files, gates)."""

    exit_code = 2


class PolicyError(ConfigError):
    """A policy file is unreadable or does not match the policy schema.

    The message names the file and the key, so an operator can fix it without reading code.
    """
