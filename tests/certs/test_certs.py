"""Certificates: generation, ``problems`` at explicit times, dev-cert lifecycle, TLS, and ``wasp certs``."""

from __future__ import annotations

import socket
import ssl
import stat
import threading
import typing as t
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import given
from hypothesis import strategies as st

from webhook import certs
from webhook.cli.main import cli

NOW = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)
NAMES = ("wasp", "wasp.ns.svc", "*.wild.example", "localhost")


@dataclass(frozen=True)
class Pki:
    ca: certs.KeyPair
    leaf: certs.KeyPair  # signed by ca, valid NOW-5min .. NOW+365d
    other_ca: certs.KeyPair
    other_leaf: certs.KeyPair  # signed by other_ca


# Module scope: key generation and signing are the slow part of this file, and every test
# only reads these PEM bytes, so one set serves them all.
@pytest.fixture(scope="module")
def pki() -> Pki:
    ca = certs.generate_ca(common_name="test-ca", now=NOW)
    other_ca = certs.generate_ca(common_name="other-ca", now=NOW)
    return Pki(
        ca=ca,
        leaf=certs.generate_serving_cert(ca, dns_names=NAMES, ip_addresses=["127.0.0.1"], now=NOW),
        other_ca=other_ca,
        other_leaf=certs.generate_serving_cert(other_ca, dns_names=["wasp"], now=NOW),
    )


