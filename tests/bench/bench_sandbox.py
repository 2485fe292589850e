"""The sandbox cluster at scale (``make bench``): 40,000 pods, then 8,000 nodes.

Everything runs in one process, as ``karpy sandbox cluster`` does: the API server
emulator and the kube-scheduler, kube-controller-manager and kubelet stand-ins.

(a) **Unschedulable**: 40 Deployments of 1,000 replicas in four sizes (250m/512Mi up to
    2/4Gi) are created with no node in the cluster. Measured: seconds until the
    ReplicaSet controller has created all 40,000 pods (``deployment-style`` names,
    ``web-07-5d9f8c7b6-x2k4q``), and until every one carries ``PodScheduled=False``,
    ``Unschedulable`` (from the creation of the Deployments).
(b) **Nodes join**: 8,000 Nodes of 8 CPU / 32 GiB are created in process as a cloud
    provider would (no conditions; the kubelet stand-in makes them Ready after 0.5 s).
    Measured: seconds until every pod is bound. Two ways: ``burst`` creates them all at
    once; ``trickle`` spreads them evenly over 60 s (what a provisioner launching nodes
    does), and the figure that matters is the lag after the last node is created.

Also reported: scheduler passes, the longest pass (planning on a worker thread plus the
writes), the longest the event loop was held (what an HTTP client of the API server would
wait at worst; sampled every 50 ms), and the process's peak RSS. Each scenario runs in a
fresh subprocess so its peak RSS is its own. Targets: (a) every pass well under 10 s
(``longest_pass_seconds_a``); (b) when nodes trickle in, all pods bound within seconds of
the last node, with short passes. Results go to ``bench/results/sandbox.json``.
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change

DEPLOYMENTS = 40
REPLICAS = 1_000
NODES = 8_000
TRICKLE_SECONDS = 60.0
SIZES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"))
SCENARIOS = ("burst", "trickle")
TIMEOUT = 900.0


def _deployment(i: int) -> dict[str, Any]:
    name = f"web-{i:02d}"
    cpu, memory = SIZES[i % len(SIZES)]
    container = {"name": "app", "image": "nginx:1.27",
                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [container]}},
        },
    }  # fmt: skip


def _node(i: int) -> dict[str, Any]:
    name = f"ip-10-0-{i // 250}-{i % 250}.ec2.internal"
    zone = f"us-west-2{'abc'[i % 3]}"
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone,
            "node.kubernetes.io/instance-type": "m5.2xlarge", "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux"}},
        "spec": {"providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }  # fmt: skip


class PodCounter:
    """Counts pods, Unschedulable pods and bound pods from the store hook (no lists)."""

    def __init__(self) -> None:
        self.pods: set[tuple[str, str]] = set()
        self.unschedulable: set[tuple[str, str]] = set()
        self.bound: set[tuple[str, str]] = set()

    def __call__(self, kind: Kind, change: Change) -> None:
        from karpy.sandbox.cluster import facts

        if kind.plural != "pods" or kind.group:
            return
        key = change.key
        for group in (self.pods, self.unschedulable, self.bound):
            group.discard(key)
        if change.type == "DELETED":
            return
        obj = change.entry.obj
        self.pods.add(key)
        if facts.marked_unschedulable(obj):
            self.unschedulable.add(key)
        if facts.node_name(obj):
            self.bound.add(key)


class LoopLag:
    """The longest delay of a 50 ms sleep: how long the event loop was held at worst."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.05)
            self.worst = max(self.worst, time.perf_counter() - started - 0.05)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


async def _until(check: Any, what: str) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > TIMEOUT:
            raise TimeoutError(what)
        await asyncio.sleep(0.05)
    return time.perf_counter()


async def _scenario(name: str) -> dict[str, Any]:
    from karpy.sandbox.cluster import SandboxCluster

    total = DEPLOYMENTS * REPLICAS
    counter = PodCounter()
    lag = LoopLag()
    async with SandboxCluster(crd_dirs=[]) as cluster:
        cluster.server.store_state.hooks.append(counter)
        lag.start()
        started = time.perf_counter()
        for i in range(DEPLOYMENTS):
            cluster.store.create("deployments", _deployment(i))
        created = await _until(lambda: len(counter.pods) >= total, "pods created")
        marked = await _until(lambda: len(counter.unschedulable) >= total, "pods unschedulable")
        first = {
            "pods_created_seconds": round(created - started, 2),
            "all_unschedulable_seconds": round(marked - started, 2),
            "longest_pass_seconds_a": round(cluster.scheduler.longest_pass, 2),
            "passes_a": cluster.scheduler.passes,
        }
        cluster.scheduler.longest_pass = 0.0
        cluster.scheduler.recent_passes.clear()
        passes = cluster.scheduler.passes
        joined = time.perf_counter()
        spread = TRICKLE_SECONDS if name == "trickle" else 0.0
        for i in range(NODES):
            cluster.store.create("nodes", _node(i))
            if spread and i % 100 == 99:
                await asyncio.sleep(max(joined + spread * (i + 1) / NODES - time.perf_counter(), 0))
        last_node = time.perf_counter()
        bound = await _until(lambda: len(counter.bound) >= total, "pods bound")
        lag.stop()
        durations = sorted(cluster.scheduler.recent_passes)
        return {
            "scenario": name,
            "pods": total,
            "nodes": NODES,
            **first,
            "nodes_created_seconds": round(last_node - joined, 2),
            "all_bound_seconds": round(bound - joined, 2),
            "bound_after_last_node_seconds": round(bound - last_node, 2),
            "longest_pass_seconds_b": round(cluster.scheduler.longest_pass, 2),
            "passes_b": cluster.scheduler.passes - passes,
            "median_pass_seconds_b": round(durations[len(durations) // 2], 3),
            "p90_pass_seconds_b": round(durations[len(durations) * 9 // 10], 3),
            "worst_loop_lag_seconds": round(lag.worst, 3),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }


def run_scenario(name: str) -> dict[str, Any]:
    return asyncio.run(_scenario(name))


def main(results_dir: Path) -> None:
    rows = []
    for name in SCENARIOS:
        out = subprocess.run(
            [sys.executable, "-m", "tests.bench.bench_sandbox", name],
            check=True,
            capture_output=True,
            text=True,
        )
        result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(result)
        print(
            f"{name:>8}: {result['pods']} pods created in {result['pods_created_seconds']}s, "
            f"all Unschedulable after {result['all_unschedulable_seconds']}s "
            f"(longest pass {result['longest_pass_seconds_a']}s, {result['passes_a']} passes); "
            f"{result['nodes']} nodes created in {result['nodes_created_seconds']}s, all pods "
            f"bound after {result['all_bound_seconds']}s ({result['bound_after_last_node_seconds']}"
            f"s after the last node; {result['passes_b']} passes: median "
            f"{result['median_pass_seconds_b']}s, p90 {result['p90_pass_seconds_b']}s, longest "
            f"{result['longest_pass_seconds_b']}s); event loop held at most "
            f"{result['worst_loop_lag_seconds']}s; peak RSS {result['peak_rss_mib']} MiB",
            flush=True,
        )
    (results_dir / "sandbox.json").write_text(json.dumps({"scenarios": rows}, indent=2) + "\n")


if __name__ == "__main__":
    print(json.dumps(run_scenario(sys.argv[1] if len(sys.argv) > 1 else "burst")))
