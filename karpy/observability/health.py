"""The event-loop watchdog behind ``/healthz`` and the loop-lag metrics.

Everything karpy does, except renewing the leader lease (which has its own thread:
`karpy.kube.electionthread`) and the solver's computation, runs on one event loop, so "is
the process healthy?" is "is the loop turning?". A loop blocked by a long synchronous
computation (a scheduling round that never yields, a huge JSON decode, a thread holding the
GIL) stops reading watch streams, stops launching and stops answering probes.

`LoopWatchdog` asks the loop to call it back every ``tick`` seconds (a ``call_later`` chain:
no task, no future, a few microseconds of work a tick) and measures how late each callback
runs. The lateness of a tick is how long ready work waited: a stall of S seconds shows as a
tick about S late (less the part of the tick that had not yet elapsed when it began). With
the default tick of 0.1 s a 100 ms stall is visible while the loop idles at ten wake-ups a
second. Each lateness goes into the ``karpy_event_loop_lag_seconds`` histogram; the longest
one since start is ``karpy_event_loop_lag_longest_seconds``.

`health` reports unhealthy when the worst lateness seen within ``window`` seconds, or the
lateness of the tick still awaited, exceeds ``threshold``. A probe that reaches a blocked
loop is itself answered only when the loop runs again, and then it is answered
*unhealthy*, with the lag, rather than healthy. The worst lateness in the window is kept as
a sliding-window maximum (a deque of decreasing lags), so a tick costs O(1).
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
        tick: float = 0.1,
        threshold: float = 5.0,
        window: float = 30.0,
        metrics: Metrics | None = None,
    ) -> None:
        self.tick = tick
        self.threshold = threshold
        self.window = window
        self.metrics = metrics
        self.longest = 0.0
        # (when, lateness), lateness strictly decreasing: the front is the window's maximum.
        self._lags: deque[tuple[float, float]] = deque()
        self._waiting_since: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None

    async def run(self, stop: asyncio.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._schedule()
        try:
            await stop.wait()
        finally:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = None
            self._waiting_since = None

    def _schedule(self) -> None:
        assert self._loop is not None
        self._waiting_since = time.monotonic()
        self._handle = self._loop.call_later(self.tick, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        started = self._waiting_since if self._waiting_since is not None else now
        self.record(now, max(0.0, now - started - self.tick))
        self._schedule()

    def record(self, when: float, lateness: float) -> None:
        lags = self._lags
        while lags and lags[-1][1] <= lateness:
            lags.pop()
        lags.append((when, lateness))
        while when - lags[0][0] > self.window:
            lags.popleft()
        self.longest = max(self.longest, lateness)
        if self.metrics is not None:
            self.metrics.loop_lag.observe(lateness)
            self.metrics.loop_lag_longest.set(self.longest)
            self.metrics.loop_lag_max.set(lags[0][1])

    def worst_lag(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        recorded = next((lag for when, lag in self._lags if now - when <= self.window), 0.0)
        return max(recorded, self.pending_lag(now))

    def pending_lag(self, now: float) -> float:
        """How late the tick still awaited is now (0 when it is not late). Safe to ask
        from another thread (`karpy.observability.stalls`)."""
        since = self._waiting_since
        return 0.0 if since is None else max(0.0, now - since - self.tick)

    def health(self) -> tuple[bool, str]:
        worst = self.worst_lag()
        if worst > self.threshold:
            return False, (
                f"event loop lagged {worst:.3f}s (threshold {self.threshold}s) "
                f"within the last {self.window:g}s"
            )
        return True, "ok"
