"""Solves in a worker thread that end when the task awaiting them is cancelled.

A scheduling solve runs in a thread so the event loop keeps serving watches, the lease and
the probes. Cancelling the task that awaits it (the controller stopping after its grace,
or losing its lease) does not stop the thread: Python cannot interrupt one. Left alone it
would run on to its time budget (``SCHEDULING_TIMEOUT``, 30 s by default), and the
interpreter waits for it at exit, pushing the pod past its termination grace period.

`solve_in_thread` hands the solve a `threading.Event`, sets it when the awaiting task is
cancelled, waits for the thread to notice (the solver looks between groups of pods, see
`karpy.scheduling.solver`) and re-raises the cancellation. A solve that saw the flag
raises `SolveCancelled` and has no result, so nothing is ever created from a round cut
short this way.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, TypeVar

from karpy.log import describe_error, get_logger
from karpy.scheduling.solver import SolveCancelled

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["solve_in_thread"]

log = get_logger("provisioner")

T = TypeVar("T")


async def solve_in_thread(solve: Callable[[threading.Event], T]) -> T:
    """``solve(cancel)`` in the loop's default thread pool; ``cancel`` is set, and the
    thread waited for, if this coroutine is cancelled (see the module docstring)."""
    cancel = threading.Event()
    solving = asyncio.ensure_future(asyncio.to_thread(solve, cancel))
    try:
        return await asyncio.shield(solving)
    except asyncio.CancelledError:
        cancel.set()
        await asyncio.wait([solving])
        failure = None if solving.cancelled() else solving.exception()
        if failure is not None and not isinstance(failure, SolveCancelled):
            log.error("solve failed while cancelled", error=describe_error(failure),
                      exc_info=failure)  # fmt: skip
        raise
