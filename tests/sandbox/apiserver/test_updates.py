# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Optimistic concurrency and update rules."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, status_of

STALE = (
    'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply '
    "your changes to the latest version and try again"
)


async def test_put_with_stale_resource_version_is_conflict(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    first = await v1.create_namespaced_config_map("default", configmap("c"))
    await v1.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    first.data = {"b": "2"}
    with pytest.raises(client.ApiException) as err:
        await v1.replace_namespaced_config_map("c", "default", first)
    status = status_of(err.value)
    assert err.value.status == 409 and status["reason"] == "Conflict" and status["message"] == STALE


async def test_put_with_current_resource_version_succeeds_and_bumps_it(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    current = await v1.create_namespaced_config_map("default", configmap("c"))
    current.data = {"b": "2"}
    replaced = await v1.replace_namespaced_config_map("c", "default", current)
    assert replaced.data == {"b": "2"}
    assert int(replaced.metadata.resource_version) > int(current.metadata.resource_version)


async def test_patch_carrying_a_stale_resource_version_is_conflict(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    first = await v1.create_namespaced_config_map("default", configmap("c"))
    await v1.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    patch = {"metadata": {"resourceVersion": first.metadata.resource_version}, "data": {"b": "2"}}
    with pytest.raises(client.ApiException) as err:
        await v1.patch_namespaced_config_map("c", "default", patch)
    assert err.value.status == 409 and status_of(err.value)["message"] == STALE


async def test_update_that_changes_nothing_keeps_the_resource_version(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    current = await v1.create_namespaced_config_map("default", configmap("c", {"a": "1"}))
    again = await v1.patch_namespaced_config_map("c", "default", {"data": {"a": "1"}})
    assert again.metadata.resource_version == current.metadata.resource_version


async def test_put_name_must_match_url(kube_api_client):
    await client.CoreV1Api(kube_api_client).create_namespaced_config_map("default", configmap("c"))
    status, body, _ = await call(
        kube_api_client, "PUT", "/api/v1/namespaces/default/configmaps/c", configmap("d")
    )
    assert status == 400
    assert body["message"] == "the name of the object (d) does not match the name on the URL (c)"


async def test_put_to_missing_object_is_not_found_but_leases_are_created(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "PUT", "/api/v1/namespaces/default/configmaps/c", configmap("c")
    )
    assert status == 404 and body["message"] == 'configmaps "c" not found'
    lease = {
        "metadata": {"name": "leader", "namespace": "default"},
        "spec": {"holderIdentity": "a"},
    }
    created = await client.CoordinationV1Api(kube_api_client).replace_namespaced_lease(
        "leader", "default", lease
    )
    assert created.spec.holder_identity == "a" and created.metadata.uid


async def test_leader_election_style_lease_update_race_has_one_winner(kube_api_client):
    coordination = client.CoordinationV1Api(kube_api_client)
    lease = await coordination.create_namespaced_lease(
        "kube-system", {"metadata": {"name": "karpy"}, "spec": {"holderIdentity": "a"}}
    )
    lease.spec.holder_identity = "b"
    await coordination.replace_namespaced_lease("karpy", "kube-system", lease)
    lease.spec.holder_identity = "c"
    with pytest.raises(client.ApiException) as err:
        await coordination.replace_namespaced_lease("karpy", "kube-system", lease)
    assert err.value.status == 409
    current = await coordination.read_namespaced_lease("karpy", "kube-system")
    assert current.spec.holder_identity == "b"


async def test_creating_with_a_resource_version_is_refused(kube_api_client):
    body = configmap("c")
    body["metadata"]["resourceVersion"] = "5"
    status, payload, _ = await call(
        kube_api_client, "POST", "/api/v1/namespaces/default/configmaps", body
    )
    assert (
        status == 500
        and "resourceVersion should not be set on objects to be created" in payload["message"]
    )


async def test_dry_run_create_stores_nothing(apiserver, kube_api_client):
    status, body, _ = await call(
        kube_api_client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        configmap("c"),
        query=[("dryRun", "All")],
    )
    assert status == 201 and body["metadata"]["name"] == "c"
    assert apiserver.store.try_get("configmaps", "c", "default") is None
