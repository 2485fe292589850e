"""The scrape-time gauges over cluster state: every pod with where it runs, and NodePool
usage and limits, read from the objects the API server holds."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.observability.state_metrics import StateMetrics
from tests import factories as f
from tests.fixtures.cluster import controller_world
from tests.kube.helpers import eventually

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
