"""The region's instance-type catalog: what EC2 sells here, and in which zones.

Two paginated calls, as Karpenter makes them: DescribeInstanceTypes restricted to HVM
types of the architectures Kubernetes nodes run (x86_64, arm64), pages of 100; and
DescribeInstanceTypeOfferings by availability zone, pages of 1000. The result is an
immutable `Catalog` holding the raw records (``describe`` answers from them) and the
zones each type is offered in. Fetching it takes seconds (and ~6 MB of XML), so it is
done in the background every 12 hours, never while scheduling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["Catalog", "fetch_catalog", "fetch_zone_ids"]

TYPE_FILTERS: Final = (
    {"Name": "supported-virtualization-type", "Values": ["hvm"]},
    {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]},
)


@attrs.frozen(slots=True, eq=False)
class Catalog:
    types: Mapping[str, Mapping[str, Any]]  # name -> DescribeInstanceTypes record
    zones_of: Mapping[str, frozenset[str]]  # name -> zones it is offered in

    @property
    def zones(self) -> frozenset[str]:
        return frozenset().union(*self.zones_of.values()) if self.zones_of else frozenset()

    def same_as(self, other: Catalog | None) -> bool:
        return (other is not None and self.zones_of == other.zones_of
                and self.types == other.types)  # fmt: skip


async def fetch_catalog(ec2: Any) -> Catalog:
    types: dict[str, Mapping[str, Any]] = {}
    paginator = ec2.get_paginator("describe_instance_types")
    async for page in paginator.paginate(Filters=list(TYPE_FILTERS), MaxResults=100):
        for record in page.get("InstanceTypes") or ():
            types[str(record["InstanceType"])] = record
    zones: dict[str, set[str]] = {}
    paginator = ec2.get_paginator("describe_instance_type_offerings")
    async for page in paginator.paginate(LocationType="availability-zone", MaxResults=1000):
        for offering in page.get("InstanceTypeOfferings") or ():
            zones.setdefault(str(offering["InstanceType"]), set()).add(str(offering["Location"]))
    return Catalog(types=types, zones_of={k: frozenset(v) for k, v in zones.items()})


async def fetch_zone_ids(ec2: Any) -> dict[str, str]:
    """Zone name -> zone ID (``us-west-2a`` -> ``usw2-az2``) for the region."""
    answer = await ec2.describe_availability_zones()
    return {
        str(z["ZoneName"]): str(z.get("ZoneId", "")) for z in answer.get("AvailabilityZones") or ()
    }
