"""The serving ``SSLContext``, reloaded when the certificate files change (docs/design.md §9.9 C4, §9.10).

gunicorn calls its ``ssl_context`` server hook for *every* accepted connection (gunicorn
``sock.ssl_wrap_socket``, in the worker thread that handshakes), so handing it the context
held here is enough to rotate: at most every ``interval`` seconds the files' fingerprint is
compared; a changed pair is checked with :func:`webhook.certs.problems` and, if it can
serve, a fresh context replaces the old one for *new* connections. Connections already
open, and the reviews on them, keep the context they handshook with, so nothing in flight
is dropped and no worker or pod restarts.

A changed pair that fails the check is not loaded: the old one keeps serving, the problem
is logged once per distinct content and reported to the observer (a metric), and the next
change is tried again. This is how a half-written rotation (new key, old certificate) is
survived.

Considered and not taken: ``SSLContext.sni_callback`` swapping ``sslobj.context`` (needs
no gunicorn hook, but adds a per-handshake callback for the same effect), and an arbiter
SIGHUP reload (restarts workers; with ``reuse_port`` that refuses connections, see
docs/design.md §11.1).

It lives with the certificates, not the HTTP server: picking up the rotated pair is the
other half of rotation (:mod:`.rotation` plans the new pair), and nothing here knows HTTP.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
import typing as t
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from webhook import certs
from webhook.certs.pem import load_certs

__all__ = [
    "CIPHER_SUITES",
    "DEFAULT_CIPHER_SUITES",
    "CertReloader",
    "LoadedPair",
    "TlsOptions",
    "new_server_context",
    "peer_allowed",
    "peer_names",
]

log = logging.getLogger("wasp.tls")

Observer = t.Callable[[t.Literal["loaded", "rejected"], "LoadedPair | None"], None]


# TLS 1.2 suites by their IANA names (what kube components' --tls-cipher-suites take), mapped
# to OpenSSL's. TLS 1.3 suites are all AEAD and not configurable here, as in Kubernetes.
CIPHER_SUITES: t.Final = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    # Not AEAD: only when named explicitly.
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
}
DEFAULT_CIPHER_SUITES: t.Final = tuple(CIPHER_SUITES)[:6]  # the ECDHE AEAD suites listed first
TLS_VERSIONS: t.Final = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """``min_version`` as kube components spell it; ``cipher_suites`` IANA names (TLS 1.2)."""

    min_version: str = "VersionTLS12"
    cipher_suites: tuple[str, ...] = DEFAULT_CIPHER_SUITES

    def problems(self) -> list[str]:
        found = []
        if self.min_version not in TLS_VERSIONS:
            found.append(f"--tls-min-version {self.min_version!r}: use one of {', '.join(TLS_VERSIONS)}")
        unknown = [name for name in self.cipher_suites if name not in CIPHER_SUITES]
        if unknown:
            found.append(
                f"--tls-cipher-suites: unknown {', '.join(unknown)}; known: {', '.join(CIPHER_SUITES)}"
            )
        elif not self.cipher_suites:
            found.append("--tls-cipher-suites is empty")
        return found


def peer_names(cert: t.Mapping[str, t.Any] | None) -> set[str]:
    """The names a verified client certificate (``SSLSocket.getpeercert()``) carries: subject
    common names and subjectAltName DNS, URI and email entries."""
    if not cert:
        return set()
    names = {value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"}
    names |= {value for kind, value in cert.get("subjectAltName", ()) if kind in ("DNS", "URI", "email")}
    return names


def peer_allowed(cert: t.Mapping[str, t.Any] | None, allowed: t.AbstractSet[str]) -> bool:
    """Whether the client certificate names one of ``allowed`` (exact match, as kube's
    ``--requestheader-allowed-names``)."""
    return not peer_names(cert).isdisjoint(allowed)


@dataclass(frozen=True, slots=True)
class LoadedPair:
    fingerprint: str
    not_after: datetime
    context: ssl.SSLContext


def new_server_context(
    cert_file: Path, key_file: Path, client_ca_file: Path | None, tls: TlsOptions | None = None
) -> ssl.SSLContext:
    """TLS 1.2 minimum with AEAD suites only (``tls`` says otherwise); with
    ``client_ca_file``, clients must present a certificate it signed."""
    tls = tls or TlsOptions()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = TLS_VERSIONS[tls.min_version]
    context.set_ciphers(":".join(CIPHER_SUITES[name] for name in tls.cipher_suites))
    context.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file))
    if client_ca_file is not None:
        context.load_verify_locations(cafile=str(client_ca_file))
        context.verify_mode = ssl.CERT_REQUIRED
    # HTTP/1.1 only: the apiserver pools HTTP/1.1 connections, which spreads them over
    # workers; h2 would multiplex everything onto one worker (docs/design.md §11.1).
    context.set_alpn_protocols(["http/1.1"])
    return context


class CertReloader:
    """Holds the current serving context and swaps it when the files change.

    ``clock`` is monotonic seconds and ``now`` the wall clock (both injectable for tests).
    ``observer`` hears of every loaded or rejected *change*, not of the initial load.
    """

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        client_ca_file: Path | None = None,
        *,
        interval: float = 2.0,
        observer: Observer | None = None,
        tls: TlsOptions | None = None,
        clock: t.Callable[[], float] = time.monotonic,
        now: t.Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cert_file, self.key_file, self.client_ca_file = cert_file, key_file, client_ca_file
        self.interval = interval
        self.observer = observer
        self.tls = tls
        self._clock, self._now = clock, now
        self._lock = threading.Lock()
        self._current: LoadedPair | None = None
        self._seen = ""  # fingerprint of the files last examined, loaded or not
        self._next_check = 0.0

    @property
    def _paths(self) -> tuple[Path, ...]:
        return (self.cert_file, self.key_file) + ((self.client_ca_file,) if self.client_ca_file else ())

    @property
    def current(self) -> LoadedPair | None:
        return self._current

    def load(self) -> list[str]:
        """Load the pair now; return the problems that prevented it (empty: loaded)."""
        with self._lock:
            problems = self._try_load(initial=True)
            self._next_check = self._clock() + self.interval
            return problems

    def context(self) -> ssl.SSLContext:
        """The context for a new connection; checks the files at most every ``interval`` s.

        Only one thread checks at a time; the others carry on with the current context.
        Raises ``RuntimeError`` if no pair was ever loaded (the server refused to start then).
        """
        if self._clock() >= self._next_check and self._lock.acquire(blocking=False):
            try:
                if self._clock() >= self._next_check:
                    self._next_check = self._clock() + self.interval
                    if certs.fingerprint(*self._paths) != self._seen:
                        self._try_load(initial=False)
            finally:
                self._lock.release()
        if self._current is None:
            raise RuntimeError("no serving certificate loaded")
        return self._current.context

    def problems(self) -> list[str]:
        """Why the pair in use cannot serve right now (readiness): none loaded, or expired."""
        if self._current is None:
            return ["no serving certificate loaded"]
        if self._current.not_after <= self._now():
            return [f"the serving certificate expired at {self._current.not_after.isoformat()}"]
        return []

    def _try_load(self, *, initial: bool) -> list[str]:
        before = certs.fingerprint(*self._paths)
        self._seen = before
        try:
            cert_pem, key_pem = self.cert_file.read_bytes(), self.key_file.read_bytes()
        except OSError as exc:
            found = [f"cannot read {exc.filename}: {exc.strerror}"]
        else:
            labels = (f"certificate {self.cert_file}", f"private key {self.key_file}", "CA certificate")
            found = certs.problems(cert_pem, key_pem, now=self._now(), labels=labels)
        found += self._client_ca_problems()
        pair = None
        if not found:
            try:
                context = new_server_context(self.cert_file, self.key_file, self.client_ca_file, self.tls)
            except (OSError, ssl.SSLError) as exc:
                found = [f"cannot load the pair: {exc}"]
            else:
                if certs.fingerprint(*self._paths) != before:
                    # Files replaced between the check and the load: what was loaded may not
                    # be what was checked. Forget this round; the next tick sees the change.
                    self._seen = ""
                    return ["the certificate files changed while loading; retrying"]
                pair = LoadedPair(before, certs.not_after(cert_pem), context)
        if pair is not None:
            self._current = pair
            if not initial:
                log.info(
                    "loaded a rotated serving certificate",
                    extra={
                        "fields": {"cert_file": str(self.cert_file), "not_after": pair.not_after.isoformat()}
                    },
                )
                self._notify("loaded", pair)
            return []
        if not initial:
            log.error(
                "not loading the changed serving certificate; the previous one keeps serving",
                extra={"fields": {"cert_file": str(self.cert_file), "problems": found}},
            )
            self._notify("rejected", None)
        return found

    def _client_ca_problems(self) -> list[str]:
        """Why the client CA file cannot verify clients (OpenSSL's own error would not say which file)."""
        if self.client_ca_file is None:
            return []
        try:
            load_certs(self.client_ca_file.read_bytes(), f"client CA {self.client_ca_file}")
        except OSError as exc:
            return [f"cannot read {exc.filename}: {exc.strerror}"]
        except ValueError as exc:
            return [str(exc)]
        return []

    def _notify(self, event: t.Literal["loaded", "rejected"], pair: LoadedPair | None) -> None:
        if self.observer is not None:
            self.observer(event, pair)
