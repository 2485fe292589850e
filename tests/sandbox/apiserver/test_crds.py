# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""CustomResourceDefinitions register kinds; the 422 Status shape for schema errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors
from tests.sandbox.apiserver.helpers import call, widget, widget_crd

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}


async def test_creating_a_crd_registers_its_kind_in_discovery(kube_api_client):
    ext = client.ApiextensionsV1Api(kube_api_client)
    await ext.create_custom_resource_definition(widget_crd())
    status, resources, _ = await call(kube_api_client, "GET", "/apis/example.com/v1")
    assert status == 200
    names = {r["name"]: r for r in resources["resources"]}
    assert names["widgets"]["kind"] == "Widget" and names["widgets"]["namespaced"] is True
    assert names["widgets"]["shortNames"] == ["wg"] and names["widgets"]["categories"] == ["all"]
    assert "widgets/status" in names
    _, groups, _ = await call(kube_api_client, "GET", "/apis")
    assert any(g["name"] == "example.com" for g in groups["groups"])
    await asyncio.sleep(0.05)
    crd = await ext.read_custom_resource_definition("widgets.example.com")
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd.status.accepted_names.list_kind == "WidgetList"


async def test_custom_resources_round_trip_and_list_with_kind(apiserver, kube_api_client):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    custom = client.CustomObjectsApi(kube_api_client)
    created = await custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", widget("w", {"size": 3})
    )
    assert created["metadata"]["generation"] == 1 and created["kind"] == "Widget"
    listed = await custom.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert listed["kind"] == "WidgetList" and listed["items"][0]["kind"] == "Widget"


async def test_update_of_a_custom_resource_needs_a_resource_version(apiserver, kube_api_client):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    apiserver.store.create("widgets.example.com", widget("w"))
    status, body, _ = await call(
        kube_api_client, "PUT", "/apis/example.com/v1/namespaces/default/widgets/w", widget("w")
    )
    assert status == 422
    assert (
        body["message"]
        == 'Widget.example.com "w" is invalid: metadata.resourceVersion: Invalid value: 0: must '
        "be specified for an update"
    )


async def test_patching_a_custom_object_with_a_dict_needs_the_merge_content_type(
    apiserver, kube_api_client
):
    # kubernetes-asyncio sends a dict as a JSON patch unless told otherwise; a real
    # API server refuses that with this 400, and so does the emulator.
    apiserver.store.create("customresourcedefinitions", widget_crd())
    apiserver.store.create("widgets.example.com", widget("w"))
    custom = client.CustomObjectsApi(kube_api_client)
    with pytest.raises(client.ApiException) as err:
        await custom.patch_namespaced_custom_object(
            "example.com", "v1", "default", "widgets", "w", {"spec": {"a": 1}}
        )
    assert err.value.status == 400
    patched = await custom.patch_namespaced_custom_object(
        "example.com",
        "v1",
        "default",
        "widgets",
        "w",
        {"spec": {"a": 1}},
        _content_type="application/merge-patch+json",
    )
    assert patched["spec"] == {"a": 1}


async def test_cluster_scoped_custom_resources(apiserver, kube_api_client):
    apiserver.store.create("customresourcedefinitions", widget_crd(scope="Cluster"))
    custom = client.CustomObjectsApi(kube_api_client)
    created = await custom.create_cluster_custom_object(
        "example.com", "v1", "widgets", widget("w", namespace=None)
    )
    assert "namespace" not in created["metadata"]
    status, _, _ = await call(
        kube_api_client, "GET", "/apis/example.com/v1/namespaces/default/widgets"
    )
    assert status == 404


