"""``Settings``: everything ``wasp serve`` needs, frozen and checked once at start-up.

``check`` fails fast (settings are checked at start-up): a server that would only
fail on its first TLS handshake, or on its first review, refuses to start instead, with a
message that says which file or flag to fix. ``wasp serve`` maps that to exit code 2.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import typing as t
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from webhook.admission.review import MAX_BODY_BYTES
from webhook.certs.serving import DEFAULT_CIPHER_SUITES, CertReloader, TlsOptions
from webhook.vocab.errors import ConfigError
from webhook.vocab.gates import DEFAULT_GATES, FeatureGates

if t.TYPE_CHECKING:
    from webhook.policy.model import Enforcement

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings:
    """``client_ca_file`` ``None`` means clients are not asked for certificates.

    ``policy_dirs`` are loaded after the built-in policies (``builtin_policies``), so a file
    there can replace a built-in policy of the same name.
    """

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    policy_dirs: tuple[Path, ...] = ()
    builtin_policies: bool = True
    gates: FeatureGates = DEFAULT_GATES
    # --enforcement: replaces every policy's spec.enforcement (None: each policy's own).
    enforcement: Enforcement | None = None
    # --was-schedulers: the schedulers that implement WAS, for every policy (None: each policy's own).
    was_schedulers: frozenset[str] | None = None
    bind_address: str = "0.0.0.0"
    port: int = 8443
    metrics_port: int = 8080
    workers: int = 2
    # Threads per worker: a thread per connection while it handshakes, sends its request or
    # waits for its answer (kept-alive connections wait in gunicorn's poller, without one).
    # A slow or silent client holds one until its deadline, so there are many: blocked, a
    # thread costs ~20 KiB and no CPU (docs/operations-hardening.md).
    threads: int = 512
    # Below the apiserver's default 10 s webhook timeout: a review still running after a
    # SIGTERM gets this long to finish, which is as long as the apiserver would wait anyway.
    graceful_timeout: int = 8
    # Longer than typical scrape/probe gaps and the apiserver's bursts: pooled connections
    # stay up so reviews do not pay a TLS handshake each (docs/design.md §9.8).
    keepalive: int = 30
    # Deadlines of the phases a client controls (webhook.server.edge), in seconds: the TLS
    # handshake, the request line and headers (from their first byte, or from the handshake
    # for a new connection), the body (from the end of the headers). The apiserver sends a
    # review in milliseconds; these only bound clients that do not.
    handshake_timeout: float = 5.0
    header_timeout: float = 5.0
    body_timeout: float = 10.0
    # A connection older than this (less up to a fifth, at random) or past this many requests
    # is answered with Connection: close, so clients reconnect and the kernel spreads them
    # over the workers again after a restart (docs/operations-hardening.md). 0: no limit.
    max_connection_age: float = 5.0
    max_connection_requests: int = 0
    # Open connections per worker (gunicorn's worker_connections); past it new ones wait in
    # the listen backlog until a deadline or an answer frees one.
    max_connections: int = 1000
    # MiB of request bodies one worker holds (webhook.server.bodies); past it a body is refused (413).
    max_buffered_mib: int = 64
    # mTLS: with client_ca_file, also require one of these names (CN or SAN) in the client certificate.
    client_allowed_names: tuple[str, ...] = ()
    tls_min_version: str = "VersionTLS12"
    tls_cipher_suites: tuple[str, ...] = DEFAULT_CIPHER_SUITES
    # Where the private metrics directory and gunicorn's heartbeat files go (None: TMPDIR, /tmp, ...).
    temp_dir: Path | None = None
    # Seconds between checks of the certificate files for a rotated pair (docs/design.md §9.9 C4).
    cert_poll_interval: float = 2.0
    max_body_bytes: int = MAX_BODY_BYTES
    log_level: str = "info"

    @property
    def probe_host(self) -> str:
        """Where a local client reaches the serving port (the readiness connect, the dev curl line)."""
        return {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(
            self.bind_address, self.bind_address
        )

    @property
    def serving_url(self) -> str:
        return f"https://{_bracketed(self.probe_host)}:{self.port}"

    @property
    def bind(self) -> str:
        """The listening address, as gunicorn's ``bind`` takes it."""
        return f"{_bracketed(self.bind_address)}:{self.port}"

    def check(self, *, now: datetime | None = None) -> None:
        """Raise :class:`ConfigError` listing every problem that would stop serving."""
        now = now or datetime.now(UTC)
        found: list[str] = []
        if self.port == self.metrics_port:
            found.append(f"--port and --metrics-port are both {self.port}; give them different ports")
        if self.workers < 1 or self.threads < 1:
            found.append("--workers and --threads must be at least 1")
        for flag, value in (
            ("--handshake-timeout", self.handshake_timeout),
            ("--header-timeout", self.header_timeout),
            ("--body-timeout", self.body_timeout),
        ):
            if not value > 0:
                found.append(f"{flag} must be more than 0 seconds")
        if self.max_connections <= self.threads:
            found.append(
                f"--max-connections {self.max_connections} must be more than --threads {self.threads} "
                "(the difference is how many connections wait between requests without a thread)"
            )
        if self.max_buffered_mib << 20 < self.max_body_bytes:
            found.append(f"--max-buffered-mib {self.max_buffered_mib} is less than one request body (7 MiB)")
        if self.client_allowed_names and self.client_ca_file is None:
            found.append(
                "--client-allowed-names needs --client-ca-file (names are read from verified client certificates)"
            )
        found += self.tls.problems()
        found += self.temp_dir_problems()
        found += self.certificate_problems(now=now)
        found += self.port_problems()
        if found:
            raise ConfigError("cannot serve:\n  " + "\n  ".join(found))

    @property
    def tls(self) -> TlsOptions:
        return TlsOptions(self.tls_min_version, self.tls_cipher_suites)

    def temp_dir_problems(self) -> list[str]:
        """A directory wasp can write (the metrics directory and gunicorn's heartbeat files)."""
        try:
            made = tempfile.mkdtemp(prefix="wasp-check-", dir=self.temp_dir)
        except OSError as exc:  # FileNotFoundError included
            where = (
                f"--temp-dir {self.temp_dir}"
                if self.temp_dir
                else "no temporary directory (TMPDIR, /tmp, ...)"
            )
            problem = f"cannot create a directory there ({exc.strerror or exc}); name a writable one with --temp-dir"
            return [f"{where}: {problem}"]
        shutil.rmtree(made, ignore_errors=True)
        return []

    def port_problems(self) -> list[str]:
        """Ports something else already listens on, found before gunicorn starts.

        gunicorn binds with SO_REUSEPORT and, when that fails, retries and lets the arbiter
        linger without workers; a second instance with the same user would instead share the
        port and take half the reviews. A plain bind (without SO_REUSEPORT) fails on both.
        """
        found: list[str] = []
        family = socket.AF_INET6 if ":" in self.bind_address else socket.AF_INET
        for label, port in (("--port", self.port), ("--metrics-port", self.metrics_port)):
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "in use"
                try:
                    probe.bind((self.bind_address, port))
                except OSError as exc:
                    found.append(
                        f"{label} {port}: cannot listen on {self.bind_address}:{port} ({exc.strerror}); "
                        "is another wasp serve or another program using it?"
                    )
        return found

    def certificate_problems(self, *, now: datetime) -> list[str]:
        """What keeps the pair from serving: the first load the server itself does (with the
        default TLS options when the flags have problems of their own)."""
        tls = None if self.tls.problems() else self.tls
        files = (self.cert_file, self.key_file, self.client_ca_file)
        return CertReloader(*files, tls=tls, now=lambda: now).load()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host
