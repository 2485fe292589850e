"""What the settings do to the process itself, once, when the controller's event loop
starts: `apply_to_process`.

Karpenter turns ``CPU_REQUESTS`` into Go's GOMAXPROCS and ``MEMORY_LIMIT`` into GOMEMLIMIT.
Python has neither knob, so karpy does what is honest for it:

* ``CPU_REQUESTS`` sizes the event loop's default thread pool, where scheduling solves,
  disruption's what-if solves and blocking calls (DNS lookups among them) run. Python sizes
  that pool from the host's CPU count (``min(32, cpus + 4)``), which in a pod is the node's,
  not the container's; karpy applies the same formula to the whole cores requested,
  rounded up. The GIL runs one thread of Python at a time, so more threads than that
  would only queue.
* ``MEMORY_LIMIT`` is accepted (the Karpenter chart sets it) and not used: CPython has no
  soft heap limit to give it to, and the kernel enforces the container's limit anyway.

Gate names karpy does not know (kept aside by `karpy.settings.gates`) are logged here,
once, now that logging is configured.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final

from karpy.base.gil import share_the_gil
from karpy.log import get_logger
from karpy.settings.inert import inert_settings

if TYPE_CHECKING:
    from karpy.settings.record import Settings

__all__ = ["apply_to_process", "worker_threads"]

log = get_logger("settings")

MAX_WORKER_THREADS: Final = 32  # Python's own ceiling for the default pool
THREAD_NAME_PREFIX: Final = "karpy-worker"


def worker_threads(cpu_requests: int) -> int:
    """Threads of the default pool for a CPU request in millicores: Python's formula
    (``min(32, cpus + 4)``) with the cores requested, rounded up, as ``cpus``."""
    cores = max(1, math.ceil(cpu_requests / 1000))
    return min(MAX_WORKER_THREADS, cores + 4)


def apply_to_process(settings: Settings, loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Size the running loop's default thread pool from ``CPU_REQUESTS``, shorten the
    switch interval so the loop is not starved by solver threads (`share_the_gil`), and
    log the feature gates that are ignored. Call once, from the controller's event loop."""
    loop = loop or asyncio.get_running_loop()
    share_the_gil()
    threads = worker_threads(settings.cpu_requests)
    loop.set_default_executor(
        ThreadPoolExecutor(max_workers=threads, thread_name_prefix=THREAD_NAME_PREFIX)
    )
    log.debug("sized worker threads", threads=threads, cpuRequests=settings.cpu_requests)
    ignored = {
        "FEATURE_GATES": settings.feature_gates.unknown,
        "AWS_FEATURE_GATES": settings.aws_feature_gates.unknown,
    }
    for env, names in ignored.items():
        if names:
            log.warning("ignoring unknown feature gates", setting=env, gates=list(names))
    for setting, instead in inert_settings(settings).items():
        log.warning("setting has no effect in karpy yet", setting=setting, instead=instead)
