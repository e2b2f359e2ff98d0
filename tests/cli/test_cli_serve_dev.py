"""``wasp serve --dev`` as ``scripts/run`` starts it: a policy it refuses is refused before it
says "serving", and the curl line it prints works from any directory."""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
BAD_POLICY = """apiVersion: wasp.dev/v1alpha1
kind: SchedulingIntegration
metadata: {name: bad}
spec: {allowedPolicy: [gang]}
"""


def _ports() -> tuple[int, int]:
    socks = [socket.socket() for _ in range(2)]
    for sock in socks:
        sock.bind(("127.0.0.1", 0))
    ports = tuple(int(s.getsockname()[1]) for s in socks)
    for sock in socks:
        sock.close()
    return ports[0], ports[1]


def test_a_refused_policy_is_refused_before_serving_is_printed(wasp_bin: str, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD_POLICY)
    port, metrics = _ports()
    proc = subprocess.run([wasp_bin, "serve", "--dev", "--policies", "bad.yaml", "--port", str(port),
                           "--metrics-port", str(metrics)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 2
    assert "allowedPolicy" in proc.stderr
    assert "serving" not in proc.stdout and "curl" not in proc.stdout


def test_the_curl_line_works_from_another_directory(wasp_bin: str, tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    port, metrics = _ports()
    work = tmp_path / "repo"
    work.mkdir()
    proc = subprocess.Popen([wasp_bin, "serve", "--dev", "--workers", "1", "--port", str(port),
                             "--metrics-port", str(metrics)],
                            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = ""
        while not line.startswith("curl "):
            line = proc.stdout.readline()
            assert line, "wasp serve --dev printed no curl line"
        argv = shlex.split(line)
        paths = [argv[argv.index("--cacert") + 1], argv[argv.index("--data-binary") + 1].removeprefix("@")]
        assert all(Path(p).is_absolute() and Path(p).is_file() for p in paths)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        for _ in range(100):  # until the workers listen
            answer = subprocess.run([*argv, "-s", "--fail"], cwd=elsewhere, capture_output=True, text=True,
                                    check=False)  # fmt: skip
            if answer.returncode == 0:
                break
            time.sleep(0.2)
        assert answer.returncode == 0, answer.stderr
        assert '"allowed":false' in answer.stdout.replace(" ", "")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
