# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""The status subresource splits spec from status, both ways."""

from __future__ import annotations

from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, pod, widget, widget_crd


async def test_status_write_changes_only_status(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    v1 = client.CoreV1Api(kube_api_client)
    patched = await v1.patch_namespaced_pod_status(
        "p",
        "default",
        {
            "status": {"phase": "Running"},
            "spec": {"nodeName": "hack"},
            "metadata": {"labels": {"x": "y"}},
        },
    )
    assert patched.status.phase == "Running"
    assert not patched.spec.node_name
    assert not patched.metadata.labels


async def test_status_changes_sent_to_the_main_resource_are_ignored(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    patched = await client.CoreV1Api(kube_api_client).patch_namespaced_pod(
        "p", "default", {"status": {"phase": "Running"}, "metadata": {"labels": {"x": "y"}}}
    )
    assert patched.status.phase == "Pending" and patched.metadata.labels == {"x": "y"}


async def test_create_resets_pod_status(kube_api_client):
    body = pod("p")
    body["status"] = {"phase": "Running"}
    created = await client.CoreV1Api(kube_api_client).create_namespaced_pod("default", body)
    assert created.status.phase == "Pending"


async def test_custom_resource_status_subresource_splits_and_never_bumps_generation(
    apiserver, kube_api_client
):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    custom = client.CustomObjectsApi(kube_api_client)
    body = widget("w", {"size": 1})
    body["status"] = {"ready": True}
    created = await custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", body
    )
    assert "status" not in created
    updated = await custom.patch_namespaced_custom_object_status(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w",
        {"status": {"ready": True}, "spec": {"size": 9}},
        _content_type="application/merge-patch+json",
    )
    assert updated["status"] == {"ready": True} and updated["spec"] == {"size": 1}
    assert updated["metadata"]["generation"] == 1
    main = await custom.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w",
        {"status": {"ready": False}, "spec": {"size": 2}},
        _content_type="application/merge-patch+json",
    )
    assert main["status"] == {"ready": True} and main["spec"] == {"size": 2}
    assert main["metadata"]["generation"] == 2


async def test_custom_resource_without_status_subresource_treats_status_as_data(
    apiserver, kube_api_client
):
    apiserver.store.create("customresourcedefinitions", widget_crd(status=False))
    custom = client.CustomObjectsApi(kube_api_client)
    body = widget("w")
    body["status"] = {"ready": True}
    created = await custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", body
    )
    assert created["status"] == {"ready": True}
    status, _, _ = await call(
        kube_api_client, "GET", "/apis/example.com/v1/namespaces/default/widgets/w/status"
    )
    assert status == 404


async def test_kind_without_status_has_no_status_endpoint(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("c"))
    status, body, _ = await call(
        kube_api_client, "GET", "/api/v1/namespaces/default/configmaps/c/status"
    )
    assert status == 404 and body["reason"] == "NotFound"


async def test_deployment_scale_subresource_reads_and_writes_replicas(kube_api_client):
    apps = client.AppsV1Api(kube_api_client)
    await apps.create_namespaced_deployment(
        "default",
        {
            "metadata": {"name": "d"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "x"}]},
                },
            },
        },
    )
    scale = await apps.read_namespaced_deployment_scale("d", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "app=d"
    await apps.patch_namespaced_deployment_scale("d", "default", {"spec": {"replicas": 4}})
    deployment = await apps.read_namespaced_deployment("d", "default")
    assert deployment.spec.replicas == 4 and deployment.metadata.generation == 2
