"""Provisioning end to end (``make bench``): ``karpy sandbox cluster`` and ``karpy
controller`` (fake cloud, default KWOK-style catalog) as separate processes, driven only
through the API, as Karpenter's performance suite drives Karpenter on KWOK.

``perf``: Karpenter's perf suite "basic" test: two Deployments of 500 pods (900m/3100Mi
and 3500m/28Gi) created together. Measured: seconds from creation to all 1,000 pods
Running; nodes, instance types and hourly price; utilization (requests / allocatable) of
cpu and memory; the controller's peak RSS and average CPU over the scale-up. Karpenter's
threshold for this test is 2 minutes; karpy's targets: < 30 s, utilization > 0.65, peak
RSS < 260 MiB, CPU < 0.5 core.

``10k``, ``40k``: the diverse workload of Karpenter's scheduling benchmark (generic, zonal
spread, hostname spread, zonal self-affinity, hostname anti-affinity; see
``shared/bench/karpenter-scheduling-workload.md``) presented as a cluster presents it: one
Deployment per kind and pod size, so a Deployment's pods are identical and share its
name. Measured, from the API server's creation timestamps: how long the sandbox's
ReplicaSet controller took to create every pod, and when the last NodeClaim was created,
counted from the first pod (the figure the target is on) and from the last pod; then
seconds until every pod runs (the sandbox's own pace counts here), NodeClaims, rounds,
the longest solve, the controller's peak RSS, and its idle CPU over 30 s once everything
runs and has settled. Targets at 40,000: NodeClaims < 60 s, RSS < 1 GiB, idle CPU < 2%.

Pick scenarios with ``KARPY_BENCH_PROVISIONING=perf,10k`` (default: all). Results go to
``bench/results/provisioning.json``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from karpy.base.quantity import parse_quantity
from karpy.cloud.fake.catalog import embedded_catalog
from tests.e2e.cluster import Api, controller, sandbox_process
from tests.e2e.processes import ControllerProcess

CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi")
VALUES = "abcdefg"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {"template": {"spec": {
        "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}],
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                         "name": "default"},
        "expireAfter": "720h",
    }}},
}  # fmt: skip
TARGETS = {
    "perf": {"running_seconds": 30.0, "peak_rss_mib": 260.0, "cpu_cores": 0.5},
    "40k": {"nodeclaims_seconds": 60.0, "peak_rss_mib": 1024.0, "idle_cpu_percent": 2.0},
}
TIMEOUT = 900.0


# --- measuring the controller ----------------------------------------------------------


def _rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of ``pid``."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- workloads -------------------------------------------------------------------------


def _deployment(name: str, replicas: int, cpu: str, memory: str, *,
                labels: dict[str, str] | None = None, spec: dict[str, Any] | None = None,
                ) -> dict[str, Any]:  # fmt: skip
    pod_labels = {"deployment": name, **(labels or {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"deployment": name}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "app", "image": "pause",
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                    **(spec or {}),
                },
            },
        },
    }  # fmt: skip


def _spread(key: str, selector_value: str) -> dict[str, Any]:
    return {"topologySpreadConstraints": [{
        "maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"my-label": selector_value}},
    }]}  # fmt: skip


def _affinity(kind: str, term: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def diverse_deployments(pods: int, seed: int = 42) -> list[dict[str, Any]]:
    """The five kinds of the scheduling benchmark, N/5 pods each (the remainder generic),
    as one Deployment per kind and pod size (30 sizes), spread evenly."""
    rng = random.Random(seed)
    per_kind = pods // 5
    counts = dict.fromkeys(("spread-zone", "spread-host", "affinity-zone", "anti-host"), per_kind)
    counts = {"generic": pods - 4 * per_kind, **counts}
    sizes = list(itertools.product(CPUS, MEMORIES))
    out = []
    for kind, count in counts.items():
        for i, (cpu, memory) in enumerate(sizes):
            replicas = count // len(sizes) + (1 if i < count % len(sizes) else 0)
            if not replicas:
                continue
            name = f"{kind}-{cpu.lower()}-{memory.lower()}"
            value = rng.choice(VALUES)
            if kind == "generic":
                dep = _deployment(name, replicas, cpu, memory, labels={"my-label": value})
            elif kind == "spread-zone":
                dep = _deployment(name, replicas, cpu, memory, labels={"my-label": value},
                                  spec=_spread(ZONE, rng.choice(VALUES)))  # fmt: skip
            elif kind == "spread-host":
                dep = _deployment(name, replicas, cpu, memory, labels={"my-label": value},
                                  spec=_spread(HOSTNAME, rng.choice(VALUES)))  # fmt: skip
            elif kind == "affinity-zone":
                term = {"labelSelector": {"matchLabels": {"my-affininity": value}},
                        "topologyKey": ZONE}  # fmt: skip
                dep = _deployment(name, replicas, cpu, memory, labels={"my-affininity": value},
                                  spec=_affinity("podAffinity", term))  # fmt: skip
            else:
                term = {"labelSelector": {"matchLabels": {"app": "nginx"}},
                        "topologyKey": HOSTNAME}  # fmt: skip
                dep = _deployment(name, replicas, cpu, memory, labels={"app": "nginx"},
                                  spec=_affinity("podAntiAffinity", term))  # fmt: skip
            out.append(dep)
    return out


def perf_deployments() -> list[dict[str, Any]]:
    return [_deployment("small", 500, "900m", "3100Mi"), _deployment("large", 500, "3500m", "28Gi")]


# --- reading the cluster ---------------------------------------------------------------


def _running(api: Api) -> int:
    """Ready pods, from the Deployments' status (listing 40,000 pods every second would
    load the sandbox more than karpy does)."""
    return sum(int((d.get("status") or {}).get("readyReplicas") or 0)
               for d in api.list("deployments"))  # fmt: skip


def _nodes_summary(api: Api, pods: list[dict[str, Any]]) -> dict[str, Any]:
    prices = {(it.name, o.zone, o.capacity_type): o.price
              for it in embedded_catalog().instance_types for o in it.offerings}  # fmt: skip
    nodes = [n for n in api.list("nodes")
             if (n.get("spec") or {}).get("providerID", "").startswith("fake://")]  # fmt: skip
    types: dict[str, int] = {}
    price = 0.0
    allocatable = {"cpu": 0, "memory": 0}
    for node in nodes:
        labels = node["metadata"]["labels"]
        itype = labels["node.kubernetes.io/instance-type"]
        types[itype] = types.get(itype, 0) + 1
        price += prices.get((itype, labels[ZONE], labels["karpenter.sh/capacity-type"]), 0.0)
        for resource in allocatable:
            allocatable[resource] += parse_quantity(node["status"]["allocatable"][resource])
    requested = {"cpu": 0, "memory": 0}
    for pod in pods:
        for container in pod["spec"]["containers"]:
            for resource in requested:
                requested[resource] += parse_quantity(
                    container["resources"]["requests"].get(resource, "0")
                )
    return {
        "nodes": len(nodes),
        "instance_types": dict(sorted(types.items(), key=lambda kv: -kv[1])[:6]),
        "price_per_hour": round(price, 2),
        "cpu_utilization": round(requested["cpu"] / max(allocatable["cpu"], 1), 3),
        "memory_utilization": round(requested["memory"] / max(allocatable["memory"], 1), 3),
    }


def _stamp(obj: dict[str, Any]) -> float:
    return datetime.fromisoformat(obj["metadata"]["creationTimestamp"]).timestamp()


def _timeline(api: Api) -> dict[str, Any]:
    """From the API server's own creation timestamps (1 s resolution): how long the
    sandbox took to create every pod, and when the last NodeClaim came, counted from the
    first pod and from the last one."""
    pods = [_stamp(p) for p in api.list("pods")]
    claims = [_stamp(c) for c in api.list("nodeclaims")]
    return {
        "nodeclaims": len(claims),
        "pods_created_seconds": max(pods) - min(pods),
        "nodeclaims_seconds": max(claims) - min(pods),
        "last_nodeclaim_after_last_pod_seconds": max(claims) - max(pods),
    }


def _check_alive(karpy: ControllerProcess) -> None:
    if karpy.process.poll() is not None:
        code = karpy.finish()
        tail = "\n".join(str(line) for line in karpy.lines[-5:])
        raise RuntimeError(f"karpy controller exited ({code}):\n{karpy.stderr[-3000:]}\n{tail}")


def _rounds(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for line in list(lines) if line.get("message") == "provisioning round"]


# --- scenarios -------------------------------------------------------------------------


def run_perf() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, sandbox_process(Path(tmp)) as cluster:
        api = cluster.api
        api.apply_examples(POOL)
        karpy = controller(cluster.kubeconfig, BATCH_IDLE_DURATION="1s",
                           BATCH_MAX_DURATION="10s")  # fmt: skip
        try:
            karpy.wait_for_message("informers synced", timeout=60)
            pid = karpy.process.pid
            cpu0, started = _cpu_seconds(pid), time.monotonic()
            for deployment in perf_deployments():
                api.create("deployments", deployment)
            while _running(api) < 1000:
                if time.monotonic() - started > TIMEOUT:
                    raise RuntimeError("perf: pods not all Running in time")
                _check_alive(karpy)
                time.sleep(0.25)
            seconds = time.monotonic() - started
            cpu = (_cpu_seconds(pid) - cpu0) / seconds
            _, peak = _rss_mib(pid)
            result = {
                "running_seconds": round(seconds, 1),
                "cpu_cores": round(cpu, 2),
                "peak_rss_mib": round(peak, 1),
                "rounds": len(_rounds(karpy.lines)),
                **_nodes_summary(api, api.list("pods")),
            }
        finally:
            karpy.process.terminate()
            karpy.finish(60)
    return result


def run_diverse(pods: int) -> dict[str, Any]:
    deployments = diverse_deployments(pods)
    with tempfile.TemporaryDirectory() as tmp, sandbox_process(Path(tmp)) as cluster:
        api = cluster.api
        api.apply_examples(POOL)
        karpy = controller(cluster.kubeconfig, BATCH_IDLE_DURATION="1s",
                           BATCH_MAX_DURATION="10s")  # fmt: skip
        try:
            karpy.wait_for_message("informers synced", timeout=60)
            pid = karpy.process.pid
            created_at = time.monotonic()
            for deployment in deployments:
                api.create("deployments", deployment)
            while _running(api) < pods:
                if time.monotonic() - created_at > TIMEOUT:
                    raise RuntimeError(f"{pods} pods: not all Running in time")
                _check_alive(karpy)
                time.sleep(1.0)
            running_at = time.monotonic()
            time.sleep(30)  # let Events drain and controllers settle
            cpu0 = _cpu_seconds(pid)
            time.sleep(30)
            idle = (_cpu_seconds(pid) - cpu0) / 30 * 100
            _, peak = _rss_mib(pid)
            rounds = _rounds(karpy.lines)
            timeline = _timeline(api)
            result = {
                "pods": pods,
                "deployments": len(deployments),
                "nodeclaims": timeline.pop("nodeclaims"),
                **timeline,
                "running_seconds": round(running_at - created_at, 1),
                "rounds": len(rounds),
                "longest_solve_seconds": max((r.get("solveSeconds", 0) for r in rounds), default=0),
                "peak_rss_mib": round(peak, 1),
                "idle_cpu_percent": round(idle, 2),
            }
        finally:
            karpy.process.terminate()
            karpy.finish(60)
    return result


SCENARIOS = {"perf": run_perf, "10k": lambda: run_diverse(10_000),
             "40k": lambda: run_diverse(40_000)}  # fmt: skip


def main(results_dir: Path) -> None:
    wanted = os.environ.get("KARPY_BENCH_PROVISIONING", ",".join(SCENARIOS)).split(",")
    results: dict[str, Any] = {}
    for name in (w.strip() for w in wanted if w.strip()):
        print(f"-- provisioning {name}", flush=True)
        result = SCENARIOS[name]()
        targets = TARGETS.get(name, {})
        result["targets"] = targets
        result["meets_targets"] = all(result[k] < v for k, v in targets.items())
        if name == "perf":
            result["meets_targets"] = (
                result["meets_targets"]
                and min(result["cpu_utilization"], result["memory_utilization"]) > 0.65
            )
        results[name] = result
        for key, value in result.items():
            target = targets.get(key)
            shown = f"  (target < {target:g})" if target is not None else ""
            print(f"  {key:<34} {value}{shown}", flush=True)
    (results_dir / "provisioning.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    out = Path("bench/results")
    out.mkdir(parents=True, exist_ok=True)
    main(out)
