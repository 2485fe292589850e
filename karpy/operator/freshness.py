"""`FreshState`: a new leader acts only on state listed after it took the lease.

A standby keeps its informers warm so a failover is quick, but warm is not fresh: its
watch may have died silently minutes ago (until the read deadline notices), or simply
lag. Acting on that state is how a new leader deletes a Lease whose Node it never heard
of, or terminates the instance of a NodeClaim created after its watch froze. So the
moment leadership begins, `FreshState` asks every informer for a LIST that *starts*
after that moment (`karpy.kube.informer.Informer.resync`) and sets `fresh` once all have
completed; the leader's controllers are wrapped in `karpy.base.component.After` on that
event. Only the event recorder starts at once (it writes nothing that acts on state).

This costs one full relist per failover (seconds at 40,000 pods), paid before the new
leader provisions or disrupts anything; provisioning waits too, because launching for
pods a stale state thinks pending double-launches. The lease is renewed meanwhile (the
elector renews from the moment it leads), so a slow relist cannot lose it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from karpy.base.component import After
from karpy.kube.events import EventRecorder
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.base.component import Component
    from karpy.kube.informer import Informer

__all__ = ["FreshState", "after_fresh_state"]

log = get_logger("state.freshness")


class FreshState:
    """A writer (it runs when leadership begins): relists every informer, then sets
    `fresh` and waits for stop."""

    name = "state.freshness"

    def __init__(self, informers: Sequence[Informer]) -> None:
        self.informers = list(informers)
        self.fresh = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        started = time.perf_counter()
        log.info("relisting cluster state before acting as leader",
                 kinds=[i.kind for i in self.informers])  # fmt: skip
        resync = asyncio.create_task(self._relist_all(), name="state-resync")
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([resync, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not resync.done():
                resync.cancel()
        if not resync.done() or resync.cancelled():
            return
        resync.result()
        self.fresh.set()
        log.info("cluster state fresh; controllers starting",
                 seconds=round(time.perf_counter() - started, 3))  # fmt: skip
        await stop.wait()

    async def _relist_all(self) -> None:
        await asyncio.gather(*(i.resync("leader") for i in self.informers))


def after_fresh_state(fresh: FreshState, writers: Sequence[Component]) -> list[Component]:
    """``writers`` to run while leading, each but the event recorder held until ``fresh``
    has relisted; ``fresh`` itself first."""
    held = (w if isinstance(w, EventRecorder) else After(fresh.fresh, w) for w in writers)
    return [fresh, *held]