def _load(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


# --- problems(): one row per reason, at explicit times ----------------------------------------


@dataclass(frozen=True)
class Case:
    cert: t.Callable[[Pki], bytes] = lambda p: p.leaf.cert_pem
    key: t.Callable[[Pki], bytes] = lambda p: p.leaf.key_pem
    ca: t.Callable[[Pki], bytes | None] = lambda p: p.ca.cert_pem
    now: datetime = NOW
    lookahead: timedelta = timedelta(0)
    hosts: tuple[str, ...] = ()
    expect: tuple[str, ...] = ()  # one fragment per expected problem, in order


def _encrypted(p: Pki) -> bytes:
    key = serialization.load_pem_private_key(p.leaf.key_pem, password=None)
    enc = serialization.BestAvailableEncryption(b"secret")
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


CASES = {
    "valid pair": Case(),
    "valid without CA": Case(ca=lambda p: None),
    "valid for every SAN and IP": Case(
        hosts=("wasp", "WASP.ns.svc.", "localhost", "127.0.0.1", "x.wild.example")
    ),
    "valid just outside lookahead": Case(now=NOW + 274 * DAY, lookahead=90 * DAY),
    "valid chain file, leaf first": Case(cert=lambda p: p.leaf.cert_pem + p.ca.cert_pem),
    "valid CA bundle with several CAs": Case(ca=lambda p: p.other_ca.cert_pem + p.ca.cert_pem),
    "expired": Case(now=NOW + 400 * DAY, expect=("certificate: expired on 2031-06-01",)),
    "not yet valid": Case(
        now=NOW - timedelta(hours=1),
        expect=("certificate: not valid before 2030-06-01 11:55", "CA certificate: not valid before"),
    ),
    "within lookahead": Case(now=NOW + 300 * DAY, lookahead=90 * DAY, expect=("renewal window",)),
    "CA inside lookahead too": Case(
        now=NOW + 3640 * DAY,
        lookahead=30 * DAY,
        cert=lambda p: p.ca.cert_pem,
        key=lambda p: p.ca.key_pem,
        expect=("certificate: expires", "CA certificate: expires"),
    ),
    "mismatched key": Case(key=lambda p: p.other_leaf.key_pem, expect=("private key: does not belong",)),
    "wrong CA": Case(ca=lambda p: p.other_ca.cert_pem, expect=("not signed by the CA certificate",)),
    "hostname not covered": Case(hosts=("evil.example",), expect=("does not cover 'evil.example'",)),
    "wildcard covers one label only": Case(hosts=("a.b.wild.example",), expect=("does not cover",)),
    "IP not covered": Case(hosts=("10.0.0.1",), expect=("does not cover '10.0.0.1'",)),
    "garbage cert PEM": Case(cert=lambda p: b"hello", expect=("certificate: not a PEM certificate",)),
    "truncated cert PEM": Case(cert=lambda p: p.leaf.cert_pem[:120], expect=("not a PEM certificate",)),
    "binary garbage": Case(
        cert=lambda p: b"\x00\xff\xfe" * 50,
        key=lambda p: b"\x80\x00",
        expect=("not a PEM certificate", "not a PEM private key"),
    ),
    "empty cert file": Case(cert=lambda p: b"", expect=("certificate: the file is empty",)),
    "empty key file": Case(key=lambda p: b"\n", expect=("private key: the file is empty",)),
    "key in the cert file": Case(cert=lambda p: p.leaf.key_pem, expect=("holds a private key",)),
    "garbage key PEM": Case(
        key=lambda p: b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        expect=("private key: not a PEM private key",),
    ),
    "encrypted key": Case(key=_encrypted, expect=("encrypted",)),
    "garbage CA": Case(ca=lambda p: b"junk", expect=("CA certificate: not a PEM certificate",)),
    "several problems at once": Case(
        now=NOW + 400 * DAY,
        ca=lambda p: p.other_ca.cert_pem,
        hosts=("nope",),
        expect=("expired", "not signed", "does not cover 'nope'"),
    ),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_problems(pki: Pki, case: Case) -> None:
    found = certs.problems(
        case.cert(pki),
        case.key(pki),
        now=case.now,
        ca_pem=case.ca(pki),
        lookahead=case.lookahead,
        hostnames=case.hosts,
    )
    assert len(found) == len(case.expect), found
    for message, fragment in zip(found, case.expect, strict=True):
        assert fragment in message


def test_problems_labels_name_the_files(pki: Pki) -> None:
    found = certs.problems(b"", b"", now=NOW, labels=("cert /x/tls.crt", "key /x/tls.key", "CA /x/ca.crt"))
    assert found == ["cert /x/tls.crt: the file is empty", "key /x/tls.key: the file is empty"]


@given(cert=st.binary(max_size=300), key=st.binary(max_size=300), ca=st.none() | st.binary(max_size=300))
def test_problems_never_raises(cert: bytes, key: bytes, ca: bytes | None) -> None:
    found = certs.problems(cert, key, now=NOW, ca_pem=ca, hostnames=("localhost",))
    assert found  # random bytes are never a usable pair


def test_is_valid_and_not_after(pki: Pki) -> None:
    bundle = certs.CertBundle(pki.ca.cert_pem, pki.leaf.cert_pem, pki.leaf.key_pem)
    assert certs.is_valid(bundle, now=NOW, lookahead=30 * DAY)
    assert not certs.is_valid(bundle, now=NOW + 340 * DAY, lookahead=30 * DAY)
    assert not certs.is_valid(replace(bundle, ca_pem=pki.other_ca.cert_pem), now=NOW, lookahead=timedelta(0))
    assert certs.not_after(pki.leaf.cert_pem) == NOW + 365 * DAY
    with pytest.raises(ValueError, match="not a PEM certificate"):
        certs.not_after(b"garbage")


# --- generation -----------------------------------------------------------------------------


def test_ca_shape(pki: Pki) -> None:
    ca = _load(pki.ca.cert_pem)
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca and basic.value.path_length == 0
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign
    assert ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    assert ca.not_valid_after_utc - NOW == timedelta(days=3650)


def test_serving_cert_shape(pki: Pki) -> None:
    leaf, ca = _load(pki.leaf.cert_pem), _load(pki.ca.cert_pem)
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "wasp"
    assert leaf.not_valid_before_utc == NOW - timedelta(minutes=5)  # clock-skew backdating
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    aki = leaf.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == list(NAMES)
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]


def test_serving_cert_never_outlives_its_ca() -> None:
    short_ca = certs.generate_ca(common_name="short", now=NOW, valid_for=30 * DAY)
    leaf = certs.generate_serving_cert(short_ca, dns_names=["x"], now=NOW)
    assert certs.not_after(leaf.cert_pem) == certs.not_after(short_ca.cert_pem)


def test_long_first_name_leaves_cn_out(pki: Pki) -> None:
    name = "a" * 60 + ".example.com"
    leaf = _load(certs.generate_serving_cert(pki.ca, dns_names=[name], now=NOW).cert_pem)
    assert not leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)


