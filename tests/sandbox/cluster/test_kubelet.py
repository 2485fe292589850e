"""The kubelet stand-in: nodes join, hold a lease, and run what is bound to them."""

from __future__ import annotations

from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, condition, node_ready, running


async def test_a_new_node_becomes_ready_with_addresses_and_a_lease(cluster):
    store = cluster.store
    created = store.create("nodes", cloud_node("node-a", labels={"kubernetes.io/arch": "arm64"}))
    await eventually(lambda: node_ready(cluster, "node-a"))
    node = store.get("nodes", "node-a")
    status = node["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
        "Ready": "True",
    }
    assert [a["type"] for a in status["addresses"]] == ["InternalIP", "Hostname"]
    assert status["nodeInfo"]["architecture"] == "arm64"
    assert status["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
    assert node["metadata"]["labels"]["kubernetes.io/os"] == "linux"
    lease = store.get("leases", "node-a", "kube-node-lease")
    assert lease["spec"]["holderIdentity"] == "node-a"
    assert lease["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]


async def test_a_stopped_kubelet_never_reports_and_its_pods_never_start(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("dead", annotations={"sandbox.karpy.dev/kubelet": "stopped"}))
    store.create("nodes", cloud_node("alive"))
    store.create("pods", f.pod("stuck", node_name="dead"))
    await eventually(lambda: node_ready(cluster, "alive"))
    assert not node_ready(cluster, "dead")
    assert store.try_get("leases", "dead", "kube-node-lease") is None
    assert store.get("pods", "stuck", "default")["status"]["phase"] == "Pending"


async def test_bound_pods_start_running_with_an_ip_and_ready_conditions(cluster):
    store = cluster.store
    store.create("nodes", cloud_node("node-a"))
    pod = f.pod("web", init_containers=[f.container("init")])
    store.create("pods", pod)
    started = await eventually(lambda: running(p := store.get("pods", "web", "default")) and p)
    status = started["status"]
    assert status["podIP"].startswith("10.") and status["startTime"]
    for kind in ("Initialized", "ContainersReady", "Ready", "PodScheduled"):
        assert condition(started, kind)["status"] == "True"
    assert status["containerStatuses"][0]["state"].keys() == {"running"}
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


async def test_a_deleted_node_lease_is_recreated(cluster):
    cluster.store.create("nodes", cloud_node("node-a"))
    await eventually(lambda: cluster.store.try_get("leases", "node-a", "kube-node-lease"))
    cluster.store.delete("leases", "node-a", "kube-node-lease")
    await eventually(lambda: cluster.store.try_get("leases", "node-a", "kube-node-lease"))
