"""``cut``: client values shown in answers, messages and log lines are capped (docs/operations-hardening.md).

A review's strings are the client's: a 5 MiB ``apiVersion``, ``uid`` or name must not come
back whole in a 400 answer or make one log line of megabytes. Every place that shows such a
value shows ``cut(value)``: at most ``ECHO_LIMIT`` characters, marked with how much was left
out, so a reader knows the text is incomplete.
"""

from __future__ import annotations

import typing as t

__all__ = ["ECHO_LIMIT", "cut", "shown"]

ECHO_LIMIT: t.Final = 256


def cut(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` itself when it fits in ``limit`` characters, else its start and a marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters cut)"


def shown(value: object, limit: int = ECHO_LIMIT) -> str:
    """A client's JSON value for a message: a string quoted and cut, anything else by its type
    (the type is what was wrong with it, and a container can be arbitrarily large)."""
    if isinstance(value, str):
        return repr(cut(value, limit))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return cut(repr(value), limit)
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
