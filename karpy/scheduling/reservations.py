"""Capacity reservations within a round: who holds which reserved offering.

Reserved offerings (``karpenter.sh/capacity-type: reserved``) come from a capacity
reservation with a fixed number of instances. A NodeClaim planned in the round does not
know yet which instance type it will launch as, so it holds *every* compatible reserved
offering it could use (Karpenter's pessimism): a reservation with capacity 1 held by one
planned NodeClaim is unavailable to the next. Holding is idempotent per NodeClaim, and a
NodeClaim that narrows away from an offering releases it.

With the strict policy the provisioner uses, a pod that could use a reservation but finds
it fully held is not sent to on-demand or spot capacity, or to a lower-weight NodePool: it
waits for the next round, when the reservation's real usage is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.labels import CAPACITY_TYPE_RESERVED

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.scheduling.instancetypes import InstanceType

__all__ = ["ReservationManager"]

RESERVED: Final = CAPACITY_TYPE_RESERVED


class ReservationManager:
    __slots__ = ("_capacity", "_held")

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        self._capacity: dict[str, int] = {}
        for it in instance_types:
            for o in it.offerings:
                if o.capacity_type != RESERVED or not o.reservation_id:
                    continue
                # The same reservation seen twice (two pools): trust the smaller count.
                current = self._capacity.get(o.reservation_id)
                if current is None or o.reservation_capacity < current:
                    self._capacity[o.reservation_id] = o.reservation_capacity
        self._held: dict[str, set[str]] = {}

    def can_reserve(self, host: str, reservation: str) -> bool:
        if reservation in self._held.get(host, ()):
            return True
        return self._capacity.get(reservation, 0) > 0

    def hold(self, host: str, reservations: Iterable[str]) -> None:
        """Make ``host`` hold exactly ``reservations``, releasing what it no longer needs."""
        wanted = set(reservations)
        held = self._held.setdefault(host, set())
        for reservation in held - wanted:
            self._capacity[reservation] += 1
        for reservation in wanted - held:
            self._capacity[reservation] -= 1
        self._held[host] = wanted

    def remaining(self, reservation: str) -> int:
        return self._capacity.get(reservation, 0)
