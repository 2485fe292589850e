"""Jittered exponential backoff and client-side rate limiting.

`Backoff` is client-go's shape: each failure doubles the delay up to a cap, a random
jitter (up to ``jitter`` times the delay) is added so that many clients recovering from
one outage do not retry in lockstep, and a quiet period resets it.

`TokenBucket` is client-go's default rate limiter (``KUBE_CLIENT_QPS`` tokens a second,
at most ``KUBE_CLIENT_BURST`` stored). A caller that finds the bucket empty waits in a
queue served by priority, then arrival order, and the wait each one saw is measured.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from typing import TYPE_CHECKING

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from karpy.base.clock import Clock

__all__ = ["Backoff", "TokenBucket"]

_RNG = random.Random()


class Backoff:
    def __init__(
        self,
        initial: float = 0.8,
        maximum: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self.clock = clock
        self.rng = rng or _RNG  # one shared generator: seeding one per request is costly
        self._current = 0.0
        self._last = float("-inf")

    def next_delay(self) -> float:
        """The delay before the next attempt, growing with each failure."""
        now = self.clock.monotonic()
        if now - self._last > self.reset_after:
            self._current = 0.0
        self._last = now
        self._current = (
            self.initial if self._current == 0 else min(self.maximum, self._current * self.factor)
        )
        return self._current * (1 + self.jitter * self.rng.random())

    def reset(self) -> None:
        self._current = 0.0

    async def wait(self) -> float:
        delay = self.next_delay()
        await self.clock.sleep(delay)
        return delay


class TokenBucket:
    """``qps`` tokens a second up to ``burst``; ``qps <= 0`` means no limit.

    `acquire` takes a token at once when one is stored and nobody waits; otherwise the
    caller joins a queue served as tokens accrue, highest ``priority`` first and in arrival
    order within a priority. So a burst of low-priority writes (a thousand NodeClaims'
    status updates) cannot hold back a high-priority one (creating the next NodeClaims)
    behind all of it, while the total rate stays ``qps``.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock.monotonic()
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._drainer: asyncio.Task[None] | None = None

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    @property
    def waiting(self) -> int:
        return sum(1 for *_, future in self._waiters if not future.done())

    def _refill(self) -> None:
        now = self.clock.monotonic()
        accrued = self._tokens + (now - self._stamp) * self.qps
        self._tokens = min(float(self.burst), round(accrued, 9))  # no drift below a token
        self._stamp = now

    def reserve(self) -> float:
        """Take one token now (possibly borrowed from the future), outside the queue; the
        seconds the caller should wait before using it."""
        if self.unlimited:
            return 0.0
        self._refill()
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self, priority: int = 0) -> float:
        """Wait for a token; the seconds waited."""
        if self.unlimited:
            return 0.0
        self._refill()
        if not self.waiting and self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        started = self.clock.monotonic()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-priority, next(self._order), future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
            self._drainer.add_done_callback(self._drained)
        await future
        return self.clock.monotonic() - started

    def _drained(self, task: asyncio.Task[None]) -> None:
        """A drainer that failed or was cancelled hands its failure to every caller still
        queued, who would otherwise wait for a token forever."""
        failure: BaseException | None
        failure = asyncio.CancelledError() if task.cancelled() else task.exception()
        if failure is None:
            return
        waiters, self._waiters = self._waiters, []
        for *_, future in waiters:
            if not future.done():
                future.set_exception(failure)

    async def _drain(self) -> None:
        """Hand out tokens to the queue as they accrue, best waiter first."""
        while self._waiters:
            if self._waiters[0][2].done():  # cancelled while waiting
                heapq.heappop(self._waiters)
                continue
            self._refill()
            if self._tokens >= 1:
                self._tokens -= 1
                heapq.heappop(self._waiters)[2].set_result(None)
                continue
            await self.clock.sleep((1 - self._tokens) / self.qps)
