"""The Kubernetes API edge shared by every component that talks to a cluster.

:mod:`webhook.kube.api` is the one contact with the official ``kubernetes`` client (JSON in,
JSON out) and :mod:`webhook.kube.informer` the one list+watch implementation. The reconciler,
the webhook's watches (:mod:`webhook.watches`) and the cluster commands (``wasp audit``,
``wasp doctor``) sit above it; nothing below it (the sans-io core) may import it.
"""
