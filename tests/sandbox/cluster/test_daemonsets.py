"""DaemonSets: one pod per node the pod fits, kept in step with nodes and labels."""

from __future__ import annotations

from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, live_pods, node_ready, workload


def _daemons(cluster) -> dict[str, str]:
    return {p["spec"]["nodeName"]: p["metadata"]["name"] for p in live_pods(cluster, "app=agent")}


async def test_daemonset_gets_one_pod_per_matching_node(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("linux-a", labels={"os": "linux"}))
    store.create("nodes", cloud_node("linux-b", labels={"os": "linux"}))
    store.create("nodes", cloud_node("windows", labels={"os": "windows"}))
    store.create("nodes", cloud_node("tainted", labels={"os": "linux"},
                                     taints=[f.taint("dedicated", "gpu")]))  # fmt: skip
    ds = store.create("daemonsets", workload("DaemonSet", "agent", node_selector={"os": "linux"}))
    daemons = await eventually(lambda: len(d := _daemons(cluster)) == 2 and d)
    assert set(daemons) == {"linux-a", "linux-b"}
    pod = store.get("pods", daemons["linux-a"], "default")
    assert pod["metadata"]["name"].startswith("agent-")
    assert pod["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"} in (
        pod["spec"]["tolerations"]
    )
    status = await eventually(
        lambda: (s := store.get("daemonsets", "agent", "default").get("status", {})).get(
            "numberReady"
        ) == 2 and s
    )  # fmt: skip
    assert status["desiredNumberScheduled"] == status["currentNumberScheduled"] == 2
    assert status["numberMisscheduled"] == 0


async def test_daemon_pods_follow_nodes_that_come_and_stop_matching(cluster):
    store = cluster.store
    store.create("daemonsets", workload("DaemonSet", "agent", node_selector={"os": "linux"}))
    store.create("nodes", cloud_node("node-a", labels={"os": "linux"}))
    await eventually(lambda: set(_daemons(cluster)) == {"node-a"})
    store.create("nodes", cloud_node("node-b", labels={"os": "linux"}))
    await eventually(lambda: set(_daemons(cluster)) == {"node-a", "node-b"})

    store.patch("nodes", "node-a", {"metadata": {"labels": {"os": "windows"}}})
    await eventually(lambda: set(_daemons(cluster)) == {"node-b"})
    store.patch("nodes", "node-b", {"spec": {"taints": [f.taint("evict", effect="NoExecute")]}})
    await eventually(lambda: not _daemons(cluster))


async def test_a_new_noschedule_taint_does_not_evict_a_daemon_pod(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("node-a"))
    store.create("daemonsets", workload("DaemonSet", "agent"))
    await eventually(lambda: node_ready(cluster, "node-a") and set(_daemons(cluster)) == {"node-a"})
    before = _daemons(cluster)
    store.patch("nodes", "node-a", {"spec": {"taints": [f.taint("busy")]}})
    await eventually(
        lambda: (
            store.get("daemonsets", "agent", "default")["status"].get("desiredNumberScheduled") == 0
        )
    )
    assert _daemons(cluster) == before
