"""`StallReporter`: say what the event loop was doing while it stalled.

The loop watchdog (`karpy.observability.health`) measures how long the loop was kept
from ready work, but only once it runs again, when the culprit has gone. This thread
looks at the loop from outside: every ``interval`` seconds it asks the watchdog how late
its awaited tick is, and while that is over ``threshold`` it samples the loop thread's
Python stack. When the stall ends it logs ``event loop stalled`` with its length, the
number of samples, and the stacks seen most often (innermost frame last), so a stall in
a production log names its code.

A sample needs the interpreter: a stall inside one long C call that keeps it (a garbage
collection, a decode of one huge document) is seen only as it ends; the collector's
pauses have their own metric (`karpy.observability.gcwatch`). The thread costs a wake-up
every ``interval`` and a stack walk per sample during stalls only. At most one log line
every ``min_gap`` seconds.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import Counter, deque
from typing import TYPE_CHECKING, Final

import attrs

from karpy.log import get_logger

if TYPE_CHECKING:
    from types import FrameType

    from karpy.observability.health import LoopWatchdog

__all__ = ["StallReporter"]

log = get_logger("loop")

DEPTH: Final = 8  # frames kept per sample, innermost last
TOP: Final = 3  # stacks logged per stall


@attrs.frozen
class Stall:
    seconds: float
    samples: int
    stacks: tuple[tuple[int, tuple[str, ...]], ...]  # (samples, stack), most seen first


class StallReporter:
    name = "stall-reporter"

    def __init__(
        self,
        watchdog: LoopWatchdog,
        *,
        threshold: float = 0.25,
        interval: float = 0.1,
        min_gap: float = 10.0,
    ) -> None:
        self.watchdog = watchdog
        self.threshold = threshold
        self.interval = interval
        self.min_gap = min_gap
        self.reported: deque[Stall] = deque(maxlen=64)  # the latest logged
        self._loop_thread: int | None = None
        self._samples: Counter[tuple[str, ...]] = Counter()
        self._stall_started: float | None = None
        self._last_report = -float("inf")

    async def run(self, stop: asyncio.Event) -> None:
        self._loop_thread = threading.get_ident()
        halt = threading.Event()
        thread = threading.Thread(target=self._watch, args=(halt,), name=self.name, daemon=True)
        thread.start()
        try:
            await stop.wait()
        finally:
            halt.set()
            await asyncio.to_thread(thread.join, 5.0)

    def _watch(self, halt: threading.Event) -> None:
        while not halt.wait(self.interval):
            self.check(time.monotonic())

    def check(self, now: float) -> None:
        """One look at the loop: sample it while it is stalled, report a stall that ended."""
        late = self.watchdog.pending_lag(now)
        if late > self.threshold:
            if self._stall_started is None:
                self._stall_started = now - late
            frame = sys._current_frames().get(self._loop_thread or -1)
            if frame is not None:
                self._samples[_stack(frame)] += 1
            return
        if self._stall_started is not None:
            self._report(now)

    def _report(self, now: float) -> None:
        started, self._stall_started = self._stall_started, None
        samples, self._samples = self._samples, Counter()
        if started is None or now - self._last_report < self.min_gap:
            return
        self._last_report = now
        stall = Stall(
            seconds=round(now - started, 3),
            samples=sum(samples.values()),
            stacks=tuple((count, stack) for stack, count in samples.most_common(TOP)),
        )
        self.reported.append(stall)
        log.info(
            "event loop stalled",
            seconds=stall.seconds,
            samples=stall.samples,
            stacks=[{"samples": count, "stack": list(stack)} for count, stack in stall.stacks],
        )


def _stack(frame: FrameType) -> tuple[str, ...]:
    """The innermost ``DEPTH`` frames of a stack, outermost first, as file:line function."""
    frames: list[str] = []
    current: FrameType | None = frame
    while current is not None and len(frames) < DEPTH:
        code = current.f_code
        path = code.co_filename
        short = path[path.rfind("/site-packages/") + 15 :] if "/site-packages/" in path else path
        short = short[short.rfind("/karpy/") + 1 :] if "/karpy/" in short else short
        frames.append(f"{short}:{current.f_lineno} {code.co_name}")
        current = current.f_back
    return tuple(reversed(frames))