@pytest.mark.parametrize(
    ("ca", "kwargs", "match"),
    [
        ("ca", {"dns_names": []}, "at least one DNS name"),
        ("ca", {"dns_names": ["x"], "ip_addresses": ["300.1.1.1"]}, "IP"),
        ("leaf", {"dns_names": ["x"]}, "not a CA"),
        ("mixed", {"dns_names": ["x"]}, "does not belong"),
        ("garbage", {"dns_names": ["x"]}, "not a PEM certificate"),
    ],
    ids=["no names", "bad IP", "leaf used as CA", "CA key of another CA", "garbage CA"],
)
def test_generate_serving_cert_rejects(pki: Pki, ca: str, kwargs: dict[str, t.Any], match: str) -> None:
    issuer = {
        "ca": pki.ca,
        "leaf": pki.leaf,
        "mixed": certs.KeyPair(pki.ca.cert_pem, pki.other_ca.key_pem),
        "garbage": certs.KeyPair(b"x", b"y"),
    }[ca]
    with pytest.raises(ValueError, match=match):
        certs.generate_serving_cert(issuer, now=NOW, **kwargs)


def test_service_dns_names() -> None:
    assert certs.service_dns_names("wasp", "wasp-system") == [
        "wasp",
        "wasp.wasp-system",
        "wasp.wasp-system.svc",
        "wasp.wasp-system.svc.cluster.local",
    ]
    assert certs.service_dns_names("a", "b", cluster_domain="corp")[-1] == "a.b.svc.corp"


def test_generate_bundle_is_valid() -> None:
    bundle = certs.generate_bundle(dns_names=["wasp"], ip_addresses=["::1"], now=NOW)
    assert certs.is_valid(bundle, now=NOW, lookahead=90 * DAY, hostnames=("wasp", "::1"))


# --- files ----------------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_bundle_modes_and_no_leftovers(pki: Pki, tmp_path: Path) -> None:
    bundle = certs.CertBundle(pki.ca.cert_pem, pki.leaf.cert_pem, pki.leaf.key_pem)
    ca, crt, key = certs.write_bundle(tmp_path, bundle)
    assert (ca.read_bytes(), crt.read_bytes(), key.read_bytes()) == (
        bundle.ca_pem,
        bundle.cert_pem,
        bundle.key_pem,
    )
    assert (_mode(ca), _mode(crt), _mode(key)) == (0o644, 0o644, 0o600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "tls.crt", "tls.key"]  # no temp files


def test_fingerprint(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"one")
    b.write_bytes(b"two")
    first = certs.fingerprint(a, b)
    assert certs.fingerprint(a, b) == first  # stable while nothing changes
    a.write_bytes(b"ONE")
    assert certs.fingerprint(a, b) != first
    a.write_bytes(b"one")
    assert certs.fingerprint(a, b) == first  # content, not mtime
    missing = certs.fingerprint(a, tmp_path / "gone")
    assert missing == certs.fingerprint(a, tmp_path / "gone") != first
    (tmp_path / "empty").write_bytes(b"")
    assert certs.fingerprint(a, tmp_path / "empty") != missing  # missing is not the same as empty
    assert certs.fingerprint(a, tmp_path) != missing  # a directory: unreadable, still no exception


