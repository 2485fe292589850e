"""The scrape-time gauges over cluster state: every pod with where it runs, and NodePool
usage and limits, read from the objects the API server holds."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.state.metrics import StateMetrics
from tests import factories as f
from tests.fixtures.cluster import controller_world
from tests.fixtures.waiting import eventually

NODE_LABELS = {
    "karpenter.sh/nodepool": "general", "topology.kubernetes.io/zone": "test-zone-b",
    "kubernetes.io/arch": "arm64", "karpenter.sh/capacity-type": "spot",
    "node.kubernetes.io/instance-type": "c-4x-arm64-linux",
}  # fmt: skip
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f", "uid": "u1",
         "controller": True}  # fmt: skip


def scrape(collector: StateMetrics) -> dict[str, list[tuple[dict[str, str], float]]]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        family.name: [(sample.labels, sample.value) for sample in family.samples]
        for family in text_string_to_metric_families(text)
    }


async def test_pods_are_exported_with_their_nodes_placement_and_phase(apiserver):
    async with controller_world(apiserver) as world:
        apiserver.store.create("nodes", f.node("n1", labels=NODE_LABELS))
        web = apiserver.store.create("pods", f.pod("web-1", node_name="n1",
                                                   owner_references=[OWNER]))  # fmt: skip
        web["status"] = {"phase": "Running"}  # as its kubelet reports it
        apiserver.store.update_status("pods", web)
        apiserver.store.create("pods", f.pod("waiting", unschedulable=True))
        await world.settled()
        exported = scrape(StateMetrics(world.state.snapshot))["karpenter_pods_state"]
        samples = {labels["name"]: (labels, value) for labels, value in exported}
        running, value = samples["web-1"]
        assert value == 1.0
        assert running == {
            "name": "web-1", "namespace": "default", "owner": "ReplicaSet/web-5d4f",
            "node": "n1", "nodepool": "general", "zone": "test-zone-b", "arch": "arm64",
            "capacity_type": "spot", "instance_type": "c-4x-arm64-linux", "phase": "Running",
        }  # fmt: skip
        pending, _ = samples["waiting"]
        assert (pending["node"], pending["nodepool"], pending["phase"]) == ("", "", "Pending")

        apiserver.store.delete("pods", "waiting", "default", grace_period_seconds=0)

        def names() -> set[str]:
            exported = scrape(StateMetrics(world.state.snapshot))["karpenter_pods_state"]
            return {labels["name"] for labels, _ in exported}

        await eventually(lambda: names() == {"web-1"})  # a deleted pod's series goes with it


async def test_nodepool_usage_and_limits_in_base_units(apiserver):
    async with controller_world(apiserver) as world:
        created = apiserver.store.create(
            "nodepools.karpenter.sh", f.nodepool("general", limits={"cpu": "100", "memory": "1Ti"})
        )
        created["status"] = {"resources": {"cpu": "12500m", "memory": "32Gi", "nodes": "3"}}
        apiserver.store.update_status("nodepools.karpenter.sh", created)
        await world.settled()
        families = scrape(StateMetrics(world.state.snapshot))
        usage = {labels["resource_type"]: value for labels, value in
                 families["karpenter_nodepools_usage"]}  # fmt: skip
        limit = {labels["resource_type"]: value for labels, value in
                 families["karpenter_nodepools_limit"]}  # fmt: skip
        assert usage == {"cpu": 12.5, "memory": 32 * 2**30, "nodes": 3.0}
        assert limit == {"cpu": 100.0, "memory": float(2**40)}


DAEMON_OWNER = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "logs", "uid": "d1",
                "controller": True}  # fmt: skip


def by_node_and_resource(samples, node: str) -> dict[str, float]:
    return {labels["resource_type"]: value for labels, value in samples
            if labels["node_name"] == node}  # fmt: skip


async def test_nodes_allocatable_and_requests_per_node_and_resource(apiserver):
    async with controller_world(apiserver) as world:
        apiserver.store.create(
            "nodes",
            f.node(
                "n1",
                labels=NODE_LABELS,
                allocatable={
                    "cpu": "3920m",
                    "memory": "14Gi",
                    "pods": "58",
                    "ephemeral-storage": "20Gi",
                },
            ),
        )
        apiserver.store.create("nodes", f.node("n2", allocatable={"cpu": "2", "memory": "4Gi"}))
        apiserver.store.create(
            "pods",
            f.pod(
                "web-1",
                node_name="n1",
                owner_references=[OWNER],
                requests={"cpu": "1500m", "memory": "1Gi"},
            ),
        )
        apiserver.store.create(
            "pods", f.pod("web-2", node_name="n1", requests={"cpu": "500m", "memory": "512Mi"})
        )
        apiserver.store.create(
            "pods",
            f.pod(
                "logs-n1",
                node_name="n1",
                owner_references=[DAEMON_OWNER],
                requests={"cpu": "100m", "memory": "128Mi"},
            ),
        )
        done = apiserver.store.create(
            "pods", f.pod("job-1", node_name="n1", requests={"cpu": "2", "memory": "2Gi"})
        )
        done["status"] = {"phase": "Succeeded"}  # a finished pod holds nothing
        apiserver.store.update_status("pods", done)
        await world.settled()

        families = scrape(StateMetrics(world.state.snapshot))

        allocatable = families["karpenter_nodes_allocatable"]
        assert by_node_and_resource(allocatable, "n1") == {
            "cpu": 3.92,
            "memory": 14 * 2**30,
            "pods": 58.0,
            "ephemeral_storage": 20 * 2**30,
        }
        assert by_node_and_resource(allocatable, "n2") == {"cpu": 2.0, "memory": 4 * 2**30}
        pods = families["karpenter_nodes_total_pod_requests"]
        assert by_node_and_resource(pods, "n1") == {  # DaemonSet pods included, as Karpenter's
            "cpu": 2.1,
            "memory": (1024 + 512 + 128) * 2**20,
        }
        daemons = families["karpenter_nodes_total_daemon_requests"]
        assert by_node_and_resource(daemons, "n1") == {"cpu": 0.1, "memory": 128 * 2**20}
        assert by_node_and_resource(pods, "n2") == {}  # nothing bound, no series

        labels = next(
            labels
            for labels, _ in allocatable
            if labels["node_name"] == "n1" and labels["resource_type"] == "cpu"
        )
        assert {
            k: labels[k]
            for k in ("nodepool", "zone", "arch", "capacity_type", "instance_type", "managed")
        } == {
            "nodepool": "general",
            "zone": "test-zone-b",
            "arch": "arm64",
            "capacity_type": "spot",
            "instance_type": "c-4x-arm64-linux",
            "managed": "false",
        }
        assert labels["instance_family"] == ""  # every well-known label, empty when unset


async def test_a_node_with_a_nodeclaim_is_managed(apiserver):
    async with controller_world(apiserver) as world:
        apiserver.store.create(
            "nodes", f.node("n1", provider_id="fake://n1", allocatable={"cpu": "2"})
        )
        created = apiserver.store.create("nodeclaims.karpenter.sh", f.nodeclaim("claim-1"))
        created["status"] = {"providerID": "fake://n1", "nodeName": "n1"}  # once launched
        apiserver.store.update_status("nodeclaims.karpenter.sh", created)
        await world.settled()
        await eventually(lambda: world.state.snapshot().claim_of_node.get("n1") == "claim-1")

        ((labels, _),) = scrape(StateMetrics(world.state.snapshot))["karpenter_nodes_allocatable"]
        assert labels["managed"] == "true"
