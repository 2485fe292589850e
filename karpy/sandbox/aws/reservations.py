"""On-demand capacity reservations in the sandbox's EC2, which moto does not have.

Karpenter (and karpy) launch into a capacity reservation through a launch template whose
``CapacityReservationSpecification`` targets it, and read how much room each has from
DescribeCapacityReservations' ``AvailableInstanceCount``. To test that karpy counts
that room right — it fills a reservation, then falls through to on-demand, and gets the
place back when an instance terminates — the sandbox's EC2 keeps reservations as EC2
does:

* ``CreateCapacityReservation`` makes one (instance type, zone, count, match criteria,
  tags, end date, owner: the caller's account), active at once;
* ``DescribeCapacityReservations`` answers by ``CapacityReservationIds`` and the filters
  karpy sends (``state``, ``owner-id``, ``instance-match-criteria``, ``instance-type``,
  ``availability-zone``, ``tag:KEY``); ``AvailableInstanceCount`` is the total less the
  instances launched into it that are not terminated, so a termination frees its place;
* a CreateFleet override whose launch template targets a reservation launches only while
  it has room, the type and zone match, and it is active; otherwise the override is an
  ``Errors[]`` entry with EC2's code (``ReservationCapacityExceeded``,
  ``InvalidParameterValue``...), as `karpy.sandbox.aws.fleet` reports any refusal.

Reservations live on moto's EC2 backend, so a reset forgets them. `install` adds the two
actions to moto's EC2 responses; `refusal` and `record_launch` are what the fleet patch
asks.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import attrs
from moto.core.responses import ActionResult
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.responses import EC2Response

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["install", "record_launch", "refusal", "target_of"]

STORE_ATTRIBUTE: Final = "_karpy_capacity_reservations"
_TERMINATED: Final = frozenset({"terminated", "shutting-down"})
_ids = itertools.count(0x1000)


@attrs.define(slots=True)
class Reservation:
    id: str
    owner_id: str
    region: str
    instance_type: str
    zone: str
    total: int
    match_criteria: str
    tags: dict[str, str]
    created: datetime
    end: datetime | None
    reservation_type: str = "default"
    state: str = "active"
    instances: set[str] = attrs.field(factory=set)

    def available(self, backend: Any) -> int:
        running = sum(1 for i in self.instances if _live(backend, i))
        return max(self.total - running, 0)

    def record(self, backend: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "CapacityReservationId": self.id,
            "OwnerId": self.owner_id,
            "CapacityReservationArn":
                f"arn:aws:ec2:{self.region}:{self.owner_id}:capacity-reservation/{self.id}",
            "InstanceType": self.instance_type,
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": self.zone,
            "Tenancy": "default",
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": self.available(backend),
            "EbsOptimized": False,
            "EphemeralStorage": False,
            "State": self.state,
            "StartDate": self.created,
            "EndDateType": "limited" if self.end is not None else "unlimited",
            "InstanceMatchCriteria": self.match_criteria,
            "CreateDate": self.created,
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())],
            "ReservationType": self.reservation_type,
        }  # fmt: skip
        if self.end is not None:
            out["EndDate"] = self.end
        return out


def _live(backend: Any, instance_id: str) -> bool:
    """The instance exists and is not (being) terminated."""
    try:
        return backend.get_instance(instance_id).state not in _TERMINATED
    except EC2ClientError:
        return False


def _store(backend: Any) -> dict[str, Reservation]:
    store: dict[str, Reservation] = backend.__dict__.setdefault(STORE_ATTRIBUTE, {})
    return store


class _InvalidParameter(EC2ClientError):
    def __init__(self, message: str) -> None:
        super().__init__("InvalidParameterValue", message)


def _create(self: EC2Response) -> ActionResult:
    instance_type = str(self._get_param("InstanceType") or "")
    zone = str(self._get_param("AvailabilityZone") or "")
    count = int(self._get_param("InstanceCount") or 0)
    if not instance_type or not zone or count < 1:
        raise _InvalidParameter("InstanceType, AvailabilityZone and a positive "
                                "InstanceCount are required")  # fmt: skip
    tags: dict[str, str] = {}
    for spec in self._get_param("TagSpecifications", []) or []:
        for tag in spec.get("Tags") or []:
            tags[str(tag["Key"])] = str(tag.get("Value", ""))
    end = self._get_param("EndDate")
    reservation = Reservation(
        id=f"cr-{next(_ids):017x}",
        owner_id=self.current_account,
        region=self.region,
        instance_type=instance_type,
        zone=zone,
        total=count,
        match_criteria=str(self._get_param("InstanceMatchCriteria") or "open"),
        tags=tags,
        created=datetime.now(UTC),
        end=_parse_time(end) if end else None,
    )
    _store(self.ec2_backend)[reservation.id] = reservation
    return ActionResult({"CapacityReservation": reservation.record(self.ec2_backend)})


def _parse_time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _describe(self: EC2Response) -> ActionResult:
    backend = self.ec2_backend
    ids = [str(i) for i in self._get_param("CapacityReservationIds", []) or []]
    store = _store(backend)
    missing = [i for i in ids if i not in store]
    if missing:
        message = f"The capacity reservation ID '{missing[0]}' does not exist"
        raise EC2ClientError("InvalidCapacityReservationId.NotFound", message)
    filters = {str(f["Name"]): [str(v) for v in f.get("Values") or []]
               for f in self._get_param("Filters", []) or []}  # fmt: skip
    chosen = [r for rid, r in sorted(store.items())
              if (not ids or rid in ids) and _matches(r, filters)]  # fmt: skip
    return ActionResult({"CapacityReservations": [r.record(backend) for r in chosen]})


def _matches(reservation: Reservation, filters: Mapping[str, list[str]]) -> bool:
    fields = {
        "state": reservation.state,
        "owner-id": reservation.owner_id,
        "instance-match-criteria": reservation.match_criteria,
        "instance-type": reservation.instance_type,
        "availability-zone": reservation.zone,
    }
    for name, values in filters.items():
        if name.startswith("tag:"):
            value = reservation.tags.get(name[4:])
            if value is None or ("*" not in values and value not in values):
                return False
        elif name in fields:
            if fields[name] not in values:
                return False
        else:
            raise _InvalidParameter(f"The filter '{name}' is invalid")
    return True


def target_of(template_data: Mapping[str, Any]) -> str:
    """The reservation a launch template's data targets ("" for none)."""
    spec = template_data.get("CapacityReservationSpecification") or {}
    return str((spec.get("CapacityReservationTarget") or {}).get("CapacityReservationId") or "")


