# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Deletion: finalizers, preconditions, graceful pod deletion, collections."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, pod, status_of


async def test_delete_with_finalizers_sets_deletion_timestamp_and_keeps_the_object(
    apiserver, kube_api_client
):
    body = configmap("c")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver.store.create("configmaps", body)
    status, deleted, _ = await call(
        kube_api_client, "DELETE", "/api/v1/namespaces/default/configmaps/c"
    )
    assert status == 200 and deleted["metadata"]["deletionTimestamp"]
    assert deleted["metadata"]["deletionGracePeriodSeconds"] == 0
    still = await client.CoreV1Api(kube_api_client).read_namespaced_config_map("c", "default")
    assert still.metadata.deletion_timestamp is not None


async def test_finalizers_cannot_be_added_once_deleting_and_removing_the_last_deletes(
    apiserver, kube_api_client
):
    body = configmap("c")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver.store.create("configmaps", body)
    v1 = client.CoreV1Api(kube_api_client)
    await v1.delete_namespaced_config_map("c", "default")
    with pytest.raises(client.ApiException) as err:
        await v1.patch_namespaced_config_map(
            "c", "default", {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}
        )
    status = status_of(err.value)
    assert err.value.status == 422
    assert status["message"] == (
        'ConfigMap "c" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
        "if "
        'the object is being deleted, found new finalizers []string{"example.com/more"}'
    )
    await v1.patch_namespaced_config_map(
        "c", "default", {"metadata": {"$patch": "merge", "finalizers": None}}
    )
    with pytest.raises(client.ApiException) as gone:
        await v1.read_namespaced_config_map("c", "default")
    assert gone.value.status == 404


async def test_delete_preconditions_on_uid_and_resource_version_conflict(
    apiserver, kube_api_client
):
    created = apiserver.store.create("configmaps", configmap("c"))
    v1 = client.CoreV1Api(kube_api_client)
    with pytest.raises(client.ApiException) as err:
        await v1.delete_namespaced_config_map(
            "c", "default", body={"preconditions": {"uid": "other"}}
        )
    assert err.value.status == 409
    assert status_of(err.value)["message"] == (
        f'Operation cannot be fulfilled on configmaps "c": Precondition failed: UID in '
        f"precondition: "
        f"other, UID in object meta: {created['metadata']['uid']}"
    )
    with pytest.raises(client.ApiException) as err:
        await v1.delete_namespaced_config_map(
            "c", "default", body={"preconditions": {"resourceVersion": "1"}}
        )
    assert err.value.status == 409
    await v1.delete_namespaced_config_map(
        "c", "default", body={"preconditions": {"uid": created["metadata"]["uid"]}}
    )
    assert apiserver.store.try_get("configmaps", "c", "default") is None


async def test_delete_of_a_configmap_answers_a_success_status(apiserver, kube_api_client):
    created = apiserver.store.create("configmaps", configmap("c"))
    status, body, _ = await call(
        kube_api_client, "DELETE", "/api/v1/namespaces/default/configmaps/c"
    )
    assert status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"] == {"name": "c", "kind": "configmaps", "uid": created["metadata"]["uid"]}


async def test_delete_of_unbound_pod_is_immediate(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    await client.CoreV1Api(kube_api_client).delete_namespaced_pod("p", "default")
    assert apiserver.store.try_get("pods", "p", "default") is None


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "manual"}])
async def test_graceful_delete_of_bound_pod_waits_for_the_kubelet(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p", node="n1", grace=45))
    v1 = client.CoreV1Api(kube_api_client)
    marked = await v1.delete_namespaced_pod("p", "default")
    assert marked.metadata.deletion_grace_period_seconds == 45
    assert marked.metadata.deletion_timestamp is not None
    assert apiserver.store.try_get("pods", "p", "default") is not None
    shorter = await v1.delete_namespaced_pod("p", "default", grace_period_seconds=5)
    assert shorter.metadata.deletion_grace_period_seconds == 5
    await v1.delete_namespaced_pod("p", "default", grace_period_seconds=0)
    assert apiserver.store.try_get("pods", "p", "default") is None


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "graceful"}])
async def test_emulated_kubelet_finishes_graceful_deletion_after_the_grace_period(
    apiserver, kube_api_client
):
    apiserver.store.create("pods", pod("p", node="n1", grace=1))
    await client.CoreV1Api(kube_api_client).delete_namespaced_pod("p", "default")
    assert apiserver.store.try_get("pods", "p", "default") is not None
    for _ in range(60):
        await asyncio.sleep(0.05)
        if apiserver.store.try_get("pods", "p", "default") is None:
            break
    assert apiserver.store.try_get("pods", "p", "default") is None


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "immediate"}])
async def test_immediate_termination_shows_deletion_timestamp_then_deleted(
    apiserver, kube_api_client
):
    apiserver.store.create("pods", pod("p", node="n1"))
    marked = await client.CoreV1Api(kube_api_client).delete_namespaced_pod("p", "default")
    assert marked.metadata.deletion_timestamp is not None
    await asyncio.sleep(0.05)
    assert apiserver.store.try_get("pods", "p", "default") is None


async def test_delete_collection_honours_label_selector(apiserver, kube_api_client):
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        apiserver.store.create("configmaps", configmap(name, labels={"team": team}))
    await client.CoreV1Api(kube_api_client).delete_collection_namespaced_config_map(
        "default", label_selector="team=x"
    )
    left = [c["metadata"]["name"] for c in apiserver.store.list("configmaps", "default")]
    assert left == ["c"]


async def test_propagation_policy_is_accepted(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("c"))
    await client.CoreV1Api(kube_api_client).delete_namespaced_config_map(
        "c", "default", propagation_policy="Foreground"
    )
    assert apiserver.store.try_get("configmaps", "c", "default") is None
