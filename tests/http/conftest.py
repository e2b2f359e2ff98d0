"""Fixtures for the HTTP edge: certificates, in-process apps, and real ``wasp serve`` processes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import typing as t
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from ports import free_ports

from webhook import certs
from webhook.policy import PolicySet
from webhook.server.app import create_app
from webhook.server.settings import Settings

REPO: t.Final = Path(__file__).resolve().parents[2]
# tests/golden.py is shared with tests/test_examples.py; tests/ is on sys.path only when a
# test module directly in it is collected, so make it importable for `pytest tests/http`.
if str(REPO / "tests") not in sys.path:
    sys.path.insert(0, str(REPO / "tests"))

EXAMPLE_POLICIES: t.Final = (
    REPO / "examples" / "trainer" / "policy.yaml",
    REPO / "examples" / "rolebased" / "policy.yaml",
)
BATCH_JOB_POLICY: t.Final = REPO / "policies" / "batch-job.yaml"
STARTUP_TIMEOUT: t.Final = 20.0

Json = dict[str, t.Any]


def job(
    name: str = "train", *, parallelism: int = 8, min_count: int | None = None, namespace: str = "default"
) -> Json:
    """A batch/v1 Job; ``min_count`` ``None`` leaves spec.scheduling out."""
    spec: Json = {
        "parallelism": parallelism,
        "completions": parallelism,
        "completionMode": "Indexed",
        "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": "busybox"}]}
        },
    }
    if min_count is not None:
        spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def pod_of_job(job_name: str = "train", *, index: int = 0) -> Json:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": "job-uid", "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job_name}-{index}", "namespace": "default", "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "trainer", "image": "busybox"}]},
    }


def mutating_job_policy(directory: Path) -> Path:
    """The built-in Job policy plus a gang default and pod stamping, so /mutate has work to do."""
    doc = yaml.safe_load(BATCH_JOB_POLICY.read_text())
    doc["spec"]["defaults"] = [{"name": "gang", "set": {"schedulingPolicy": {"gang": {}}}}]
    doc["spec"]["stamping"] = {"pods": True}
    out = directory / "batch-job-mutating.yaml"
    out.write_text(yaml.safe_dump(doc))
    return out


@pytest.fixture(scope="session")
def dev_certs(tmp_path_factory: pytest.TempPathFactory) -> certs.DevCerts:
    # Session-scoped: RSA key generation is the slowest step, and every test only reads them.
    return certs.ensure_dev_certs(tmp_path_factory.mktemp("dev-certs"), now=datetime.now(UTC))


@pytest.fixture
def settings(dev_certs: certs.DevCerts) -> Settings:
    return Settings(cert_file=dev_certs.cert_file, key_file=dev_certs.key_file)


@pytest.fixture(scope="session")
def policies(tmp_path_factory: pytest.TempPathFactory) -> PolicySet:
    """Built-ins, the example policies (the golden suite's), and the mutating Job policy."""
    directory = tmp_path_factory.mktemp("policies")
    return PolicySet.load([*EXAMPLE_POLICIES, mutating_job_policy(directory)])


@pytest.fixture
def app(settings: Settings, policies: PolicySet) -> Flask:
    return create_app(settings, policies=policies)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


# ----------------------------------------------------------------------------- real servers


def free_port() -> int:
    return free_ports(1)[0]


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    port: int
    metrics_port: int
    state_dir: Path
    stderr_path: Path
    args: list[str] = field(default_factory=list)

    @property
    def ca_file(self) -> Path:
        return self.state_dir / "ca.crt"

    def get(self, path: str, timeout: float = 5.0) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}{path}", timeout=timeout
            ) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"wasp serve exited with {self.proc.returncode}:\n{self.stderr()}")
            try:
                if self.get("/readyz", timeout=1.0)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"wasp serve not ready after {timeout} s:\n{self.stderr()}")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def serve_command(*args: str, launcher: str = "from webhook.cli.main import main; main()") -> list[str]:
    return [sys.executable, "-c", launcher, "serve", *args]


