"""``wasp serve``: run the admission webhook (gunicorn + Flask over TLS).

The HTTP stack (Flask, gunicorn, prometheus_client) is imported only once the command runs,
after the private metrics directory exists (prometheus_client reads it at import time).
Exit codes: 0 after a graceful stop (SIGTERM), 2 when the configuration cannot serve
(unusable certificate pair, bad policy file, bad flag, no writable temporary directory), with
a message and no traceback, 3 when a graceful stop had to cut reviews still running at the
graceful timeout (each worker logs how many).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import tempfile
import typing as t
from datetime import UTC, datetime
from pathlib import Path

import click
import orjson

from webhook.cli.enforcement_flag import enforcement_option
from webhook.cli.integration_flag import integrations_option
from webhook.cli.schedulers_flag import schedulers_option
from webhook.vocab.errors import ConfigError
from webhook.vocab.gates import FeatureGates

if t.TYPE_CHECKING:
    from webhook.policy import PolicySet
    from webhook.policy.model import Enforcement
    from webhook.server.settings import Settings

# Every option is also an environment variable via ``auto_envvar_prefix="WASP"``
# (WASP_SERVE_CERT_FILE, ...); show_envvar prints the name in --help. --policies takes a
# whitespace-separated list from its variable.
_option = functools.partial(click.option, show_envvar=True)
_file = click.Path(dir_okay=False, path_type=Path)

EXAMPLE_REVIEW: t.Final = "example-review.json"
EXIT_REVIEWS_CUT: t.Final = 3


class CannotServe(click.ClickException):
    exit_code = 2


def _names(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in (value or "").split(",") if name.strip())


def _gates(ctx: click.Context, param: click.Parameter, value: str) -> FeatureGates:
    try:
        return FeatureGates.parse(value or "")
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def example_review() -> dict[str, t.Any]:
    """A Job CREATE review that wasp denies (gang minCount 10 > parallelism 8): the dev demo."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "parallelism": 8,
            "completions": 8,
            "completionMode": "Indexed",
            "scheduling": {"schedulingPolicy": {"gang": {"minCount": 10}}},
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer", "image": "busybox"}]}
            },
        },
    }
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "requestKind": {"group": "batch", "version": "v1", "kind": "Job"},
            "requestResource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": "train",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "dev", "groups": ["system:authenticated"]},
            "object": job,
            "oldObject": None,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    }


def _dev_certs(state_dir: Path) -> tuple[Path, Path, Path]:
    from webhook.certs import ensure_dev_certs

    dev = ensure_dev_certs(state_dir, now=datetime.now(UTC))
    verb = "created" if dev.created else "reusing"
    click.echo(f"wasp: {verb} development certificates in {state_dir} (CA: {dev.ca_file})", err=True)
    example = state_dir / EXAMPLE_REVIEW
    example.write_bytes(orjson.dumps(example_review(), option=orjson.OPT_INDENT_2) + b"\n")
    return dev.ca_file, dev.cert_file, dev.key_file


