"""A scheduling context in which one capacity reservation has one more instance free.

Terminate-first disruption on a full reservation (Karpenter's RFC core#3203, "Dynamic
capacity") asks: if the node leaving gave its slot back, where would its pods go? The
reservation's offerings in the compiled context say what the cloud reported (remaining
instances, unavailable at 0), and that is baked into more than the offerings: each
instance type's zone and capacity-type requirements list only what its available
offerings provide, and the index's masks and each NodePool's launchable types are
computed from those. So the variant is compiled again from the pools' compiled instance
types (`SchedulingContext.pool_types`), the reservation's offerings given one more
instance. Only a candidate already blocked pays for this (`karpy.disruption.reservedfirst`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import CAPACITY_TYPE_RESERVED, LABEL_CAPACITY_TYPE, LABEL_ZONE
from karpy.scheduling.context import assemble_context
from karpy.scheduling.requirements import IN, Requirement

if TYPE_CHECKING:
    from karpy.scheduling.context import SchedulingContext
    from karpy.scheduling.instancetypes import InstanceType, Offering

__all__ = ["in_reservation", "with_one_more_slot"]


def with_one_more_slot(context: SchedulingContext, reservation: str) -> SchedulingContext:
    """``context`` with ``reservation``'s remaining capacity one higher (and its offerings
    available); ``context`` itself when no instance type offers it."""
    freed: dict[int, InstanceType] = {}  # by the original's id: each object evolved once
    changed = False
    per_pool = []
    for name, types in context.pool_types.items():
        out = []
        for it in types:
            if id(it) not in freed:
                freed[id(it)] = _freed(it, reservation)
            changed = changed or freed[id(it)] is not it
            out.append(freed[id(it)])
        per_pool.append((context.templates[name], tuple(out)))
    if not changed:
        return context
    return assemble_context(
        context.templates,
        per_pool,
        well_known_labels=context.well_known_labels,
        restricted_label_domains=context.restricted_label_domains,
        min_values_policy=context.min_values_policy,
    )


def _freed(it: InstanceType, reservation: str) -> InstanceType:
    if not any(in_reservation(o, reservation) for o in it.offerings):
        return it
    offerings = tuple(_one_more(o) if in_reservation(o, reservation) else o for o in it.offerings)
    available = [o for o in offerings if o.available]
    requirements = it.requirements.replace(
        Requirement.new(LABEL_ZONE, IN, sorted({o.zone for o in available}))
    ).replace(
        Requirement.new(LABEL_CAPACITY_TYPE, IN, sorted({o.capacity_type for o in available}))
    )
    return attrs.evolve(it, offerings=offerings, requirements=requirements)


def _one_more(offering: Offering) -> Offering:
    capacity = offering.reservation_capacity + 1
    return attrs.evolve(offering, reservation_capacity=capacity, available=capacity > 0)


def in_reservation(offering: Offering, reservation: str) -> bool:
    """Is ``offering`` the capacity reservation ``reservation``'s?"""
    reserved = offering.capacity_type == CAPACITY_TYPE_RESERVED
    return reserved and offering.reservation_id == reservation
