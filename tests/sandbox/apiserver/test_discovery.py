# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Discovery, version, health and the OpenAPI v3 documents kubectl reads."""

from __future__ import annotations

from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call


async def test_version_reports_a_1_3x_server(kube_api_client):
    info = await client.VersionApi(kube_api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.3")


async def test_core_resource_list_describes_pods_and_subresources(kube_api_client):
    resources = await client.CoreV1Api(kube_api_client).get_api_resources()
    by_name = {r.name: r for r in resources.resources}
    assert (
        by_name["pods"].kind == "Pod"
        and by_name["pods"].namespaced
        and "watch" in by_name["pods"].verbs
    )
    assert by_name["nodes"].namespaced is False
    assert (
        by_name["pods/eviction"].group == "policy" and by_name["pods/eviction"].kind == "Eviction"
    )
    assert by_name["pods/binding"].verbs == ["create"]


async def test_group_list_has_preferred_versions(kube_api_client):
    groups = await client.ApisApi(kube_api_client).get_api_versions()
    names = {g.name: g for g in groups.groups}
    assert {
        "apps",
        "policy",
        "coordination.k8s.io",
        "storage.k8s.io",
        "node.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
        "karpenter.sh",
    } <= set(names)
    assert names["apps"].preferred_version.group_version == "apps/v1"


async def test_health_endpoints_answer_ok(kube_api_client):
    for path in ("/healthz", "/readyz", "/livez"):
        status, body, _ = await call(kube_api_client, "GET", path)
        assert status == 200 and body == "ok"


async def test_openapi_v3_declares_field_validation_on_patch(kube_api_client):
    status, index, _ = await call(kube_api_client, "GET", "/openapi/v3")
    assert status == 200 and "api/v1" in index["paths"] and "apis/karpenter.sh/v1" in index["paths"]
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    path, _, query = url.partition("?")
    status, doc, _ = await call(kube_api_client, "GET", path, query=[tuple(query.split("=", 1))])
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in patch["parameters"])


async def test_unknown_paths_are_not_found_statuses(kube_api_client):
    status, body, _ = await call(kube_api_client, "GET", "/apis/nope.example.com/v1/things")
    assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
    status, body, _ = await call(
        kube_api_client, "PUT", "/api/v1/namespaces/default/configmaps", {}
    )
    assert status == 405 and body["reason"] == "MethodNotAllowed"
