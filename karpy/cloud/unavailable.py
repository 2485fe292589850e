"""The insufficient-capacity cache: offerings that recently failed to launch.

When a launch fails with insufficient capacity, the offerings it tried are marked
unavailable for `DEFAULT_TTL` (three minutes, as Karpenter's ICE cache), so the next
scheduling rounds plan around them and providers skip them, and then they are tried
again. `version` changes whenever the set of unavailable offerings changes (a mark, or an
expiry noticed by `current`), so the provisioner can key its compiled scheduling context
on it and rebuild only then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.base.clock import SYSTEM_CLOCK

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.cloud.errors import Offering

__all__ = ["DEFAULT_TTL", "UnavailableOfferings"]

DEFAULT_TTL: Final = 180.0  # seconds


class UnavailableOfferings:
    def __init__(self, *, ttl: float = DEFAULT_TTL, clock: Clock = SYSTEM_CLOCK) -> None:
        self.ttl = ttl
        self.clock = clock
        self.version = 0
        self._until: dict[Offering, float] = {}
        self._current: frozenset[Offering] = frozenset()

    def mark(self, offerings: Iterable[Offering]) -> None:
        """Make ``offerings`` unavailable for the next ``ttl`` seconds."""
        until = self.clock.monotonic() + self.ttl
        for offering in offerings:
            self._until[offering] = until
        self._refresh()

    def current(self) -> frozenset[Offering]:
        """The offerings unavailable now; expired ones are dropped (and bump `version`)."""
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
