"""Builders and waiting for the sandbox cluster's tests.

Nodes are built as a cloud provider creates them (Karpenter's KWOK provider, karpy's fake
cloud): labels, capacity and taints, but no conditions — the kubelet stand-in reports
Ready. Waiting is `tests.fixtures.waiting.eventually`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from karpy.sandbox.cluster import SandboxCluster
from tests import factories as f

UNREGISTERED = f.taint("karpenter.sh/unregistered", effect="NoExecute")


def cloud_node(
    name: str,
    *,
    zone: str = "zone-a",
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[dict[str, Any]] = (),
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node as a cloud provider registers one: no conditions yet."""
    node = f.node(
        name,
        labels={"topology.kubernetes.io/zone": zone, **(labels or {})},
        annotations=annotations,
        taints=taints,
        allocatable={"cpu": cpu, "memory": memory, "pods": pods},
    )
    del node["status"]["conditions"]
    del node["metadata"]["uid"]
    return node


def workload(
    kind: str,
    name: str,
    *,
    replicas: int = 1,
    cpu: str = "500m",
    memory: str = "256Mi",
    **pod_options: Any,
) -> dict[str, Any]:
    """A Deployment, ReplicaSet or DaemonSet of pods requesting ``cpu`` and ``memory``."""
    template = f.pod(labels={"app": name}, requests={"cpu": cpu, "memory": memory}, **pod_options)
    del template["status"]
    if kind == "DaemonSet":
        obj = f.daemonset(name, template=template)
    elif kind == "ReplicaSet":
        obj = f.replica_set(name, template=template, replicas=replicas)
    else:
        obj = f.deployment(name, template=template, replicas=replicas)
    del obj["metadata"]["uid"]
    return obj


def pods(cluster: SandboxCluster, label: str | None = None) -> list[dict[str, Any]]:
    return cluster.store.list("pods", "default", label_selector=label or "")


def live_pods(cluster: SandboxCluster, label: str | None = None) -> list[dict[str, Any]]:
    return [p for p in pods(cluster, label) if not p["metadata"].get("deletionTimestamp")]


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    """The status condition of type ``kind``, or ``{}``."""
    for cond in obj.get("status", {}).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def unschedulable(pod: dict[str, Any]) -> bool:
    cond = condition(pod, "PodScheduled")
    return cond.get("status") == "False" and cond.get("reason") == "Unschedulable"


def running(pod: dict[str, Any]) -> bool:
    return bool(pod.get("status", {}).get("phase") == "Running")


def node_ready(cluster: SandboxCluster, name: str) -> bool:
    node = cluster.store.try_get("nodes", name)
    return node is not None and condition(node, "Ready").get("status") == "True"
