"""The status of an EC2NodeClass: what its selector terms resolved to in the account
(subnets, security groups, AMIs, capacity reservations, the instance profile) and its
readiness conditions. Written by the node class controller, read by the cloud provider
when it launches instances."""

from __future__ import annotations

# ruff: noqa: RUF009 - `wire(...)` declares attrs fields, as attrs.field does.
from collections.abc import Mapping  # noqa: TC003 - annotations are resolved at runtime
from datetime import datetime  # noqa: TC003 - annotations are resolved at runtime
from typing import Any

import attrs

from karpy.apis.conditions import Condition  # noqa: TC001
from karpy.apis.core import NodeSelectorRequirement  # noqa: TC001
from karpy.apis.records import Record, wire

__all__ = ["AMI", "CapacityReservation", "EC2NodeClassStatus", "SecurityGroup", "Subnet"]


@attrs.frozen(slots=True, kw_only=True)
class Subnet(Record):
    id: str = wire("id", always=True)
    zone: str = wire("zone", always=True)
    zone_id: str | None = wire("zoneID", default=None)


@attrs.frozen(slots=True, kw_only=True)
class SecurityGroup(Record):
    id: str = wire("id", always=True)
    name: str | None = wire("name", default=None)


@attrs.frozen(slots=True, kw_only=True)
class AMI(Record):
    id: str = wire("id", always=True)
    name: str | None = wire("name", default=None)
    deprecated: bool = wire("deprecated", default=False)
    requirements: tuple[NodeSelectorRequirement, ...] = wire(
        "requirements", default=(), always=True
    )


@attrs.frozen(slots=True, kw_only=True)
class CapacityReservation(Record):
    availability_zone: str = wire("availabilityZone", always=True)
    id: str = wire("id", always=True)
    instance_match_criteria: str = wire("instanceMatchCriteria", always=True)
    instance_type: str = wire("instanceType", always=True)
    owner_id: str = wire("ownerID", always=True)
    end_time: datetime | None = wire("endTime", default=None)
    reservation_type: str = wire("reservationType", default="default", always=True)
    interruptible: bool = wire("interruptible", default=False, always=True)
    state: str = wire("state", default="active", always=True)


@attrs.frozen(slots=True, kw_only=True)
class EC2NodeClassStatus(Record):
    subnets: tuple[Subnet, ...] = wire("subnets", default=())
    security_groups: tuple[SecurityGroup, ...] = wire("securityGroups", default=())
    capacity_reservations: tuple[CapacityReservation, ...] = wire(
        "capacityReservations", default=()
    )
    amis: tuple[AMI, ...] = wire("amis", default=())
    instance_profile: str = wire("instanceProfile", default="")
    conditions: tuple[Condition, ...] = wire("conditions", default=())

    @classmethod
    def parse(cls, data: Mapping[str, Any] | None) -> EC2NodeClassStatus:
        return cls.from_dict(data or {}, "status")

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)
