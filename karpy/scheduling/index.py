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
  a lookup is one binary search per requested resource;
* `attachable_mask` - types that can attach so many volumes of one CSI driver (memoised
  per driver and count).

AND-ing 400- to 800-bit integers costs a few machine words, so a whole instance-type
filter is a handful of dictionary lookups and integer operations. The index is built once
per version of its inputs (instance types, availability) and shared by every round.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_ZONE
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL
from karpy.scheduling.requirements import Requirement

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.requirements import Requirements

__all__ = ["InstanceTypeIndex", "bitset_bytes", "iter_bits", "iter_set_bits"]

# The zone, capacity-type and reservation requirements an offering must meet: what the
# offering memo tables are keyed by.
OfferingConstraints = tuple[Requirement | None, Requirement | None, Requirement | None]
# Memo tables are dropped when they reach this size (they refill with what is in use).
_CACHE_LIMIT = 100_000


def _min_price(it: InstanceType) -> float:
    return min((o.price for o in it.offerings if o.available), default=float("inf"))


def iter_bits(mask: int) -> Iterator[int]:
    """Positions of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def iter_set_bits(data: bytes, first: int = 0) -> Iterator[int]:
    """Positions ``>= first`` of the set bits of a `bitset_bytes` value, lowest first;
    linear in the bytes scanned, where `iter_bits` on a dense int is quadratic."""
    for index in range(first >> 3, len(data)):
        byte = data[index]
        if not byte:
            continue
        base = index << 3
        while byte:
            low = byte & -byte
            position = base + low.bit_length() - 1
            byte ^= low
            if position >= first:
                yield position


def bitset_bytes(mask: int | None, positions: int) -> bytes | None:
    """``mask`` over ``positions`` bits as little-endian bytes: bit ``p`` is
    ``b[p >> 3] >> (p & 7) & 1``, an O(1) test where ``mask >> p & 1`` copies the int."""
    if mask is None:
        return None
    return mask.to_bytes((max(positions, mask.bit_length()) >> 3) + 1, "little")


class InstanceTypeIndex:
    """A fixed numbering of instance types with memoised bitset filters."""

    __slots__ = (
        "_attach_cache",
        "_attach_limits",
        "_capacity_desc",
        "_capacity_masks",
        "_capacity_values",
        "_offering_cache",
        "_offering_groups",
        "_position",
        "_price_cache",
        "_requirement_cache",
        "_resource_masks",
        "_resource_values",
        "all_mask",
        "capacity_overlaid_mask",
        "defined_keys",
        "price_overlaid_mask",
        "reserved_mask",
        "types",
    )

    def __init__(self, instance_types: Iterable[InstanceType]) -> None:
        """Number ``instance_types`` (each object once), cheapest first.

        Types are numbered by their cheapest available offering, then name, so that for
        the usual case (the same price order in every zone and capacity type) a set's
        lowest bit is its cheapest type and its bits in order are its price order.
        """
        unique: dict[int, InstanceType] = {}
        for it in instance_types:
            unique.setdefault(id(it), it)
        types = sorted(unique.values(), key=lambda it: (_min_price(it), it.name))
        position = {id(it): i for i, it in enumerate(types)}
        self.types: tuple[InstanceType, ...] = tuple(types)
        self._position = position
        self.all_mask = (1 << len(types)) - 1
        self.defined_keys = frozenset(k for it in types for k in it.requirements)
        self._requirement_cache: dict[Requirement, int] = {}
        self._offering_cache: dict[OfferingConstraints, int] = {}
        self._price_cache: dict[OfferingConstraints, PriceOrder] = {}
        self.price_overlaid_mask = 0
        self.capacity_overlaid_mask = 0
        self.reserved_mask = 0  # types with an available reserved offering
        # Per CSI driver: the types that declare a limit for it, by that limit.
        self._attach_limits: dict[str, dict[int, int]] = {}
        self._attach_cache: dict[tuple[str, int], int] = {}
        for i, it in enumerate(types):
            if it.price_overlaid:
                self.price_overlaid_mask |= 1 << i
            if it.capacity_overlaid:
                self.capacity_overlaid_mask |= 1 << i
            if any(o.available and o.capacity_type == "reserved" for o in it.offerings):
                self.reserved_mask |= 1 << i
            for driver, limit in it.volume_attachment_limits.items():
                by_limit = self._attach_limits.setdefault(driver, {})
                by_limit[limit] = by_limit.get(limit, 0) | (1 << i)
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
        # Per resource: ascending distinct capacities, the types at or below each value, and
        # type positions by descending capacity (for NodePool limits).
        self._capacity_values: dict[str, list[int]] = {}
        self._capacity_masks: dict[str, list[int]] = {}
        self._capacity_desc: dict[str, list[tuple[int, int]]] = {}
        for name in {name for it in types for name in it.capacity}:
            by_value = {}
            for i, it in enumerate(types):
                value = it.capacity.get(name, 0)
                by_value[value] = by_value.get(value, 0) | (1 << i)
            values = sorted(by_value)
            masks = []
            running = 0
            for value in values:
                running |= by_value[value]
                masks.append(running)
            self._capacity_values[name] = values
            self._capacity_masks[name] = masks
            self._capacity_desc[name] = sorted(
                ((it.capacity.get(name, 0), i) for i, it in enumerate(types)), reverse=True
            )

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
        if len(self._requirement_cache) >= _CACHE_LIMIT:
            self._requirement_cache.clear()  # a long-lived index must not grow without bound
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
        key: OfferingConstraints = (zone, capacity_type, reservation)
        cached = self._offering_cache.get(key)
        if cached is not None:
            return cached
        if len(self._offering_cache) >= _CACHE_LIMIT:
            self._offering_cache.clear()
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

    @property
    def attach_limited(self) -> bool:
        """Does any type declare a volume attachment limit?"""
        return bool(self._attach_limits)

    def attachable_mask(self, driver: str, count: int) -> int:
        """Types that can attach ``count`` volumes of ``driver``: those that declare no
        limit for it, and those whose limit is at least ``count``."""
        by_limit = self._attach_limits.get(driver)
        if by_limit is None:
            return self.all_mask
        key = (driver, count)
        cached = self._attach_cache.get(key)
        if cached is not None:
            return cached
        mask = self.all_mask
        for limit, types in by_limit.items():
            if limit < count:
                mask &= ~types
        self._attach_cache[key] = mask
        return mask

    def capacity_at_most_mask(self, resource: str, value: int) -> int:
        """Types whose capacity of ``resource`` is at most ``value`` (absent counts as 0)."""
        values = self._capacity_values.get(resource)
        if values is None:
            return self.all_mask if value >= 0 else 0
        j = bisect_right(values, value)
        if j == 0:
            return 0
        return self._capacity_masks[resource][j - 1]

    def max_capacity(self, mask: int, resource: str) -> int:
        """The largest capacity of ``resource`` among the types in ``mask``."""
        for value, i in self._capacity_desc.get(resource, ()):
            if mask >> i & 1:
                return value
        return 0

    def capacity_types(self, mask: int, requirements: Requirements) -> list[str]:
        """Capacity types of the compatible available offerings of the types in ``mask``."""
        zone = requirements.find(LABEL_ZONE)
        capacity_type = requirements.find(LABEL_CAPACITY_TYPE)
        found: set[str] = set()
        for (z, ct, _), group in self._offering_groups:
            if ct in found or not group & mask:
                continue
            if zone is not None and not zone.has(z):
                continue
            if capacity_type is not None and not capacity_type.has(ct):
                continue
            found.add(ct)
        return sorted(found)

    def max_allocatable(self, mask: int, resource: str) -> int:
        """The largest allocatable ``resource`` among the types in ``mask`` (0 if none)."""
        values = self._resource_values.get(resource)
        if values is None:
            return 0
        masks = self._resource_masks[resource]
        # masks[j] holds the types with at least values[j]: find the highest j that hits.
        high = len(values) - 1
        if mask & masks[high]:
            return values[high]  # the usual case: the largest type is still an option
        low = 0
        if not mask & masks[0]:
            return 0
        while low < high:
            middle = (low + high + 1) // 2
            if mask & masks[middle]:
                low = middle
            else:
                high = middle - 1
        return values[low]

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

    def _price_order(self, requirements: Requirements) -> PriceOrder:
        """Types with a compatible available offering, cheapest first (ties by name), for
        the offering-relevant part of ``requirements`` (memoised)."""
        key: OfferingConstraints = (
            requirements.find(LABEL_ZONE),
            requirements.find(LABEL_CAPACITY_TYPE),
            requirements.find(RESERVATION_ID_LABEL),
        )
        cached = self._price_cache.get(key)
        if cached is not None:
            return cached
        if len(self._price_cache) >= 1_000:
            self._price_cache.clear()
        prices: dict[int, float] = {}
        for i, it in enumerate(self.types):
            offering = it.cheapest_offering(requirements)
            if offering is not None:
                prices[i] = offering.price
        order = sorted(prices, key=lambda i: (prices[i], self.types[i].name))
        monotone = all(a < b for a, b in itertools.pairwise(order))
        result = PriceOrder(order, prices, monotone)
        self._price_cache[key] = result
        return result

    def order_by_price(
        self, mask: int, requirements: Requirements, limit: int | None = None
    ) -> list[tuple[float, InstanceType]]:
        """Types in ``mask`` with their cheapest compatible available price, cheapest first
        (ties by name), at most ``limit`` of them."""
        order = self._price_order(requirements)
        types, prices = self.types, order.prices
        if order.monotone:
            positions = iter_bits(mask)
        else:
            positions = (i for i in order.positions if mask >> i & 1)
        out: list[tuple[float, InstanceType]] = []
        for i in positions:
            price = prices.get(i)
            if price is None:
                continue
            out.append((price, types[i]))
            if limit is not None and len(out) >= limit:
                break
        return out

    def cheapest_price(self, mask: int, requirements: Requirements) -> float | None:
        """The lowest compatible available price among the types in ``mask``."""
        order = self._price_order(requirements)
        if order.monotone:
            for i in iter_bits(mask):
                price = order.prices.get(i)
                if price is not None:
                    return price
            return None
        for i in order.positions:
            if mask >> i & 1:
                return order.prices[i]
        return None

    def cheapest_types(self, mask: int, requirements: Requirements) -> list[InstanceType]:
        """The types of ``mask`` sharing the lowest compatible available price."""
        out: list[InstanceType] = []
        lowest: float | None = None
        order = self._price_order(requirements)
        positions = (
            iter_bits(mask) if order.monotone else (i for i in order.positions if mask >> i & 1)
        )
        for i in positions:
            price = order.prices.get(i)
            if price is None:
                continue
            if lowest is None:
                lowest = price
            elif price != lowest:
                break
            out.append(self.types[i])
        return out

    def first(self, mask: int, requirements: Requirements, limit: int) -> int:
        """The bitset of the ``limit`` cheapest types of ``mask`` (all of them if fewer)."""
        if mask.bit_count() <= limit:
            return mask
        out = 0
        for _, it in self.order_by_price(mask, requirements, limit):
            out |= 1 << self._position[id(it)]
        return out


class PriceOrder:
    """One offering combination's price order: positions cheapest first, price by position."""

    __slots__ = ("monotone", "positions", "prices")

    def __init__(self, positions: list[int], prices: dict[int, float], monotone: bool) -> None:
        self.positions = positions
        self.prices = prices
        self.monotone = monotone  # the index's own numbering is this order
