"""Loading ``spec.stamping.membership``: pods that belong to an object by a label naming it.

A check a schema cannot express fails here with the file and the key; whether the policy's
tree can place such pods by their labels is :func:`webhook.policy.loading`'s stampability
check, shared with ``stamping.pods``.
"""

from __future__ import annotations

import typing as t

from webhook.policy.model import Membership
from webhook.vocab.formats import label_key

__all__ = ["load_membership"]


class _Loader(t.Protocol):
    def fail(self, location: str, message: str) -> t.NoReturn: ...


def load_membership(loader: _Loader, doc: t.Mapping[str, t.Any] | None) -> Membership | None:
    """The schema-checked ``spec.stamping.membership``, or ``None`` when it is absent."""
    if doc is None:
        return None
    label = doc["label"]
    problems = label_key(label)
    if problems:
        # A key no pod can carry would match no pod, silently: the policy would stamp nothing.
        loader.fail("spec.stamping.membership.label", f"{label!r} is not a label key: {'; '.join(problems)}")
    return Membership(label)
