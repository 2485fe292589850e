"""`WorkQueue`: client-go's workqueue contract on asyncio."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from karpy.observability.controller_metrics import ControllerMetrics
from karpy.reconcile.queue import QueueShutDown, WorkQueue
from tests.kube.fakeclock import FakeClock


async def take_all(queue: WorkQueue[str]) -> list[str]:
    keys = []
    while len(queue):
        key = await queue.get()
        keys.append(key)
        queue.done(key)
    return keys


async def test_a_key_added_many_times_is_queued_once():
    queue = WorkQueue[str]("q")
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    assert await take_all(queue) == ["a", "b"]


async def test_a_key_added_while_processing_comes_back_after_done():
    queue = WorkQueue[str]("q")
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    assert len(queue) == 0, "never handed to a second worker while processing"
    queue.done(key)
    assert await take_all(queue) == ["a"]


async def test_add_after_waits_for_the_clock_and_the_earliest_delay_wins():
    clock = FakeClock()
    queue = WorkQueue[str]("q", clock=clock)
    delays = asyncio.create_task(queue.run_delays())
    queue.add_after("a", 10)
    queue.add_after("a", 5)
    queue.add_after("a", 20)
    await clock.idle()
    await clock.advance(4.9)
    assert len(queue) == 0
    await clock.advance(0.2)
    await asyncio.sleep(0)
    assert await take_all(queue) == ["a"]
    await clock.advance(30)
    assert len(queue) == 0, "the later delays were folded into the earliest"
    delays.cancel()


async def test_backoff_doubles_per_failure_and_forget_resets_it():
    queue = WorkQueue[str]("q", base_delay=1.0, max_delay=5.0, clock=FakeClock())
    assert [queue.add_rate_limited("a") for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert queue.failures("a") == 5
    queue.forget("a")
    assert queue.add_rate_limited("a") == 1.0
    assert queue.add_rate_limited("b") == 1.0, "backoff is per key"


async def test_shutdown_wakes_a_waiting_get():
    queue = WorkQueue[str]("q")
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await waiter
    queue.add("a")
    assert len(queue) == 0, "a shut-down queue takes nothing"


async def test_metrics_count_adds_retries_and_depth():
    registry = CollectorRegistry()
    queue = WorkQueue[str]("lifecycle", metrics=ControllerMetrics(registry), clock=FakeClock())
    queue.add("a")
    queue.add("b")
    queue.add_rate_limited("c")

    def value(name: str) -> float | None:
        return registry.get_sample_value(name, {"name": "lifecycle"})

    assert value("workqueue_depth") == 2
    assert value("workqueue_adds_total") == 2
    assert value("workqueue_retries_total") == 1
    await take_all(queue)
    assert value("workqueue_depth") == 0
    assert value("workqueue_work_duration_seconds_count") == 2


async def test_settled_waits_until_its_keys_are_neither_queued_nor_processing():
    clock = FakeClock()
    queue = WorkQueue[str]("q", clock=clock)
    queue.add("a")
    queue.add("b")
    waiter = asyncio.create_task(queue.settled(["a", "b"]))
    key = await queue.get()
    queue.add(key)  # dirty: it comes back after done
    queue.done(key)
    await asyncio.sleep(0)
    assert not waiter.done(), "a and b are both queued again or still"
    for _ in range(2):
        queue.done(await queue.get())
    await asyncio.wait_for(waiter, 1)
    queue.add_rate_limited("c")  # waiting out a backoff: settled as far as callers care
    await asyncio.wait_for(queue.settled(["c"]), 1)


async def test_shutdown_releases_those_waiting_for_keys_to_settle():
    queue = WorkQueue[str]("q")
    queue.add("a")
    waiter = asyncio.create_task(queue.settled(["a"]))
    await asyncio.sleep(0)
    queue.shutdown()
    await asyncio.wait_for(waiter, 1)
