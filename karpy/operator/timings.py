"""`RuntimeTimings`: the controller's lease timings, in one record both the wiring
(`karpy.operator.wiring`, the leader elector) and the controller list
(`karpy.operator.controllers`, the node-lease garbage collector) read, so neither imports
the other."""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["DEFAULT_TIMINGS", "RuntimeTimings"]


@attrs.frozen(slots=True)
class RuntimeTimings:
    """Seconds; Karpenter's (controller-runtime's) defaults. Tests shorten them through
    hidden flags (``--leader-election-lease-duration`` and friends)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    lease_gc_grace: float = 300.0
    lease_gc_period: float = 60.0


DEFAULT_TIMINGS: Final = RuntimeTimings()
