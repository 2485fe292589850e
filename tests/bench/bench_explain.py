"""``karpy explain pod`` on a 40,000-pod snapshot (``make bench``; issue 21: under 1 s).

The snapshot is shaped as ``kubectl get pods,nodes,nodeclaims,... -o json`` presents a
settled cluster, not as a benchmark's pile of pending pods: 400 Deployments (each pod owned
by its ReplicaSet, with the fields a kubelet and the API server fill in: tolerations,
the service-account volume, status conditions, container statuses, IPs), one DaemonSet
with a pod on every node, the Nodes those pods run on with their NodeClaims, and a few
Deployments just scaled up whose new pods kube-scheduler marked Unschedulable. The
NodePool and the 400-type catalog are Karpenter's scheduling benchmark's
(`tests.bench.bench_scheduling`).

Timed: ``karpy explain pod`` as a user runs it, a fresh ``python -m karpy`` process
reading the snapshot file (so imports, loading, parsing and the rounds all count); the
median wall and CPU seconds of ``REPEATS`` runs, for a pod that gets a new NodeClaim and for
one that cannot be placed. Results go to ``bench/results/explain.json``.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench.bench_scheduling import CPUS, HOSTNAME, MEMORIES, ZONE, catalog, nodepool

PODS = 40_000
REPEATS = 3
TARGET_SECONDS = 1.0
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")
NODE_TYPE = "fake-it-15"  # 16 cpu, 32 GiB, 160 pods; 100m and 10Mi overhead
NODE_ALLOCATABLE = {"cpu": 15_900, "memory": 32 * 1024 - 10, "pods": 160}  # millicores, MiB
# Deployments scaled up a moment ago: (kind, replicas pending); one asks too much memory.
SCALED_UP = (("spread", 20), ("generic", 20), ("anti", 10), ("huge", 2))
KINDS = ("generic", "spread", "anti", "preferred")
TARGETS = {"placed": "default/spread-0-5d4f8c7b6-new00",
           "unplaceable": "default/huge-5d4f8c7b6-new00"}  # fmt: skip


def _millis(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000


def _mebis(memory: str) -> int:
    return int(memory.removesuffix("Mi")) if memory.endswith("Mi") else int(memory[:-2]) * 1024


class Cluster:
    """A settled cluster's objects, seeded: Deployments' pods packed onto nodes zone by zone."""

    def __init__(self, pods: int = PODS, seed: int = 42) -> None:
        self.rng = random.Random(seed)
        self.objects: list[dict[str, Any]] = [nodepool()]
        self.nodes: dict[str, list[dict[str, Any]]] = {zone: [] for zone in ZONES}
        self.free: dict[str, dict[str, int]] = {}
        self.serial = 0
        self.deployments = max(1, pods // 100)
        self.replicas = pods // self.deployments

    # -- templates -------------------------------------------------------------------
    def _spec(self, kind: str, app: str, cpu: str, memory: str) -> dict[str, Any]:
        selector = {"matchLabels": {"app": app}}
        spec: dict[str, Any] = {
            "containers": [{
                "name": "app", "image": f"registry.example.com/{app}:1.4.2",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": cpu, "memory": memory},
                              "limits": {"memory": memory}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            }],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": True, "preemptionPolicy":
            "PreemptLowerPriority", "priority": 0, "restartPolicy": "Always",
            "schedulerName": "default-scheduler", "securityContext": {},
            "serviceAccount": "default", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420,
                         "sources": [{"serviceAccountToken": {"expirationSeconds": 3607,
                                                              "path": "token"}},
                                     {"configMap": {"name": "kube-root-ca.crt", "items": [
                                         {"key": "ca.crt", "path": "ca.crt"}]}}]}}],
        }  # fmt: skip
        if kind == "spread":
            spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]  # fmt: skip
        elif kind == "anti":
            spec["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": HOSTNAME}]}}  # fmt: skip
        elif kind == "preferred":
            spec["affinity"] = {"podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "podAffinityTerm": {"labelSelector": selector,
                                                        "topologyKey": HOSTNAME}}]}}  # fmt: skip
        return spec

    def _pod(self, app: str, owner: tuple[str, str], spec: dict[str, Any], suffix: str,
             node: str | None) -> dict[str, Any]:  # fmt: skip
        self.serial += 1
        kind, owner_name = owner
        uid = f"{self.rng.getrandbits(128):032x}"
        meta = {"name": f"{owner_name}-{suffix}", "generateName": f"{owner_name}-",
                "namespace": "default",
                "uid": f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}",
                "resourceVersion": str(100_000 + self.serial),
                "creationTimestamp": "2026-11-27T09:00:00Z",
                "labels": {"app": app, "pod-template-hash": "5d4f8c7b6"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": kind, "name": owner_name,
                                     "uid": f"owner-{owner_name}", "controller": True,
                                     "blockOwnerDeletion": True}]}  # fmt: skip
        if node is None:
            status: dict[str, Any] = {"phase": "Pending", "qosClass": "Burstable", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "lastTransitionTime": "2026-11-27T10:00:00Z",
                 "message": "0/2000 nodes are available: 2000 Insufficient cpu."}]}  # fmt: skip
            return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                    "status": status}  # fmt: skip
        ip = f"10.{self.serial // 65536 % 256}.{self.serial // 256 % 256}.{self.serial % 256}"
        now = "2026-11-27T09:00:05Z"
        status = {
            "phase": "Running", "hostIP": "10.250.0.1", "podIP": ip, "podIPs": [{"ip": ip}],
            "qosClass": "Burstable", "startTime": now,
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": now}
                           for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                     "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "app", "ready": True, "restartCount": 0,
                                   "started": True, "image": f"registry.example.com/{app}:1.4.2",
                                   "imageID": f"registry.example.com/{app}@sha256:{uid}{uid}",
                                   "containerID": f"containerd://{uid}{uid}",
                                   "state": {"running": {"startedAt": now}}}],
        }  # fmt: skip
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {**spec, "nodeName": node}, "status": status}  # fmt: skip

    # -- nodes -----------------------------------------------------------------------
    def _new_node(self, zone: str) -> dict[str, Any]:
        index = sum(len(n) for n in self.nodes.values())
        name = f"ip-10-0-{index // 256}-{index % 256}.ec2.internal"
        claim = f"default-{index:05x}"
        provider = f"fake:///{zone}/i-{index:017x}"
        labels = {"karpenter.sh/nodepool": "default", "testing/cluster": "unspecified",
                  "node.kubernetes.io/instance-type": NODE_TYPE, ZONE: zone,
                  "karpenter.sh/capacity-type": "on-demand", "kubernetes.io/arch": "amd64",
                  "kubernetes.io/os": "linux", "size": "large", "special": "optional",
                  "integer": "16", HOSTNAME: name, "karpenter.sh/registered": "true",
                  "karpenter.sh/initialized": "true"}  # fmt: skip
        allocatable = {"cpu": "15900m", "memory": "32758Mi", "pods": "160"}
        capacity = {"cpu": "16", "memory": "32Gi", "pods": "160"}
        ready = "2026-11-27T08:00:00Z"
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels, "uid": f"node-{index}",
                             "creationTimestamp": ready},
                "spec": {"providerID": provider},
                "status": {"capacity": capacity, "allocatable": allocatable, "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": ready}]}}  # fmt: skip
        self.objects.append(node)
        self.objects.append({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": claim, "labels": {k: v for k, v in labels.items()
                                                   if k != HOSTNAME},
                         "ownerReferences": [{"apiVersion": "karpenter.sh/v1",
                                              "kind": "NodePool", "name": "default",
                                              "uid": "pool", "blockOwnerDeletion": True}]},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"},
                     "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In",
                                       "values": ["default"]}], "expireAfter": "720h"},
            "status": {"providerID": provider, "nodeName": name, "capacity": capacity,
                       "allocatable": allocatable, "conditions": [
                           {"type": t, "status": "True", "lastTransitionTime": ready}
                           for t in ("Launched", "Registered", "Initialized", "Ready")]},
        })  # fmt: skip
        self.nodes[zone].append(node)
        self.free[name] = dict(NODE_ALLOCATABLE)
        # The DaemonSet's pod on it: 100m, 128Mi.
        self.objects.append(self._pod("agent", ("DaemonSet", "agent"), self._spec(
            "generic", "agent", "100m", "128Mi"), f"{index:05x}", name))  # fmt: skip
        self._take(name, 100, 128)
        return node

    def _take(self, node: str, cpu: int, memory: int) -> None:
        free = self.free[node]
        free["cpu"] -= cpu
        free["memory"] -= memory
        free["pods"] -= 1

    def _place(self, zone: str, cpu: int, memory: int, app: str, spread_hosts: bool) -> str:
        """A node of ``zone`` with room: the last one opened, else a new one (``spread_hosts``:
        one pod of ``app`` per node, for hostname anti-affinity)."""
        for node in reversed(self.nodes[zone][-40:]):
            name = node["metadata"]["name"]
            free = self.free[name]
            if spread_hosts and app in node.setdefault("apps", set()):
                continue
            if free["cpu"] >= cpu and free["memory"] >= memory and free["pods"] >= 1:
                break
        else:
            node = self._new_node(zone)
            name = node["metadata"]["name"]
        node.setdefault("apps", set()).add(app)
        self._take(name, cpu, memory)
        return str(name)

    def build(self) -> list[dict[str, Any]]:
        self.objects.append({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": self._spec("generic", "agent", "100m", "128Mi")}}})  # fmt: skip
        for d in range(self.deployments):
            kind = KINDS[d % len(KINDS)]
            app = f"{kind}-{d // len(KINDS)}"
            cpu, memory = self.rng.choice(CPUS), self.rng.choice(MEMORIES)
            spec = self._spec(kind, app, cpu, memory)
            owner = ("ReplicaSet", f"{app}-5d4f8c7b6")
            for r in range(self.replicas):
                zone = ZONES[r % len(ZONES)]
                host = self._place(zone, _millis(cpu), _mebis(memory), app, kind == "anti")
                self.objects.append(self._pod(app, owner, spec, f"{r:05x}", host))
        # A few Deployments scaled up: their new pods wait for karpy.
        for kind, pending in SCALED_UP:
            if kind == "huge":
                app, cpu, memory = "huge", "1", "900Gi"
            else:
                app = f"{kind}-0"
                cpu, memory = self.rng.choice(CPUS), self.rng.choice(MEMORIES)
            spec = self._spec("generic" if kind == "huge" else kind, app, cpu, memory)
            for r in range(pending):
                self.objects.append(self._pod(app, ("ReplicaSet", f"{app}-5d4f8c7b6"), spec,
                                              f"new{r:02d}", None))  # fmt: skip
        for zone_nodes in self.nodes.values():
            for node in zone_nodes:
                node.pop("apps", None)
        return self.objects


def snapshot(pods: int = PODS) -> dict[str, Any]:
    """The cluster as one ``List``, as ``kubectl get ... -o json`` prints it."""
    return {"apiVersion": "v1", "kind": "List", "items": Cluster(pods).build()}


def _explain(cluster: Path, catalog_file: Path, ref: str) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "karpy", "explain", "pod", ref, "-f", str(cluster),
         "--instance-types", str(catalog_file)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise RuntimeError(f"karpy explain pod {ref} failed: {out.stderr or out.stdout}")
    return {"wall": wall, "cpu": cpu, "rss": after.ru_maxrss / 1024, "answer": out.stdout}


def main(results_dir: Path) -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="karpy-bench-explain-") as tmp:
        cluster, catalog_file = Path(tmp) / "cluster.json", Path(tmp) / "catalog.json"
        doc = snapshot()
        cluster.write_text(json.dumps(doc))
        catalog_file.write_text(json.dumps(catalog()))
        pods = sum(1 for o in doc["items"] if o["kind"] == "Pod")
        nodes = sum(1 for o in doc["items"] if o["kind"] == "Node")
        size_mb = cluster.stat().st_size / 1e6
        for case, ref in TARGETS.items():
            runs = [_explain(cluster, catalog_file, ref) for _ in range(REPEATS)]
            wall = statistics.median(r["wall"] for r in runs)
            row = {
                "case": case, "pod": ref, "pods": pods, "nodes": nodes,
                "snapshotMB": round(size_mb, 1), "wallSeconds": round(wall, 3),
                "wallRuns": [round(r["wall"], 3) for r in runs],
                "cpuSeconds": round(statistics.median(r["cpu"] for r in runs), 3),
                "targetSeconds": TARGET_SECONDS, "answer": runs[0]["answer"].splitlines(),
            }  # fmt: skip
            rows.append(row)
            print(f"{case:>12}  pods {pods}  nodes {nodes}  snapshot {size_mb:.1f} MB  "
                  f"wall {wall:.3f}s  cpu {row['cpuSeconds']:.3f}s  (target < "
                  f"{TARGET_SECONDS:.0f}s: {'yes' if wall < TARGET_SECONDS else 'NO'})",
                  flush=True)  # fmt: skip
    (results_dir / "explain.json").write_text(json.dumps({"cases": rows}, indent=2) + "\n")


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/karpy-explain-snapshot")
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster.json").write_text(json.dumps(snapshot()))
    (out / "catalog.json").write_text(json.dumps(catalog()))
    print(out)
