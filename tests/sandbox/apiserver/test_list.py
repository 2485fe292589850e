# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""LIST: paging, resourceVersion semantics, label and field selectors."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import call, configmap, pod, status_of, watch_lines

CMS = "/api/v1/namespaces/default/configmaps"


async def _configmaps(apiserver, n: int) -> None:
    for i in range(n):
        apiserver.store.create("configmaps", configmap(f"c{i:02d}", labels={"i": str(i)}))


async def test_paging_returns_every_item_once_from_one_snapshot(apiserver, kube_api_client):
    await _configmaps(apiserver, 7)
    v1 = client.CoreV1Api(kube_api_client)
    first = await v1.list_namespaced_config_map("default", limit=3)
    assert len(first.items) == 3 and first.metadata._continue
    assert first.metadata.remaining_item_count == 4
    apiserver.store.create("configmaps", configmap("c99"))
    apiserver.store.delete("configmaps", "c05", "default")
    names = [c.metadata.name for c in first.items]
    token = first.metadata._continue
    while token:
        page = await v1.list_namespaced_config_map("default", limit=3, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
    assert names == [f"c{i:02d}" for i in range(7)]


async def test_expired_continue_token_is_gone_with_a_fresh_token(apiserver, kube_api_client):
    await _configmaps(apiserver, 4)
    v1 = client.CoreV1Api(kube_api_client)
    first = await v1.list_namespaced_config_map("default", limit=2)
    apiserver.store.create("configmaps", configmap("later"))
    apiserver.compact()
    with pytest.raises(client.ApiException) as err:
        await v1.list_namespaced_config_map("default", limit=2, _continue=first.metadata._continue)
    status = status_of(err.value)
    assert err.value.status == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("The provided continue parameter is too old")
    rest = await v1.list_namespaced_config_map("default", _continue=status["metadata"]["continue"])
    assert [c.metadata.name for c in rest.items] == ["c02", "c03", "later"]


async def test_exact_resource_version_lists_the_past_and_expires_after_compaction(
    apiserver, kube_api_client
):
    await _configmaps(apiserver, 2)
    v1 = client.CoreV1Api(kube_api_client)
    then = (await v1.list_namespaced_config_map("default")).metadata.resource_version
    apiserver.store.create("configmaps", configmap("new"))
    apiserver.store.delete("configmaps", "c00", "default")
    past = await v1.list_namespaced_config_map(
        "default", resource_version=then, resource_version_match="Exact"
    )
    assert [c.metadata.name for c in past.items] == ["c00", "c01"]
    assert past.metadata.resource_version == then
    apiserver.compact()
    with pytest.raises(client.ApiException) as err:
        await v1.list_namespaced_config_map(
            "default", resource_version=then, resource_version_match="Exact"
        )
    assert err.value.status == 410
    assert (
        status_of(err.value)["message"] == "The resourceVersion for the provided list is too old."
    )


async def test_resource_version_match_without_resource_version_is_invalid(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "GET", CMS, query=[("resourceVersionMatch", "Exact")]
    )
    assert status == 422 and body["details"]["causes"][0]["field"] == "resourceVersionMatch"


async def test_not_older_than_a_future_version_times_out(kube_api_client):
    status, body, _ = await call(kube_api_client, "GET", CMS, query=[("resourceVersion", "999999")])
    assert status == 504 and body["message"].startswith("Too large resource version: 999999")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=web", {"a", "b"}),
        ("tier==web", {"a", "b"}),
        ("tier!=web", {"c", "d"}),
        ("tier in (web,db)", {"a", "b", "c"}),
        ("tier notin (web)", {"c", "d"}),
        ("env", {"a", "c"}),
        ("!env", {"b", "d"}),
        ("tier=web,env=prod", {"a"}),
        ("tier in (web), !env", {"b"}),
        ("", {"a", "b", "c", "d"}),
    ],
)
async def test_label_selector_grammar(apiserver, kube_api_client, selector, expected):
    for name, labels in {
        "a": {"tier": "web", "env": "prod"},
        "b": {"tier": "web"},
        "c": {"tier": "db", "env": "dev"},
        "d": {},
    }.items():
        apiserver.store.create("configmaps", configmap(name, labels=labels))
    found = await client.CoreV1Api(kube_api_client).list_namespaced_config_map(
        "default", label_selector=selector
    )
    assert {c.metadata.name for c in found.items} == expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in x", "unable to parse requirement: found 'x' expected: '('"),
        ("a=b,", "found '', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("=b", "found '=', expected: !, identifier, or 'end of string'"),
    ],
)
async def test_label_selector_parse_errors_are_bad_requests(kube_api_client, selector, message):
    status, body, _ = await call(kube_api_client, "GET", CMS, query=[("labelSelector", selector)])
    assert status == 400 and body["reason"] == "BadRequest" and body["message"] == message


