"""The CreateFleet request of one launch, and what its answer means.

An instant fleet with a target capacity of one asks EC2 to launch a single instance
from whichever override it judges best: the overrides are every usable (instance type,
zone) of the launch, each with the subnet karpy prefers in that zone (the first one of
the node class's ``status.subnets`` there, which the node class controller keeps sorted
by free IP addresses) and the AMI of its launch template, listed cheapest first with the
price as ``Priority``. Spot uses ``price-capacity-optimized``, on-demand ``lowest-price``;
a reserved launch targets its capacity reservation through the launch template and asks
for on-demand capacity (``capacity-block`` for capacity blocks).

EC2 answers insufficient capacity in ``Errors[]`` with HTTP 200. `read_fleet_response`
sorts them: capacity errors (`CAPACITY_ERROR_CODES`) name offerings to mark unavailable;
no instance and only capacity errors is `InsufficientCapacity` (the NodeClaim is deleted
and its pods planned onto what is left); no instance and any other error is a
`CreateError` with EC2's code as the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT
from karpy.cloud.aws.launch.tags import ec2_tags
from karpy.cloud.errors import CreateError, InsufficientCapacity

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.ec2nodeclass_status import Subnet
    from karpy.cloud.aws.launch.selection import Candidate
    from karpy.scheduling.instancetypes import CapacityPool

__all__ = [
    "CAPACITY_ERROR_CODES",
    "FleetLaunch",
    "TemplateConfig",
    "capacity_errors",
    "create_fleet_request",
    "overrides",
    "read_fleet_response",
    "zonal_subnets",
]

# Karpenter v1.14.1's unfulfillable-capacity codes, plus SpotMaxPriceTooLow (aws#9501,
# after v1.14.1): spot priced above the on-demand price that caps it is no spot capacity.
CAPACITY_ERROR_CODES: Final = frozenset(
    {"InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded",
     "UnfulfillableCapacity", "Unsupported", "InsufficientFreeAddressesInSubnet",
     "MaxFleetCountExceeded", "ReservationCapacityExceeded", "SpotMaxPriceTooLow"}
)  # fmt: skip
SPOT_ALLOCATION_STRATEGY: Final = "price-capacity-optimized"
ON_DEMAND_ALLOCATION_STRATEGY: Final = "lowest-price"


@attrs.frozen(slots=True)
class TemplateConfig:
    """One launch template and the overrides launched through it."""

    name: str
    overrides: tuple[dict[str, Any], ...]


@attrs.frozen(slots=True, kw_only=True)
class FleetLaunch:
    """The instance a fleet launched, with the facts of the override it came from."""

    instance_id: str
    instance_type: str
    zone: str
    subnet_id: str
    image_id: str


def zonal_subnets(nodeclass: EC2NodeClass) -> dict[str, Subnet]:
    """The preferred subnet per zone: the first listed in ``status.subnets``."""
    out: dict[str, Subnet] = {}
    for subnet in nodeclass.status.subnets:
        out.setdefault(subnet.zone, subnet)
    return out


def overrides(
    candidates: Iterable[Candidate],
    subnets: Mapping[str, Subnet],
    image_id: str,
    reservation_id: str = "",
) -> list[tuple[float, dict[str, Any]]]:
    """(price, override) per usable (type, zone) with a subnet, one per zone and type
    (the cheapest offering's price); only the reservation's offerings when one is given."""
    out: list[tuple[float, dict[str, Any]]] = []
    for candidate in candidates:
        seen: set[str] = set()
        for offering in candidate.offerings:
            if reservation_id and offering.reservation_id != reservation_id:
                continue
            subnet = subnets.get(offering.zone)
            if subnet is None or offering.zone in seen:
                continue
            seen.add(offering.zone)
            out.append((offering.price, {
                "InstanceType": candidate.name,
                "SubnetId": subnet.id,
                "AvailabilityZone": offering.zone,
                "ImageId": image_id,
                "Priority": offering.price,
            }))  # fmt: skip
    return out


def create_fleet_request(
    capacity_type: str,
    configs: Sequence[TemplateConfig],
    tags: Mapping[str, str],
    *,
    capacity_block: bool = False,
    context: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of the CreateFleet call."""
    if capacity_type == CAPACITY_TYPE_RESERVED:
        target_type = "capacity-block" if capacity_block else CAPACITY_TYPE_ON_DEMAND
    else:
        target_type = capacity_type
    request: dict[str, Any] = {
        "Type": "instant",
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateName": config.name,
                    "Version": "$Latest",
                },
                "Overrides": [dict(o) for o in config.overrides],
            }
            for config in configs
        ],
        "TargetCapacitySpecification": {
            "TotalTargetCapacity": 1,
            "DefaultTargetCapacityType": target_type,
        },
        "TagSpecifications": [
            {"ResourceType": resource, "Tags": ec2_tags(tags)}
            for resource in ("instance", "volume", "fleet")
        ],
    }
    if capacity_type == CAPACITY_TYPE_SPOT:
        request["SpotOptions"] = {"AllocationStrategy": SPOT_ALLOCATION_STRATEGY}
    elif not capacity_block:
        request["OnDemandOptions"] = {"AllocationStrategy": ON_DEMAND_ALLOCATION_STRATEGY}
    if context:
        request["Context"] = context
    return request


def _error_pool(error: Mapping[str, Any], capacity_type: str) -> CapacityPool:
    override = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
    return (
        str(override.get("InstanceType", "")),
        str(override.get("AvailabilityZone", "")),
        capacity_type,
    )


def capacity_errors(response: Mapping[str, Any], capacity_type: str) -> tuple[CapacityPool, ...]:
    """The capacity pools ``response`` reports out of capacity, to mark unavailable."""
    errors = response.get("Errors") or ()
    keys = (_error_pool(e, capacity_type) for e in errors
            if e.get("ErrorCode") in CAPACITY_ERROR_CODES)  # fmt: skip
    return tuple(dict.fromkeys(keys))


def read_fleet_response(response: Mapping[str, Any], capacity_type: str) -> FleetLaunch:
    """The launched instance; `InsufficientCapacity` or `CreateError` when there is none
    (see the module docstring)."""
    for instance in response.get("Instances") or ():
        ids = instance.get("InstanceIds") or ()
        if not ids:
            continue
        override = (instance.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
        return FleetLaunch(
            instance_id=str(ids[0]),
            instance_type=str(instance.get("InstanceType") or override.get("InstanceType", "")),
            zone=str(override.get("AvailabilityZone", "")),
            subnet_id=str(override.get("SubnetId", "")),
            image_id=str(override.get("ImageId", "")),
        )
    errors = list(response.get("Errors") or ())
    summary = "; ".join(sorted({f"{e.get('ErrorCode')}: {e.get('ErrorMessage')}" for e in errors}))
    message = f"CreateFleet launched nothing: {summary or 'no error reported'}"
    other = [str(e.get("ErrorCode")) for e in errors
             if e.get("ErrorCode") not in CAPACITY_ERROR_CODES]  # fmt: skip
    if not other:
        raise InsufficientCapacity(message, capacity_errors(response, capacity_type))
    raise CreateError(message, other[0])
