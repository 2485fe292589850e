"""Clocks for tests: `FakeClock` moves only when told, `RecordingClock` is real time that
notes (and skips) every sleep. Both satisfy `karpy.base.clock.Clock`."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta

from karpy.base.clock import SystemClock

START = datetime(2025, 1, 1, tzinfo=UTC)


class FakeClock:
    """Time stands still until `advance`; `sleep` waits for it. `idle` waits until
    ``count`` tasks are asleep, i.e. the code under test has done all it can now."""

    def __init__(self, start: datetime = START) -> None:
        self._start = start
        self._elapsed = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return 1000.0 + self._elapsed

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._elapsed)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._order), future))
        try:
            await future
        finally:
            if not future.done():
                future.cancel()

    @property
    def sleeping(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def idle(self, count: int = 1, within: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while self.sleeping < count:
            if loop.time() > deadline:
                raise AssertionError(f"fewer than {count} sleepers after {within}s")
            await asyncio.sleep(0.005)

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in order (each gets to run before the next
        wakes)."""
        target = self._elapsed + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            when, _, future = heapq.heappop(self._sleepers)
            self._elapsed = max(self._elapsed, when)
            if not future.done():
                future.set_result(None)
                for _ in range(5):
                    await asyncio.sleep(0)
        self._elapsed = target


class RecordingClock(SystemClock):
    """Real readings; each sleep is recorded and returns at once."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0.001)