def serve_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


def start_server(
    tmp: Path, *args: str, dev: bool = True, wait: bool = True, launcher: str | None = None
) -> ServerProcess:
    """``wasp serve`` on ephemeral ports; ``--dev`` certificates in ``tmp/state``.

    A port picked free can be taken by another socket before the server binds it: a server
    that exits with "Address already in use" before it is ready is started again on new ports.
    """
    for _ in range(3):
        server = _start_once(tmp, *args, dev=dev, wait=wait, launcher=launcher)
        if not wait:
            return server
        try:
            server.wait_ready()
            return server
        except AssertionError:
            if server.proc.poll() is None or "Address already in use" not in server.stderr():
                raise
    raise AssertionError("wasp serve found no free port in 3 attempts")


def _start_once(tmp: Path, *args: str, dev: bool, wait: bool, launcher: str | None) -> ServerProcess:
    port, metrics_port = free_ports(2)
    state = tmp / "state"
    argv = ["--port", str(port), "--metrics-port", str(metrics_port), "--bind-address", "127.0.0.1", *args]
    if dev:
        argv = ["--dev", "--state-dir", str(state), *argv]
    stderr_path = tmp / f"serve-{port}.stderr"
    with stderr_path.open("wb") as stderr:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            serve_command(*argv, **({"launcher": launcher} if launcher else {})),
            cwd=tmp,
            env=serve_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    return ServerProcess(proc, port, metrics_port, state, stderr_path, argv)


def policy_args(*files: Path) -> list[str]:
    return [arg for p in files for arg in ("--policies", str(p))]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[ServerProcess]:
    """One ``wasp serve --dev`` (2 workers × 4 threads) with the golden suite's policies.

    Module-scoped: starting gunicorn costs about a second, and these tests only read from it.
    """
    proc = start_server(tmp_path_factory.mktemp("server"), *policy_args(*EXAMPLE_POLICIES))
    yield proc
    proc.stop()


@pytest.fixture(scope="module")
def mutating_server(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[ServerProcess]:
    """``wasp serve --dev`` whose Job policy defaults a gang and stamps the Job's pods."""
    tmp = tmp_path_factory.mktemp("mutating-server")
    proc = start_server(tmp, *policy_args(mutating_job_policy(tmp)))
    yield proc
    proc.stop()


# --------------------------------------------------------------------------- the fault suite's server

# Short deadlines so that the suite sees every one of them expire in seconds.
DEADLINES: t.Final = (
    "--handshake-timeout",
    "2",
    "--header-timeout",
    "2",
    "--body-timeout",
    "3",
    "--keepalive",
    "2",
)
# gunicorn's gthread worker waits this long for a new connection's first byte in a thread, then
# without one (in its poller) for --keepalive more: when a silent TCP connection is closed.
FIRST_BYTE_WAIT: t.Final = 5.0
P99_LIMIT: t.Final = 0.25  # seconds; the benchmark's figure is 100 ms on an idle machine


def job_body(uid: str) -> bytes:
    import orjson
    from apiserver import build_review

    return orjson.dumps(build_review(job(min_count=4), uid=uid))


def worker_pids(server: ServerProcess) -> list[int]:
    pid = server.proc.pid
    return sorted(int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())


def connections_per_worker(server: ServerProcess, pids: list[int]) -> list[int]:
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{server.port} )"],
                         capture_output=True, text=True, timeout=10).stdout  # fmt: skip
    return [len(re.findall(rf"pid={pid},", out)) for pid in pids]


@pytest.fixture(scope="module")
def fault_server(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[ServerProcess]:
    server = start_server(tmp_path_factory.mktemp("fault-server"), *DEADLINES)
    yield server
    assert server.stop() == 0
    assert "Traceback" not in server.stderr()
