"""``Settings.certificate_problems``: the pair and the client CA are checked by the server's own first load."""

from __future__ import annotations

import typing as t
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from webhook import certs
from webhook.server.settings import Settings

NOW = datetime.now(UTC)


def _files(tmp: Path, dev: certs.DevCerts, case: str) -> dict[str, t.Any]:
    ca = tmp / "client-ca.crt"
    ca.write_bytes(dev.cert_file.read_bytes())
    files: dict[str, t.Any] = {"cert_file": dev.cert_file, "key_file": dev.key_file}
    if case == "missing key":
        files["key_file"] = tmp / "absent.key"
    elif case == "client CA is a key":
        ca.write_bytes(dev.key_file.read_bytes())
        files["client_ca_file"] = ca
    elif case == "client CA is empty":
        ca.write_bytes(b"")
        files["client_ca_file"] = ca
    elif case == "client CA missing":
        files["client_ca_file"] = tmp / "absent-ca.crt"
    elif case == "unknown cipher flag":
        files["tls_cipher_suites"] = ("TLS_NOT_A_SUITE",)
        files["key_file"] = tmp / "absent.key"
    elif case in ("a good client CA", "a good pair"):
        files["client_ca_file"] = ca if case == "a good client CA" else None
    return files


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("a good pair", [], id="a good pair: nothing"),
        pytest.param("a good client CA", [], id="a good client CA: nothing"),
        pytest.param("missing key", ["absent.key"], id="a missing key file is named"),
        pytest.param("client CA is a key", ["client CA", "holds a private key"], id="a key as the client CA"),
        pytest.param("client CA is empty", ["client CA", "empty"], id="an empty client CA file"),
        pytest.param("client CA missing", ["absent-ca.crt"], id="a missing client CA file is named"),
        pytest.param("unknown cipher flag", ["absent.key"], id="bad TLS flags do not hide a missing key"),
    ],
)
def test_the_pair_and_the_client_ca_are_checked_before_serving(
    tmp_path: Path, case: str, expected: list[str]
) -> None:
    dev = certs.ensure_dev_certs(tmp_path / "dev", now=NOW)
    problems = Settings(**_files(tmp_path, dev, case)).certificate_problems(now=NOW)
    text = "\n".join(problems)
    assert (len(problems) == 0) is (not expected), problems
    assert all(word in text for word in expected), problems


def test_an_expired_pair_is_refused(tmp_path: Path) -> None:
    dev = certs.ensure_dev_certs(tmp_path / "dev", now=NOW)
    later = NOW + timedelta(days=3650)
    problems = Settings(cert_file=dev.cert_file, key_file=dev.key_file).certificate_problems(now=later)
    assert any("expired" in p for p in problems), problems
