# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""pods/eviction against PodDisruptionBudgets, and pods/binding."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, pdb, pod, status_of

pytestmark = pytest.mark.parametrize("apiserver_options", [{"pod_termination": "immediate"}])


def _ready(apiserver, name: str, namespace: str = "default") -> None:
    current = apiserver.store.get("pods", name, namespace)
    current["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    apiserver.store.update_status("pods", current)


def _eviction(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
    }


async def _running_pods(apiserver, n: int, labels: dict[str, str]) -> None:
    for i in range(n):
        apiserver.store.create("pods", pod(f"p{i}", labels=labels, node="n1"))
        _ready(apiserver, f"p{i}")


async def _settle() -> None:
    await asyncio.sleep(0.05)


async def test_eviction_without_pdb_deletes_the_pod(apiserver, kube_api_client):
    await _running_pods(apiserver, 1, {"app": "a"})
    await client.CoreV1Api(kube_api_client).create_namespaced_pod_eviction(
        "p0", "default", _eviction("p0")
    )
    await _settle()
    assert apiserver.store.try_get("pods", "p0", "default") is None


async def test_eviction_blocked_by_budget_is_too_many_requests(apiserver, kube_api_client):
    await _running_pods(apiserver, 2, {"app": "a"})
    apiserver.store.create("poddisruptionbudgets", pdb("budget", {"app": "a"}, min_available=2))
    with pytest.raises(client.ApiException) as err:
        await client.CoreV1Api(kube_api_client).create_namespaced_pod_eviction(
            "p0", "default", _eviction("p0")
        )
    status = status_of(err.value)
    assert err.value.status == 429 and status["reason"] == "TooManyRequests"
    assert status["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert status["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget budget needs 2 healthy pods and has 2 currently",
        }
    ]
    assert apiserver.store.try_get("pods", "p0", "default") is not None


async def test_allowed_eviction_deletes_and_updates_budget_status(apiserver, kube_api_client):
    await _running_pods(apiserver, 3, {"app": "a"})
    apiserver.store.create("poddisruptionbudgets", pdb("budget", {"app": "a"}, min_available=2))
    await _settle()
    before = apiserver.store.get("poddisruptionbudgets", "budget", "default")["status"]
    assert (
        before["currentHealthy"],
        before["desiredHealthy"],
        before["disruptionsAllowed"],
        before["expectedPods"],
    ) == (3, 2, 1, 3)
    v1 = client.CoreV1Api(kube_api_client)
    await v1.create_namespaced_pod_eviction("p0", "default", _eviction("p0"))
    await _settle()
    assert apiserver.store.try_get("pods", "p0", "default") is None
    after = apiserver.store.get("poddisruptionbudgets", "budget", "default")["status"]
    assert (after["currentHealthy"], after["disruptionsAllowed"]) == (2, 0)
    assert (
        after["conditions"][0]["type"] == "DisruptionAllowed"
        and after["conditions"][0]["status"] == "False"
    )
    with pytest.raises(client.ApiException) as err:
        await v1.create_namespaced_pod_eviction("p1", "default", _eviction("p1"))
    assert err.value.status == 429


async def test_more_than_one_budget_is_an_internal_error(apiserver, kube_api_client):
    await _running_pods(apiserver, 1, {"app": "a", "tier": "web"})
    apiserver.store.create("poddisruptionbudgets", pdb("one", {"app": "a"}, max_unavailable=1))
    apiserver.store.create("poddisruptionbudgets", pdb("two", {"tier": "web"}, max_unavailable=1))
    with pytest.raises(client.ApiException) as err:
        await client.CoreV1Api(kube_api_client).create_namespaced_pod_eviction(
            "p0", "default", _eviction("p0")
        )
    assert err.value.status == 500
    assert status_of(err.value)["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
        "support."
    )