def test_dev_certs_lifecycle(tmp_path: Path) -> None:
    state = tmp_path / "state" / "dev"
    made = certs.ensure_dev_certs(state, now=NOW)
    assert made.created and made.reasons == (f"{state} holds no CA yet",)
    assert _mode(state) == 0o700
    assert _mode(made.key_file) == _mode(state / "ca.key") == 0o600
    assert _mode(made.cert_file) == _mode(made.ca_file) == 0o644
    files = (made.ca_file, made.cert_file, made.key_file, state / "ca.key")
    ca_before, print_before = made.ca_file.read_bytes(), certs.fingerprint(*files)

    reused = certs.ensure_dev_certs(state, now=NOW + 100 * DAY)
    assert reused == replace(made, created=False, reasons=())
    assert certs.fingerprint(*files) == print_before  # untouched

    # 340 days in, the serving certificate is inside the 30-day window: re-issued, same CA.
    renewed = certs.ensure_dev_certs(state, now=NOW + 340 * DAY)
    assert renewed.created and "renewal window" in renewed.reasons[0]
    assert made.ca_file.read_bytes() == ca_before
    assert certs.not_after(made.cert_file.read_bytes()) == NOW + 705 * DAY
    bundle = certs.CertBundle(ca_before, made.cert_file.read_bytes(), made.key_file.read_bytes())
    assert certs.is_valid(bundle, now=NOW + 340 * DAY, lookahead=30 * DAY, hostnames=("localhost", "::1"))

    # A new hostname also re-issues under the same CA.
    more = certs.ensure_dev_certs(state, now=NOW + 340 * DAY, hostnames=("localhost", "wasp.test"))
    assert more.created and "wasp.test" in more.reasons[0] and made.ca_file.read_bytes() == ca_before

    # A corrupted CA regenerates everything.
    made.ca_file.write_bytes(b"corrupted")
    fresh = certs.ensure_dev_certs(state, now=NOW + 341 * DAY)
    assert fresh.created and "not a PEM certificate" in fresh.reasons[0]
    assert made.ca_file.read_bytes() != ca_before
    bundle = certs.CertBundle(
        made.ca_file.read_bytes(), made.cert_file.read_bytes(), made.key_file.read_bytes()
    )
    assert certs.is_valid(bundle, now=NOW + 341 * DAY, lookahead=30 * DAY)


def test_dev_certs_regenerate_when_ca_expires(tmp_path: Path) -> None:
    certs.ensure_dev_certs(tmp_path, now=NOW)
    ca_before = (tmp_path / "ca.crt").read_bytes()
    late = certs.ensure_dev_certs(tmp_path, now=NOW + 3640 * DAY)  # CA inside the 30-day window
    assert late.created and "CA certificate" in late.reasons[0]
    assert (tmp_path / "ca.crt").read_bytes() != ca_before


# --- a real TLS handshake ---------------------------------------------------------------------


# Module scope: real-clock certificates on disk, shared by the handshake tests.
@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> certs.DevCerts:
    return certs.ensure_dev_certs(tmp_path_factory.mktemp("live"), now=datetime.now(UTC))


@pytest.fixture
def tls_port(live: certs.DevCerts) -> t.Iterator[int]:
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    server_ctx.load_cert_chain(live.cert_file, live.key_file)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)  # accept() wakes up often to notice `stop`; close() would not wake it
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(10)
                try:
                    with server_ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.sendall((tls.version() or "?").encode())
                except (ssl.SSLError, OSError):
                    pass  # the client decides the test's outcome

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=10)
    listener.close()


def _client_handshake(
    ca_file: Path, port: int, host: str, *, max_version: ssl.TLSVersion | None = None
) -> str:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    ctx.verify_flags |= ssl.VERIFY_X509_STRICT  # what Python 3.13+ does by default
    if max_version is not None:
        ctx.maximum_version = max_version
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as tls:
            return tls.recv(16).decode()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"], ids=["by name", "by IP"])
def test_tls_handshake(live: certs.DevCerts, tls_port: int, host: str) -> None:
    assert _client_handshake(live.ca_file, tls_port, host).startswith("TLSv1.")


def test_tls_1_2_is_accepted(live: certs.DevCerts, tls_port: int) -> None:
    assert (
        _client_handshake(live.ca_file, tls_port, "localhost", max_version=ssl.TLSVersion.TLSv1_2)
        == "TLSv1.2"
    )


