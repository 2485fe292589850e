# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""WATCH: initial events, replay, 410 Expired, bookmarks, timeouts, selector transitions."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kubernetes_asyncio import client, watch

from tests.sandbox.apiserver.helpers import configmap, pod, watch_lines

CMS = "/api/v1/namespaces/default/configmaps"


async def test_watch_from_zero_sends_current_objects_as_added_then_live_events(
    apiserver, kube_api_client
):
    apiserver.store.create("configmaps", configmap("a"))
    v1 = client.CoreV1Api(kube_api_client)

    async def later():
        await asyncio.sleep(0.2)
        apiserver.store.create("configmaps", configmap("b"))

    task = asyncio.create_task(later())
    stream = watch.Watch().stream(
        v1.list_namespaced_config_map, "default", resource_version="0", timeout_seconds=1
    )
    seen = [(event["type"], event["object"].metadata.name) async for event in stream]
    await task
    assert seen == [("ADDED", "a"), ("ADDED", "b")]


async def test_watch_from_a_version_replays_history_after_it(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    mark = str(apiserver.store.resource_version)
    apiserver.store.patch("configmaps", "a", {"data": {"k": "v"}}, "default")
    apiserver.store.create("configmaps", configmap("b"))
    apiserver.store.delete("configmaps", "a", "default")
    events = await watch_lines(kube_api_client, CMS, [("resourceVersion", mark)], count=3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"),
        ("ADDED", "b"),
        ("DELETED", "a"),
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and versions[0] > int(mark)


async def test_watch_from_a_compacted_version_gets_an_expired_error_event(
    apiserver, kube_api_client
):
    apiserver.store.create("configmaps", configmap("a"))
    old = apiserver.store.resource_version
    apiserver.store.create("configmaps", configmap("b"))
    floor = apiserver.compact()
    events = await watch_lines(kube_api_client, CMS, [("resourceVersion", str(old))])
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"] == f"too old resource version: {old} ({floor})"


@pytest.mark.parametrize("apiserver_options", [{"history_size": 3}])
async def test_watch_older_than_the_history_window_expires(apiserver, kube_api_client):
    start = apiserver.store.resource_version
    for i in range(6):
        apiserver.store.create("configmaps", configmap(f"c{i}"))
    events = await watch_lines(kube_api_client, CMS, [("resourceVersion", str(start))])
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    recent = apiserver.store.resource_version - 2
    events = await watch_lines(kube_api_client, CMS, [("resourceVersion", str(recent))], count=2)
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]


async def test_kubernetes_asyncio_raises_gone_for_the_expired_watch(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    old = apiserver.store.resource_version
    apiserver.store.create("configmaps", configmap("b"))
    apiserver.compact()
    v1 = client.CoreV1Api(kube_api_client)
    with pytest.raises(client.ApiException) as err:
        async for _ in watch.Watch().stream(
            v1.list_namespaced_config_map, "default", resource_version=str(old)
        ):
            pass
    assert err.value.status == 410


@pytest.mark.parametrize("apiserver_options", [{"bookmark_period": 0.1}])
async def test_bookmarks_carry_only_the_current_resource_version(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    rv = str(apiserver.store.resource_version)
    events = await watch_lines(
        kube_api_client, CMS, [("resourceVersion", rv), ("allowWatchBookmarks", "true")], count=2
    )
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert events[0]["object"] == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": rv},
    }


async def test_send_initial_events_ends_with_an_annotated_bookmark(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    apiserver.store.create("configmaps", configmap("b"))
    events = await watch_lines(
        kube_api_client,
        CMS,
        [
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
        ],
        count=3,
    )
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    bookmark = events[2]["object"]["metadata"]
    assert bookmark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["resourceVersion"] == str(apiserver.store.resource_version)


async def test_server_closes_the_stream_after_timeout_seconds(apiserver, kube_api_client):
    loop = asyncio.get_running_loop()
    started = loop.time()
    events = await watch_lines(
        kube_api_client,
        CMS,
        [("resourceVersion", str(apiserver.store.resource_version)), ("timeoutSeconds", "1")],
        wait_seconds=10,
    )
    assert events == []
    assert loop.time() - started < 9  # ended by the server, not by the client's guard


async def test_selector_transitions_become_added_and_deleted(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a", labels={"team": "x"}))
    rv = str(apiserver.store.resource_version)
    apiserver.store.patch("configmaps", "a", {"metadata": {"labels": {"team": "y"}}}, "default")
    apiserver.store.patch("configmaps", "a", {"data": {"k": "v"}}, "default")
    apiserver.store.patch("configmaps", "a", {"metadata": {"labels": {"team": "x"}}}, "default")
    apiserver.store.patch("configmaps", "a", {"data": {"k": "w"}}, "default")
    events = await watch_lines(
        kube_api_client,
        CMS,
        [("resourceVersion", rv), ("labelSelector", "team=x")],
        count=3,
    )
    assert [e["type"] for e in events] == ["DELETED", "ADDED", "MODIFIED"]
    assert events[0]["object"]["metadata"]["labels"] == {"team": "x"}  # the previous object


async def test_named_watch_and_legacy_watch_path(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    apiserver.store.create("configmaps", configmap("b"))
    named = await watch_lines(kube_api_client, CMS, [("fieldSelector", "metadata.name=b")], count=1)
    assert [e["object"]["metadata"]["name"] for e in named] == ["b"]
    legacy = await watch_lines(
        kube_api_client, "/api/v1/watch/namespaces/default/configmaps/a", [], count=1
    )
    assert [e["object"]["metadata"]["name"] for e in legacy] == ["a"]


@pytest.mark.parametrize("flag", ["1", "True", "true"])
async def test_every_spelling_of_watch_true_watches(apiserver, kube_api_client, flag):
    apiserver.store.create("configmaps", configmap("a"))
    resp = await kube_api_client.rest_client.request(
        "GET",
        f"{apiserver.url}{CMS}",
        query_params=[("watch", flag), ("timeoutSeconds", "1")],
        headers={"Accept": "application/json"},
        _preload_content=False,
    )
    line = await resp.content.readline()
    resp.release()
    assert line.startswith(b'{"type":"ADDED"')


async def test_pod_watch_by_node_name_sees_binding(apiserver, kube_api_client):
    apiserver.store.create("pods", pod("p"))
    rv = str(apiserver.store.resource_version)
    apiserver.store.bind("p", "n1")
    events = await watch_lines(
        kube_api_client,
        "/api/v1/pods",
        [("resourceVersion", rv), ("fieldSelector", "spec.nodeName=n1")],
        count=1,
    )
    assert [(e["type"], e["object"]["spec"]["nodeName"]) for e in events] == [("ADDED", "n1")]


async def test_a_client_that_goes_away_leaves_no_watcher_behind(apiserver):
    async with (
        aiohttp.ClientSession() as session,
        session.get(apiserver.url + CMS, params={"watch": "true"}) as resp,
    ):
        assert resp.status == 200
        assert len(list(apiserver.store_state.watchers())) == 1
    for _ in range(50):
        await asyncio.sleep(0.02)
        if not list(apiserver.store_state.watchers()):
            break
    assert list(apiserver.store_state.watchers()) == []
