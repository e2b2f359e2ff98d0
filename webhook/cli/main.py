"""Entry point of the ``wasp`` console script.

Subcommands live in their own modules and are attached here; the HTTP stack is imported
only by ``serve`` so that ``validate``/``compile`` never pay for (or depend on) Flask.
"""

from __future__ import annotations

import importlib
import os
import sys
import typing as t

import click

from webhook.cli.extras import missing_extras, placeholder

# name -> "module:attribute" of a click command, imported on first use.
_COMMANDS: t.Final = {
    "audit": "webhook.audit.command:audit",
    "certs": "webhook.cli.certs:certs",
    "compile": "webhook.cli.compile:compile_command",
    "doctor": "webhook.doctor.command:doctor",
    "explain": "webhook.explain.command:explain_command",
    "policy": "webhook.cli.policy:policy",
    "reconcile": "webhook.cli.reconcile:reconcile",
    "schema": "webhook.cli.schema:schema",
    "serve": "webhook.cli.serve:serve",
    "validate": "webhook.cli.validate:validate",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        if missing := missing_extras(cmd_name):
            return placeholder(cmd_name, missing)
        module_name, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="wasp", prog_name="wasp")
def cli() -> None:
    """wasp: Workload-Aware Scheduling Policy for Kubernetes 1.37."""


class QuickExit(SystemExit):
    """Raised by a command whose work is done and whose files are closed: the console script
    then ends the process at once instead of tearing the interpreter down (freeing every
    module and object: 20 ms of a 100 ms ``wasp validate``). In process it is a SystemExit."""


def main() -> None:
    from webhook.manifests.loader import RECURSION_LIMIT

    # Documents may nest MAX_DEPTH levels (libyaml's bound); walking one needs more frames
    # than Python's default 1,000 (pure-Python frames, not the C stack, on 3.11+).
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    try:
        cli(auto_envvar_prefix="WASP")
    except QuickExit as done:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: the output is lost either way
                pass
        os._exit(done.code if isinstance(done.code, int) else 1)
