"""`EventRecorder` against the API server emulator: queued, deduplicated, spam-filtered,
bounded, and written only while running (leading)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from karpy.kube.client import KubeClient
from karpy.kube.events import SPAM_BURST, Event, EventRecorder, ObjectRef
from karpy.observability.metrics import Metrics
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.kube.helpers import transport_for


@contextlib.asynccontextmanager
async def recorder(apiserver: Any, **kw: Any) -> AsyncIterator[tuple[EventRecorder, Metrics]]:
    metrics = Metrics()
    transport = transport_for(apiserver)
    events = EventRecorder(KubeClient(transport, metrics=metrics), qps=1000, burst=1000,
                           metrics=metrics, **kw)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(events.run(stop))
    await asyncio.sleep(0)
    try:
        yield events, metrics
    finally:
        stop.set()
        await task
        await transport.close()


def pod(name: str) -> ObjectRef:
    return ObjectRef("Pod", name, "default", f"uid-{name}", "v1")


def dropped(metrics: Metrics, reason: str, why: str) -> float:
    value = metrics.registry.get_sample_value("karpy_events_dropped_total",
                                              {"reason": reason, "why": why})  # fmt: skip
    return value or 0.0


def written(apiserver: Any) -> list[dict[str, Any]]:
    return list(apiserver.store.list("events"))


async def test_events_are_written_with_the_involved_object_and_component(apiserver):
    async with recorder(apiserver) as (events, _):
        assert events.publish(Event(pod("web-1"), "Normal", "Nominated", "Pod should schedule"))
        await eventually(lambda: len(written(apiserver)) == 1)
        (event,) = written(apiserver)
        assert (event["reason"], event["type"], event["message"]) == (
            "Nominated",
            "Normal",
            "Pod should schedule",
        )
        assert event["involvedObject"]["name"] == "web-1"
        assert event["source"]["component"] == "karpenter"


async def test_a_repeat_within_the_dedupe_timeout_is_dropped_and_counted(apiserver):
    clock = FakeClock()
    async with recorder(apiserver, clock=clock) as (events, metrics):
        event = Event(pod("web-1"), "Warning", "FailedScheduling", "no room",
                      dedupe_timeout=60.0)  # fmt: skip
        assert events.publish(event)
        assert not events.publish(event)
        assert dropped(metrics, "FailedScheduling", "duplicate") == 1
        await clock.advance(61)
        assert events.publish(event), "after the timeout it is news again"


async def test_one_object_gets_a_burst_then_its_events_are_spam(apiserver):
    async with recorder(apiserver) as (events, _):
        results = [events.publish(Event(pod("noisy"), "Normal", f"Reason{i}", "m"))
                   for i in range(SPAM_BURST + 3)]  # fmt: skip
        assert results.count(True) == SPAM_BURST
        assert events.publish(Event(pod("quiet"), "Normal", "Reason0", "m"))


async def test_the_queue_is_bounded_and_nothing_is_queued_while_not_running(apiserver):
    metrics = Metrics()
    transport = transport_for(apiserver)
    idle = EventRecorder(KubeClient(transport, metrics=metrics), metrics=metrics)
    assert not idle.publish(Event(pod("web-1"), "Normal", "Nominated", "m"))
    assert dropped(metrics, "Nominated", "not_leading") == 1
    await transport.close()
    async with recorder(apiserver, queue_size=3) as (events, metrics):
        events.limiter.qps = 0.001  # nothing leaves the queue during the test
        events.limiter._tokens = 0
        accepted = [events.publish(Event(pod(f"p{i}"), "Normal", "Nominated", "m"))
                    for i in range(6)]  # fmt: skip
        assert accepted.count(True) <= 4  # three queued, perhaps one taken by a sender
        assert dropped(metrics, "Nominated", "queue_full") >= 2


async def test_many_distinct_events_are_neither_duplicates_nor_spam_past_the_sweeps(apiserver):
    # 5,000 pods each nominated once, all within the dedupe timeout and each with a spam
    # token spent: the bookkeeping maps grow well past their first sweep thresholds (a
    # queue of 500 sweeps at 2,000 and 10,000 entries) and no event may be taken for a
    # duplicate or for spam on the way.
    async with recorder(apiserver, queue_size=500) as (events, metrics):
        for i in range(5_000):
            events.publish(Event(pod(f"p{i}"), "Normal", "Nominated", "m"))
            if i % 400 == 0:
                await asyncio.sleep(0)  # let the senders drain the queue
        assert dropped(metrics, "Nominated", "duplicate") == 0
        assert dropped(metrics, "Nominated", "spam") == 0
        assert events.publish(Event(pod("p1"), "Normal", "Nominated", "m")) is False
        assert dropped(metrics, "Nominated", "duplicate") == 1
