"""The least any ``wasp validate`` must do, as a program that ``bench_cli.py`` times beside it.

Not a tool: it reads the files given with the parser ``wasp validate`` must use (libyaml through
PyYAML, the YAML 1.1 reader with line marks, and wasp's constructor), judges every document with
the webhook's own ``validate_object`` and the built-in policies, on every CPU (one forked process
per CPU after the imports, files dealt out evenly), and exits 1 if any object was invalid.
Nothing else: no command-line framework, no records, no line lookup, no output, no pairing with
``--old``. Its rate bounds what any design of ``wasp validate`` on this parser reaches.

    python benchmarks/cli_floor.py FILE...
"""

from __future__ import annotations

import gc
import os
import sys

from webhook.governed.result import Status
from webhook.governed.validation import validate_object
from webhook.manifests.constructor import YamlLoader
from webhook.policy import PolicySet


def judge(files: list[str], policies: PolicySet) -> int:
    invalid = 0
    for path in files:
        with open(path, encoding="utf-8") as stream:
            loader = YamlLoader(stream.read())
        try:
            while loader.check_node():
                obj = loader.construct(loader.get_node())
                if validate_object(obj, None, policies=policies).status is Status.INVALID:
                    invalid += 1
        finally:
            loader.dispose()
    return invalid


def main() -> None:
    files = sys.argv[1:]
    policies = PolicySet.load()
    gc.disable()  # as wasp validate runs: the documents hold no cycles
    cpus = len(os.sched_getaffinity(0))
    children = []
    for worker in range(1, cpus):
        pid = os.fork()
        if pid == 0:
            os._exit(1 if judge(files[worker::cpus], policies) else 0)
        children.append(pid)
    invalid = judge(files[0::cpus], policies)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        invalid += os.waitstatus_to_exitcode(status)
    sys.stdout.flush()
    os._exit(1 if invalid else 0)


if __name__ == "__main__":
    main()