def test_tls_rejects_uncovered_name(live: certs.DevCerts, tls_port: int) -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        _client_handshake(live.ca_file, tls_port, "example.com")


# --- wasp certs ---------------------------------------------------------------------------------


def _wasp(*args: str, env: dict[str, str] | None = None) -> t.Any:
    # The console script calls cli(auto_envvar_prefix="WASP"); do the same here.
    return CliRunner().invoke(cli, list(args), env=env, auto_envvar_prefix="WASP")


# Module scope: a real-clock expired pair for the CLI (which always checks against now).
@pytest.fixture(scope="module")
def expired(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    long_ago = datetime.now(UTC) - 800 * DAY
    bundle = certs.generate_bundle(dns_names=["old"], now=long_ago)
    _, crt, key = certs.write_bundle(tmp_path_factory.mktemp("expired"), bundle)
    return crt, key


def test_cli_dev_creates_then_reuses(tmp_path: Path) -> None:
    state = tmp_path / "dev"
    first = _wasp("certs", "dev", "--state-dir", str(state), "--host", "localhost", "--host", "wasp.test")
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("created") and str(state / "tls.crt") in first.stdout
    second = _wasp("certs", "dev", "--state-dir", str(state), "--host", "localhost", "--host", "wasp.test")
    assert second.exit_code == 0 and second.stdout.startswith("reused")


def test_cli_dev_from_environment(tmp_path: Path) -> None:
    env = {"WASP_CERTS_DEV_STATE_DIR": str(tmp_path / "env"), "WASP_CERTS_DEV_HOST": "a.test b.test"}
    result = _wasp("certs", "dev", env=env)
    assert result.exit_code == 0, result.output
    pems = ((tmp_path / "env" / n).read_bytes() for n in ("tls.crt", "tls.key"))
    assert not certs.problems(*pems, now=datetime.now(UTC), hostnames=("a.test", "b.test", "::1"))


def test_cli_dev_rejects_bad_ip(tmp_path: Path) -> None:
    result = _wasp("certs", "dev", "--state-dir", str(tmp_path), "--ip", "localhost")
    assert result.exit_code == 2 and "not an IPv4 or IPv6 address" in result.stderr


def test_cli_generate_new_ca(tmp_path: Path) -> None:
    result = _wasp(
        "certs", "generate", "--out-dir", str(tmp_path / "o"), "--service", "wasp", "--namespace", "ns"
    )
    assert result.exit_code == 0, result.output
    assert "its key is not kept" in result.stderr
    bundle = certs.CertBundle(*((tmp_path / "o" / n).read_bytes() for n in ("ca.crt", "tls.crt", "tls.key")))
    assert certs.is_valid(bundle, now=datetime.now(UTC), lookahead=300 * DAY, hostnames=("wasp.ns.svc",))


def test_cli_generate_with_existing_ca_from_environment(live: certs.DevCerts, tmp_path: Path) -> None:
    env = {
        "WASP_CERTS_GENERATE_OUT_DIR": str(tmp_path),
        "WASP_CERTS_GENERATE_SERVICE": "hook",
        "WASP_CERTS_GENERATE_NAMESPACE": "ops",
        "WASP_CERTS_GENERATE_CA_CERT": str(live.ca_file),
        "WASP_CERTS_GENERATE_CA_KEY": str(live.ca_file.parent / "ca.key"),
        "WASP_CERTS_GENERATE_DAYS": "30",
    }
    result = _wasp("certs", "generate", env=env)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ca.crt").read_bytes() == live.ca_file.read_bytes()
    crt = (tmp_path / "tls.crt").read_bytes()
    assert certs.not_after(crt) - datetime.now(UTC) < 31 * DAY
    assert not certs.problems(
        crt,
        (tmp_path / "tls.key").read_bytes(),
        now=datetime.now(UTC),
        ca_pem=live.ca_file.read_bytes(),
        hostnames=("hook.ops.svc.cluster.local",),
    )


@pytest.mark.parametrize(
    "extra",
    [
        ["--ca-cert", "{ca}"],
        ["--ca-cert", "{crt}", "--ca-key", "{key}"],
        ["--service", "Not_A_Label"],
        ["--days", "0"],
    ],
    ids=["CA cert without key", "serving cert as CA", "invalid service name", "zero days"],
)
def test_cli_generate_usage_errors(live: certs.DevCerts, tmp_path: Path, extra: list[str]) -> None:
    paths = {"ca": str(live.ca_file), "crt": str(live.cert_file), "key": str(live.key_file)}
    args = ["certs", "generate", "--out-dir", str(tmp_path), "--service", "s", "--namespace", "n"]
    result = _wasp(*args, *(a.format(**paths) for a in extra))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""  # diagnostics go to stderr


def test_cli_check_ok(live: certs.DevCerts) -> None:
    result = _wasp(
        "certs",
        "check",
        "--cert-file",
        str(live.cert_file),
        "--key-file",
        str(live.key_file),
        "--ca-file",
        str(live.ca_file),
        "--host",
        "localhost",
        "--host",
        "::1",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ok: ")


def test_cli_check_reports_problems(expired: tuple[Path, Path], live: certs.DevCerts) -> None:
    crt, key = expired
    result = _wasp(
        "certs",
        "check",
        "--cert-file",
        str(crt),
        "--key-file",
        str(key),
        "--ca-file",
        str(live.ca_file),
        "--host",
        "new",
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith(f"certificate {crt}") for line in lines)
    assert "expired on" in lines[0] and "not signed" in lines[1] and "'new'" in lines[2]


def test_cli_check_from_environment(live: certs.DevCerts) -> None:
    env = {"WASP_CERTS_CHECK_CERT_FILE": str(live.cert_file), "WASP_CERTS_CHECK_KEY_FILE": str(live.key_file)}
    assert _wasp("certs", "check", env=env).exit_code == 0
    assert _wasp("certs", "check", env={**env, "WASP_CERTS_CHECK_LOOKAHEAD_DAYS": "400"}).exit_code == 1
    result = _wasp("certs", "check", env={**env, "WASP_CERTS_CHECK_HOST": "localhost elsewhere"})
    assert result.exit_code == 1 and "'elsewhere'" in result.stdout and "'localhost'" not in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--cert-file", "{missing}", "--key-file", "{key}"],
        ["--key-file", "{key}"],
        ["--cert-file", "{dir}", "--key-file", "{key}"],
    ],
    ids=["missing file", "missing option", "directory as file"],
)
def test_cli_check_usage_errors(live: certs.DevCerts, tmp_path: Path, args: list[str]) -> None:
    paths = {"missing": str(tmp_path / "nope.crt"), "key": str(live.key_file), "dir": str(tmp_path)}
    result = _wasp("certs", "check", *(a.format(**paths) for a in args))
    assert result.exit_code == 2 and result.stdout == ""


def test_cli_check_empty_file_is_a_problem_not_a_usage_error(live: certs.DevCerts, tmp_path: Path) -> None:
    empty = tmp_path / "empty.crt"
    empty.write_bytes(b"")
    result = _wasp("certs", "check", "--cert-file", str(empty), "--key-file", str(live.key_file))
    assert result.exit_code == 1 and "the file is empty" in result.stdout


def test_cli_help_shows_environment_variables() -> None:
    result = _wasp("certs", "check", "--help")
    assert result.exit_code == 0 and "WASP_CERTS_CHECK_CERT_FILE" in result.stdout


def test_user_rsa_ca_without_ski_can_issue() -> None:
    # Users bring their own CAs, often RSA and sometimes without an SKI.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "corp-ca")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - DAY)
        .not_valid_after(NOW + 1000 * DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    fmt, plain = serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ca = certs.KeyPair(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, fmt, plain),
    )
    leaf = certs.generate_serving_cert(ca, dns_names=["wasp.ns.svc"], now=NOW)
    assert not certs.problems(
        leaf.cert_pem, leaf.key_pem, now=NOW, ca_pem=ca.cert_pem, hostnames=("wasp.ns.svc",)
    )