@click.command()
@_option(
    "--dev", is_flag=True, help="Serve on 127.0.0.1 with a local CA and certificate kept in --state-dir."
)
@_option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("certs/dev"),
    show_default=True,
    help="Where --dev keeps ca.crt, tls.crt, tls.key and an example review.",
)
@_option(
    "--cert-file", type=_file, help="Serving certificate (PEM, leaf first), e.g. a mounted Secret's tls.crt."
)
@_option("--key-file", type=_file, help="Its private key (PEM), e.g. tls.key.")
@_option(
    "--client-ca-file",
    type=_file,
    help="Require client certificates signed by this CA (the apiserver's webhook client certificate).",
)
@_option(
    "--policies",
    "policy_dirs",
    type=click.Path(exists=True, path_type=Path),
    multiple=True,
    help="Policy file or directory; repeatable. Loaded after the built-in policies.",
)
@integrations_option(show_envvar=True)
@_option(
    "--builtin-policies/--no-builtin-policies",
    default=True,
    show_default=True,
    help="Load the policies shipped with wasp (batch Job and CronJob).",
)
@_option(
    "--feature-gates",
    "gates",
    default="",
    callback=_gates,
    metavar="GATE=BOOL,...",
    help="Feature gates the cluster runs with, apiserver syntax.",
)
# WASP_ENFORCEMENT is the name issue 19 promises; WASP_SERVE_ENFORCEMENT the one every other
# serve option's variable follows.
@enforcement_option(envvar=["WASP_SERVE_ENFORCEMENT", "WASP_ENFORCEMENT"], show_envvar=True)
@schedulers_option(envvar="WASP_SERVE_WAS_SCHEDULERS", show_envvar=True)
@_option(
    "--bind-address", default=None, help="Address to listen on.  [default: 0.0.0.0; 127.0.0.1 with --dev]"
)
@_option(
    "--port", type=click.IntRange(1, 65535), default=8443, show_default=True, help="HTTPS port for reviews."
)
@_option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=8080,
    show_default=True,
    help="Plain-HTTP port for /metrics, /healthz and /readyz.",
)
@_option(
    "--client-allowed-names",
    default="",
    callback=_names,
    metavar="NAME,...",
    help="With --client-ca-file: also require one of these names (certificate CN or SAN); "
    "empty accepts any certificate the CA signed.",
)
@_option(
    "--tls-min-version",
    type=click.Choice(["VersionTLS12", "VersionTLS13"]),
    default="VersionTLS12",
    show_default=True,
)
@_option(
    "--tls-cipher-suites",
    default="",
    callback=_names,
    metavar="SUITE,...",
    help="TLS 1.2 cipher suites by IANA name, as kube components take them.  "
    "[default: the ECDHE AES-GCM and ChaCha20-Poly1305 suites]",
)
@_option(
    "--handshake-timeout", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
    help="Seconds a client has to complete the TLS handshake.",
)  # fmt: skip
@_option(
    "--header-timeout", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
    help="Seconds a client has to send the request line and headers (from the first byte, or the handshake).",
)  # fmt: skip
@_option(
    "--body-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
    help="Seconds a client has to send the request body, from the end of the headers.",
)  # fmt: skip
@_option(
    "--keepalive", type=click.IntRange(1), default=30, show_default=True,
    help="Seconds an idle kept-alive connection stays open between requests.",
)  # fmt: skip
@_option(
    "--graceful-timeout", type=click.IntRange(1, 300), default=8, show_default=True,
    help="Seconds SIGTERM gives in-flight reviews; keep it below the pod's terminationGracePeriodSeconds.",
)  # fmt: skip
@_option(
    "--max-connection-age", type=click.FloatRange(min=0), default=5.0, show_default=True,
    help="Seconds after which a connection's next answer says Connection: close (less up to a fifth); "
    "0: never. Lets load spread over workers again after a restart.",
)  # fmt: skip
@_option(
    "--max-connection-requests", type=click.IntRange(0), default=0, show_default=True,
    help="Requests after which a connection's answer says Connection: close; 0: no limit.",
)  # fmt: skip
@_option(
    "--max-connections", type=click.IntRange(1), default=1000, show_default=True,
    help="Open connections per worker; past it new ones wait in the listen backlog.",
)  # fmt: skip
@_option(
    "--max-buffered-mib", type=click.IntRange(1), default=64, show_default=True,
    help="MiB of request bodies a worker holds; past it a body is refused with 413 (memory sizing: docs).",
)  # fmt: skip
@_option(
    "--temp-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="A writable directory for the metrics files and worker heartbeats.  [default: TMPDIR or /tmp]",
)  # fmt: skip
@_option("--workers", type=click.IntRange(1), default=2, show_default=True, help="Worker processes.")
@_option(
    "--threads", type=click.IntRange(1), default=512, show_default=True,
    help="Threads per worker: connections it reads and answers at once (a slow client holds one until its deadline).",
)  # fmt: skip
@_option(
    "--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True
)
def serve(
    dev: bool,
    state_dir: Path,
    cert_file: Path | None,
    key_file: Path | None,
    client_ca_file: Path | None,
    policy_dirs: tuple[Path, ...],
    integrations: tuple[Path, ...],
    builtin_policies: bool,
    gates: FeatureGates,
    enforcement: Enforcement | None,
    was_schedulers: frozenset[str] | None,
    bind_address: str | None,
    port: int,
    metrics_port: int,
    workers: int,
    threads: int,
    log_level: str,
    client_allowed_names: tuple[str, ...],
    tls_min_version: str,
    tls_cipher_suites: tuple[str, ...],
    handshake_timeout: float,
    header_timeout: float,
    body_timeout: float,
    keepalive: int,
    graceful_timeout: int,
    max_connection_age: float,
    max_connection_requests: int,
    max_connections: int,
    max_buffered_mib: int,
    temp_dir: Path | None,
) -> None:
    """Serve POST /validate and /mutate over HTTPS, probes and metrics over plain HTTP.

    \b
    Local:      wasp serve --dev
    Production: wasp serve --cert-file /certs/tls.crt --key-file /certs/tls.key --policies /policies

    A certificate pair replaced on disk is picked up within seconds without a restart; a
    replacement that cannot serve is refused and the old pair keeps serving. SIGTERM
    finishes in-flight reviews and exits 0 (3 if reviews were still running at the
    graceful timeout and had to be cut). Exit code 2: the configuration cannot serve.
    """
    from webhook.certs.serving import DEFAULT_CIPHER_SUITES
    from webhook.server.settings import Settings

    ca_file = None
    if dev:
        if cert_file or key_file:
            raise click.UsageError("--dev generates its own certificate; drop --cert-file/--key-file")
        ca_file, cert_file, key_file = _dev_certs(state_dir)
        bind_address = bind_address or "127.0.0.1"
    elif cert_file is None or key_file is None:
        raise click.UsageError(
            "--cert-file and --key-file are required (or use --dev for local certificates)"
        )
    settings = Settings(
        cert_file=cert_file, key_file=key_file, client_ca_file=client_ca_file,
        policy_dirs=(*integrations, *policy_dirs),  # the integrations' files load before --policies
        builtin_policies=builtin_policies, gates=gates, enforcement=enforcement, was_schedulers=was_schedulers,
        bind_address=bind_address or "0.0.0.0", port=port,
        metrics_port=metrics_port, workers=workers, threads=threads, log_level=log_level,
        client_allowed_names=client_allowed_names,
        tls_min_version=tls_min_version, tls_cipher_suites=tls_cipher_suites or DEFAULT_CIPHER_SUITES,
        handshake_timeout=handshake_timeout, header_timeout=header_timeout, body_timeout=body_timeout,
        keepalive=keepalive, graceful_timeout=graceful_timeout, max_connection_age=max_connection_age,
        max_connection_requests=max_connection_requests, max_connections=max_connections,
        max_buffered_mib=max_buffered_mib, temp_dir=temp_dir,
    )  # fmt: skip
    try:
        settings.check()
    except ConfigError as exc:
        raise CannotServe(str(exc)) from None
    # The policies are judged before anything says "serving": a policy wasp refuses must never
    # follow a line that tells the user to send reviews.
    from webhook.policy import PolicySet

    try:
        policies = PolicySet.load(
            settings.policy_dirs, builtin=settings.builtin_policies, gates=settings.gates
        )
    except ConfigError as exc:
        raise CannotServe(str(exc)) from None
    if dev and ca_file is not None:
        example = (state_dir / EXAMPLE_REVIEW).resolve()
        click.echo(
            f"wasp: serving {settings.serving_url}; metrics on http://{settings.probe_host}:{metrics_port}/metrics"
        )
        # Absolute paths: the line works from any directory (scripts/run runs from the repository).
        click.echo(
            f"curl --cacert {shlex.quote(str(ca_file.resolve()))} -H 'Content-Type: application/json' "
            f"--data-binary @{shlex.quote(str(example))} {settings.serving_url}/validate"
        )
    _run(settings, policies)


def _run(settings: Settings, policies: PolicySet) -> None:
    # A private multiprocess directory: samples of an earlier run (or another instance)
    # must never be merged into ours. Set before prometheus_client is first imported.
    metrics_dir = tempfile.mkdtemp(prefix="wasp-metrics-", dir=settings.temp_dir)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    arbiter = os.getpid()
    try:
        from webhook.server.app import create_app
        from webhook.server.serving import WaspServer

        app = create_app(settings, policies=policies)
        # The structural layer builds its reference engine on first use; the workers are
        # forked from here, so build it once now (shared, frozen out of the collector) rather
        # than in every worker on its first denial.
        from webhook.declarative.engines import preload

        preload()
        server = WaspServer(settings, app)
        try:
            server.run()
        except SystemExit as exc:
            if exc.code in (0, None) and os.getpid() == arbiter and server.reviews_cut():
                raise SystemExit(EXIT_REVIEWS_CUT) from None
            raise
    finally:
        # Workers are forks of this process and leave through here too (SystemExit): only the
        # arbiter may remove the directory, or the next worker it spawns cannot start.
        if os.getpid() == arbiter:
            shutil.rmtree(metrics_dir, ignore_errors=True)
