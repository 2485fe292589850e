"""Switching from Karpenter to karpy, end to end on the sandbox (fake cloud): the cluster
holds NodeClaims and Nodes exactly as Karpenter leaves them (conditions with Karpenter's
reasons, the registered/initialized labels, the termination finalizer, the hash
annotations, pods running on them), a crashed old Karpenter's stale Lease in
``kube-system`` and a live Karpenter renewing its Lease in ``karpenter``.

karpy starts and does nothing while that Karpenter lives (not ready, one warning, an
Event, no lease of its own, no NodeClaim for a pending pod); Karpenter is scaled to zero
(it releases its Lease) and karpy takes over: it launches for the pending pod, and adopts
Karpenter's NodeClaims and instances: none is deleted, relaunched, tainted or drained
across the first garbage-collection pass and several disruption passes.
"""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.hashes import EC2NODECLASS_HASH_VERSION, NODEPOOL_HASH_VERSION, ec2nodeclass_hash
from karpy.apis.nodepool import NodePool
from karpy.apis.resources import format_resource_list
from karpy.cloud.fake.catalog import embedded_catalog
from tests.e2e.cluster import (
    EXAMPLES,
    Api,
    Obj,
    controller,
    deployment,
    eventually,
    sandbox_process,
)

pytestmark = [pytest.mark.slow]

LEASE = "karpenter-leader-election"
APP = "steady"


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now() -> datetime:
    return datetime.now(UTC)


def karpenter_pool() -> Obj:
    pool: Obj = yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "consolidateAfter": "5s"}  # fmt: skip
    pool["metadata"]["annotations"] = {
        "karpenter.sh/nodepool-hash": NodePool.from_dict(pool).hash(),
        "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION,
    }
    return pool


def cheapest_fit(cpu_milli: int, memory: int) -> tuple[Any, Any]:
    """The (instance type, offering) a launch for one such pod picks: the cheapest."""
    fits = [(o.price, it.name, it, o) for it in embedded_catalog().instance_types
            for o in it.offerings
            if it.allocatable["cpu"] >= cpu_milli and it.allocatable["memory"] >= memory * 1000
            and it.labels()["karpenter.kwok.sh/instance-family"] in ("c", "s", "m")]  # fmt: skip
    _, _, it, offering = min(fits, key=lambda f: (f[0], f[1]))
    return it, offering


def karpenter_node_and_claim(name: str, pool: Obj, nodeclass: Obj, *, age: timedelta,
                             pool_uid: str) -> tuple[Obj, Obj, Obj]:  # fmt: skip
    """A Node, a NodeClaim and the NodeClaim's status as Karpenter leaves a registered,
    initialized node (its instance a fake-cloud instance: the Node, KWOK-style)."""
    it, offering = cheapest_fit(500, 512 * 2**20)
    created = now() - age
    labels = {
        **it.labels(), "topology.kubernetes.io/zone": offering.zone,
        "karpenter.sh/capacity-type": offering.capacity_type, "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }  # fmt: skip
    annotations = {
        "karpenter.sh/nodepool-hash": pool["metadata"]["annotations"]["karpenter.sh/nodepool-hash"],
        "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION,
        "karpenter.k8s.aws/ec2nodeclass-hash": ec2nodeclass_hash(EC2NodeClass.from_dict(nodeclass)),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": EC2NODECLASS_HASH_VERSION,
    }  # fmt: skip
    provider_id = f"fake://{offering.zone}/{name}"
    capacity, allocatable = format_resource_list(it.capacity), format_resource_list(it.allocatable)
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name,
                                              "kwok.x-k8s.io/node": "fake"},
                     "annotations": {**annotations, "kwok.x-k8s.io/node": "fake"},
                     "finalizers": ["karpenter.sh/termination"]},
        "spec": {"providerID": provider_id},
    }  # fmt: skip
    requirements = [*pool["spec"]["template"]["spec"]["requirements"],
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": [it.name]}]  # fmt: skip
    claim = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels, "annotations": annotations,
                     "finalizers": ["karpenter.sh/termination"],
                     "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                          "name": "default", "uid": pool_uid,
                                          "blockOwnerDeletion": True}]},
        "spec": {"requirements": requirements, "expireAfter": "720h",
                 "resources": {"requests": {"cpu": "500m", "memory": "512Mi", "pods": "1"}},
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}},
    }  # fmt: skip
    at = stamp(created)
    conditions = [{"type": t, "status": "True", "reason": t, "message": "",
                   "lastTransitionTime": at}
                  for t in ("Launched", "Registered", "Initialized", "Ready")]  # fmt: skip
    status = {"providerID": provider_id, "nodeName": name, "imageID": "fake-image",
              "capacity": capacity, "allocatable": allocatable, "conditions": conditions,
              "lastPodEventTime": stamp(created)}  # fmt: skip
    return node, claim, status


