"""The webhook's Kubernetes API client: one attempt per call, each within a review's deadline.

A review can wait for a GET (a membership object the watch has not delivered yet), and the
apiserver gives a webhook at most 10 s, so a call is never retried inside the client and one
attempt is bounded by :data:`GET_TIMEOUT`; the informers back off on their own.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from webhook.kube.api import Api, connect

__all__ = ["GET_TIMEOUT", "api_client"]

# Connect, then read: a review waits for this GET, and the apiserver gives a webhook 10 s.
GET_TIMEOUT: t.Final = (1.0, 2.0)


def api_client(kubeconfig: Path | None) -> Api:
    client = connect(kubeconfig)
    # No retries inside a call: a review's GET must end within the apiserver's webhook
    # timeout (GET_TIMEOUT bounds one attempt), and the informers back off on their own.
    client.configuration.retries = 0
    return Api(client)
