"""Jittered exponential backoff and client-side rate limiting.

`Backoff` is client-go's shape: each failure doubles the delay up to a cap, a random
jitter (up to ``jitter`` times the delay) is added so that many clients recovering from
one outage do not retry in lockstep, and a quiet period resets it.

`TokenBucket` is client-go's default rate limiter (``KUBE_CLIENT_QPS`` tokens a second,
at most ``KUBE_CLIENT_BURST`` stored). A caller that finds the bucket empty reserves the
next token and sleeps until it is due, so waiting callers are served in arrival order and
the wait each one saw can be measured.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from karpy.base.clock import Clock

__all__ = ["Backoff", "TokenBucket"]


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
        self.rng = rng or random.Random()
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
    """``qps`` tokens a second up to ``burst``; ``qps <= 0`` means no limit."""

    def __init__(self, qps: float, burst: int, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self.clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock.monotonic()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def reserve(self) -> float:
        """Take one token (possibly borrowed from the future); the seconds to wait."""
        if self.unlimited:
            return 0.0
        now = self.clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            await self.clock.sleep(delay)
        return delay