async def test_scale_subresource_reads_and_writes_the_replica_paths(apiserver, kube_api_client):
    apiserver.store.create("customresourcedefinitions", widget_crd(scale=True))
    body = widget("w", {"replicas": 2})
    apiserver.store.create("widgets.example.com", body)
    path = "/apis/example.com/v1/namespaces/default/widgets/w/scale"
    status, scale, _ = await call(kube_api_client, "GET", path)
    assert status == 200 and scale["kind"] == "Scale" and scale["spec"] == {"replicas": 2}
    status, scale, _ = await call(
        kube_api_client,
        "PATCH",
        path,
        {"spec": {"replicas": 5}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert status == 200 and scale["spec"]["replicas"] == 5
    assert apiserver.store.get("widgets.example.com", "w", "default")["spec"]["replicas"] == 5


async def test_printer_columns_are_served_as_a_table(apiserver, kube_api_client):
    apiserver.store.create(
        "customresourcedefinitions",
        widget_crd(
            columns=[
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {
                    "name": "Ready",
                    "type": "string",
                    "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
                },
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ]
        ),
    )
    body = widget("w", {"size": 3})
    apiserver.store.create("widgets.example.com", body)
    apiserver.store.patch(
        "widgets.example.com",
        "w",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        "default",
        subresource="status",
    )
    status, table, _ = await call(
        kube_api_client, "GET", "/apis/example.com/v1/namespaces/default/widgets", headers=TABLE
    )
    assert status == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Ready", "Age"]
    cells = table["rows"][0]["cells"]
    assert cells[:3] == ["w", 3, "True"] and cells[3].endswith("s")
    assert table["rows"][0]["object"]["metadata"]["name"] == "w"


async def test_deleting_a_crd_deletes_its_objects_and_unregisters_the_kind(
    apiserver, kube_api_client
):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    apiserver.store.create("widgets.example.com", widget("w"))
    await client.ApiextensionsV1Api(kube_api_client).delete_custom_resource_definition(
        "widgets.example.com"
    )
    for _ in range(40):
        await asyncio.sleep(0.05)
        if apiserver.store.try_get("customresourcedefinitions", "widgets.example.com") is None:
            break
    status, _, _ = await call(
        kube_api_client, "GET", "/apis/example.com/v1/namespaces/default/widgets"
    )
    assert status == 404


async def test_karpenter_crds_from_the_repository_are_served(kube_api_client):
    status, resources, _ = await call(kube_api_client, "GET", "/apis/karpenter.sh/v1")
    assert status == 200
    names = {r["name"] for r in resources["resources"]}
    assert {"nodepools", "nodeclaims", "nodepools/status", "nodepools/scale"} <= names


def test_schema_errors_render_as_kube_apiserver_invalid_status():
    err = errors.invalid(
        "NodePool",
        "karpenter.sh",
        "default",
        [
            FieldError.invalid(
                "spec.weight", 500, "spec.weight in body should be less than or equal to 100"
            ),
            FieldError.required("spec.template.spec.nodeClassRef"),
        ],
    )
    assert err.code == 422
    assert err.status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'NodePool.karpenter.sh "default" is invalid: [spec.weight: Invalid value: 500: '
        "spec.weight in body should be less than or equal to 100, "
        "spec.template.spec.nodeClassRef: Required value]",
        "reason": "Invalid",
        "details": {
            "name": "default",
            "group": "karpenter.sh",
            "kind": "NodePool",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: 500: spec.weight in body should be less than or "
                    "equal to 100",
                    "field": "spec.weight",
                },
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.template.spec.nodeClassRef",
                },
            ],
        },
        "code": 422,
    }


async def test_invalid_crd_is_rejected(kube_api_client):
    bad = widget_crd()
    bad["metadata"]["name"] = "wrong"
    status, body, _ = await call(
        kube_api_client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"


async def test_crd_with_an_uncompilable_rule_is_rejected_on_its_schema_path(
    apiserver, kube_api_client
):
    bad = widget_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.size() +"}],
            }
        },
    }
    status, body, _ = await call(
        kube_api_client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad
    )
    assert status == 422
    fields = [cause["field"] for cause in body["details"]["causes"]]
    assert fields and all(f.startswith("spec.versions[0].schema.openAPIV3Schema") for f in fields)
    assert apiserver.store.try_get("customresourcedefinitions", "widgets.example.com") is None


def _nodepool(name: str, **spec: Any) -> dict[str, Any]:
    template = {
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [],
        }
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }


async def test_custom_resource_schema_defaults_apply_on_create(kube_api_client):
    custom = client.CustomObjectsApi(kube_api_client)
    created = await custom.create_cluster_custom_object(
        "karpenter.sh", "v1", "nodepools", _nodepool("np")
    )
    assert created["spec"]["disruption"]["budgets"] == [{"nodes": "10%"}]
    assert created["spec"]["template"]["spec"]["expireAfter"] == "720h"


async def test_custom_resource_schema_violation_is_invalid_with_causes(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "POST", "/apis/karpenter.sh/v1/nodepools", _nodepool("np", weight=500)
    )
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"] == (
        'NodePool.karpenter.sh "np" is invalid: spec.weight: Invalid value: 500: spec.weight in '
        "body should be less than or equal to 100"
    )
    assert body["details"]["causes"][0]["field"] == "spec.weight"


async def test_strict_field_validation_refuses_fields_the_schema_prunes(kube_api_client):
    body = _nodepool("np", surprise=1)
    status, payload, _ = await call(
        kube_api_client,
        "POST",
        "/apis/karpenter.sh/v1/nodepools",
        body,
        query=[("fieldValidation", "Strict")],
    )
    assert (
        status == 400
        and payload["message"] == 'strict decoding error: unknown field "spec.surprise"'
    )
    status, created, headers = await call(
        kube_api_client, "POST", "/apis/karpenter.sh/v1/nodepools", body
    )
    assert status == 201 and "surprise" not in created["spec"]
    assert 'unknown field \\"spec.surprise\\"' in headers["Warning"]
