"""``POST /sandbox/v1/faults`` over real HTTP: the three actions and bad bodies."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest


async def _post(
    session: aiohttp.ClientSession, url: str, body: object
) -> tuple[int, dict[str, Any]]:
    async with session.post(f"{url}/sandbox/v1/faults", json=body) as response:
        return response.status, await response.json()


async def test_fail_makes_the_next_matching_requests_answer_the_status(apiserver):
    async with aiohttp.ClientSession() as session:
        status, body = await _post(
            session,
            apiserver.url,
            {"action": "fail", "method": "GET", "path": "/api/v1/pods", "status": 500, "count": 2},
        )
        assert status == 201 and body["action"] == "fail"
        assert body["fault"]["remaining"] == 2 and body["fault"]["status"] == 500
        codes = []
        for _ in range(3):
            async with session.get(f"{apiserver.url}/api/v1/pods") as response:
                codes.append(response.status)
        assert codes == [500, 500, 200]


async def test_a_glob_path_fails_every_matching_resource(apiserver):
    async with aiohttp.ClientSession() as session:
        await _post(session, apiserver.url, {"action": "fail", "path": "/api/v1/*", "status": 503})
        async with session.get(f"{apiserver.url}/api/v1/nodes") as response:
            assert response.status == 503
        # The faults endpoint itself is never subject to injected faults.
        await _post(session, apiserver.url, {"action": "fail", "path": "*", "count": None})
        status, _ = await _post(session, apiserver.url, {"action": "compact"})
        assert status == 200


async def test_drop_watches_cuts_open_watch_streams(apiserver):
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{apiserver.url}/api/v1/pods?watch=true") as watch,
    ):
        await asyncio.sleep(0.1)
        status, body = await _post(session, apiserver.url, {"action": "drop-watches"})
        assert (status, body) == (200, {"action": "drop-watches", "dropped": 1})
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(watch.content.read(), 10)


async def test_compact_makes_an_old_resource_version_too_old(apiserver):
    apiserver.store.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})
    old = apiserver.store.resource_version - 1
    async with aiohttp.ClientSession() as session:
        status, body = await _post(session, apiserver.url, {"action": "compact"})
        assert status == 200 and body["resourceVersion"] == apiserver.store.resource_version
        url = f"{apiserver.url}/api/v1/configmaps?watch=true&resourceVersion={old}"
        async with session.get(url) as watch:
            line = await asyncio.wait_for(watch.content.readline(), 10)
    assert b'"code":410' in line


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"action": "explode"}, "unknown fault action 'explode'"),
        ({}, "unknown fault action None"),
        ({"action": "fail"}, '"path" must be a URL path'),
        ({"action": "fail", "path": "/api", "status": 200}, '"status" must be an HTTP error'),
        ({"action": "fail", "path": "/api", "count": 0}, '"count" must be a positive number'),
        (["not", "an", "object"], "control requests take a JSON object"),
    ],
)
async def test_bad_bodies_answer_400_with_a_clear_message(apiserver, body, message):
    async with aiohttp.ClientSession() as session:
        status, answer = await _post(session, apiserver.url, body)
    assert status == 400
    assert answer["kind"] == "Status" and answer["reason"] == "BadRequest"
    assert message in answer["message"]


async def test_only_post_is_served(apiserver):
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{apiserver.url}/sandbox/v1/faults") as response:
            assert response.status == 405
        async with session.post(f"{apiserver.url}/sandbox/v1/other", json={}) as response:
            assert response.status == 404
