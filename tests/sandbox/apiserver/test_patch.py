# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""The three patch formats, and strategic merge with upstream's list strategies."""

from __future__ import annotations

from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, node, pod, widget, widget_crd

SMP = {"Content-Type": "application/strategic-merge-patch+json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
JSON = {"Content-Type": "application/json-patch+json"}
POD = "/api/v1/namespaces/default/pods/p"


async def test_merge_patch_merges_maps_deletes_nulls_and_replaces_lists(apiserver, kube_api_client):
    apiserver.store.create(
        "pods",
        pod(
            "p",
            labels={"a": "1", "b": "2"},
            containers=[{"name": "c1", "image": "x"}, {"name": "c2", "image": "y"}],
        ),
    )
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {
            "metadata": {"labels": {"a": None, "c": "3"}},
            "spec": {"containers": [{"name": "c3", "image": "z"}]},
        },
        headers=MERGE,
    )
    assert status == 200
    assert body["metadata"]["labels"] == {"b": "2", "c": "3"}
    assert [c["name"] for c in body["spec"]["containers"]] == ["c3"]


async def test_json_patch_applies_operations_and_failed_test_is_unprocessable(
    apiserver, kube_api_client
):
    apiserver.store.create("pods", pod("p", labels={"a": "1"}))
    ops = [
        {"op": "add", "path": "/metadata/labels/b", "value": "2"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "new"},
    ]
    status, body, _ = await call(kube_api_client, "PATCH", POD, ops, headers=JSON)
    assert status == 200 and body["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert body["spec"]["containers"][0]["image"] == "new"
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        [{"op": "test", "path": "/metadata/labels/a", "value": "9"}],
        headers=JSON,
    )
    assert status == 422 and body["reason"] == "Invalid"


async def test_strategic_merge_patch_merges_containers_by_name(apiserver, kube_api_client):
    apiserver.store.create(
        "pods",
        pod(
            "p",
            containers=[
                {"name": "app", "image": "v1", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "s"},
            ],
        ),
    )
    v1 = client.CoreV1Api(kube_api_client)
    patched = await v1.patch_namespaced_pod(
        "p",
        "default",
        {
            "spec": {
                "containers": [
                    {"name": "app", "image": "v2", "env": [{"name": "B", "value": "2"}]},
                    {"name": "extra", "image": "e"},
                ]
            }
        },
    )
    containers = {c.name: c for c in patched.spec.containers}
    assert [c.name for c in patched.spec.containers] == ["app", "side", "extra"]
    assert containers["app"].image == "v2"
    assert [(e.name, e.value) for e in containers["app"].env] == [("A", "1"), ("B", "2")]


async def test_strategic_delete_directive_removes_a_list_element(apiserver, kube_api_client):
    apiserver.store.create(
        "pods", pod("p", containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    )
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}},
        headers=SMP,
    )
    assert status == 200 and [c["name"] for c in body["spec"]["containers"]] == ["b"]


async def test_strategic_replace_directive_replaces_the_list(apiserver, kube_api_client):
    apiserver.store.create(
        "pods", pod("p", containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    )
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "z"}]}},
        headers=SMP,
    )
    assert status == 200 and [c["name"] for c in body["spec"]["containers"]] == ["c"]


async def test_strategic_patch_merges_status_conditions_by_type(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    v1 = client.CoreV1Api(kube_api_client)
    await v1.patch_namespaced_pod_status(
        "p",
        "default",
        {
            "status": {
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False"},
                ]
            }
        },
    )
    patched = await v1.patch_namespaced_pod_status(
        "p", "default", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    )
    assert [(c.type, c.status) for c in patched.status.conditions] == [
        ("PodScheduled", "True"),
        ("Ready", "True"),
    ]


async def test_strategic_patch_replaces_node_taints_which_are_atomic_upstream(
    apiserver, kube_api_client
):
    apiserver.store.create("nodes", node("n", taints=[{"key": "a", "effect": "NoSchedule"}]))
    patched = await client.CoreV1Api(kube_api_client).patch_node(
        "n", {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}}
    )
    assert [(t.key, t.effect) for t in patched.spec.taints] == [("b", "NoExecute")]


async def test_strategic_patch_merges_finalizers_as_a_set_and_deletes_from_primitive_list(
    apiserver, kube_api_client
):
    apiserver.store.create("pods", pod("p", finalizers=["a/x", "b/y"]))
    status, body, _ = await call(
        kube_api_client, "PATCH", POD, {"metadata": {"finalizers": ["b/y", "c/z"]}}, headers=SMP
    )
    assert body["metadata"]["finalizers"] == ["a/x", "b/y", "c/z"]
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a/x"]}},
        headers=SMP,
    )
    assert status == 200 and body["metadata"]["finalizers"] == ["b/y", "c/z"]


async def test_strategic_patch_merges_owner_references_by_uid(apiserver, kube_api_client):
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}
    apiserver.store.create("pods", pod("p", owner=ref))
    _status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {
            "metadata": {
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"}]
            }
        },
        headers=SMP,
    )
    assert [r["uid"] for r in body["metadata"]["ownerReferences"]] == ["u1", "u2"]


async def test_strategic_patch_on_a_custom_resource_is_unsupported_media_type(
    apiserver, kube_api_client
):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    apiserver.store.create("widgets.example.com", widget("w"))
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w",
        {"spec": {"a": 1}},
        headers=SMP,
    )
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


async def test_server_side_apply_is_refused_clearly(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    status, body, _ = await call(
        kube_api_client,
        "PATCH",
        POD,
        {"spec": {}},
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert status == 415 and "accepted media types include" in body["message"]
