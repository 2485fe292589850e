"""The real `karpy controller` process keeps its lease and its watches across several
expiries of exec-plugin tokens, against the emulator process with token checking on.

The plugin registers each token it hands out with the emulator (``POST
/_emulator/tokens``) for four seconds and says so in ``expirationTimestamp``: this is
the one test that waits on real time, because the process under test reads the system
clock; about fifteen seconds cover three expiries.
"""

from __future__ import annotations

import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from tests.e2e.processes import ControllerProcess, apiserver_process
from tests.kube.plugins import write_kubeconfig

LIFETIME = 4  # seconds a token is valid

SCRIPT = """\
import datetime, json, os, secrets, sys, urllib.request
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
token = secrets.token_urlsafe(16)
request = urllib.request.Request(
    os.environ["EMULATOR"] + "/_emulator/tokens", method="POST",
    data=json.dumps({"token": token, "lifetime": %(lifetime)d}).encode(),
    headers={"Content-Type": "application/json"})
urllib.request.urlopen(request).read()
expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=%(lifetime)d)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs"), "a") as runs:
    runs.write("run\\n")
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                  "status": {"token": token, "expirationTimestamp": expires.isoformat()}}))
"""


def control(url: str, method: str, path: str, body: object) -> None:
    request = urllib.request.Request(url + path, method=method, data=orjson.dumps(body),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()


def refused(url: str) -> int:
    with urllib.request.urlopen(url + "/_emulator/tokens", timeout=10) as answer:
        return int(orjson.loads(answer.read())["refused"])


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_the_controller_keeps_its_lease_across_token_expiries(tmp_path: Path):
    script = tmp_path / "get-token.py"
    script.write_text(SCRIPT % {"lifetime": LIFETIME})
    runs = tmp_path / "runs"
    with apiserver_process(tmp_path / "emulator") as emulator:
        control(emulator.url, "PUT", "/_emulator/token-check", {"enabled": True})
        entry = {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": sys.executable,
            "args": [str(script)],
            "env": [{"name": "EMULATOR", "value": emulator.url}],
        }
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", emulator.url, {"exec": entry})
        controller = ControllerProcess(kubeconfig, "--leader-election-lease-duration=3",
                                       "--leader-election-renew-deadline=2",
                                       "--leader-election-retry-period=0.5")  # fmt: skip
        try:
            controller.wait_for_message("started leading", timeout=30)
            deadline = time.monotonic() + 3 * LIFETIME + 2
            while time.monotonic() < deadline:
                assert controller.process.poll() is None, controller.messages()
                time.sleep(0.5)
            assert "stopped leading" not in controller.messages()
            assert refused(emulator.url) == 0  # renewed before expiry, not after a 401
        finally:
            controller.process.terminate()
            controller.finish()
    assert runs.read_text().count("run") >= 4  # at start-up and once per expiry
    warnings = [line for line in controller.lines if line.get("level") in ("WARN", "ERROR")]
    assert warnings == []
