"""Instance types numbered once, and sets of them as integer bitsets.

Karpenter spends most of a scheduling round filtering instance-type lists: for every pod it
tries on every candidate node it re-checks each remaining type's requirements, resources
and offerings. karpy numbers the instance types once and represents any set of them as a
Python ``int`` whose bit ``i`` stands for type ``i``. Filtering becomes ``&``:

* `requirement_mask` - types whose label requirement on one key overlaps a requirement
  (computed once per distinct requirement and memoised);
* `offering_mask` - types with an available offering in the allowed zones, capacity
  types and reservations (memoised per combination);
* `fits_mask` - types whose allocatable covers a resource request: for each resource the
  distinct allocatable values are sorted with the mask of types at or above each value, so
  a lookup is one binary search per requested resource.

AND-ing 400- to 800-bit integers costs a few machine words, so a whole instance-type
filter is a handful of dictionary lookups and integer operations. The index is built once
per version of its inputs (instance types, availability) and shared by every round.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_ZONE
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL
from karpy.scheduling.requirements import Requirement

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.requirements import Requirements

__all__ = ["InstanceTypeIndex", "iter_bits"]

OfferingKey = tuple[Requirement | None, Requirement | None, Requirement | None]


def iter_bits(mask: int) -> Iterator[int]:
    """Positions of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class InstanceTypeIndex:
    """A fixed numbering of instance types with memoised bitset filters."""

    __slots__ = (
        "_offering_cache",
        "_offering_groups",
        "_position",
        "_requirement_cache",
        "_resource_masks",
        "_resource_values",
        "all_mask",
        "defined_keys",
        "types",
    )

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        """Number ``instance_types`` (each object once, in the given order)."""
        types: list[InstanceType] = []
        position: dict[int, int] = {}
        for it in instance_types:
            if id(it) not in position:
                position[id(it)] = len(types)
                types.append(it)
        self.types: tuple[InstanceType, ...] = tuple(types)
        self._position = position
        self.all_mask = (1 << len(types)) - 1
        self.defined_keys = frozenset(k for it in types for k in it.requirements)
        self._requirement_cache: dict[Requirement, int] = {}
        self._offering_cache: dict[OfferingKey, int] = {}
        # Available offerings grouped by (zone, capacity type, reservation id).
        groups: dict[tuple[str, str, str], int] = {}
        for i, it in enumerate(types):
            for o in it.offerings:
                if not o.available:
                    continue
                key = (o.zone, o.capacity_type, o.reservation_id)
                groups[key] = groups.get(key, 0) | (1 << i)
        self._offering_groups = sorted(groups.items())
        # Per resource: ascending distinct allocatable values and the types at or above each.
        names = {name for it in types for name in it.allocatable}
        self._resource_values: dict[str, list[int]] = {}
        self._resource_masks: dict[str, list[int]] = {}
        for name in names:
            by_value: dict[int, int] = {}
            for i, it in enumerate(types):
                value = it.allocatable.get(name, 0)
                by_value[value] = by_value.get(value, 0) | (1 << i)
            values = sorted(by_value)
            masks = [0] * len(values)
            running = 0
            for j in range(len(values) - 1, -1, -1):
                running |= by_value[values[j]]
                masks[j] = running
            self._resource_values[name] = values
            self._resource_masks[name] = masks

    def __len__(self) -> int:
        return len(self.types)

    # -- sets ---------------------------------------------------------------------------
    def mask_of(self, instance_types: Iterable[InstanceType]) -> int:
        mask = 0
        for it in instance_types:
            mask |= 1 << self._position[id(it)]
        return mask

    def members(self, mask: int) -> list[InstanceType]:
        types = self.types
        return [types[i] for i in iter_bits(mask)]

    def position(self, it: InstanceType) -> int:
        return self._position[id(it)]

    # -- filters --------------------------------------------------------------------------
    def requirement_mask(self, req: Requirement) -> int:
        """Types whose own requirement on ``req.key`` is compatible with ``req``."""
        if req.key not in self.defined_keys:
            return self.all_mask
        if req.min_values is not None:
            req = req.with_min_values(None)
        cached = self._requirement_cache.get(req)
        if cached is not None:
            return cached
        mask = 0
        negative = req.is_negative
        key = req.key
        for i, it in enumerate(self.types):
            own = it.requirements.find(key)
            if own is None or own.has_intersection(req) or (negative and own.is_negative):
                mask |= 1 << i
        self._requirement_cache[req] = mask
        return mask

    def requirements_mask(
        self, requirements: Requirements, keys: Iterable[str] | None = None
    ) -> int:
        """Types compatible with every requirement (or those on ``keys``)."""
        mask = self.all_mask
        defined = self.defined_keys
        for key in requirements.keys() if keys is None else keys:
            if key in defined:
                mask &= self.requirement_mask(requirements.get(key))
        return mask

    def offering_mask(self, requirements: Requirements) -> int:
        """Types with an available offering a node with ``requirements`` could use."""
        zone = requirements.find(LABEL_ZONE)
        capacity_type = requirements.find(LABEL_CAPACITY_TYPE)
        reservation = requirements.find(RESERVATION_ID_LABEL)
        key: OfferingKey = (zone, capacity_type, reservation)
        cached = self._offering_cache.get(key)
        if cached is not None:
            return cached
        mask = 0
        for (z, ct, rid), group in self._offering_groups:
            if zone is not None and not zone.has(z):
                continue
            if capacity_type is not None and not capacity_type.has(ct):
                continue
            if reservation is not None:
                if rid and not reservation.has(rid):
                    continue
                if not rid and not reservation.is_negative:
                    continue
            mask |= group
        self._offering_cache[key] = mask
        return mask

    def fits_mask(self, requests: Mapping[str, int]) -> int:
        """Types whose allocatable is at least ``requests`` for every resource."""
        mask = self.all_mask
        values_by = self._resource_values
        masks_by = self._resource_masks
        for name, value in requests.items():
            if value <= 0:
                continue
            values = values_by.get(name)
            if values is None:
                return 0
            j = bisect_left(values, value)
            if j == len(values):
                return 0
            mask &= masks_by[name][j]
            if not mask:
                return 0
        return mask

    def largest(self, mask: int, resource: str) -> InstanceType | None:
        """The type in ``mask`` with the most allocatable ``resource`` (ties: first)."""
        best: InstanceType | None = None
        best_value = -1
        for i in iter_bits(mask):
            it = self.types[i]
            value = it.allocatable.get(resource, 0)
            if value > best_value:
                best, best_value = it, value
        return best

    def values_for(self, mask: int, key: str) -> set[str]:
        """Distinct values of label ``key`` across the types in ``mask`` (for minValues)."""
        out: set[str] = set()
        for i in iter_bits(mask):
            req = self.types[i].requirements.find(key)
            if req is not None:
                out.update(req.values)
        return out

    def order_by_price(
        self, mask: int, requirements: Requirements
    ) -> list[tuple[float, InstanceType]]:
        """Types in ``mask`` with their cheapest compatible available price, cheapest first."""
        priced = []
        for i in iter_bits(mask):
            it = self.types[i]
            offering = it.cheapest_offering(requirements)
            price = offering.price if offering is not None else float("inf")
            priced.append((price, it))
        priced.sort(key=lambda p: (p[0], p[1].name))
        return priced
