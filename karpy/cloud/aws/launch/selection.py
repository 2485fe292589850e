"""Which instance types and offerings a launch may use, as Karpenter's instance provider
filters them before it builds a fleet.

Starting from the instance types the instance-type provider offers the NodeClaim's
NodePool, a launch keeps the types whose requirements are compatible with the NodeClaim's
and whose allocatable holds its requests, and within them the offerings that are
available, allowed by the requirements (zone, capacity type, reservation) and not in the
insufficient-capacity cache. Then, in Karpenter's order:

* exotic types (``metal`` sizes, GPUs, Neuron, Gaudi) are dropped when any ordinary type
  remains, so a general-purpose pod never lands on a GPU box because it was cheaper;
* when spot and on-demand are both allowed, spot offerings pricier than the cheapest
  on-demand offering are dropped (a spot node should never cost more);
* the capacity type is chosen: reserved when allowed and offered, else spot, else
  on-demand; only offerings of that type are kept;
* the cheapest 60 types are kept (CreateFleet's override limit, Karpenter's cap).

Both filters are skipped when requirements carry ``minValues``, as in Karpenter (the
scheduler already chose a set that satisfies them). The result is a list of `Candidate`s
(a type and its usable offerings) cheapest first, or an empty list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_AWS_INSTANCE_SIZE,
    LABEL_CAPACITY_TYPE,
)
from karpy.scheduling.requirements import Requirement
from karpy.scheduling.resources import fits

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.scheduling.instancetypes import CapacityPool, InstanceType, Offering
    from karpy.scheduling.requirements import Requirements

__all__ = ["MAX_INSTANCE_TYPES", "Candidate", "Selection", "select"]

MAX_INSTANCE_TYPES: Final = 60
EXOTIC_RESOURCES: Final = frozenset(
    {"aws.amazon.com/neuron", "aws.amazon.com/neuroncore", "amd.com/gpu", "nvidia.com/gpu",
     "habana.ai/gaudi"}
)  # fmt: skip


@attrs.frozen(slots=True)
class Candidate:
    """An instance type and the offerings a launch may use, cheapest first."""

    instance_type: InstanceType
    offerings: tuple[Offering, ...]

    @property
    def name(self) -> str:
        return self.instance_type.name

    @property
    def cheapest(self) -> float:
        return self.offerings[0].price


@attrs.frozen(slots=True)
class Selection:
    """What a launch may use: the capacity type, the candidates cheapest first, and the
    offerings left out only because the insufficient-capacity cache holds them."""

    capacity_type: str
    candidates: tuple[Candidate, ...]
    known_unavailable: tuple[CapacityPool, ...] = ()


def _is_exotic(it: InstanceType) -> bool:
    size = it.requirements.find(LABEL_AWS_INSTANCE_SIZE)
    if size is not None and any("metal" in v for v in size.values):
        return True
    return any(it.capacity.get(r, 0) > 0 for r in EXOTIC_RESOURCES)


def _usable(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int],
    unavailable: frozenset[CapacityPool],
) -> tuple[list[Candidate], list[CapacityPool]]:
    out: list[Candidate] = []
    iced: list[CapacityPool] = []
    for it in instance_types:
        if it.requirements.intersects(requirements) is not None:
            continue
        if not fits(requests, it.allocatable):
            continue
        offerings = []
        for o in it.offerings:
            if not o.available or not o.compatible(requirements):
                continue
            if (it.name, o.zone, o.capacity_type) in unavailable:
                iced.append((it.name, o.zone, o.capacity_type))
                continue
            offerings.append(o)
        if offerings:
            out.append(Candidate(it, tuple(sorted(offerings, key=lambda o: o.sort_key()))))
    return out, iced


def _drop_exotic(candidates: list[Candidate]) -> list[Candidate]:
    ordinary = [c for c in candidates if not _is_exotic(c.instance_type)]
    return ordinary or candidates


def _drop_pricey_spot(candidates: list[Candidate], requirements: Requirements) -> list[Candidate]:
    allowed = requirements.get(LABEL_CAPACITY_TYPE)
    if not (allowed.has(CAPACITY_TYPE_SPOT) and allowed.has(CAPACITY_TYPE_ON_DEMAND)):
        return candidates
    on_demand = [o.price for c in candidates for o in c.offerings
                 if o.capacity_type == CAPACITY_TYPE_ON_DEMAND]  # fmt: skip
    has_spot = any(o.capacity_type == CAPACITY_TYPE_SPOT for c in candidates for o in c.offerings)
    if not on_demand or not has_spot:
        return candidates
    ceiling = min(on_demand)
    out = []
    for c in candidates:
        kept = tuple(o for o in c.offerings
                     if o.capacity_type != CAPACITY_TYPE_SPOT or o.price <= ceiling)  # fmt: skip
        if kept:
            out.append(Candidate(c.instance_type, kept))
    return out


def _capacity_type(candidates: list[Candidate], requirements: Requirements) -> str:
    allowed = requirements.get(LABEL_CAPACITY_TYPE)
    for capacity_type in (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT):
        if not allowed.has(capacity_type):
            continue
        if any(o.capacity_type == capacity_type for c in candidates for o in c.offerings):
            return capacity_type
    return CAPACITY_TYPE_ON_DEMAND


def select(
    instance_types: Iterable[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int],
    unavailable: frozenset[CapacityPool] = frozenset(),
) -> Selection:
    """The launch's `Selection` (see the module docstring)."""
    candidates, iced = _usable(instance_types, requirements, requests, unavailable)
    if not requirements.has_min_values():
        candidates = _drop_exotic(candidates)
        candidates = _drop_pricey_spot(candidates, requirements)
    capacity_type = _capacity_type(candidates, requirements)
    narrowed = requirements.replace(Requirement.in_values(LABEL_CAPACITY_TYPE, capacity_type))
    chosen = []
    for c in candidates:
        kept = tuple(o for o in c.offerings if o.compatible(narrowed))
        if kept:
            chosen.append(Candidate(c.instance_type, kept))
    chosen.sort(key=lambda c: (c.cheapest, c.name))
    return Selection(capacity_type, tuple(chosen[:MAX_INSTANCE_TYPES]), tuple(iced))
