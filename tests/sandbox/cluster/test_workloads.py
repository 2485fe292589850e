"""Deployments and ReplicaSets: names, owners, scaling, replacement, rollout, status."""

from __future__ import annotations

import re
from typing import Any

from karpy.sandbox.cluster import SandboxCluster
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, live_pods, node_ready, pods, running, workload


def _replicasets(cluster: SandboxCluster) -> list[dict[str, Any]]:
    return cluster.store.list("replicasets", "default")


async def test_deployment_creates_a_hashed_replicaset_that_owns_its_pods(cluster):
    deployment = cluster.store.create("deployments", workload("Deployment", "web", replicas=2))
    await eventually(lambda: len(pods(cluster)) == 2)
    (rs,) = _replicasets(cluster)
    digest = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{digest}"
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]+", digest)
    assert rs["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": deployment["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
    for pod in pods(cluster):
        assert re.fullmatch(rf"web-{digest}-[a-z0-9]{{5}}", pod["metadata"]["name"])
        assert pod["metadata"]["labels"] == {"app": "web", "pod-template-hash": digest}
        (owner,) = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == (
            "ReplicaSet",
            rs["metadata"]["uid"],
            True,
        )


async def test_the_same_template_always_hashes_to_the_same_replicaset(cluster):
    cluster.store.create("deployments", workload("Deployment", "a", replicas=0))
    first = workload("Deployment", "b", replicas=0)
    first["spec"]["template"] = cluster.store.get("deployments", "a", "default")["spec"]["template"]
    cluster.store.create("deployments", first)
    await eventually(lambda: len(_replicasets(cluster)) == 2)
    hashes = {rs["metadata"]["labels"]["pod-template-hash"] for rs in _replicasets(cluster)}
    assert len(hashes) == 1


async def test_scale_subresource_scales_up_and_a_deleted_pod_is_replaced(cluster):
    cluster.store.create("deployments", workload("Deployment", "web", replicas=1))
    await eventually(lambda: len(pods(cluster)) == 1)
    cluster.store.patch(
        "deployments", "web", {"spec": {"replicas": 3}}, "default", subresource="scale"
    )
    await eventually(lambda: len(pods(cluster)) == 3)
    victim = pods(cluster)[0]["metadata"]["name"]
    cluster.store.delete("pods", victim, "default")
    await eventually(
        lambda: (
            len(pods(cluster)) == 3 and victim not in {p["metadata"]["name"] for p in pods(cluster)}
        )
    )


async def test_scale_down_deletes_unassigned_then_pending_then_unready_pods(cluster):
    store = cluster.store
    store.create(
        "nodes", cloud_node("node-a", annotations={"sandbox.karpy.dev/kubelet": "stopped"})
    )
    store.create("nodes", cloud_node("node-b"))
    await eventually(lambda: node_ready(cluster, "node-b"))
    rs = store.create(
        "replicasets", workload("ReplicaSet", "web", replicas=4, node_selector={"x": "y"})
    )
    owner = {**f.owned_by(rs), "uid": rs["metadata"]["uid"]}
    template = rs["spec"]["template"]
    # Four pods the ReplicaSet owns, made by hand (before its controller runs) to control
    # their states: Ready, Running but not Ready, bound but Pending, and unassigned.
    nodes = {"ready": "node-b", "unready": "node-a", "pending": "node-a", "unassigned": None}
    for name, node in nodes.items():
        pod = {"metadata": {"name": name, "namespace": "default",
                            "labels": template["metadata"]["labels"], "ownerReferences": [owner]},
               "spec": {**template["spec"], **({"nodeName": node} if node else {})}}  # fmt: skip
        store.create("pods", pod)
    store.patch(
        "pods",
        "unready",
        {"status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z",
                    "conditions": [{"type": "Ready", "status": "False"}]}},
        "default",
        subresource="status",
    )  # fmt: skip
    await eventually(lambda: running(store.get("pods", "ready", "default")))

    def names() -> set[str]:
        return {p["metadata"]["name"] for p in live_pods(cluster)}

    for replicas, left in ((3, {"ready", "unready", "pending"}), (2, {"ready", "unready"}),
                           (1, {"ready"})):  # fmt: skip
        store.patch("replicasets", "web", {"spec": {"replicas": replicas}}, "default")
        await eventually(lambda: names() == left, what=f"{left} left")  # noqa: B023


async def test_a_changed_template_moves_all_replicas_to_a_new_replicaset(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("node-a", cpu="8"))
    store.create("deployments", workload("Deployment", "web", replicas=2))
    await eventually(lambda: len(pods(cluster)) == 2)
    store.patch(
        "deployments",
        "web",
        {"spec": {"template": {"metadata": {"labels": {"app": "web", "rev": "2"}}}}},
        "default",
    )
    await eventually(lambda: len(_replicasets(cluster)) == 2)
    by_replicas = {rs["metadata"]["labels"].get("rev", "1"): rs for rs in _replicasets(cluster)}
    assert by_replicas["2"]["spec"]["replicas"] == 2 and by_replicas["1"]["spec"]["replicas"] == 0
    assert by_replicas["2"]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    await eventually(
        lambda: (
            sorted(p["metadata"]["labels"].get("rev", "1") for p in pods(cluster)) == ["2", "2"]
        ),
        what="old pods gone, new pods created",
    )


async def test_deployment_status_reports_ready_replicas_as_kubectl_shows_them(cluster):
    store = cluster.store
    store.create("deployments", workload("Deployment", "web", replicas=2))
    await eventually(
        lambda: store.get("deployments", "web", "default").get("status", {}).get("replicas") == 2
    )
    status = store.get("deployments", "web", "default")["status"]
    assert status.get("readyReplicas") is None and status["unavailableReplicas"] == 2
    store.create("nodes", cloud_node("node-a"))
    done = await eventually(
        lambda: (
            (s := store.get("deployments", "web", "default")["status"]).get("availableReplicas")
            == 2
            and s
        )
    )
    assert done["observedGeneration"] == 1
    assert (done["replicas"], done["updatedReplicas"], done["readyReplicas"]) == (2, 2, 2)
    conditions = {c["type"]: (c["status"], c["reason"]) for c in done["conditions"]}
    assert conditions == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    rs = _replicasets(cluster)[0]
    assert rs["status"] == {
        "replicas": 2,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "observedGeneration": 1,
    }
