"""The kube-scheduler stand-in: what it binds, what it marks Unschedulable, and how often."""

from __future__ import annotations

import asyncio
import functools

from karpy.sandbox.cluster import SandboxCluster
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import (
    UNREGISTERED,
    cloud_node,
    condition,
    node_ready,
    pods,
    running,
    unschedulable,
    workload,
)

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


async def test_deployment_waits_for_a_node_to_join_and_lose_its_startup_taint(cluster):
    store = cluster.store
    store.create("deployments", workload("Deployment", "web", replicas=3))
    await eventually(lambda: len(pods(cluster)) == 3 and all(map(unschedulable, pods(cluster))))
    assert condition(pods(cluster)[0], "PodScheduled")["message"] == (
        "no nodes available to schedule pods"
    )

    store.create("nodes", cloud_node("node-a", taints=[UNREGISTERED]))
    await eventually(lambda: node_ready(cluster, "node-a"), what="node Ready")
    passes = cluster.scheduler.passes
    await eventually(lambda: cluster.scheduler.passes > passes, what="a pass with the node")
    assert [p["spec"].get("nodeName") for p in pods(cluster)] == [None, None, None]

    store.patch("nodes", "node-a", {"spec": {"taints": []}})
    await eventually(lambda: all(running(p) for p in pods(cluster)), what="pods Running")
    assert {p["spec"]["nodeName"] for p in pods(cluster)} == {"node-a"}
    assert all(condition(p, "PodScheduled")["status"] == "True" for p in pods(cluster))


async def test_a_new_pod_names_the_taint_that_keeps_it_off_each_node(cluster):
    cluster.store.create("nodes", cloud_node("node-a", taints=[UNREGISTERED]))
    cluster.store.create("nodes", cloud_node("node-b", cpu="1"))
    await eventually(lambda: node_ready(cluster, "node-a") and node_ready(cluster, "node-b"))
    cluster.store.create("pods", f.pod("big", requests={"cpu": "2"}))
    pod = await eventually(
        lambda: unschedulable(p := cluster.store.get("pods", "big", "default")) and p
    )
    assert condition(pod, "PodScheduled")["message"] == (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) had untolerated taint {karpenter.sh/unregistered: }."
    )


async def test_pods_fit_only_on_ready_schedulable_nodes(cluster):
    store = cluster.store
    store.create(
        "nodes", cloud_node("stopped", annotations={"sandbox.karpy.dev/kubelet": "stopped"})
    )
    store.create("nodes", cloud_node("cordoned"))
    await eventually(lambda: node_ready(cluster, "cordoned"))
    store.patch("nodes", "cordoned", {"spec": {"unschedulable": True}})
    store.create("pods", f.pod("p", requests={"cpu": "100m"}))
    pod = await eventually(lambda: unschedulable(p := store.get("pods", "p", "default")) and p)
    assert condition(pod, "PodScheduled")["message"] == (
        "0/2 nodes are available: "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, "
        "1 node(s) were unschedulable."
    )
    assert not node_ready(cluster, "stopped")

    store.patch("nodes", "cordoned", {"spec": {"unschedulable": False}})
    await eventually(
        lambda: store.get("pods", "p", "default")["spec"].get("nodeName") == "cordoned"
    )


async def test_a_pod_that_fits_nowhere_is_marked_unschedulable_exactly_once(cluster):
    writes: list[str] = []
    cluster.server.store_state.hooks.append(
        lambda kind, change: (
            writes.append(change.type)
            if kind.plural == "pods" and change.key == ("default", "huge")
            else None
        )
    )
    cluster.store.create("nodes", cloud_node("node-a", cpu="2"))
    cluster.store.create("pods", f.pod("huge", requests={"cpu": "64"}))
    await eventually(lambda: unschedulable(cluster.store.get("pods", "huge", "default")))
    passes = cluster.scheduler.passes
    for name in ("node-b", "node-c"):  # each a relevant change, each a pass that fails again
        cluster.store.create("nodes", cloud_node(name, cpu="2"))
        await eventually(functools.partial(node_ready, cluster, name))
    await eventually(lambda: cluster.scheduler.passes >= passes + 2, what="two more passes")
    await asyncio.sleep(0.2)
    assert writes == ["ADDED", "MODIFIED"]


async def test_required_anti_affinity_puts_one_replica_per_node(cluster):
    term = f.pod_affinity_term(HOSTNAME, match_labels={"app": "db"})
    cluster.store.create(
        "deployments", workload("Deployment", "db", replicas=3, pod_anti_affinity=[term])
    )
    for name in ("node-a", "node-b"):
        cluster.store.create("nodes", cloud_node(name))
    await eventually(
        lambda: (
            sum(bool(p["spec"].get("nodeName")) for p in pods(cluster)) == 2
            and sum(unschedulable(p) for p in pods(cluster)) == 1
        ),
        what="two bound, one unschedulable",
    )
    assert len({p["spec"].get("nodeName") for p in pods(cluster) if p["spec"].get("nodeName")}) == 2

    cluster.store.create("nodes", cloud_node("node-c"))
    await eventually(lambda: all(p["spec"].get("nodeName") for p in pods(cluster)))
    assert {p["spec"]["nodeName"] for p in pods(cluster)} == {"node-a", "node-b", "node-c"}


