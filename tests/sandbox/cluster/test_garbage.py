"""Garbage collection: owners' dependents, and pods whose node is gone."""

from __future__ import annotations

from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, node_ready, pods, running, workload


async def test_deleting_a_deployment_removes_its_replicasets_and_pods(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("node-a"))
    store.create("deployments", workload("Deployment", "web", replicas=2))
    await eventually(lambda: len(pods(cluster)) == 2 and all(map(running, pods(cluster))))
    store.delete("deployments", "web", "default")
    await eventually(lambda: not store.list("replicasets", "default"), what="ReplicaSets gone")
    await eventually(lambda: not pods(cluster), what="pods gone after their grace period")
    await eventually(cluster.idle, what="no controller work left")


async def test_deleting_a_node_removes_its_pods_and_lease(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("node-a"))
    store.create("pods", f.pod("bound"))
    await eventually(lambda: running(store.get("pods", "bound", "default")))
    assert store.try_get("leases", "node-a", "kube-node-lease") is not None
    store.delete("nodes", "node-a")
    await eventually(lambda: store.try_get("pods", "bound", "default") is None)
    await eventually(lambda: store.try_get("leases", "node-a", "kube-node-lease") is None)


async def test_a_pod_bound_to_a_node_that_never_existed_goes_after_the_quarantine(cluster):
    cluster.store.create("pods", f.pod("lost", node_name="ghost"))
    await eventually(lambda: cluster.store.try_get("pods", "lost", "default") is None)


async def test_dangling_owner_references_are_dropped_while_one_owner_remains(cluster):
    store = cluster.store
    keeper = store.create("configmaps", {"metadata": {"name": "keeper", "namespace": "default"}})
    gone = store.create("configmaps", {"metadata": {"name": "gone", "namespace": "default"}})
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": cm["metadata"]["name"],
         "uid": cm["metadata"]["uid"]}
        for cm in (keeper, gone)
    ]  # fmt: skip
    store.create(
        "secrets", {"metadata": {"name": "s", "namespace": "default", "ownerReferences": refs}}
    )
    store.delete("configmaps", "gone", "default")
    await eventually(
        lambda: (
            [r["name"] for r in store.get("secrets", "s", "default")["metadata"]["ownerReferences"]]
            == ["keeper"]
        )
    )
    store.delete("configmaps", "keeper", "default")
    await eventually(lambda: store.try_get("secrets", "s", "default") is None)


async def test_owners_of_kinds_the_server_does_not_serve_are_never_assumed_gone(cluster):
    owner = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "nope"}
    cluster.store.create("pods", f.pod("kept", owner_references=[owner]))
    cluster.store.create("nodes", cloud_node("node-a"))
    await eventually(lambda: node_ready(cluster, "node-a") and running(
        cluster.store.get("pods", "kept", "default")))  # fmt: skip
