"""Capacity reservations an EC2NodeClass selects (``spec.capacityReservationSelectorTerms``)
→ ``status.capacityReservations`` (only with the ``ReservedCapacity`` feature gate).

A term with an ``id`` asks for that reservation; a term with tags or an instance match
criteria (optionally limited to an owner account) is a filtered query of its own. Only
active reservations are asked for, and any whose end has passed are dropped. A capacity
block is reported ``expiring`` from forty minutes before its end (its instances are
about to be reclaimed, so nothing new should launch into it); everything else is
``active``. A reservation with a match criteria or type EC2 may add in future is left
out (and logged) rather than misread.

The controller looks again every minute, or at the next end time if that comes sooner.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.apis.ec2nodeclass_status import CapacityReservation
from karpy.cloud.aws.nodeclass.selectors import describe_all, tag_filters, unique_by
from karpy.cloud.aws.reservationcounts import ReservationRead
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.ec2nodeclass import CapacityReservationSelectorTerm

__all__ = [
    "POLL_PERIOD",
    "find_reservations",
    "reservation_queries",
    "reservation_reads",
    "reservation_statuses",
    "reservations_requeue",
]

log = get_logger("aws.nodeclass.reservations")

POLL_PERIOD: Final = 60.0  # seconds
EXPIRY_WINDOW: Final = timedelta(minutes=40)
_MATCH_CRITERIA: Final = frozenset({"open", "targeted"})
_TYPES: Final = frozenset({"default", "capacity-block"})


def reservation_queries(terms: Sequence[CapacityReservationSelectorTerm]) -> list[dict[str, Any]]:
    """DescribeCapacityReservations parameters, one set per query."""
    active = {"Name": "state", "Values": ["active"]}
    queries: list[dict[str, Any]] = []
    for term in terms:
        if term.id:
            queries.append({"CapacityReservationIds": [term.id], "Filters": [active]})
        if term.tags or term.instance_match_criteria:
            filters = [active]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            filters += tag_filters(term.tags)
            if term.instance_match_criteria:
                filters.append({"Name": "instance-match-criteria",
                                "Values": [term.instance_match_criteria]})  # fmt: skip
            queries.append({"Filters": filters})
    return queries


async def find_reservations(
    ec2: Any, terms: Sequence[CapacityReservationSelectorTerm], now: datetime
) -> list[dict[str, Any]]:
    """The active reservations the terms match, each once, none already ended."""
    found: list[dict[str, Any]] = []
    for params in reservation_queries(terms):
        try:
            found += await describe_all(
                ec2, "describe_capacity_reservations", "CapacityReservations", **params
            )
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if "CapacityReservationId" not in params or not code.endswith("NotFound"):
                raise
    return [
        r for r in unique_by(found, "CapacityReservationId")
        if r.get("EndDate") is None or r["EndDate"] > now
    ]  # fmt: skip


def reservation_reads(reservations: Sequence[dict[str, Any]]) -> list[ReservationRead]:
    """How many instances each reservation can still take, as EC2 counted them."""
    return [ReservationRead(str(r["CapacityReservationId"]), str(r["InstanceType"]),
                            str(r["AvailabilityZone"]), int(r.get("AvailableInstanceCount") or 0))
            for r in reservations]  # fmt: skip


def reservation_statuses(
    reservations: Sequence[dict[str, Any]], now: datetime
) -> tuple[CapacityReservation, ...]:
    """``status.capacityReservations``, by id."""
    out = []
    for r in sorted(reservations, key=lambda r: str(r["CapacityReservationId"])):
        rid = r["CapacityReservationId"]
        criteria = r.get("InstanceMatchCriteria")
        kind = r.get("ReservationType") or "default"
        if criteria not in _MATCH_CRITERIA or kind not in _TYPES:
            log.error("unsupported capacity reservation", capacityReservation=rid,
                      instanceMatchCriteria=criteria, reservationType=kind)  # fmt: skip
            continue
        end: datetime | None = r.get("EndDate")
        expiring = kind == "capacity-block" and end is not None and now >= end - EXPIRY_WINDOW
        out.append(
            CapacityReservation(
                availability_zone=r["AvailabilityZone"],
                id=rid,
                instance_match_criteria=criteria,
                instance_type=r["InstanceType"],
                owner_id=r["OwnerId"],
                end_time=end,
                reservation_type=kind,
                interruptible=bool(r.get("Interruptible", False)),
                state="expiring" if expiring else "active",
            )
        )
    return tuple(out)


def reservations_requeue(reservations: Sequence[dict[str, Any]], now: datetime) -> float:
    """Seconds until the next look: a minute, or sooner if a reservation ends first."""
    ends: list[datetime] = [r["EndDate"] for r in reservations if r.get("EndDate") is not None]
    if not ends:
        return POLL_PERIOD
    return max(0.0, min(POLL_PERIOD, (min(ends) - now).total_seconds()))