async def test_zonal_spread_keeps_skew_within_one(cluster):
    spread = f.topology_spread(ZONE, match_labels={"app": "web"})
    for name, zone in (("a1", "zone-a"), ("a2", "zone-a"), ("b1", "zone-b")):
        cluster.store.create("nodes", cloud_node(name, zone=zone, cpu="8"))
    await eventually(lambda: all(node_ready(cluster, n) for n in ("a1", "a2", "b1")))
    cluster.store.create(
        "deployments",
        workload("Deployment", "web", replicas=6, topology_spread_constraints=[spread]),
    )
    await eventually(
        lambda: len(pods(cluster)) == 6 and all(p["spec"].get("nodeName") for p in pods(cluster))
    )
    zones = {"a1": "zone-a", "a2": "zone-a", "b1": "zone-b"}
    per_zone = [zones[p["spec"]["nodeName"]] for p in pods(cluster)]
    assert per_zone.count("zone-a") == per_zone.count("zone-b") == 3


async def test_host_ports_keep_two_pods_apart(cluster):
    for name in ("node-a", "node-b"):
        cluster.store.create("nodes", cloud_node(name))
    cluster.store.create(
        "deployments", workload("Deployment", "proxy", replicas=2, host_ports=[8080])
    )
    await eventually(
        lambda: len(pods(cluster)) == 2 and all(p["spec"].get("nodeName") for p in pods(cluster))
    )
    assert {p["spec"]["nodeName"] for p in pods(cluster)} == {"node-a", "node-b"}


async def test_pods_for_another_scheduler_or_with_gates_are_left_alone(cluster):
    cluster.store.create("nodes", cloud_node("node-a"))
    cluster.store.create("pods", f.pod("other", scheduler_name="my-scheduler"))
    gated = f.pod("gated")
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    cluster.store.create("pods", gated)
    cluster.store.create("pods", f.pod("mine"))
    await eventually(lambda: cluster.store.get("pods", "mine", "default")["spec"].get("nodeName"))
    for name in ("other", "gated"):
        pod = cluster.store.get("pods", name, "default")
        assert not pod["spec"].get("nodeName") and condition(pod, "PodScheduled") == {}

    cluster.store.patch("pods", "gated", {"spec": {"schedulingGates": None}}, "default")
    await eventually(lambda: cluster.store.get("pods", "gated", "default")["spec"].get("nodeName"))


async def test_nodes_joining_one_by_one_are_filled_by_bounded_incremental_passes(cluster):
    cluster.store.create("deployments", workload("Deployment", "web", replicas=60, cpu="1"))
    await eventually(lambda: len(pods(cluster)) == 60 and all(map(unschedulable, pods(cluster))))

    def bound() -> int:
        return sum(bool(p["spec"].get("nodeName")) for p in pods(cluster))

    offered = []
    for i in range(3):
        cluster.store.create("nodes", cloud_node(f"node-{i}", cpu="4"))
        await eventually(lambda: bound() == (i + 1) * 4)  # noqa: B023
        offered.append(cluster.scheduler.last.incremental)
    # Each pass offers the failed pods only what a 4-CPU node can take, never all 60.
    assert all(0 < n <= 8 for n in offered), offered


async def test_a_deleted_bound_pod_frees_room_for_a_pending_one(cluster: SandboxCluster):
    cluster.store.create("nodes", cloud_node("node-a", cpu="1"))
    cluster.store.create("pods", f.pod("first", requests={"cpu": "800m"}))
    await eventually(lambda: cluster.store.get("pods", "first", "default")["spec"].get("nodeName"))
    cluster.store.create("pods", f.pod("second", requests={"cpu": "800m"}))
    await eventually(lambda: unschedulable(cluster.store.get("pods", "second", "default")))
    cluster.store.delete("pods", "first", "default", grace_period_seconds=0)
    await eventually(lambda: cluster.store.get("pods", "second", "default")["spec"].get("nodeName"))


async def test_a_pod_pinned_to_a_host_lands_there_when_that_host_joins(cluster):
    cluster.store.create("nodes", cloud_node("node-a"))
    cluster.store.create("pods", f.pod("pinned", node_selector={HOSTNAME: "node-b"}))
    await eventually(lambda: unschedulable(cluster.store.get("pods", "pinned", "default")))
    cluster.store.create("nodes", cloud_node("node-b"))
    await eventually(
        lambda: cluster.store.get("pods", "pinned", "default")["spec"].get("nodeName") == "node-b"
    )
