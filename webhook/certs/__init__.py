"""TLS certificates: generation, a pure validity check, and the file helpers."""

from __future__ import annotations

from webhook.certs.bundle import *  # noqa: F403