class Karpenter:
    """Karpenter's leader as the API sees it: a Lease in ``karpenter`` renewed every two
    seconds until `scale_to_zero` releases it (ReleaseOnCancel)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/karpenter/leases/{LEASE}"
        self.stopped = threading.Event()
        self._write("karpenter-7c9f_0a1b2c", create=True)
        self.thread = threading.Thread(target=self._renew, daemon=True)
        self.thread.start()

    def _write(self, holder: str, *, create: bool = False) -> None:
        spec = {"holderIdentity": holder, "leaseDurationSeconds": 15 if holder else 1,
                "acquireTime": stamp(now()), "renewTime": stamp(now())}  # fmt: skip
        if create:
            meta = {"name": LEASE, "namespace": "karpenter"}
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                    "spec": spec}  # fmt: skip
            self.api.request("POST", self.path.rsplit("/", 1)[0], body)
        else:
            self.api.request("PATCH", self.path, {"spec": spec}, "application/merge-patch+json")

    def _renew(self) -> None:
        while not self.stopped.wait(2.0):
            self._write("karpenter-7c9f_0a1b2c")

    def scale_to_zero(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self._write("")


def readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def snapshot(api: Api) -> dict[str, Any]:
    """What adoption must leave alone: the NodeClaims and Nodes (uid, deletion, taints)
    and the pods on them."""
    claims = [(c["metadata"]["name"], c["metadata"]["uid"], c["metadata"].get("deletionTimestamp"))
              for c in api.list("nodeclaims")]  # fmt: skip
    nodes = [(n["metadata"]["name"], n["metadata"]["uid"], n["metadata"].get("deletionTimestamp"),
              str((n.get("spec") or {}).get("taints") or []))
             for n in api.list("nodes")]  # fmt: skip
    pods = [(p["metadata"]["name"], p["metadata"]["uid"], p["spec"].get("nodeName"))
            for p in api.list("pods") if p["metadata"]["labels"].get("app") == APP]  # fmt: skip
    return {"claims": sorted(claims), "nodes": sorted(nodes), "pods": sorted(pods)}


def test_karpy_waits_for_karpenter_to_go_then_adopts_its_nodeclaims_without_touching_them(
    tmp_path: Path,
) -> None:
    with sandbox_process(tmp_path) as cluster:
        api = cluster.api
        for ns in ("karpenter", "kube-system"):
            with contextlib.suppress(Exception):  # it may exist already
                api.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        # A crashed old install's Lease: held, last renewed ten minutes ago. Not live.
        old = stamp(now() - timedelta(minutes=10))
        api.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", {
            "metadata": {"name": LEASE, "namespace": "kube-system"},
            "spec": {"holderIdentity": "karpenter-old_ffff", "leaseDurationSeconds": 15,
                     "acquireTime": old, "renewTime": old}})  # fmt: skip
        nodeclass = yaml.safe_load((EXAMPLES / "ec2nodeclass.yaml").read_text())
        api.create("ec2nodeclasses", nodeclass)
        pool = api.create("nodepools", karpenter_pool())
        for i in range(2):
            name = f"default-k{i}abc"
            node, claim, status = karpenter_node_and_claim(
                name, pool, nodeclass, age=timedelta(hours=1), pool_uid=pool["metadata"]["uid"]
            )
            api.create("nodes", node)
            api.create("nodeclaims", claim)
            api.request("PATCH", api.path("nodeclaims", name) + "/status", {"status": status},
                        "application/merge-patch+json")  # fmt: skip
        term = {"labelSelector": {"matchLabels": {"app": APP}},
                "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
        apart = {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}  # fmt: skip
        api.create("deployments", deployment(APP, 2, cpu="500m", memory="512Mi", spec=apart))

        def steady_running() -> str:
            pods = [p for p in api.list("pods") if p["metadata"]["labels"].get("app") == APP]
            running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
            return "" if len(running) == 2 else f"{len(running)}/2 running on Karpenter's nodes"

        eventually(steady_running, timeout=60)
        before = snapshot(api)
        karpenter = Karpenter(api)
        karpy = controller(cluster.kubeconfig, SYSTEM_NAMESPACE="kube-system")
        try:
            karpy.wait_for_message("karpenter detected; not acting", timeout=60)
            # A pod needing a new node: karpy must not launch for it while Karpenter lives.
            api.create("deployments", deployment("late", 1, cpu="500m", memory="512Mi"))
            time.sleep(8)
            status, body = readyz(karpy.health_port)
            assert status != 200 and "a Karpenter controller is running" in body, body
            assert "karpenter/karpenter-leader-election" in body and "kube-system" not in body
            assert [c["metadata"]["name"] for c in api.list("nodeclaims")] == [
                "default-k0abc",
                "default-k1abc",
            ], "no NodeClaim while Karpenter is live"
            leases = api.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/"
                                 "leases")["items"]  # fmt: skip
            assert [x["metadata"]["name"] for x in leases] == [LEASE], "karpy did not campaign"
            warnings = [e for e in api.list("events", "kube-system")
                        if e["reason"] == "KarpenterDetected"]  # fmt: skip
            assert [e["type"] for e in warnings] == ["Warning"]

            karpenter.scale_to_zero()
            karpy.wait_for_message("karpenter no longer running; karpy may act", timeout=30)

            def launched_for_late() -> str:
                late = [p for p in api.list("pods") if p["metadata"]["labels"].get("app") == "late"]
                running = [p for p in late if (p.get("status") or {}).get("phase") == "Running"]
                return "" if running else "the late pod does not run yet"

            eventually(launched_for_late, timeout=60)
            assert readyz(karpy.health_port)[0] == 200
            # The first GC pass has run since karpy took over; watch disruption passes.
            karpy.wait_for_message("cluster state fresh; controllers starting", timeout=10)
            deadline = time.monotonic() + 25
            while time.monotonic() < deadline:
                after = snapshot(api)
                assert {
                    k: [x for x in v if x[0].startswith(("default-k", APP))]
                    for k, v in after.items()
                } == before, "Karpenter's nodes were touched"
                time.sleep(1)
            reasons = {e["reason"] for e in api.list("events")}
            assert not reasons & {"DisruptionTerminating", "DisruptionLaunching",
                                  "GarbageCollected"}, reasons  # fmt: skip
            assert karpy.messages().count("karpenter detected; not acting") == 1
        finally:
            karpenter.stopped.set()
            karpy.process.terminate()
            assert karpy.finish() == 0, karpy.stderr
