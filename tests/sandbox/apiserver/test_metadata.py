# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Server-set metadata, naming and namespace rules (API conventions: ObjectMeta)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, pod, status_of


async def test_resource_versions_are_integer_strings_that_strictly_increase(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    seen = []
    for i in range(3):
        cm = await v1.create_namespaced_config_map("default", configmap(f"c{i}"))
        seen.append(cm.metadata.resource_version)
    cm = await v1.patch_namespaced_config_map("c0", "default", {"data": {"k": "v"}})
    seen.append(cm.metadata.resource_version)
    listed = await v1.list_namespaced_config_map("default")
    assert all(isinstance(rv, str) for rv in seen)
    numbers = [int(rv) for rv in seen]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert int(listed.metadata.resource_version) >= numbers[-1]


async def test_create_sets_uid_creation_timestamp_and_generation_one(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    created = await v1.create_namespaced_pod("default", pod("p"))
    assert created.metadata.uid and len(created.metadata.uid) == 36
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.generation == 1
    assert created.status.phase == "Pending" and created.status.qos_class == "BestEffort"


async def test_generation_bumps_on_spec_change_only(apiserver, kube_api_client):
    apps = client.AppsV1Api(kube_api_client)
    body = {
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    await apps.create_namespaced_deployment("default", body)
    labelled = await apps.patch_namespaced_deployment(
        "d", "default", {"metadata": {"labels": {"x": "y"}}}
    )
    assert labelled.metadata.generation == 1
    status = await apps.patch_namespaced_deployment_status(
        "d", "default", {"status": {"replicas": 1}}
    )
    assert status.metadata.generation == 1
    scaled = await apps.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2


async def test_namespace_defaults_from_url_and_mismatch_is_bad_request(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    body = configmap("c")
    del body["metadata"]["namespace"]
    created = await v1.create_namespaced_config_map("kube-system", body)
    assert created.metadata.namespace == "kube-system"
    with pytest.raises(client.ApiException) as err:
        await v1.create_namespaced_config_map("default", configmap("d", namespace="kube-system"))
    assert err.value.status == 400
    assert status_of(err.value)["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_generate_name_appends_five_random_characters(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    created = await v1.create_namespaced_config_map(
        "default", {"metadata": {"generateName": "job-"}}
    )
    assert created.metadata.name.startswith("job-") and len(created.metadata.name) == 9


async def test_duplicate_name_is_already_exists(kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    await v1.create_namespaced_config_map("default", configmap("c"))
    with pytest.raises(client.ApiException) as err:
        await v1.create_namespaced_config_map("default", configmap("c"))
    status = status_of(err.value)
    assert err.value.status == 409 and status["reason"] == "AlreadyExists"
    assert status["message"] == 'configmaps "c" already exists'
    assert status["details"] == {"name": "c", "kind": "configmaps"}


async def test_initial_namespaces_exist(kube_api_client):
    names = {
        ns.metadata.name for ns in (await client.CoreV1Api(kube_api_client).list_namespace()).items
    }
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


async def test_create_in_missing_namespace_is_not_found_for_the_namespace(kube_api_client):
    with pytest.raises(client.ApiException) as err:
        await client.CoreV1Api(kube_api_client).create_namespaced_config_map(
            "nope", configmap("c", namespace="nope")
        )
    status = status_of(err.value)
    assert err.value.status == 404 and status["message"] == 'namespaces "nope" not found'


async def test_invalid_label_is_unprocessable_with_field_causes(kube_api_client):
    with pytest.raises(client.ApiException) as err:
        await client.CoreV1Api(kube_api_client).create_namespaced_config_map(
            "default", configmap("c", labels={"app": "bad value"})
        )
    status = status_of(err.value)
    assert err.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith(
        'ConfigMap "c" is invalid: metadata.labels: Invalid value: "bad value": '
    )
    assert status["details"]["kind"] == "ConfigMap" and status["details"]["name"] == "c"
    assert status["details"]["causes"][0]["field"] == "metadata.labels"
    assert status["details"]["causes"][0]["reason"] == "FieldValueInvalid"


async def test_missing_name_is_required(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {}}
    )
    assert status == 422
    assert (
        body["message"]
        == 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is '
        "required"
    )


async def test_managed_fields_are_not_stored(kube_api_client):
    body = configmap("c")
    body["metadata"]["managedFields"] = [{"manager": "x", "operation": "Update"}]
    _, created, _ = await call(
        kube_api_client, "POST", "/api/v1/namespaces/default/configmaps", body
    )
    assert "managedFields" not in created["metadata"]


async def test_lists_carry_kind_and_api_version(kube_api_client):
    status, body, _ = await call(kube_api_client, "GET", "/apis/apps/v1/deployments")
    assert status == 200 and body["kind"] == "DeploymentList" and body["apiVersion"] == "apps/v1"
