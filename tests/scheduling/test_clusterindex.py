"""What a round derives from the bound pods is computed once per cluster and shared by
the what-if copies that keep those pods, and never outlives them: a copy with other
bound pods sees its own."""

from __future__ import annotations

from typing import Any

import attrs

from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.nodes import cluster_nodes, node_from_dict
from karpy.scheduling.pods import Pod
from karpy.scheduling.solver import Scheduler
from tests.scheduling.builders import context, instance_type, pod

CONTEXT = context([instance_type("medium", "4", "16Gi", price=1.0)])


def node(name: str) -> dict[str, Any]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": "zone-a",
        "node.kubernetes.io/instance-type": "medium",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }
    room = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    status = {"allocatable": room, "capacity": room,
              "conditions": [{"type": "Ready", "status": "True"}]}  # fmt: skip
    return {"metadata": {"name": name, "labels": labels}, "status": status}


def cluster_with(bound: tuple[Pod, ...]) -> ClusterSnapshot:
    nodes = (node_from_dict(node("node-a")),)
    return ClusterSnapshot(nodes=nodes, capacity=tuple(cluster_nodes(nodes, ())),
                           bound_pods=bound)  # fmt: skip


def test_a_what_if_copy_shares_what_the_bound_pods_give():
    busy = attrs.evolve(pod("busy", requests={"cpu": "3"}), node_name="node-a")
    cluster = cluster_with((busy,))
    copy = attrs.evolve(cluster, capacity=cluster.capacity)
    assert copy.index is cluster.index
    assert copy.index.usage(copy.bound_pods) is cluster.index.usage(cluster.bound_pods)
    assert copy.index.bound(copy.bound_pods) is cluster.index.bound(cluster.bound_pods)


def test_a_copy_with_other_bound_pods_does_not_reuse_them():
    busy = attrs.evolve(pod("busy", requests={"cpu": "3"}), node_name="node-a")
    cluster = cluster_with((busy,))
    placed = Scheduler(CONTEXT, cluster).solve([pod("new", requests={"cpu": "2"})])
    assert [n.name for n in placed.existing_nodes] == []  # 1 cpu left: a new node
    assert len(placed.new_nodeclaims) == 1
    emptied = attrs.evolve(cluster, bound_pods=())  # the same index object comes along
    placed = Scheduler(CONTEXT, emptied).solve([pod("new", requests={"cpu": "2"})])
    assert [n.name for n in placed.existing_nodes] == ["node-a"]
    assert placed.new_nodeclaims == ()
