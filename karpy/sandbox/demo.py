"""The sandbox demo behind ``make run``: an emulated cluster with karpy's controller on it.

`Demo` starts the API server emulator with karpy's CRDs, applies the example NodePool and
EC2NodeClass from ``deploy/examples/``, creates a few pods that the kube-scheduler has
marked unschedulable (what karpy acts on), and runs ``karpy controller`` against it as a
child process, exactly as it runs in a cluster: its JSON logs go to this terminal, it
takes the leader lease, syncs its informers and reports ready on its health port.

Stopping (SIGINT or SIGTERM) sends SIGTERM to the controller, waits for its graceful
shutdown, then stops the emulator. If the controller exits on its own the demo stops with
its exit status, so a broken controller is never hidden behind a running emulator.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import yaml

from karpy.errors import UsageError

if TYPE_CHECKING:
    from karpy.sandbox.apiserver import APIServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
CLUSTER_NAME = "karpy-sandbox"
CONTROLLER_STOP_SECONDS = 15.0


@attrs.frozen(slots=True)
class Ports:
    metrics: int
    health: int


def free_ports() -> Ports:
    """Two loopback ports nothing listens on right now (for metrics and health)."""
    found = []
    with contextlib.ExitStack() as stack:
        for _ in range(2):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind(("127.0.0.1", 0))
            found.append(int(sock.getsockname()[1]))
    return Ports(metrics=found[0], health=found[1])


def example_objects(directory: Path = EXAMPLES) -> list[dict[str, Any]]:
    """Every object in the YAML files of ``directory``, in file order."""
    if not directory.is_dir():
        raise UsageError(f"--examples {directory}: no such directory")
    objects: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def pending_pod(name: str, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    """A pod as the kube-scheduler leaves one it could not place."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "inflate"}},
        "spec": {
            "containers": [
                {
                    "name": "inflate",
                    "image": "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ]
        },
        "status": unschedulable_status(),
    }


def unschedulable_status() -> dict[str, Any]:
    """The status the kube-scheduler writes on a pod it found no node for."""
    return {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/0 nodes are available",
            }
        ],
    }


def seed(server: APIServer, objects: list[dict[str, Any]], pods: int) -> None:
    """Apply ``objects`` and create ``pods`` pending pods, through the API's own checks."""
    for obj in objects:
        ref = f"{obj.get('apiVersion', '')}/{obj.get('kind', '')}"
        try:
            server.store.create(ref, obj)
        except KeyError as exc:
            raise UsageError(f"example {obj.get('kind')}: {exc.args[0]}") from None
    for i in range(pods):
        created = server.store.create("pods", pending_pod(f"inflate-{i}"))
        # Status is a subresource: the scheduler's verdict is written there.
        created["status"] = unschedulable_status()
        server.store.update_status("pods", created)


def controller_env(kubeconfig: Path, ports: Ports) -> dict[str, str]:
    """The environment of the demo's ``karpy controller``: the sandbox, free ports."""
    env = dict(os.environ)
    env.update(
        {
            "KUBECONFIG": str(kubeconfig),
            "CLUSTER_NAME": CLUSTER_NAME,
            "LEADER_ELECTION_NAMESPACE": "kube-system",
            "METRICS_PORT": str(ports.metrics),
            "HEALTH_PROBE_PORT": str(ports.health),
            "POD_NAME": "karpy-sandbox",
        }
    )
    return env


async def run_controller(
    kubeconfig: Path, ports: Ports, stop: asyncio.Event, *, log_format: str = "json"
) -> int:
    """Run ``karpy controller`` until it exits or ``stop`` is set; its exit status."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "karpy",
        "controller",
        "--log-format",
        log_format,
        env=controller_env(kubeconfig, ports),
    )
    stopped = asyncio.ensure_future(stop.wait())
    exited = asyncio.ensure_future(proc.wait())
    await asyncio.wait({stopped, exited}, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(exited), CONTROLLER_STOP_SECONDS)
        except TimeoutError:
            proc.kill()
            await exited
    return int(exited.result())
