"""Profiling endpoints cannot be used to keep the controller busy: one CPU profile at a
time, profiles and heap snapshots a minimum interval apart, 429 with Retry-After
otherwise; turning tracing off is never refused."""

from __future__ import annotations

import asyncio
import tracemalloc
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from karpy.observability.profiling import Profiling
from tests.fixtures.waiting import eventually


class Clock:
    """Monotonic seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestClient[web.Request, web.Application], Clock]]:
    clock = Clock()
    app = web.Application()
    Profiling(clock=clock, min_interval=10.0).add_routes(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        yield client, clock
    tracemalloc.stop()


async def test_a_profile_right_after_another_is_refused_until_the_interval_passed(served):
    client, clock = served
    first = await client.get("/debug/pprof/profile?seconds=0.05&format=text")
    assert first.status == 200
    clock.now += 4
    again = await client.get("/debug/pprof/profile?seconds=0.05&format=text")
    assert again.status == 429
    assert again.headers["Retry-After"] == "6"
    clock.now += 6
    later = await client.get("/debug/pprof/profile?seconds=0.05&format=text")
    assert later.status == 200


async def test_only_one_profile_runs_at_a_time():
    profiling = Profiling(min_interval=0.0)
    app = web.Application()
    profiling.add_routes(app)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        long = asyncio.create_task(client.get("/debug/pprof/profile?seconds=2&format=text"))
        await eventually(lambda: profiling.busy)
        refused = await client.get("/debug/pprof/profile?seconds=0.01&format=text")
        assert refused.status == 429
        assert await refused.text() == "a profile is already being taken\n"
        assert int(refused.headers["Retry-After"]) >= 1
        assert (await long).status == 200


async def test_heap_snapshots_are_spaced_but_stopping_is_always_allowed(served):
    client, clock = served
    assert (await client.get("/debug/pprof/heap")).status == 200
    clock.now += 1
    refused = await client.get("/debug/pprof/heap?types=true")
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "9"
    stopped = await client.get("/debug/pprof/heap?stop=true")
    assert (stopped.status, await stopped.text()) == (200, "tracemalloc stopped\n")
    clock.now += 9
    assert (await client.get("/debug/pprof/heap?limit=3")).status == 200


async def test_a_refused_request_does_not_push_the_next_allowed_time_back(served):
    client, clock = served
    assert (await client.get("/debug/pprof/heap")).status == 200
    for _ in range(5):
        clock.now += 1
        assert (await client.get("/debug/pprof/heap")).status == 429
    clock.now += 5
    assert (await client.get("/debug/pprof/heap")).status == 200
