"""`Batcher`: pending pods arrive one by one; provisioning wants them together.

A Deployment scaled to 500 replicas produces 500 pod events over a second or two. One
scheduling round over all of them packs far better (and costs far less) than 500 rounds
over one pod each, so triggers are gathered into a *window*, with Karpenter's semantics:

* the first trigger opens a window;
* every trigger of a new item extends it to ``idle`` seconds after that trigger
  (``BATCH_IDLE_DURATION``), so a burst keeps it open while it lasts;
* it closes at the latest ``maximum`` seconds after it opened (``BATCH_MAX_DURATION``),
  so a steady trickle cannot hold provisioning off for ever;
* an item (a pod's UID) triggers once per window: repeated updates of one pending pod
  neither extend the window nor count twice.

When a window closes `run` calls ``on_close`` (the provisioner's controller queues a
round) and the next trigger opens a new window, also while that round runs. Time comes
from the injected clock, so tests drive windows with a fake one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from karpy.base.clock import Clock

__all__ = ["Batcher"]


class Batcher:
    name = "batcher"

    def __init__(
        self,
        idle: float,
        maximum: float,
        on_close: Callable[[], None],
        *,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.idle = idle
        self.maximum = maximum
        self.on_close = on_close
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
        """Note that ``item`` needs provisioning; whether it opened or extended a window."""
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

    def close_if_due(self) -> bool:
        """Close the window if its time has come; whether it did."""
        deadline = self.deadline()
        if deadline is None or self.clock.monotonic() < deadline:
            return False
        self._items.clear()
        self._opened = None
        self.windows += 1
        self.on_close()
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Close windows as they come due until ``stop`` is set."""
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                self.close_if_due()
                self._changed.clear()
                changed = asyncio.create_task(self._changed.wait())
                waits: list[asyncio.Task[Any]] = [stopping, changed]
                deadline = self.deadline()
                if deadline is not None:
                    delay = deadline - self.clock.monotonic()
                    waits.append(asyncio.create_task(self.clock.sleep(delay)))
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                for task in waits[1:]:
                    task.cancel()
        finally:
            stopping.cancel()
