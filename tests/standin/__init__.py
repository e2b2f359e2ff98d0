"""A STAND-IN Kubernetes API server for tests and benchmarks (not kube-apiserver).

:class:`StandIn` runs ``python -m tests.standin`` as a child process bound to 127.0.0.1,
and offers the controls (faults, compaction, dropped watches, request counts) and a
kubeconfig that points clients at it. Any command that talks to Kubernetes through a
kubeconfig can use it (``wasp reconcile``, the official client, kubectl's plain REST).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import typing as t
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Json = dict[str, t.Any]


class StandIn:
    def __init__(self, *extra_args: str, timeout: float = 10.0) -> None:
        self.args = extra_args
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> StandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> StandIn:
        cmd = [sys.executable, "-m", "tests.standin", *self.args]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # blocks until the port line, or EOF if it died
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"stand-in did not start: {line!r}")
        self.url = line.split()[-1]
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def request(
        self, method: str, path: str, body: object = None, content_type: str = "application/json"
    ) -> t.Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read() or b"null")

    def fault(
        self,
        code: int = 500,
        *,
        verb: str | None = None,
        plural: str | None = None,
        count: int = 1,
        retry_after: int | None = None,
    ) -> None:
        rule: Json = {"code": code, "count": count}
        if retry_after is not None:
            rule["retryAfter"] = retry_after
        if verb:
            rule["verb"] = verb
        if plural:
            rule["plural"] = plural
        self.request("POST", "/standin/faults", rule)

    def clear_faults(self) -> None:
        self.request("DELETE", "/standin/faults")

    def compact(self) -> None:
        self.request("POST", "/standin/compact", {})

    def drop_watches(self) -> None:
        self.request("POST", "/standin/drop-watches", {})

    def stats(self) -> dict[str, int]:
        return t.cast(dict[str, int], self.request("GET", "/standin/stats")["requests"])

    def objects(self, resource: str, namespace: str | None = None) -> list[Json]:
        query = f"?resource={resource}" + (f"&namespace={namespace}" if namespace else "")
        return t.cast(list[Json], self.request("GET", "/standin/objects" + query))

    def create(self, path: str, body: Json) -> Json:
        return t.cast(Json, self.request("POST", path, body))

    def kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
            "users": [{"name": "standin", "user": {}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "standin"}}],
        }  # fmt: skip
        path.write_text(json.dumps(config))
        return path

    def wait_for(
        self,
        predicate: t.Callable[[], bool],
        timeout: float = 20.0,
        what: str = "condition",
        step: float = 0.05,
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(step)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")
