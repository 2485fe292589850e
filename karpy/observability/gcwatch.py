"""`GcWatch`: how long each of Python's cyclic garbage collections held the interpreter.

A collection runs on whichever thread's allocation tripped it, holding the GIL for its
whole length: nothing else in the process runs, the event loop included. Its length grows
with the objects it walks, and a full (generation 2) collection walks every container
object the process holds; at 40,000 pods that is the whole cluster state. So a stall of
the event loop (`karpy.observability.health`) that no handler explains is often one of
these, and this is the figure that says so.

The Python collector ``prometheus_client`` registers counts collections and collected
objects per generation, not their length. This adds, per generation:
``karpy_gc_pause_seconds`` (histogram) and ``karpy_gc_pause_longest_seconds`` (the
longest since the process started). The callback costs two clock reads a collection.
"""

from __future__ import annotations

import gc
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from karpy.observability.metrics import Metrics

__all__ = ["GcWatch"]

GENERATIONS = 3


class GcWatch:
    name = "gc-watch"

    def __init__(self, metrics: Metrics | None = None) -> None:
        self.metrics = metrics
        self.longest = [0.0] * GENERATIONS
        self.collections = [0] * GENERATIONS
        self._started: float | None = None

    async def run(self, stop: asyncio.Event) -> None:
        self.install()
        try:
            await stop.wait()
        finally:
            self.uninstall()

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        while self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        started, self._started = self._started, None
        if started is None:
            return
        self.record(int(info["generation"]), time.perf_counter() - started)

    def record(self, generation: int, seconds: float) -> None:
        self.collections[generation] += 1
        if seconds > self.longest[generation]:
            self.longest[generation] = seconds
            if self.metrics is not None:
                self.metrics.gc_pause_longest.labels(str(generation)).set(seconds)
        if self.metrics is not None:
            self.metrics.gc_pause.labels(str(generation)).observe(seconds)
