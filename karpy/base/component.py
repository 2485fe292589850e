"""`Component`: a long-running part of a process (an informer set, the leader elector, a
controller, the HTTP servers).

Each runs until a shared ``stop`` event is set, then tidies up and returns. Keeping every
part behind this one small protocol lets each be written and tested alone, lets the
operator wire them by appending to a list, and lets the leader elector start and stop
its writers without knowing what they are.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

__all__ = ["After", "Component"]


class Component(Protocol):
    """A long-running part of the controller. `run` returns once ``stop`` is set (after
    tidying up); returning earlier, or raising, stops the whole process."""

    @property
    def name(self) -> str: ...

    async def run(self, stop: asyncio.Event) -> None: ...


class After:
    """Runs ``inner`` only once ``ready`` is set (or not at all if ``stop`` comes first):
    the leader elector campaigns only after the probe and metrics ports are bound, so a
    busy port stops the process before it takes the lease."""

    def __init__(self, ready: asyncio.Event, inner: Component) -> None:
        self.ready = ready
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    async def run(self, stop: asyncio.Event) -> None:
        waits = [asyncio.create_task(self.ready.wait()), asyncio.create_task(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
        if not stop.is_set():
            await self.inner.run(stop)
