"""The garbage-collection watch: each collection's length lands in a histogram by
generation, and the longest per generation in a gauge, while the watch runs and not
after."""

from __future__ import annotations

import asyncio
import gc

from karpy.observability.gcwatch import GcWatch
from karpy.observability.metrics import Metrics


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def test_a_full_collection_while_the_watch_runs_is_measured_and_none_after():
    metrics = Metrics()
    watch = GcWatch(metrics)
    stop = asyncio.Event()
    task = asyncio.create_task(watch.run(stop))
    await asyncio.sleep(0)
    # A heap worth walking: 200,000 containers, a tenth of them in reference cycles.
    heap: list[list[object]] = [[i] for i in range(200_000)]
    for item in heap[::10]:
        item.append(item)
    gc.collect(2)
    stop.set()
    await task
    full = value(metrics, "karpy_gc_pause_seconds_count", generation="2")
    assert full is not None and full >= 1
    longest = value(metrics, "karpy_gc_pause_longest_seconds", generation="2")
    assert longest is not None and longest > 0
    assert watch.collections[2] == full
    gc.collect(2)  # the watch has stopped: nothing more is counted
    assert value(metrics, "karpy_gc_pause_seconds_count", generation="2") == full
    assert watch._callback not in gc.callbacks
    del heap


def test_the_longest_gauge_keeps_the_longest_and_the_histogram_every_pause():
    metrics = Metrics()
    watch = GcWatch(metrics)
    watch.record(0, 0.002)
    watch.record(0, 0.0005)
    watch.record(2, 0.3)
    assert value(metrics, "karpy_gc_pause_longest_seconds", generation="0") == 0.002
    assert value(metrics, "karpy_gc_pause_longest_seconds", generation="2") == 0.3
    assert value(metrics, "karpy_gc_pause_seconds_count", generation="0") == 2
    assert value(metrics, "karpy_gc_pause_seconds_bucket", generation="2", le="0.25") == 0
    assert value(metrics, "karpy_gc_pause_seconds_bucket", generation="2", le="0.5") == 1