async def test_pending_pod_is_evicted_without_budget_check(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p0", labels={"app": "a"}))
    apiserver.store.create("poddisruptionbudgets", pdb("budget", {"app": "a"}, min_available=5))
    await client.CoreV1Api(kube_api_client).create_namespaced_pod_eviction(
        "p0", "default", _eviction("p0")
    )
    await _settle()
    assert apiserver.store.try_get("pods", "p0", "default") is None


async def test_percentages_scale_with_the_owning_controller(apiserver, kube_api_client):
    rs = apiserver.store.create(
        "replicasets",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {
                "replicas": 4,
                "selector": {"matchLabels": {"app": "a"}},
                "template": {
                    "metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": rs["metadata"]["uid"],
        "controller": True,
    }
    for i in range(4):
        apiserver.store.create("pods", pod(f"p{i}", labels={"app": "a"}, node="n1", owner=owner))
        if i < 3:
            _ready(apiserver, f"p{i}")
    apiserver.store.create(
        "poddisruptionbudgets", pdb("budget", {"app": "a"}, max_unavailable="30%")
    )
    await _settle()
    status = apiserver.store.get("poddisruptionbudgets", "budget", "default")["status"]
    # 30% of 4 rounds up to 2 unavailable: desired 2 healthy, 3 are, so 1 disruption.
    assert (
        status["expectedPods"],
        status["desiredHealthy"],
        status["currentHealthy"],
        status["disruptionsAllowed"],
    ) == (4, 2, 3, 1)


async def test_unmanaged_pods_with_a_percentage_budget_allow_no_disruption(
    apiserver, kube_api_client
):
    await _running_pods(apiserver, 2, {"app": "a"})
    apiserver.store.create("poddisruptionbudgets", pdb("budget", {"app": "a"}, min_available="50%"))
    await _settle()
    status = apiserver.store.get("poddisruptionbudgets", "budget", "default")["status"]
    assert status["disruptionsAllowed"] == 0 and status["conditions"][0]["reason"] == "SyncFailed"


async def test_evicted_pod_gets_a_disruption_target_condition(apiserver, kube_api_client):
    await _running_pods(apiserver, 1, {"app": "a"})
    apiserver.store.create(
        "pods", pod("held", labels={"app": "b"}, node="n1", finalizers=["example.com/hold"])
    )
    _ready(apiserver, "held")
    await client.CoreV1Api(kube_api_client).create_namespaced_pod_eviction(
        "held", "default", _eviction("held")
    )
    await _settle()
    held = apiserver.store.get("pods", "held", "default")
    assert held["metadata"]["deletionTimestamp"]
    target = [c for c in held["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["reason"] == "EvictionByEvictionAPI"


async def test_binding_assigns_the_node_and_refuses_a_second_binding(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    v1 = client.CoreV1Api(kube_api_client)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p"},
        "target": {"kind": "Node", "name": "n1"},
    }
    await v1.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    bound = await v1.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "n1"
    assert [(c.type, c.status) for c in bound.status.conditions] == [("PodScheduled", "True")]
    status, body, _ = await call(
        kube_api_client, "POST", "/api/v1/namespaces/default/pods/p/binding", binding
    )
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )


async def test_binding_clears_the_nominated_node_name(apiserver, kube_api_client):
    # kube-apiserver 1.35+ (ClearingNominatedNodeNameAfterBinding, on by default): the
    # binding ends a nomination in the same write, wherever the pod was nominated.
    apiserver.store.create("pods", pod("p"))
    apiserver.store.patch(
        "pods", "p", {"status": {"nominatedNodeName": "n2"}}, "default", subresource="status"
    )
    binding = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    v1 = client.CoreV1Api(kube_api_client)
    await v1.create_namespaced_pod_binding("p", "default", binding, _preload_content=False)
    bound = apiserver.store.get("pods", "p", "default")
    assert bound["spec"]["nodeName"] == "n1"
    assert "nominatedNodeName" not in bound["status"]
