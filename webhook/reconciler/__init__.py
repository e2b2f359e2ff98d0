"""``wasp reconcile``: the I/O edge that creates and keeps governed objects' Workloads and groups.

The decisions are pure (:mod:`webhook.governed.reconcile`); this layer watches the API
server with the official ``kubernetes`` client, keeps the caches the decisions read, runs
a coalescing work queue, executes the writes under a Lease, and serves probes and metrics.
"""
