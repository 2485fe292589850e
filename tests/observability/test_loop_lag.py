"""The loop-lag sampler: each tick's lateness goes into a histogram, the longest stall
since start into a gauge, and the health window keeps its worst lateness."""

from __future__ import annotations

import asyncio
import time

from karpy.observability.health import LoopWatchdog
from karpy.observability.metrics import Metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    assert value is not None, name
    return value


async def test_a_stall_on_the_loop_lands_in_the_histogram_and_the_longest_gauge():
    metrics = Metrics()
    watchdog = LoopWatchdog(tick=0.05, metrics=metrics)
    stop = asyncio.Event()
    task = asyncio.create_task(watchdog.run(stop))
    await asyncio.sleep(0.12)  # a couple of ordinary ticks
    time.sleep(0.4)  # noqa: ASYNC251 - a synchronous stall on the loop, as a solver's would be
    await asyncio.sleep(0.12)
    stop.set()
    await task
    ticks = sample(metrics, "karpy_event_loop_lag_seconds_count")
    over_quarter = ticks - sample(metrics, "karpy_event_loop_lag_seconds_bucket", le="0.25")
    assert ticks >= 3
    assert over_quarter == 1  # exactly the tick the stall delayed
    assert sample(metrics, "karpy_event_loop_lag_longest_seconds") >= 0.35
    assert sample(metrics, "karpy_event_loop_lag_max_seconds") >= 0.35


def test_buckets_run_from_a_millisecond_to_thirty_seconds():
    metrics = Metrics()
    LoopWatchdog(metrics=metrics).record(0.0, 0.0)
    assert sample(metrics, "karpy_event_loop_lag_seconds_bucket", le="0.001") == 1
    assert sample(metrics, "karpy_event_loop_lag_seconds_bucket", le="30.0") == 1


def test_the_health_window_forgets_a_stall_but_the_longest_gauge_does_not():
    metrics = Metrics()
    watchdog = LoopWatchdog(window=30.0, metrics=metrics)
    watchdog.record(0.0, 2.0)
    watchdog.record(1.0, 0.5)
    watchdog.record(10.0, 0.01)
    assert watchdog.worst_lag(10.0) == 2.0
    watchdog.record(31.0, 0.02)
    assert watchdog.worst_lag(31.0) == 0.5  # the 2 s stall left the window
    watchdog.record(45.0, 0.0)
    assert watchdog.worst_lag(45.0) == 0.02
    assert sample(metrics, "karpy_event_loop_lag_max_seconds") == 0.02
    assert sample(metrics, "karpy_event_loop_lag_longest_seconds") == 2.0
    assert watchdog.longest == 2.0
