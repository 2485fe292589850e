# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""Fault injection and the other test controls, in-process and over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client

from tests.sandbox.apiserver.helpers import (
    call,
    configmap,
    status_of,
    watch_lines,
    widget,
    widget_crd,
)

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("code", "reason"), [(500, "InternalError"), (409, "Conflict"), (410, "Expired")]
)
async def test_error_fault_answers_the_next_matching_request_only(
    apiserver, kube_api_client, code, reason
):
    apiserver.faults.error("GET", CMS, status=code)
    v1 = client.CoreV1Api(kube_api_client)
    with pytest.raises(client.ApiException) as err:
        await v1.list_namespaced_config_map("default")
    assert err.value.status == code and status_of(err.value)["reason"] == reason
    await v1.list_namespaced_config_map("default")


async def test_throttle_fault_sends_retry_after(apiserver, kube_api_client):
    apiserver.faults.throttle("*", "/api/v1/*", retry_after=3, count=2)
    for _ in range(2):
        status, body, headers = await call(kube_api_client, "GET", CMS)
        assert (
            status == 429
            and headers["Retry-After"] == "3"
            and body["details"]["retryAfterSeconds"] == 3
        )
    status, _, _ = await call(kube_api_client, "GET", CMS)
    assert status == 200


async def test_fault_matches_method_and_path(apiserver, kube_api_client):
    apiserver.faults.error("POST", CMS)
    status, _, _ = await call(kube_api_client, "GET", CMS)
    assert status == 200
    status, _, _ = await call(kube_api_client, "POST", CMS, configmap("c"))
    assert status == 500


async def test_drop_fault_cuts_the_connection(apiserver):
    # aiohttp (so kubernetes-asyncio too) silently retries an idempotent request once
    # when its connection drops, so it takes two drops for the caller to see one.
    fault = apiserver.faults.drop("GET", CMS, count=2)
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            async with session.get(apiserver.url + CMS) as resp:
                await resp.read()
        assert fault.hits == 2
        async with session.get(apiserver.url + CMS) as resp:
            assert resp.status == 200


async def test_latency_fault_delays_then_serves(apiserver, kube_api_client):
    fault = apiserver.faults.delay("GET", CMS, 0.2)
    status, _, _ = await call(kube_api_client, "GET", CMS)
    assert status == 200 and fault.hits == 1


async def test_gone_fault_on_a_watch_arrives_as_an_error_event(apiserver, kube_api_client):
    apiserver.faults.add("GET", CMS, status=410, watch=True)
    events = await watch_lines(kube_api_client, CMS, [])
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


async def test_storage_initializing_answers_429_on_first_custom_resource_requests(
    apiserver, kube_api_client
):
    apiserver.store.create("customresourcedefinitions", widget_crd())
    apiserver.store.create("widgets.example.com", widget("w"))
    apiserver.faults.storage_initializing(requests=1)
    path = "/apis/example.com/v1/namespaces/default/widgets"
    status, body, headers = await call(kube_api_client, "GET", path)
    assert (
        status == 429
        and body["message"] == "storage is (re)initializing"
        and headers["Retry-After"] == "1"
    )
    status, _, _ = await call(kube_api_client, "GET", path)
    assert status == 200
    status, _, _ = await call(kube_api_client, "GET", CMS)
    assert status == 200


async def test_drop_watches_ends_open_streams(apiserver, kube_api_client):
    apiserver.store.create("configmaps", configmap("a"))
    reader = asyncio.create_task(watch_lines(kube_api_client, CMS, [], wait_seconds=5))
    for _ in range(50):
        await asyncio.sleep(0.02)
        if list(apiserver.store_state.watchers()):
            break
    assert apiserver.drop_watches(abrupt=False) == 1
    events = await reader
    assert [e["type"] for e in events] == ["ADDED"]


async def test_http_controls_drive_faults_compaction_and_bookmarks(apiserver):
    async with aiohttp.ClientSession() as session:

        async def post(path: str, body: dict[str, Any], method: str = "POST") -> Any:
            async with session.request(
                method, apiserver.url + "/_emulator" + path, data=orjson.dumps(body)
            ) as resp:
                assert resp.status in (200, 201)
                return orjson.loads(await resp.read())

        fault = await post("/faults", {"method": "GET", "path": CMS, "status": 503})
        assert fault["id"] >= 1
        async with session.get(apiserver.url + CMS) as resp:
            assert resp.status == 503
        await post("/faults", {"method": "GET", "path": CMS, "status": 500})
        async with session.delete(apiserver.url + "/_emulator/faults") as resp:
            assert resp.status == 200
        async with session.get(apiserver.url + CMS) as resp:
            assert resp.status == 200
        compacted = await post("/compact", {})
        assert compacted["resourceVersion"] == apiserver.store.resource_version
        assert (await post("/bookmark-period", {"seconds": 0.5}, "PUT"))["seconds"] == 0.5
        assert apiserver.bookmark_period == 0.5
        async with session.get(apiserver.url + "/_emulator/state") as resp:
            state = orjson.loads(await resp.read())
        assert state["resourceVersion"] == apiserver.store.resource_version
        async with session.get(apiserver.url + "/_emulator/requests") as resp:
            counts = orjson.loads(await resp.read())
        assert counts[f"GET {CMS}"] == 2


async def test_abrupt_watch_drop_is_a_broken_stream_for_the_client(apiserver):
    apiserver.store.create("configmaps", configmap("a"))
    async with (
        aiohttp.ClientSession() as session,
        session.get(apiserver.url + CMS, params={"watch": "true"}) as resp,
    ):
        first = await resp.content.readline()
        assert first.startswith(b'{"type":"ADDED"')
        assert apiserver.drop_watches(abrupt=True) == 1
        with pytest.raises(aiohttp.ClientError):
            while await resp.content.readline():
                pass