async def test_label_selector_rejects_invalid_values(kube_api_client):
    status, body, _ = await call(kube_api_client, "GET", CMS, query=[("labelSelector", "a=b$")])
    assert status == 400
    assert body["message"].startswith(
        'unable to parse requirement: values[0][a]: Invalid value: "b$": a valid label'
    )


async def test_field_selectors_on_pods(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("a", node="n1"))
    apiserver.store.create("pods", pod("b", node="n2"))
    apiserver.store.create("pods", pod("c", namespace="kube-system", node="n1"))
    v1 = client.CoreV1Api(kube_api_client)
    on_n1 = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert sorted(p.metadata.name for p in on_n1.items) == ["a", "c"]
    named = await v1.list_pod_for_all_namespaces(
        field_selector="metadata.name=b,status.phase=Pending"
    )
    assert [p.metadata.name for p in named.items] == ["b"]
    not_default = await v1.list_pod_for_all_namespaces(field_selector="metadata.namespace!=default")
    assert [p.metadata.name for p in not_default.items] == ["c"]
    unbound = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert unbound.items == []


async def test_unsupported_field_label_is_bad_request(kube_api_client):
    status, body, _ = await call(
        kube_api_client, "GET", "/api/v1/pods", query=[("fieldSelector", "spec.foo=bar")]
    )
    assert status == 400
    assert body["message"] == (
        'Unable to find "/v1, Resource=pods" that match label selector "", field selector '
        '"spec.foo=bar": field label not supported: spec.foo'
    )


async def test_event_field_selectors_on_involved_object(apiserver, kube_api_client):
    for name, target in (("e1", "p1"), ("e2", "p2")):
        apiserver.store.create(
            "events",
            {
                "metadata": {"name": name, "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": target},
                "reason": "X",
            },
        )
    found = await client.CoreV1Api(kube_api_client).list_namespaced_event(
        "default", field_selector="involvedObject.name=p2,involvedObject.kind=Pod"
    )
    assert [e.metadata.name for e in found.items] == ["e2"]


async def test_typed_list_items_omit_kind_but_custom_ones_keep_it(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("c"))
    _, body, _ = await call(kube_api_client, "GET", CMS)
    assert "kind" not in body["items"][0] and body["kind"] == "ConfigMapList"


async def test_events_written_through_events_k8s_io_are_core_events_too(apiserver, kube_api_client):
    events = client.EventsV1Api(kube_api_client)
    await events.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "ev"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "reason": "Launched",
            "note": "launched a node",
            "regarding": {"kind": "NodeClaim", "name": "nc"},
            "reportingController": "karpy",
            "reportingInstance": "karpy-0",
            "action": "Launch",
            "type": "Normal",
        },
    )
    core = await client.CoreV1Api(kube_api_client).read_namespaced_event("ev", "default")
    assert core.message == "launched a node" and core.involved_object.name == "nc"
    assert core.reporting_component == "karpy"


async def test_node_name_index_follows_binding_and_deletion(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("a"))
    apiserver.store.create("pods", pod("b", node="n1"))
    v1 = client.CoreV1Api(kube_api_client)
    unbound = await v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert [p.metadata.name for p in unbound.items] == ["a"]
    apiserver.store.bind("a", "n1")
    on_n1 = await v1.list_namespaced_pod("default", field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in on_n1.items] == ["a", "b"]
    apiserver.store.delete("pods", "b", "default", grace_period_seconds=0)
    on_n1 = await v1.list_namespaced_pod("default", field_selector="spec.nodeName=n1", limit=1)
    assert [p.metadata.name for p in on_n1.items] == ["a"] and not on_n1.metadata._continue


@pytest.mark.parametrize("apiserver_options", [{"compaction_interval": 0.05}])
async def test_periodic_compaction_expires_old_lists_but_keeps_the_watch_window(
    apiserver, kube_api_client
):
    apiserver.store.create("configmaps", configmap("a"))
    old = str(apiserver.store.resource_version)
    apiserver.store.create("configmaps", configmap("b"))
    await asyncio.sleep(0.3)
    v1 = client.CoreV1Api(kube_api_client)
    with pytest.raises(client.ApiException) as err:
        await v1.list_namespaced_config_map(
            "default", resource_version=old, resource_version_match="Exact"
        )
    assert err.value.status == 410
    events = await watch_lines(kube_api_client, CMS, [("resourceVersion", old)], count=1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b")]
