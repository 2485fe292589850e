"""`BatchingSource`: items that need work arrive one by one; the work wants them together.

A Deployment scaled to 500 replicas produces 500 pod events over a second or two. One
scheduling round over all of them packs far better (and costs far less) than 500 rounds
over one pod each, so the changes that call for a round are gathered into a *window*,
with Karpenter's batcher semantics:

* the first trigger opens a window;
* every trigger of a new item extends it to ``idle`` seconds after that trigger
  (``BATCH_IDLE_DURATION``), so a burst keeps it open while it lasts;
* it closes at the latest ``maximum`` seconds after it opened (``BATCH_MAX_DURATION``),
  so a steady trickle cannot hold the work off for ever;
* an item (a pod's UID) triggers once per window: repeated updates of one pending pod
  neither extend the window nor count twice.

The source watches cluster state itself: ``items_for`` (pure: it only reads) names the
items a change concerns, each is a trigger. When a window closes the source queues
``key`` (a singleton's `UNIT` for provisioning), and the next trigger opens a new window,
also while that run goes on (the queue coalesces it into one more run). Windows start
afresh each time the controller starts. Time comes from the injected clock, so tests
drive windows with a fake one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from karpy.base.clock import Clock
    from karpy.reconcile.source import Feed
    from karpy.state.cluster import ClusterState, StateChange

__all__ = ["BatchingSource"]

K = TypeVar("K", bound=Hashable)


class BatchingSource(Generic[K]):
    """See the module docstring."""

    name = "batching"

    def __init__(
        self,
        key: K,
        state: ClusterState,
        watches: frozenset[str],
        items_for: Callable[[StateChange[Any]], Iterable[Hashable]],
        *,
        idle: float,
        maximum: float,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.key = key
        self.state = state
        self.watches = watches
        self.items_for = items_for
        self.idle = idle
        self.maximum = maximum
        self.clock = clock
        self.windows = 0  # windows closed so far
        self._items: set[Hashable] = set()
        self._opened: float | None = None
        self._idle_until = 0.0
        self._changed = asyncio.Event()

    @property
    def open(self) -> bool:
        return self._opened is not None

    def trigger(self, item: Hashable) -> bool:
        """Note that ``item`` needs work; whether it opened or extended a window."""
        if item in self._items:
            return False
        self._items.add(item)
        now = self.clock.monotonic()
        if self._opened is None:
            self._opened = now
        self._idle_until = now + self.idle
        self._changed.set()
        return True

    def deadline(self) -> float | None:
        """When the open window closes (monotonic seconds), or None when none is open."""
        if self._opened is None:
            return None
        return min(self._idle_until, self._opened + self.maximum)

    def _on_changes(self, changes: Sequence[StateChange[Any]]) -> None:
        watches = self.watches
        for change in changes:
            if change.kind in watches:
                for item in self.items_for(change):
                    self.trigger(item)

    def _close_if_due(self, feed: Feed[K]) -> None:
        deadline = self.deadline()
        if deadline is None or self.clock.monotonic() < deadline:
            return
        self._items.clear()
        self._opened = None
        self.windows += 1
        feed.add(self.key)

    async def run(self, feed: Feed[K]) -> None:
        """Close windows as they come due, queueing ``key`` for each; until cancelled."""
        self._items.clear()
        self._opened = None
        unsubscribe = self.state.subscribe(self._on_changes)
        try:
            while True:
                self._close_if_due(feed)
                self._changed.clear()
                waits: list[asyncio.Task[Any]] = [asyncio.create_task(self._changed.wait())]
                deadline = self.deadline()
                if deadline is not None:
                    delay = deadline - self.clock.monotonic()
                    waits.append(asyncio.create_task(self.clock.sleep(delay)))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for task in waits:
                        task.cancel()
        finally:
            unsubscribe()
