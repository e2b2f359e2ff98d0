"""The rendered chart, played through the apiserver's dispatch against a real `wasp serve`.

`wasp serve` runs with the Deployment's rendered args (paths and ports mapped to the test's),
the serving pair of the chart's own Secret and the policies of its ConfigMap; the
Dispatcher (dispatcher.py) applies the rendered webhook configurations as the apiserver
does, trusting only the rendered caBundle for `wasp.wasp-system.svc`.
"""

from __future__ import annotations

import base64
import socket
import subprocess
import sys
import time
import typing as t
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from ports import free_ports

from tests.chart import tools
from tests.chart.conftest import Rendering
from tests.chart.dispatcher import Dispatcher
from tests.http.apiserver import kubectl_error_line

Json = dict[str, t.Any]
pytestmark = pytest.mark.slow


@dataclass
class Wasp:
    """`wasp serve` as the chart's Deployment runs it."""

    rendering: Rendering
    tmp: Path
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0

    def args(self) -> list[str]:
        container = self.rendering.deployment()["spec"]["template"]["spec"]["containers"][0]
        certs, policies = self.tmp / "certs", self.tmp / "policies"
        for directory in (certs, policies):
            directory.mkdir(exist_ok=True)
        secret = self.rendering.find("Secret", "-tls")["data"]
        for key in ("tls.crt", "tls.key"):
            (certs / key).write_bytes(base64.b64decode(secret[key]))
        for name, text in self.rendering.find("ConfigMap", "-policies")["data"].items():
            (policies / name).write_text(text)
        self.port, metrics = free_ports(2)
        mapped = {"--port": str(self.port), "--metrics-port": str(metrics), "--cert-file": str(certs / "tls.crt"),
                  "--key-file": str(certs / "tls.key"), "--policies": str(policies)}  # fmt: skip
        args = []
        for arg in container["args"]:
            flag, eq, value = arg.partition("=")
            args.append(f"{flag}={mapped[flag]}" if eq and flag in mapped else arg)
        self.metrics = metrics
        return [*args, "--bind-address=127.0.0.1"]

    def start(self) -> None:
        argv = self.args()
        self.stderr = self.tmp / "serve.stderr"
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from webhook.cli.main import main; main()", *argv],
                cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=err, env={"PYTHONPATH": str(tools.REPO),
                                                                          "PATH": "/usr/bin:/bin"},
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.stderr.read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics}/readyz", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError(f"wasp serve not ready: {self.stderr.read_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            assert self.proc.wait(20) == 0


@pytest.fixture(scope="module")
def chart(renderings: dict[str, Rendering]) -> Rendering:
    # The built-in policies plus the examples: Jobs, CronJobs and Trainer-owned pods are governed.
    return renderings["user policies beside the built-in ones"]


@pytest.fixture(scope="module")
def wasp(chart: Rendering, tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[Wasp]:
    # Module-scoped: one gunicorn start (about a second) for every running-server case.
    server = Wasp(chart, tmp_path_factory.mktemp("wasp"))
    server.start()
    yield server
    server.stop()


def job(
    *, min_count: int | None = 4, parallelism: int = 8, namespace: str = "default", name: str = "train"
) -> Json:
    spec: Json = {"parallelism": parallelism, "completions": parallelism, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}  # fmt: skip
    if min_count is not None:
        spec["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def cronjob() -> Json:
    template = job()
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "default"},
            "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": template["spec"]}}}  # fmt: skip


