# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Namespace lifecycle: Terminating, content removal, admission refusals."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, status_of


async def test_deleting_a_namespace_terminates_then_removes_it_and_its_content(
    apiserver, kube_api_client
):
    v1 = client.CoreV1Api(kube_api_client)
    created = await v1.create_namespace({"metadata": {"name": "team"}})
    assert created.status.phase == "Active" and created.spec.finalizers == ["kubernetes"]
    assert created.metadata.labels == {"kubernetes.io/metadata.name": "team"}
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver.store.create("configmaps", held)
    apiserver.store.create("configmaps", configmap("plain", namespace="team"))
    await v1.delete_namespace("team")
    terminating = await v1.read_namespace("team")
    assert terminating.status.phase == "Terminating" and terminating.metadata.deletion_timestamp
    await asyncio.sleep(0.2)
    assert apiserver.store.try_get("configmaps", "plain", "team") is None
    assert (
        apiserver.store.try_get("namespaces", "team") is not None
    )  # held by the finalized configmap
    apiserver.store.patch("configmaps", "held", {"metadata": {"finalizers": None}}, "team")
    for _ in range(40):
        await asyncio.sleep(0.05)
        if apiserver.store.try_get("namespaces", "team") is None:
            break
    assert apiserver.store.try_get("namespaces", "team") is None


async def test_creating_in_a_terminating_namespace_is_forbidden(apiserver, kube_api_client):
    v1 = client.CoreV1Api(kube_api_client)
    await v1.create_namespace({"metadata": {"name": "team"}})
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver.store.create("configmaps", held)
    await v1.delete_namespace("team")
    with pytest.raises(client.ApiException) as err:
        await v1.create_namespaced_config_map("team", configmap("new", namespace="team"))
    status = status_of(err.value)
    assert err.value.status == 403 and status["reason"] == "Forbidden"
    assert status["message"] == (
        'configmaps "new" is forbidden: unable to create new content in namespace team because it '
        "is being terminated"
    )


async def test_default_namespaces_cannot_be_deleted(kube_api_client):
    status, body, _ = await call(kube_api_client, "DELETE", "/api/v1/namespaces/default")
    assert status == 403 and body["reason"] == "Forbidden"


async def test_namespace_names_are_dns_labels(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "POST", "/api/v1/namespaces", {"metadata": {"name": "a.b"}}
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"
