"""`Batcher`: Karpenter's batching windows, on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib

from karpy.provisioning.batcher import Batcher
from tests.kube.fakeclock import FakeClock


class Windows:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.closed_at: list[float] = []

    def __call__(self) -> None:
        self.closed_at.append(self.clock.monotonic() - 1000.0)


@contextlib.asynccontextmanager
async def batcher(idle: float = 1.0, maximum: float = 10.0):
    clock = FakeClock()
    windows = Windows(clock)
    b = Batcher(idle, maximum, windows, clock=clock)
    stop = asyncio.Event()
    task = asyncio.create_task(b.run(stop))
    await asyncio.sleep(0)
    try:
        yield b, clock, windows
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def step(clock: FakeClock, seconds: float) -> None:
    await clock.advance(seconds)
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_single_trigger_closes_its_window_after_the_idle_duration():
    async with batcher(idle=1.0) as (b, clock, windows):
        b.trigger("pod-a")
        await step(clock, 0.9)
        assert windows.closed_at == []
        await step(clock, 0.2)
        assert windows.closed_at == [1.0]


async def test_a_burst_extends_the_window_until_it_goes_quiet():
    async with batcher(idle=1.0, maximum=10.0) as (b, clock, windows):
        for i in range(5):
            b.trigger(f"pod-{i}")
            await step(clock, 0.5)
        assert windows.closed_at == [], "each new pod pushed the close back"
        await step(clock, 0.6)
        assert windows.closed_at == [3.0], "closed one idle duration after the last pod"


async def test_a_steady_trickle_cannot_hold_the_window_open_past_the_maximum():
    async with batcher(idle=1.0, maximum=3.0) as (b, clock, windows):
        for i in range(10):
            b.trigger(f"pod-{i}")
            await step(clock, 0.5)
        assert windows.closed_at == [3.0], "closed at the maximum, though pods kept coming"
        await step(clock, 1.0)
        assert windows.closed_at == [3.0, 5.5], "the rest of the trickle made a second window"


async def test_a_pod_triggers_once_per_window():
    async with batcher(idle=1.0, maximum=10.0) as (b, clock, windows):
        assert b.trigger("pod-a") is True
        await step(clock, 0.8)
        assert b.trigger("pod-a") is False, "the same pod again does not extend the window"
        await step(clock, 0.3)
        assert windows.closed_at == [1.0]
        assert b.trigger("pod-a") is True, "a new window takes it again"


async def test_nothing_happens_without_triggers():
    async with batcher() as (b, clock, windows):
        await step(clock, 60)
        assert windows.closed_at == []
        assert not b.open


async def test_a_zero_idle_duration_closes_at_once():
    async with batcher(idle=0.0, maximum=10.0) as (b, clock, windows):
        b.trigger("pod-a")
        await step(clock, 0)
        assert windows.closed_at == [0.0]