def pod(owner: tuple[str, str] | None = None, *, namespace: str = "default") -> Json:
    meta: Json = {"name": "p-0", "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": "t", "uid": "u-1",
                                    "controller": True}]  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def gpu_job() -> Json:
    """A Job without scheduling blocks that the user policy's GPU default applies to."""
    made = job(min_count=None)
    made["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    return made


def deployment_of_wasp(chart: Rendering) -> Json:
    return chart.deployment()


def test_a_denied_job_gives_the_kubectl_line(wasp: Wasp, chart: Rendering) -> None:
    outcome = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", wasp.port)).admit(job(min_count=10))
    assert outcome.error is not None
    assert kubectl_error_line(outcome.error, file="job.yaml") == (
        'Error from server (Forbidden): error when creating "job.yaml": admission webhook '
        '"batch-job.validate.wasp.dev" denied the request: spec.scheduling.schedulingPolicy.gang.minCount: '
        "Invalid value: 10: must be less than or equal to spec.parallelism (8)"
    )


RUNNING: t.Final = [
    ("a valid Job with a gang is sent to both of its entries and admitted", lambda c: job(),
     ["batch-job.mutate.wasp.dev", "batch-job.validate.wasp.dev"]),
    ("a Job without scheduling blocks reaches only the mutating entry (its kind has defaults) and is admitted",
     lambda c: job(min_count=None), ["batch-job.mutate.wasp.dev"]),
    ("a GPU Job without blocks reaches the mutating entry, whose default gives it blocks to validate",
     lambda c: gpu_job(), ["batch-job.mutate.wasp.dev", "batch-job.validate.wasp.dev"]),
    ("a Pod without a controller never reaches wasp", lambda c: pod(), []),
    ("a Pod of a Job never reaches wasp (Jobs stamp their own pods)", lambda c: pod(("batch/v1", "Job")), []),
    ("a Pod of a Trainer is stamped", lambda c: pod(("ml.example.com/v1", "Trainer")),
     ["ml-example-trainer.pods.mutate.wasp.dev"]),
    ("wasp's own Deployment never reaches wasp", deployment_of_wasp, []),
    ("a gang Job in the release namespace never reaches wasp", lambda c: job(namespace="wasp-system"), []),
    ("a gang Job in kube-system never reaches wasp", lambda c: job(namespace="kube-system"), []),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "make", "called"), RUNNING, ids=[r[0] for r in RUNNING])
def test_with_wasp_running(
    wasp: Wasp, chart: Rendering, sentence: str, make: t.Callable[[Rendering], Json], called: list[str]
) -> None:
    outcome = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", wasp.port)).admit(make(chart))
    assert (outcome.admitted, outcome.called) == (True, called)


def test_the_gpu_default_is_applied_through_the_rendered_entry(wasp: Wasp, chart: Rendering) -> None:
    outcome = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", wasp.port)).admit(gpu_job())
    assert outcome.admitted and set(outcome.object["spec"]["scheduling"]) >= {"schedulingConstraints"}


def test_a_pod_of_a_trainer_gets_its_pod_group_name(wasp: Wasp, chart: Rendering) -> None:
    outcome = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", wasp.port)).admit(
        pod(("ml.example.com/v1", "Trainer"))
    )
    assert set(outcome.object["spec"].get("schedulingGroup", {})) == {"podGroupName"}


STOPPED: t.Final = [
    # Its kind has defaults (the user's batch-job policy), which may apply to a Job without
    # blocks: every Job is sent to the mutating entry, whose `when` only wasp evaluates.
    ("a Job without scheduling blocks gets the call failure: its kind has defaults",
     lambda c: job(min_count=None), "batch-job.mutate.wasp.dev"),
    ("a Pod is admitted", lambda c: pod(), None),
    ("a Pod of a Job is admitted", lambda c: pod(("batch/v1", "Job")), None),
    ("wasp's own Deployment in the release namespace is admitted", deployment_of_wasp, None),
    ("a gang Job in the release namespace is admitted (another chart's hook Job)",
     lambda c: job(namespace="wasp-system"), None),
    ("a gang Job gets the apiserver's call failure", lambda c: job(), "batch-job.mutate.wasp.dev"),
    ("a CronJob with a gang template gets the call failure", lambda c: cronjob(), "batch-cronjob.validate.wasp.dev"),
    ("a Pod of a Trainer gets the call failure", lambda c: pod(("ml.example.com/v1", "Trainer")),
     "ml-example-trainer.pods.mutate.wasp.dev"),
]  # fmt: skip


@pytest.mark.parametrize(("sentence", "make", "failing"), STOPPED, ids=[s[0] for s in STOPPED])
def test_with_wasp_stopped(
    chart: Rendering, sentence: str, make: t.Callable[[Rendering], Json], failing: str | None
) -> None:
    port = free_ports(1)[0]  # nothing listens there: every call is refused
    outcome = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", port)).admit(make(chart))
    if failing is None:
        assert (outcome.admitted, outcome.called) == (True, [])
    else:
        assert outcome.error is not None
        assert (outcome.error.code, outcome.error.reason) == (500, "InternalError")
        path = "/mutate" if ".mutate." in failing else "/validate"
        timeout = 2 if ".mutate." in failing else 3
        assert outcome.error.message.startswith(
            f'Internal error occurred: failed calling webhook "{failing}": failed to call webhook: '
            f'Post "https://wasp.wasp-system.svc:443{path}?timeout={timeout}s": '
        )


