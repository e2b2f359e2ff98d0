"""The certificate files: change detection, atomic writes, and the local development pair.

With :mod:`.serving`, which loads the serving pair, the only part of :mod:`webhook.certs` that
touches the filesystem.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import typing as t
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from webhook.certs.generate import CertBundle, KeyPair, generate_ca, generate_serving_cert
from webhook.certs.validity import problems

if t.TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DevCerts", "ensure_dev_certs", "fingerprint", "write_bundle"]


# --- files ----------------------------------------------------------------------------------


def fingerprint(*paths: Path) -> str:
    """A content hash of ``paths``, to notice that a mounted Secret changed (docs/design.md §9.9 C4).

    A missing or unreadable file hashes to a fixed marker, so this never raises, and a file
    that disappears mid-rotation reads as a change rather than a crash.
    """
    digest = hashlib.sha256()
    for path in paths:
        try:
            data = b"file:" + path.read_bytes()
        except FileNotFoundError:
            data = b"missing"
        except OSError as exc:
            data = b"unreadable:%d" % (exc.errno or 0)
        digest.update(hashlib.sha256(data).digest())  # per-file digests keep file boundaries unambiguous
    return digest.hexdigest()


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    # Readers (a reload loop) see the old file or the new one, never a torn write; the mode is
    # set before any secret byte lands on disk.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bundle(directory: Path, bundle: CertBundle) -> tuple[Path, Path, Path]:
    """Write ``ca.crt`` and ``tls.crt`` (0644) and ``tls.key`` (0600); return the three paths.

    Each file is replaced atomically, the three together are not: a reader may briefly see the
    new key with the old certificate. ``problems`` reports that as a mismatch, so a reloader
    keeps the old pair and retries on its next tick.
    """
    ca, crt, key = directory / "ca.crt", directory / "tls.crt", directory / "tls.key"
    _write_atomic(ca, bundle.ca_pem, 0o644)
    _write_atomic(key, bundle.key_pem, 0o600)
    _write_atomic(crt, bundle.cert_pem, 0o644)
    return ca, crt, key


@dataclass(frozen=True, slots=True)
class DevCerts:
    ca_file: Path
    cert_file: Path
    key_file: Path
    created: bool  # False: the files on disk were valid and left untouched
    reasons: tuple[str, ...] = ()  # why files were (re)created; empty on reuse


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # reported by problems() as an empty file


def ensure_dev_certs(
    state_dir: Path,
    *,
    now: datetime,
    hostnames: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1", "::1"),
    lookahead: timedelta = timedelta(days=30),
) -> DevCerts:
    """Certificates for local development in ``state_dir``, reused while they stay valid.

    The CA key is kept beside them (``ca.key``, 0600) so that a stale serving certificate is
    re-issued under the same CA and whoever trusted ``ca.crt`` keeps trusting it. Only an
    unusable CA (missing, corrupt, expiring within ``lookahead``) regenerates everything.
    """
    if not state_dir.exists():
        state_dir.mkdir(parents=True)
        state_dir.chmod(0o700)  # explicit: mkdir(mode=...) is filtered by the umask
    ca_key_file = state_dir / "ca.key"
    ca_file, cert_file, key_file = state_dir / "ca.crt", state_dir / "tls.crt", state_dir / "tls.key"
    ca = KeyPair(_read(ca_file), _read(ca_key_file))
    ca_labels = (f"CA certificate {ca_file}", f"CA key {ca_key_file}", "")
    if not ca_file.exists() and not ca_key_file.exists():
        reasons = [f"{state_dir} holds no CA yet"]
    else:
        reasons = problems(ca.cert_pem, ca.key_pem, now=now, lookahead=lookahead, labels=ca_labels)
    if reasons:
        ca = generate_ca(common_name="wasp-dev-ca", now=now)
        _write_atomic(ca_key_file, ca.key_pem, 0o600)
    else:
        labels = (f"certificate {cert_file}", f"key {key_file}", f"CA certificate {ca_file}")
        hosts = [*hostnames, *ip_addresses]
        pems = _read(cert_file), _read(key_file)
        reasons = problems(
            *pems, now=now, ca_pem=ca.cert_pem, lookahead=lookahead, hostnames=hosts, labels=labels
        )
        if not reasons:
            return DevCerts(ca_file, cert_file, key_file, created=False)
    served = generate_serving_cert(ca, dns_names=hostnames, ip_addresses=ip_addresses, now=now)
    write_bundle(state_dir, CertBundle(ca.cert_pem, served.cert_pem, served.key_pem))
    return DevCerts(ca_file, cert_file, key_file, created=True, reasons=tuple(reasons))
