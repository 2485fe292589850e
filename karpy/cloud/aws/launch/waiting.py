"""`unless_stopped`: work that ``stop`` cancels at once (the launch template collector's
minute of sleep between passes)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable

__all__ = ["unless_stopped"]

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
