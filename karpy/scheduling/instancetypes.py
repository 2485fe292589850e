"""Instance types and their offerings: what a cloud provider can launch, at what price.

An `InstanceType` is a machine shape (capacity, overhead and hence allocatable, label
requirements such as arch and OS) with `Offering`s: where and how it can be bought (zone,
capacity type, optionally a capacity reservation), each with a price and availability.
Cloud providers (the AWS provider, the catalog-driven fake) produce these records; the
scheduler only reads them.

Allocatable is capacity minus overhead, clamped at zero; hugepages capacity is taken out
of memory, as the kubelet does.

``volume_attachment_limits`` is how many volumes a node of the type is expected to attach,
per CSI driver (Karpenter's ``VolumeAttachmentLimits``). A new node has no CSINode yet, so
this is the only limit the scheduler knows when it plans one; once the node registers, its
CSINode's counts are used instead. A driver the map does not name is unlimited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_ZONE,
)
from karpy.scheduling.requirements import IN, Requirement, Requirements
from karpy.scheduling.resources import MEMORY, ResourceList

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["CapacityPool", "InstanceType", "Offering", "compute_allocatable", "new_instance_type"]

# One instance type in one zone bought one way: (instance type, zone, capacity type), as
# EC2 names a spot capacity pool. It is what runs out of capacity (`InsufficientCapacity`
# names the pools tried) and so what identifies an unavailable `Offering` of a type.
CapacityPool = tuple[str, str, str]

# Label that carries a capacity reservation's ID on reserved offerings and their nodes.
RESERVATION_ID_LABEL: Final = LABEL_AWS_CAPACITY_RESERVATION_ID
# When several offerings cost the same, launch the one Karpenter's providers prefer.
CAPACITY_TYPE_PREFERENCE: Final = {
    CAPACITY_TYPE_RESERVED: 0,
    CAPACITY_TYPE_SPOT: 1,
    CAPACITY_TYPE_ON_DEMAND: 2,
}


@attrs.frozen(slots=True)
class Offering:
    zone: str
    capacity_type: str
    price: float
    available: bool = True
    reservation_id: str = ""
    reservation_capacity: int = 0
    price_overlaid: bool = False

    @property
    def labels(self) -> dict[str, str]:
        out = {LABEL_ZONE: self.zone, LABEL_CAPACITY_TYPE: self.capacity_type}
        if self.reservation_id:
            out[RESERVATION_ID_LABEL] = self.reservation_id
        return out

    @property
    def requirements(self) -> Requirements:
        return Requirements.from_labels(self.labels)

    def compatible(self, requirements: Requirements) -> bool:
        """Could a node with ``requirements`` be bought through this offering?"""
        if not requirements.get(LABEL_ZONE).has(self.zone):
            return False
        if not requirements.get(LABEL_CAPACITY_TYPE).has(self.capacity_type):
            return False
        reservation = requirements.find(RESERVATION_ID_LABEL)
        if reservation is None:
            return True
        if self.reservation_id:
            return reservation.has(self.reservation_id)
        return reservation.is_negative

    def sort_key(self) -> tuple[float, int, str]:
        return (self.price, CAPACITY_TYPE_PREFERENCE.get(self.capacity_type, 9), self.zone)


@attrs.frozen(slots=True)
class InstanceType:
    name: str
    requirements: Requirements
    offerings: tuple[Offering, ...]
    capacity: ResourceList
    overhead: ResourceList
    allocatable: ResourceList
    capacity_overlaid: bool = False
    volume_attachment_limits: dict[str, int] = attrs.field(factory=dict)

    @property
    def available_offerings(self) -> tuple[Offering, ...]:
        return tuple(o for o in self.offerings if o.available)

    @property
    def price_overlaid(self) -> bool:
        return any(o.price_overlaid for o in self.offerings)

    def cheapest_offering(self, requirements: Requirements) -> Offering | None:
        best: Offering | None = None
        for offering in self.offerings:
            if not offering.available or not offering.compatible(requirements):
                continue
            if best is None or offering.sort_key() < best.sort_key():
                best = offering
        return best

    def labels(self) -> dict[str, str]:
        """Labels a node of this type carries regardless of offering."""
        return self.requirements.labels()


def compute_allocatable(capacity: Mapping[str, int], overhead: Mapping[str, int]) -> ResourceList:
    allocatable = {name: max(value - overhead.get(name, 0), 0) for name, value in capacity.items()}
    hugepages = sum(v for k, v in capacity.items() if k.startswith("hugepages-"))
    if hugepages and MEMORY in allocatable:
        allocatable[MEMORY] = max(allocatable[MEMORY] - hugepages, 0)
    return allocatable


def new_instance_type(
    name: str,
    *,
    capacity: Mapping[str, int],
    offerings: Iterable[Offering],
    overhead: Mapping[str, int] | None = None,
    labels: Mapping[str, str] | None = None,
    requirements: Iterable[Requirement] = (),
    volume_attachment_limits: Mapping[str, int] | None = None,
) -> InstanceType:
    """Build an instance type the way providers describe one.

    ``labels`` become single-valued requirements; ``node.kubernetes.io/instance-type``
    comes from ``name``; zone and capacity type requirements list what the *available*
    offerings provide.
    """
    # A reservation with no capacity left cannot be launched into.
    offerings = tuple(
        attrs.evolve(o, available=False)
        if o.capacity_type == CAPACITY_TYPE_RESERVED and o.reservation_capacity <= 0
        else o
        for o in offerings
    )
    overhead = dict(overhead or {})
    available = [o for o in offerings if o.available]
    reqs = [Requirement.new(LABEL_INSTANCE_TYPE, IN, (name,))]
    reqs += [Requirement.new(k, IN, (v,)) for k, v in (labels or {}).items()]
    reqs += list(requirements)
    reqs.append(Requirement.new(LABEL_ZONE, IN, sorted({o.zone for o in available})))
    reqs.append(
        Requirement.new(LABEL_CAPACITY_TYPE, IN, sorted({o.capacity_type for o in available}))
    )
    return InstanceType(
        name=name,
        requirements=Requirements(reqs),
        offerings=offerings,
        capacity=dict(capacity),
        overhead=overhead,
        allocatable=compute_allocatable(capacity, overhead),
        volume_attachment_limits=dict(volume_attachment_limits or {}),
    )
