"""The stall reporter: a stall of the event loop is logged once it ends, with its length
and the code the loop was running (sampled from another thread while it stalled)."""

from __future__ import annotations

import asyncio
import time

from karpy.observability.health import LoopWatchdog
from karpy.observability.stalls import StallReporter


def spin_on_the_loop(seconds: float) -> None:
    """A synchronous stall, as a decode or a long computation on the loop would be."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))


async def test_a_stall_is_reported_with_the_code_that_held_the_loop() -> None:
    watchdog = LoopWatchdog(tick=0.05)
    reporter = StallReporter(watchdog, threshold=0.1, interval=0.02)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(watchdog.run(stop)), asyncio.create_task(reporter.run(stop))]
    await asyncio.sleep(0.2)
    spin_on_the_loop(0.6)
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.gather(*tasks)
    assert len(reporter.reported) == 1
    report = reporter.reported[0]
    assert 0.4 <= report.seconds <= 2.0
    assert report.samples >= 3
    _, top = report.stacks[0]
    assert "spin_on_the_loop" in top[-1] or "spin_on_the_loop" in top[-2]


async def test_a_loop_that_keeps_its_ticks_reports_nothing() -> None:
    watchdog = LoopWatchdog(tick=0.05)
    reporter = StallReporter(watchdog, threshold=0.1, interval=0.02)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(watchdog.run(stop)), asyncio.create_task(reporter.run(stop))]
    for _ in range(10):
        spin_on_the_loop(0.02)  # short bursts, each under the threshold
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.gather(*tasks)
    assert not reporter.reported


def test_reports_are_at_least_min_gap_apart() -> None:
    watchdog = LoopWatchdog(tick=0.1)
    reporter = StallReporter(watchdog, threshold=0.1, min_gap=10.0)
    for start in (0.0, 5.0, 20.0):  # three stalls; the second within 10 s of the first
        watchdog._waiting_since = start
        reporter.check(start + 0.5)  # 0.4 s late: stalled
        watchdog._waiting_since = start + 0.6
        reporter.check(start + 0.6)  # the tick ran: the stall has ended
    assert [r.seconds for r in reporter.reported] == [0.5, 0.5]
