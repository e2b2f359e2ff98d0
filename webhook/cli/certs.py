"""``wasp certs``: create and check the webhook's TLS certificates (docs/design.md §9.9 C1, C2).

Results go to stdout and diagnostics to stderr. Exit codes: 0 fine, 1 problems found
(``check``), 2 usage errors such as an unreadable file or an unusable CA.
"""

from __future__ import annotations

import functools
import ipaddress
import typing as t
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from webhook import certs as c
from webhook.vocab.formats import dns_label

# Show the environment variable click derives from ``auto_envvar_prefix="WASP"`` in --help,
# e.g. WASP_CERTS_CHECK_CERT_FILE; multi-value options take a whitespace-separated list.
_option = functools.partial(click.option, show_envvar=True)
_in_file = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)


class BadInput(click.ClickException):
    """Input that cannot be used at all (unreadable file, unusable CA): a usage error."""

    exit_code = 2


def _ips(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise click.BadParameter(f"{value!r} is not an IPv4 or IPv6 address") from None
    return values


def _label(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if errs := dns_label(value):
        raise click.BadParameter("; ".join(errs))
    return value


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None


def _show(title: str, ca: Path, cert: Path, key: Path) -> None:
    click.echo(title)
    click.echo(f"  CA certificate: {ca}")
    click.echo(f"  certificate:    {cert}")
    click.echo(f"  private key:    {key}")


@click.group()
def certs() -> None:
    """Create and check TLS certificates for the webhook server.

    Every option can also be set through an environment variable named
    WASP_CERTS_<COMMAND>_<OPTION>, e.g. WASP_CERTS_CHECK_CERT_FILE.
    """


@certs.command()
@_option("--state-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("certs/dev"),
         show_default=True, help="Directory that keeps the certificates between runs.")  # fmt: skip
@_option("--host", multiple=True, default=("localhost",), show_default=True,
         help="DNS name the certificate must cover (repeatable).")  # fmt: skip
@_option("--ip", multiple=True, default=("127.0.0.1", "::1"), show_default=True, callback=_ips,
         help="IP address the certificate must cover (repeatable).")  # fmt: skip
def dev(state_dir: Path, host: tuple[str, ...], ip: tuple[str, ...]) -> None:
    """Create (or reuse) a CA and serving certificate for local development.

    Valid files are left alone; a serving certificate that is stale or misses a --host/--ip
    is re-issued under the same CA, so clients that trust ca.crt keep working.
    """
    try:
        made = c.ensure_dev_certs(state_dir, now=datetime.now(UTC), hostnames=host, ip_addresses=ip)
    except OSError as exc:
        raise BadInput(f"cannot write certificates to {state_dir}: {exc.strerror or exc}") from None
    for reason in made.reasons:
        click.echo(f"note: {reason}", err=True)
    verb = "created" if made.created else "reused"
    _show(f"{verb} development certificates in {state_dir}", made.ca_file, made.cert_file, made.key_file)


@certs.command()
@_option("--out-dir", required=True, type=click.Path(file_okay=False, path_type=Path),
         help="Where to write ca.crt, tls.crt and tls.key.")  # fmt: skip
@_option("--service", required=True, callback=_label, help="Name of the webhook's Service.")
@_option("--namespace", required=True, callback=_label, help="Namespace of the webhook's Service.")
@_option("--cluster-domain", default="cluster.local", show_default=True, help="The cluster's DNS domain.")
@_option("--ca-cert", type=_in_file, help="Sign with this CA (with --ca-key) instead of a new one.")
@_option("--ca-key", type=_in_file, help="Private key of --ca-cert.")
@_option("--days", type=click.IntRange(min=1), default=365, show_default=True,
         help="Validity of the serving certificate (capped at the CA's).")  # fmt: skip
def generate(
    out_dir: Path,
    service: str,
    namespace: str,
    cluster_domain: str,
    ca_cert: Path | None,
    ca_key: Path | None,
    days: int,
) -> None:
    """Create a serving certificate for an in-cluster Service (when not using cert-manager).

    Without --ca-cert/--ca-key a new CA is created and its key is not kept: the next renewal
    creates a new CA too, so ca.crt must be re-injected as the webhook's caBundle.
    """
    if (ca_cert is None) != (ca_key is None):
        raise click.UsageError("--ca-cert and --ca-key go together: pass both or neither")
    now = datetime.now(UTC)
    if ca_cert is not None and ca_key is not None:
        ca = c.KeyPair(_read(ca_cert), _read(ca_key))
    else:
        ca = c.generate_ca(common_name=f"{service}.{namespace} webhook CA"[:64], now=now)
        click.echo("generated a new CA; its key is not kept (pass --ca-cert/--ca-key to reuse one)", err=True)
    names = c.service_dns_names(service, namespace, cluster_domain=cluster_domain)
    try:
        served = c.generate_serving_cert(ca, dns_names=names, now=now, valid_for=timedelta(days=days))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    expiry = c.not_after(served.cert_pem)
    if expiry < now + timedelta(days=days, seconds=-1):  # certificates store whole seconds
        click.echo(f"warning: validity capped at the CA's expiry, {expiry:%Y-%m-%d}", err=True)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = c.write_bundle(out_dir, c.CertBundle(ca.cert_pem, served.cert_pem, served.key_pem))
    except OSError as exc:
        raise BadInput(f"cannot write certificates to {out_dir}: {exc.strerror or exc}") from None
    _show(f"certificate for {', '.join(names)} valid until {expiry:%Y-%m-%d}", *paths)


@certs.command()
@_option("--cert-file", required=True, type=_in_file, help="PEM certificate (chain) the server presents.")
@_option("--key-file", required=True, type=_in_file, help="PEM private key of the certificate.")
@_option("--ca-file", type=_in_file, help="PEM CA bundle clients trust; checks the signature.")
@_option("--host", multiple=True, help="Name or IP clients connect to (repeatable).")
@_option("--lookahead-days", type=click.IntRange(min=0), default=0, show_default=True,
         help="Also fail if the certificate expires within this many days.")  # fmt: skip
@click.pass_context
def check(
    ctx: click.Context,
    cert_file: Path,
    key_file: Path,
    ca_file: Path | None,
    host: tuple[str, ...],
    lookahead_days: int,
) -> t.NoReturn:
    """Report every reason a certificate/key pair cannot serve; exit 1 if there is one."""
    cert_pem = _read(cert_file)
    found = c.problems(
        cert_pem,
        _read(key_file),
        now=datetime.now(UTC),
        ca_pem=None if ca_file is None else _read(ca_file),
        lookahead=timedelta(days=lookahead_days),
        hostnames=host,
        labels=(f"certificate {cert_file}", f"key {key_file}", f"CA {ca_file}"),
    )
    for problem in found:
        click.echo(problem)
    if not found:
        click.echo(f"ok: {cert_file} is valid until {c.not_after(cert_pem):%Y-%m-%d %H:%M} UTC")
    ctx.exit(1 if found else 0)


# The chart's renewal CronJob (webhook/cli/certs_rotate.py; the Kubernetes client is imported
# only when it runs).
from webhook.cli.certs_rotate import rotate  # noqa: E402

certs.add_command(rotate)
