"""The event-loop watchdog behind ``/healthz``.

Everything karpy does runs on one event loop, so "is the process healthy?" is "is the loop
turning?". A loop blocked by a long synchronous computation (a scheduling round that
never yields, a huge JSON decode) stops renewing the leader lease, stops reading watch
streams and stops answering probes. `LoopWatchdog` sleeps ``tick`` seconds at a time and
measures how late each wake-up is; `health` reports unhealthy when the worst lateness
seen within ``window`` seconds, or the lateness of the tick still awaited, exceeds
``threshold``. A probe that reaches a blocked loop is itself answered only when the loop
runs again, and then it is answered *unhealthy*, with the lag, rather than healthy.

One tick a second is a few microseconds of work: idle CPU stays near zero.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.observability.metrics import Metrics

__all__ = ["LoopWatchdog"]


class LoopWatchdog:
    name = "loop-watchdog"

    def __init__(
        self,
        *,
        tick: float = 1.0,
        threshold: float = 5.0,
        window: float = 30.0,
        metrics: Metrics | None = None,
    ) -> None:
        self.tick = tick
        self.threshold = threshold
        self.window = window
        self.metrics = metrics
        self._lags: deque[tuple[float, float]] = deque()  # (when, lateness)
        self._waiting_since: float | None = None

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = self._waiting_since = time.monotonic()
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([stopping], timeout=self.tick)
            stopping.cancel()
            if stop.is_set():
                break
            now = time.monotonic()
            self.record(now, max(0.0, now - started - self.tick))
        self._waiting_since = None

    def record(self, when: float, lateness: float) -> None:
        self._lags.append((when, lateness))
        while self._lags and when - self._lags[0][0] > self.window:
            self._lags.popleft()
        if self.metrics is not None:
            self.metrics.loop_lag.set(lateness)
            self.metrics.loop_lag_max.set(self.worst_lag(when))

    def worst_lag(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        recorded = max((lag for when, lag in self._lags if now - when <= self.window), default=0.0)
        pending = 0.0
        if self._waiting_since is not None:
            pending = max(0.0, now - self._waiting_since - self.tick)
        return max(recorded, pending)

    def health(self) -> tuple[bool, str]:
        worst = self.worst_lag()
        if worst > self.threshold:
            return False, (
                f"event loop lagged {worst:.3f}s (threshold {self.threshold}s) "
                f"within the last {self.window:g}s"
            )
        return True, "ok"
