"""`WorkQueue`: the deduplicating, delaying, rate-limiting queue behind every controller.

It keeps client-go's workqueue contract, the one controller-runtime builds on, because
its guarantees are what make level-triggered controllers safe:

* **A key is queued at most once.** Ten changes to one NodeClaim before a worker gets to
  it cost one reconcile, which reads the state as it is then.
* **A key is processed by one worker at a time.** A key added while it is being
  processed is marked dirty and queued again when `done` is called, so the change is
  never lost and never raced.
* **Delays and backoff per key.** `add_after` queues a key later (a requeue in 30 s, a
  timeout to check); the earliest pending delay wins. `add_rate_limited` queues it after
  an exponential backoff that grows with each consecutive failure of that key (``base``
  doubling up to ``cap``) until `forget` resets it on success.

A key is any hashable value: each controller names its own key type (a NodeClaim's name
as a `NewType`, a received message as a record, a singleton's one `Unit`). `settled`
lets a source that queued keys wait until they have been worked through, so a poller
asks for more only once the last batch is done.

Everything runs on one event loop; there are no locks. Delays are measured on the
injected `Clock`, so tests drive them with a fake clock.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import itertools
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.observability.controller_metrics import ControllerMetrics

__all__ = ["QueueShutDown", "WorkQueue"]

DEFAULT_BASE_DELAY: Final = 0.05  # seconds: first retry after a failure
DEFAULT_MAX_DELAY: Final = 300.0  # seconds: backoff cap

K = TypeVar("K", bound=Hashable)


class QueueShutDown(Exception):
    """`get` on a queue that was shut down."""


class WorkQueue(Generic[K]):
    def __init__(
        self,
        name: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        metrics: ControllerMetrics | None = None,
        base_delay: float = DEFAULT_BASE_DELAY,
        max_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        self.name = name
        self.clock = clock
        self.metrics = metrics
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._ready: collections.deque[K] = collections.deque()
        self._queued: dict[K, float] = {}  # key -> monotonic time it was queued
        self._processing: dict[K, float] = {}  # key -> monotonic time processing began
        self._dirty: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []  # heap of (due, order, key)
        self._due: dict[K, float] = {}  # key -> earliest pending due time
        self._failures: dict[K, int] = {}
        self._order = itertools.count()
        self._ready_event = asyncio.Event()
        self._delay_changed = asyncio.Event()
        self._finished = asyncio.Event()  # set (and replaced) each time a key is done
        self._shut_down = False

    # --- adding -----------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` now (no-op if queued; re-queued after `done` if processing)."""
        if self._shut_down:
            return
        if self.metrics is not None:
            self.metrics.workqueue_adds.labels(self.name).inc()
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued[key] = self.clock.monotonic()
        self._ready.append(key)
        self._ready_event.set()
        self._report_depth()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed (at once if ``delay <= 0``)."""
        if self._shut_down:
            return
        if delay <= 0:
            self.add(key)
            return
        due = self.clock.monotonic() + delay
        current = self._due.get(key)
        if current is not None and current <= due:
            return
        self._due[key] = due
        heapq.heappush(self._delayed, (due, next(self._order), key))
        self._delay_changed.set()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its backoff; the delay chosen."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = min(self.max_delay, self.base_delay * 2.0**failures)
        if self.metrics is not None:
            self.metrics.workqueue_retries.labels(self.name).inc()
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset the backoff of ``key`` (it succeeded)."""
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    # --- taking -----------------------------------------------------------------------

    async def get(self) -> K:
        """The next key to process; waits for one. Raises `QueueShutDown` once the queue
        is shut down (what is still queued is dropped: the next leader resyncs)."""
        while True:
            if self._shut_down:
                raise QueueShutDown(self.name)
            if self._ready:
                break
            self._ready_event.clear()
            await self._ready_event.wait()
        key = self._ready.popleft()
        queued_at = self._queued.pop(key)
        now = self.clock.monotonic()
        self._processing[key] = now
        if self.metrics is not None:
            self.metrics.workqueue_queue_duration.labels(self.name).observe(now - queued_at)
        self._report_depth()
        return key

    def done(self, key: K) -> None:
        """Processing of ``key`` finished; queue it again if it was added meanwhile."""
        started = self._processing.pop(key, None)
        if started is not None and self.metrics is not None:
            self.metrics.workqueue_work_duration.labels(self.name).observe(
                self.clock.monotonic() - started
            )
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)
        self._wake_settled()

    async def settled(self, keys: Iterable[K]) -> None:
        """Wait until none of ``keys`` is queued or being processed (a key waiting out a
        delay or a backoff counts as settled: its retry is the queue's business). Returns
        at once when the queue is shut down."""
        waiting = set(keys)
        while not self._shut_down:
            waiting = {k for k in waiting if k in self._queued or k in self._processing}
            if not waiting:
                return
            await self._finished.wait()

    def _wake_settled(self) -> None:
        self._finished.set()
        self._finished = asyncio.Event()

    # --- delays -----------------------------------------------------------------------

    async def run_delays(self) -> None:
        """Move delayed keys to the ready queue when due; runs until cancelled."""
        while not self._shut_down:
            now = self.clock.monotonic()
            while self._delayed and self._delayed[0][0] <= now:
                due, _, key = heapq.heappop(self._delayed)
                if self._due.get(key) == due:
                    del self._due[key]
                    self.add(key)
            self._delay_changed.clear()
            waits: list[asyncio.Task[Any]] = [asyncio.create_task(self._delay_changed.wait())]
            if self._delayed:
                waits.append(asyncio.create_task(self.clock.sleep(self._delayed[0][0] - now)))
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in waits:
                    task.cancel()

    # --- state ------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop accepting keys; `get` raises `QueueShutDown` from now on."""
        self._shut_down = True
        self._ready_event.set()
        self._delay_changed.set()
        self._wake_settled()

    def __len__(self) -> int:
        return len(self._ready)

    @property
    def pending_delays(self) -> int:
        return len(self._due)

    def is_processing(self, key: K) -> bool:
        return key in self._processing

    def _report_depth(self) -> None:
        if self.metrics is not None:
            self.metrics.workqueue_depth.labels(self.name).set(len(self._ready))