def test_a_namespace_that_opted_out_is_not_sent_to_wasp(chart: Rendering) -> None:
    dispatcher = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", free_ports(1)[0]))
    dispatcher.namespace_labels["batch-legacy"] = {"wasp.dev/admission": "disabled"}
    outcome = dispatcher.admit(job(namespace="batch-legacy"))
    assert (outcome.admitted, outcome.called) == (True, [])


def test_a_webhook_that_hangs_is_given_up_after_timeout_seconds(chart: Rendering) -> None:
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(8)  # the kernel completes TCP handshakes; nothing ever answers TLS
    try:
        dispatcher = Dispatcher.from_rendering(chart.objects, ("127.0.0.1", hanging.getsockname()[1]))
        started = time.monotonic()
        outcome = dispatcher.admit(pod())
        assert outcome.admitted  # never called: nothing to wait for
        outcome = dispatcher.admit(job())
        elapsed = time.monotonic() - started
    finally:
        hanging.close()
    assert outcome.error is not None and outcome.error.code == 500
    assert 2 <= elapsed < 2 + 1.5  # the mutating entry's timeoutSeconds (2), then failurePolicy Fail


def test_with_failure_policy_ignore_a_gang_job_is_admitted_while_wasp_is_down(tmp_path: Path) -> None:
    objects = tools.render({"webhooks": {"failurePolicy": "Ignore"}}, tmp=tmp_path)
    outcome = Dispatcher.from_rendering(objects, ("127.0.0.1", free_ports(1)[0])).admit(job())
    assert (outcome.admitted, outcome.ignored_failures) == (True, ["batch-job.validate.wasp.dev"])


DEFAULT_STOPPED: t.Final = [
    ("a Job without scheduling blocks is admitted", lambda c: job(min_count=None), None),
    ("a Pod is admitted", lambda c: pod(("batch/v1", "Job")), None),
    ("wasp's own Deployment is admitted", deployment_of_wasp, None),
    ("a gang Job gets the call failure", lambda c: job(), "batch-job.validate.wasp.dev"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("sentence", "make", "failing"), DEFAULT_STOPPED, ids=[s[0] for s in DEFAULT_STOPPED]
)
def test_default_values_with_wasp_stopped(
    default: Rendering, sentence: str, make: t.Callable[[Rendering], Json], failing: str | None
) -> None:
    outcome = Dispatcher.from_rendering(default.objects, ("127.0.0.1", free_ports(1)[0])).admit(make(default))
    assert (outcome.admitted, outcome.error and outcome.error.reason) == (
        (True, None) if failing is None else (False, "InternalError")
    )
    assert outcome.called == ([] if failing is None else [failing])


def test_the_post_install_probe_passes_once_wasp_serves(wasp: Wasp, chart: Rendering) -> None:
    container = chart.find("Job", "-probe")["spec"]["template"]["spec"]["containers"][0]
    script, url, ca_file, seconds = container["args"]
    assert container["command"] == ["python", "-c"] and url == "https://wasp.wasp-system.svc:443/validate"
    bundle = base64.b64decode(chart.find("Secret", "-tls")["data"]["ca-bundle.crt"])
    (wasp.tmp / "probe-ca.crt").write_bytes(bundle)
    # The Service's DNS name resolves to the test's wasp serve; TLS is still checked for that name.
    resolve = (
        "import socket\n_connect = socket.create_connection\n"
        f"socket.create_connection = lambda address, *a, **k: _connect(('127.0.0.1', {wasp.port}), *a, **k)\n"
    )
    result = subprocess.run([sys.executable, "-c", resolve + script, url, str(wasp.tmp / "probe-ca.crt"), "5"],
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_the_post_install_probe_fails_while_wasp_does_not_serve(chart: Rendering, tmp_path: Path) -> None:
    script, url, _, _ = chart.find("Job", "-probe")["spec"]["template"]["spec"]["containers"][0]["args"]
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(chart.find("Secret", "-tls")["data"]["ca-bundle.crt"]))
    resolve = (
        "import socket\n_connect = socket.create_connection\n"
        f"socket.create_connection = lambda address, *a, **k: _connect(('127.0.0.1', {free_ports(1)[0]}), *a, **k)\n"
    )
    result = subprocess.run([sys.executable, "-c", resolve + script, url, str(tmp_path / "ca.crt"), "1"],
                            capture_output=True, text=True, timeout=30)  # fmt: skip
    assert result.returncode == 1
