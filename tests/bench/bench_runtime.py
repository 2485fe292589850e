"""The controller runtime at scale (``make bench``): sync, memory and idle CPU.

The API server emulator runs in its own process (so the controller's figures are its
own), is filled with 2,000 nodes and 40,000 pods (20 per node, each with requests, labels,
an owner and a spread constraint), and then ``karpy controller`` starts in another
process. Measured:

* **sync**: seconds from the controller process starting to its "informers synced" line
  (includes Python start-up and imports), and the LIST+projection time the line reports;
* **RSS**: the controller's resident memory after sync and at the end, and its peak;
* **steady-state CPU**: CPU seconds the controller used over 60 s while 5 pods a second
  are updated (the emulator sends a BOOKMARK every 5 s on every watch, as a real server
  roughly does), as a percentage of one core;
* in-process, on a 40,000-pod ClusterState: the cost of a snapshot and of one update,
  against copying a dict of the same size (what a copy-on-snapshot store would pay).

Targets: sync < 10 s, steady RSS < 400 MiB, steady CPU < 2% of a core. Results go to
``bench/results/runtime.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

PODS = 40_000
NODES = 2_000
STEADY_SECONDS = 60.0
UPDATES_PER_SECOND = 5
TARGETS = {"sync_seconds": 10.0, "steady_rss_mib": 400.0, "steady_cpu_percent": 2.0}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _node(i: int) -> dict[str, Any]:
    from tests import factories as f

    name = f"node-{i:05d}"
    return f.node(
        name,
        labels={"topology.kubernetes.io/zone": f"zone-{i % 3}", "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": "m5.4xlarge", "kubernetes.io/arch": "amd64"},
        allocatable={"cpu": "16", "memory": "64Gi", "pods": "110"},
        provider_id=f"aws:///zone-{i % 3}/i-{i:017x}",
    )  # fmt: skip


def _pod(i: int) -> dict[str, Any]:
    from tests import factories as f

    app = f"app-{i % 200}"
    return f.pod(
        f"{app}-{i:06d}",
        labels={"app": app, "tier": "web" if i % 2 else "worker"},
        requests={"cpu": f"{100 + i % 5 * 100}m", "memory": f"{128 + i % 7 * 64}Mi"},
        owner_references=[f.owner_reference("ReplicaSet", f"{app}-rs")],
        topology_spread_constraints=[f.topology_spread("topology.kubernetes.io/zone",
                                                       match_labels={"app": app})],
        node_name=f"node-{i % NODES:05d}",
    )  # fmt: skip


async def _fill(url: str) -> float:
    started = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=16)
    async with aiohttp.ClientSession(connector=connector) as session:
        queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        for i in range(NODES):
            queue.put_nowait(("/api/v1/nodes", orjson.dumps(_node(i))))
        for i in range(PODS):
            queue.put_nowait(("/api/v1/namespaces/default/pods", orjson.dumps(_pod(i))))

        async def worker() -> None:
            while not queue.empty():
                path, body = queue.get_nowait()
                async with session.post(
                    url + path, data=body, headers={"Content-Type": "application/json"}
                ) as r:
                    if r.status != 201:
                        raise RuntimeError(f"POST {path}: {r.status} {await r.text()}")

        await asyncio.gather(*(worker() for _ in range(16)))
    return time.perf_counter() - started


async def _trickle(url: str, seconds: float) -> int:
    updates = 0
    async with aiohttp.ClientSession() as session:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            i = (updates * 7919) % PODS
            name = _pod(i)["metadata"]["name"]
            patch = orjson.dumps({"metadata": {"labels": {"rev": str(updates)}}})
            async with session.patch(
                f"{url}/api/v1/namespaces/default/pods/{name}", data=patch,
                headers={"Content-Type": "application/merge-patch+json"},
            ) as r:  # fmt: skip
                r.raise_for_status()
            updates += 1
            await asyncio.sleep(1 / UPDATES_PER_SECOND)
    return updates


def _status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def _cpu_seconds(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / CLOCK_TICKS  # utime + stime


def _wait_for_line(process: subprocess.Popen[str], message: str, timeout: float) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"controller exited before {message!r}")
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if record.get("message") == message:
            return dict(record)
    raise RuntimeError(f"no {message!r} within {timeout}s")


def _snapshot_costs() -> dict[str, float]:
    """Snapshot and update cost of a 40,000-pod ClusterState, vs copying a dict."""
    from karpy.state import kinds
    from karpy.state import records as p
    from karpy.state.cluster import ClusterState

    state = ClusterState()
    infos = [p.pod_info(_pod(i)) for i in range(PODS)]
    state.apply(kinds.POD, [(i.key, i) for i in infos], [])
    plain = {i.key: i for i in infos}
    rounds = 1000
    started = time.perf_counter()
    for n in range(rounds):
        info = infos[n]
        state.apply(kinds.POD, [(info.key, info)], [])
        state.snapshot()
    update_and_snapshot = (time.perf_counter() - started) / rounds
    started = time.perf_counter()
    for _ in range(20):
        dict(plain)
    dict_copy = (time.perf_counter() - started) / 20
    return {
        "update_and_snapshot_us": update_and_snapshot * 1e6,
        "dict_copy_of_40k_us": dict_copy * 1e6,
    }


def run() -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="karpy-bench-runtime-"))
    kubeconfig = tmp / "kubeconfig"
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
    api = subprocess.Popen(
        [sys.executable, "-m", "karpy", "sandbox", "apiserver", "--port", "0",
         "--kubeconfig", str(kubeconfig)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    controller: subprocess.Popen[str] | None = None
    try:
        assert api.stdout is not None
        api.stdout.readline()
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        fill_seconds = asyncio.run(_fill(url))
        controller_env = {**env, "CLUSTER_NAME": "bench", "CLOUD_PROVIDER": "fake",
                          "KUBECONFIG": str(kubeconfig),
                          "METRICS_PORT": "18480", "HEALTH_PROBE_PORT": "18481",
                          "LEADER_ELECTION_NAMESPACE": "kube-system"}  # fmt: skip
        started = time.perf_counter()
        controller = subprocess.Popen(
            [sys.executable, "-m", "karpy", "controller"], env=controller_env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        synced = _wait_for_line(controller, "informers synced", timeout=300)
        sync_wall = time.perf_counter() - started
        after_sync = _status(controller.pid)
        time.sleep(2)  # let the post-sync garbage settle before measuring steady state
        cpu_before = _cpu_seconds(controller.pid)
        updates = asyncio.run(_trickle(url, STEADY_SECONDS))
        cpu_used = _cpu_seconds(controller.pid) - cpu_before
        end = _status(controller.pid)
        controller.terminate()
        controller.wait(30)
        return {
            "pods": PODS,
            "nodes": NODES,
            "fill_seconds": round(fill_seconds, 1),
            "sync_seconds": round(sync_wall, 2),
            "list_and_project_seconds": synced["seconds"],
            "objects": synced["objects"],
            "rss_after_sync_mib": round(after_sync["VmRSS"] / 2**20, 1),
            "steady_rss_mib": round(end["VmRSS"] / 2**20, 1),
            "peak_rss_mib": round(end["VmHWM"] / 2**20, 1),
            "steady_seconds": STEADY_SECONDS,
            "steady_updates": updates,
            "steady_cpu_seconds": round(cpu_used, 2),
            "steady_cpu_percent": round(100 * cpu_used / STEADY_SECONDS, 2),
            "exit_status": controller.returncode,
            **{k: round(v, 1) for k, v in _snapshot_costs().items()},
        }
    finally:
        if controller is not None and controller.poll() is None:
            controller.kill()
        api.terminate()
        api.wait(30)


def main(results_dir: Path) -> None:
    result = run()
    result["targets"] = TARGETS
    result["meets_targets"] = all(result[k] < v for k, v in TARGETS.items())
    rows = [
        ("sync to synced() (s)", result["sync_seconds"], TARGETS["sync_seconds"]),
        ("  of which LIST+project (s)", result["list_and_project_seconds"], None),
        ("RSS after sync (MiB)", result["rss_after_sync_mib"], None),
        ("steady RSS (MiB)", result["steady_rss_mib"], TARGETS["steady_rss_mib"]),
        ("peak RSS (MiB)", result["peak_rss_mib"], None),
        (f"steady CPU, {UPDATES_PER_SECOND} updates/s (% core)", result["steady_cpu_percent"],
         TARGETS["steady_cpu_percent"]),
        ("update + snapshot, 40k pods (us)", result["update_and_snapshot_us"], None),
        ("dict copy of 40k pods (us)", result["dict_copy_of_40k_us"], None),
    ]  # fmt: skip
    print(f"runtime: {PODS} pods, {NODES} nodes (emulator filled in {result['fill_seconds']}s)")
    print(f"{'measure':<42} {'value':>10} {'target':>8}")
    for name, value, target in rows:
        print(f"{name:<42} {value:>10} {'' if target is None else f'< {target:g}':>8}")
    (results_dir / "runtime.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    out = Path("bench/results")
    out.mkdir(parents=True, exist_ok=True)
    main(out)
