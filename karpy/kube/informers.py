"""`InformerSet`: every informer of the controller as one component.

It starts the informers together, logs once when all have synced (objects per kind and
the seconds it took), and stops them together. With ``gate`` set (followers when
``DISABLE_CONTROLLER_WARMUP=true``) it waits for that event (leadership) before starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.kube.informer import Informer

__all__ = ["InformerSet"]

log = get_logger("kube.informers")


class InformerSet:
    name = "informers"

    def __init__(self, informers: Sequence[Informer], *, gate: asyncio.Event | None = None):
        self.informers = list(informers)
        self.gate = gate
        self.synced = asyncio.Event()

    def by_kind(self, kind: str) -> Informer:
        return next(i for i in self.informers if i.kind == kind)

    async def run(self, stop: asyncio.Event) -> None:
        if self.gate is not None and not self.gate.is_set():
            gate = asyncio.create_task(self.gate.wait())
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([gate, stopping], return_when=asyncio.FIRST_COMPLETED)
            gate.cancel()
            stopping.cancel()
            if stop.is_set():
                return
        started = time.perf_counter()
        tasks = [
            asyncio.create_task(i.run(stop), name=f"informer-{i.kind}") for i in self.informers
        ]
        reporter = asyncio.create_task(self._report(started))
        try:
            await asyncio.gather(*tasks)
        finally:
            reporter.cancel()
            for task in tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, reporter, return_exceptions=True)

    async def _report(self, started: float) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        self.synced.set()
        log.info(
            "informers synced",
            seconds=round(time.perf_counter() - started, 3),
            objects={i.kind: len(i.versions) for i in self.informers},
        )
