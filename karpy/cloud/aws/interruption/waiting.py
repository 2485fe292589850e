"""The two waits both interruption controllers need: work that ``stop`` cancels at once
(a 20 s long poll, a minute's sleep), and not acting before the NodeClaims and Nodes have
been listed (a warning about an instance state has not seen yet would be dropped)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final, TypeVar

from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from karpy.base.clock import Clock
    from karpy.state.cluster import ClusterState

__all__ = ["unless_stopped", "until_listed"]

SYNC_POLL: Final = 1.0  # seconds between checks that state has listed NodeClaims and Nodes

T = TypeVar("T")


async def unless_stopped(work: Awaitable[T], stop: asyncio.Event) -> T | None:
    """``work``'s result, or None once ``stop`` is set first (``work`` is cancelled)."""
    task = asyncio.ensure_future(work)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            task.cancel()
    if not task.done() or task.cancelled():
        await asyncio.gather(task, return_exceptions=True)
        return None
    return task.result()


async def until_listed(state: ClusterState, clock: Clock, stop: asyncio.Event) -> bool:
    """Wait until ``state`` has listed NodeClaims and Nodes; False if stopped first."""
    while not state.kind_synced(kinds.NODECLAIM, kinds.NODE):
        if stop.is_set():
            return False
        await unless_stopped(clock.sleep(SYNC_POLL), stop)
    return not stop.is_set()
