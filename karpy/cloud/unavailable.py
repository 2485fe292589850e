"""The insufficient-capacity cache: offerings that recently failed to launch.

When a launch fails with insufficient capacity, the capacity pools it tried (each names
one instance type's offering: `karpy.scheduling.instancetypes.CapacityPool`) are marked unavailable
for `DEFAULT_TTL` (three minutes, as Karpenter's ICE cache), so the next scheduling rounds
plan around them and providers skip them, and then they are tried again. `version`
changes whenever the set of unavailable pools changes (a mark, or an expiry noticed by
`current`), so the provisioner can key its compiled scheduling context on it and rebuild
only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.scheduling.instancetypes import CapacityPool

__all__ = ["DEFAULT_TTL", "UnavailableOfferings"]

DEFAULT_TTL: Final = 180.0  # seconds


class UnavailableOfferings:
    def __init__(self, *, ttl: float = DEFAULT_TTL, clock: Clock = SYSTEM_CLOCK) -> None:
        self.ttl = ttl
        self.clock = clock
        self.version = 0
        self._until: dict[CapacityPool, float] = {}
        self._current: frozenset[CapacityPool] = frozenset()

    def mark(self, pools: Iterable[CapacityPool]) -> None:
        """Make the offerings of ``pools`` unavailable for the next ``ttl`` seconds."""
        until = self.clock.monotonic() + self.ttl
        for pool in pools:
            self._until[pool] = until
        self._refresh()

    def current(self) -> frozenset[CapacityPool]:
        """The pools unavailable now; expired ones are dropped (and bump `version`)."""
        now = self.clock.monotonic()
        if any(deadline <= now for deadline in self._until.values()):
            self._until = {o: d for o, d in self._until.items() if d > now}
            self._refresh()
        return self._current

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return (instance_type, zone, capacity_type) in self.current()

    def _refresh(self) -> None:
        current = frozenset(self._until)
        if current != self._current:
            self._current = current
            self.version += 1
