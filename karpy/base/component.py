"""`Component`: a long-running part of a process (an informer set, the leader elector, a
controller, the HTTP servers).

Each runs until a shared ``stop`` event is set, then tidies up and returns. Keeping every
part behind this one small protocol lets each be written and tested alone, lets the
operator wire them by appending to a list, and lets the leader elector start and stop
its writers without knowing what they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

__all__ = ["Component"]


class Component(Protocol):
    """A long-running part of the controller. `run` returns once ``stop`` is set (after
    tidying up); returning earlier, or raising, stops the whole process."""

    @property
    def name(self) -> str: ...

    async def run(self, stop: asyncio.Event) -> None: ...
