"""``IdentityEnum``: an Enum whose members hash by identity, in C.

``enum.Enum.__hash__`` is a Python method (``hash(self._name_)``), so every set or dict probe
with a member as key is a Python call. Members are singletons that compare by identity (a
plain Enum has no ``__eq__`` of its own), so the identity hash agrees with ``==``. Used for
the enums that are looked up on every review (allow-lists, schema tables).
"""

from __future__ import annotations

import enum

__all__ = ["IdentityEnum"]


class IdentityEnum(enum.Enum):
    __hash__ = object.__hash__
