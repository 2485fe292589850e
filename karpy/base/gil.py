"""`share_the_gil`: let an event loop get the interpreter back quickly from a busy thread.

karpy solves on worker threads (a provisioning round, disruption's what-ifs; in the
sandbox, the kube-scheduler stand-in's passes) so the event loop keeps serving watches,
writes and probes. But every socket read or write, every log line, releases the GIL, and
a thread that gives it up behind a CPU-bound thread waits for that thread to be forced
off it: up to the interpreter's switch interval, 5 ms by default. An event loop doing a
few thousand I/O operations a second then runs at a fraction of its speed for as long as
a solve lasts (measured: a pipe write and read pair fell from ~30,000 a second to under
1,000 beside a spinning thread). A 1 ms interval gives the loop its turn five times sooner,
for a few percent of the solver's throughput.
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = ["SWITCH_INTERVAL", "share_the_gil"]

SWITCH_INTERVAL: Final = 0.001  # seconds


def share_the_gil(interval: float = SWITCH_INTERVAL) -> None:
    """Set the process's switch interval (see the module docstring)."""
    sys.setswitchinterval(interval)
