"""``wasp explain``: why a gang is not running, in one command (docs/explain.md).

A pure core over a :class:`~webhook.explain.snapshot.Snapshot` (``diagnose``, ``tree``,
``pods``, ``quorum``, ``capacity``, ``sequencing``, ``selection``, ``render``) and two shells
that fill it: :mod:`~webhook.explain.cluster` (the Kubernetes API) and
:mod:`~webhook.explain.dump` (``kubectl get -o yaml`` files). The command is
:mod:`webhook.explain.command`; ``wasp audit`` prints the same verdict per workload
(:mod:`~webhook.explain.summary`).
"""
