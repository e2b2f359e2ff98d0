"""The webhook's watches: the list+watch that fills the stamping caches, its only Kubernetes API I/O.

An I/O shell over pure caches: :mod:`.identities` keeps the membership identity caches
(:mod:`webhook.governed.membership`, docs/decisions.md §28) and runs every watch of a worker
(:class:`~webhook.watches.identities.IdentityWatch`); :mod:`.grouping` feeds the
all-or-nothing grouping cache (:mod:`webhook.governed.grouping`, §30); :mod:`.client` is the
API client they share, one attempt per call within a review's deadline.

It is not part of :mod:`webhook.server`, the HTTP edge: the default install makes no API call,
needs no RBAC and never imports the Kubernetes client. ``create_app`` imports this package
lazily, only when a loaded policy stamps, and the server itself never talks to the API.
"""

from __future__ import annotations