def refusal(backend: Any, reservation_id: str, instance_type: str,
            zone: str) -> tuple[str, str] | None:  # fmt: skip
    """(code, message) when EC2 would not launch this override into the reservation."""
    reservation = _store(backend).get(reservation_id)
    if reservation is None:
        return ("InvalidCapacityReservationId.NotFound",
                f"The capacity reservation ID '{reservation_id}' does not exist")  # fmt: skip
    if reservation.instance_type != instance_type or reservation.zone != zone:
        return ("InvalidParameterValue",
                f"The capacity reservation {reservation_id} is for {reservation.instance_type} "
                f"in {reservation.zone}, not {instance_type} in {zone}")  # fmt: skip
    if reservation.state != "active" or reservation.available(backend) < 1:
        return ("ReservationCapacityExceeded",
                f"The capacity reservation {reservation_id} has no available capacity")  # fmt: skip
    return None


def record_launch(backend: Any, reservation_id: str, instance_ids: list[str]) -> None:
    """The instances now run in the reservation."""
    reservation = _store(backend).get(reservation_id)
    if reservation is not None:
        reservation.instances.update(instance_ids)


def install() -> None:
    """Add CreateCapacityReservation and DescribeCapacityReservations to moto's EC2."""
    EC2Response.create_capacity_reservation = _create  # type: ignore[attr-defined]
    EC2Response.describe_capacity_reservations = _describe  # type: ignore[attr-defined]
