"""The clock the runtime reads, injected so tests can drive time without patching.

`Clock` gives a monotonic reading (for durations: lease expiry, backoff, loop lag), the
wall time (for timestamps written to the API, such as a Lease's renewTime) and `sleep`.
`SYSTEM_CLOCK` is the real one. Tests use `tests.kube.fakeclock.FakeClock`, whose
`advance` moves both readings and wakes the sleepers whose time has come.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()
