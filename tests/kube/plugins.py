"""A real exec credential plugin for tests, written to a temporary directory.

`ExecPlugin` writes a Python script that answers ``client.authentication.k8s.io/v1``
ExecCredentials: the n-th run hands out the n-th token of the list the test gave it (the
last one again when they run out), with the expiry the test gave it. Each run is counted
in a file, and the test can make the next runs fail (exit status 3 with a message on
stderr), print garbage, or hang. It also writes kubeconfigs that use it.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import yaml

SCRIPT = """\
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
def path(name):
    return os.path.join(here, name)
mode = open(path("mode")).read().strip() if os.path.exists(path("mode")) else "ok"
runs = int(open(path("runs")).read()) if os.path.exists(path("runs")) else 0
open(path("runs"), "w").write(str(runs + 1))
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
open(path("info.json"), "w").write(json.dumps(info))
assert info["kind"] == "ExecCredential" and info["spec"]["interactive"] is False
if mode == "fail":
    sys.stderr.write("error: the SSO session has expired\\nrun: aws sso login\\n")
    sys.exit(3)
if mode == "garbage":
    print("<html>Sign in</html>")
    sys.exit(0)
if mode == "hang":
    time.sleep(60)
tokens = json.load(open(path("tokens.json")))
token = tokens[min(runs, len(tokens) - 1)]
status = {"token": token["token"]}
if token.get("expires"):
    status["expirationTimestamp"] = token["expires"]
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                  "status": status}))
"""


class ExecPlugin:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.script = directory / "get-token.py"
        self.script.write_text(SCRIPT)
        self.tokens([("token-0", None)])

    def tokens(self, tokens: list[tuple[str, datetime | None]]) -> None:
        """The tokens the runs hand out, in order, each with its expiry (None: none)."""
        doc = [{"token": t, "expires": e.isoformat() if e else None} for t, e in tokens]
        (self.directory / "tokens.json").write_bytes(orjson.dumps(doc))

    def mode(self, mode: str) -> None:
        """``ok``, ``fail``, ``garbage`` or ``hang`` from the next run on."""
        (self.directory / "mode").write_text(mode)

    @property
    def runs(self) -> int:
        runs = self.directory / "runs"
        return int(runs.read_text()) if runs.exists() else 0

    @property
    def last_info(self) -> Any:
        """The KUBERNETES_EXEC_INFO of the last run."""
        return orjson.loads((self.directory / "info.json").read_bytes())

    def exec_entry(self, command: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": command or sys.executable,
            "args": [] if command else [str(self.script)],
            "interactiveMode": "Never",
            **extra,
        }

    def kubeconfig(
        self, server: str, path: Path, *, command: str | None = None, **extra: Any
    ) -> Path:
        return write_kubeconfig(path, server, {"exec": self.exec_entry(command, **extra)})


def write_kubeconfig(path: Path, server: str, user: dict[str, Any]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": server}}],
        "users": [{"name": "test", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        "current-context": "test",
    }
    path.write_text(yaml.safe_dump(config))
    return path
