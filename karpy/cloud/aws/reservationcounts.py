"""`ReservationCounts`: how many instances each capacity reservation can still take.

A reserved offering is worth offering only while its reservation has room. EC2 says how
much (``AvailableInstanceCount`` in DescribeCapacityReservations), but the EC2NodeClass
controller reads it once a minute, and a scale-up launches many NodeClaims in between: a
count read once would send every one of them to a reservation that filled with the
first. So, as Karpenter does, karpy keeps each count and adjusts it between reads:

* **read** (`sync`): the EC2NodeClass controller's DescribeCapacityReservations sets the
  count, remembering when the call was sent;
* **launched** (`launched`): an instance karpy launched into the reservation takes one,
  unless it was launched before the count was read (the read already shows it; at worst
  a slow EC2 makes karpy think there is one more than there is, which costs one failed
  launch, never a stranded pod). Karpenter states this rule but compares the wrong
  times, so it always takes one; karpy compares the instance's launch time;
* **terminated** (`terminated`): an instance confirmed gone gives its place back, once
  per instance, however often the termination is retried;
* **exhausted** (`exhausted`): EC2 refused a launch for lack of reserved capacity, or
  interrupted the reservation: its count is 0 until the next read.

A reservation karpy has not read (or not for a day: Karpenter's expiry) has no room:
it is never launched into on a guess. The counts feed the instance-type provider, whose
reserved offerings are available exactly while their count is above 0; when every
reservation a pod could use is full, the scheduler falls through to the NodePool's other
capacity types as it does for any unavailable offering.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import timedelta
from typing import TYPE_CHECKING, Final

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from karpy.base.clock import Clock

__all__ = ["ReservationCounts", "ReservationRead"]

log = get_logger("aws.reservations")

EXPIRY: Final = timedelta(hours=24)  # a count not read again for this long is forgotten
REMEMBERED_TERMINATIONS: Final = 10_000  # instance IDs already given back, newest kept


@attrs.frozen(slots=True)
class ReservationRead:
    """One reservation as DescribeCapacityReservations answered."""

    id: str
    instance_type: str
    zone: str
    available: int


@attrs.define(slots=True)
class _Count:
    instance_type: str
    zone: str
    available: int
    read_at: datetime


class ReservationCounts:
    """Free instances per capacity reservation (see the module docstring)."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self._counts: dict[str, _Count] = {}
        self._given_back: OrderedDict[str, None] = OrderedDict()

    def sync(self, reads: Iterable[ReservationRead], *, read_at: datetime) -> None:
        """Counts as EC2 gave them, from a call sent at ``read_at``."""
        for read in reads:
            self._counts[read.id] = _Count(
                read.instance_type, read.zone, max(read.available, 0), read_at
            )

    def available(self, reservation_id: str) -> int:
        count = self._live(reservation_id)
        return 0 if count is None else count.available

    def counts(self) -> dict[str, int]:
        """Every reservation's count, for the instance-type provider."""
        return {rid: self.available(rid) for rid in list(self._counts)}

    def launched(self, reservation_id: str, launched_at: datetime | None) -> None:
        """An instance launched into the reservation at ``launched_at``."""
        count = self._live(reservation_id)
        if count is None or (launched_at is not None and launched_at < count.read_at):
            return
        count.available = max(count.available - 1, 0)

    def terminated(self, reservation_id: str, instance_id: str) -> None:
        """The instance, which ran in the reservation, is confirmed gone."""
        count = self._live(reservation_id)
        if count is None or instance_id in self._given_back:
            return
        self._given_back[instance_id] = None
        if len(self._given_back) > REMEMBERED_TERMINATIONS:
            self._given_back.popitem(last=False)
        count.available += 1

    def exhausted(self, reservation_ids: Iterable[str]) -> None:
        """EC2 says these reservations have no room (until the next read)."""
        for rid in reservation_ids:
            count = self._live(rid)
            if count is not None and count.available:
                log.info("capacity reservation full", reservation=rid,
                         believedAvailable=count.available)  # fmt: skip
                count.available = 0

    def exhausted_offerings(self, offerings: Iterable[tuple[str, str]]) -> None:
        """EC2 refused reserved launches of these (instance type, zone) pairs: every
        reservation karpy knows for a pair is full."""
        pairs = set(offerings)
        self.exhausted(rid for rid, c in list(self._counts.items())
                       if (c.instance_type, c.zone) in pairs)  # fmt: skip

    def _live(self, reservation_id: str) -> _Count | None:
        count = self._counts.get(reservation_id)
        if count is not None and self.clock.now() - count.read_at > EXPIRY:
            del self._counts[reservation_id]
            return None
        return count
